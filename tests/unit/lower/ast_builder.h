//===- tests/unit/lower/ast_builder.h - Hand-built annotated ASTs ---------===//
//
// What this owns: small helpers that build the AST *as sema annotates it*
// (types, name references, local slots), so the back end can be tested
// without the frontend and sema. Also the two example kernels (rowsum,
// softmax) built this way, with configurable tile constants.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"

#include <memory>
#include <string>
#include <vector>

namespace etl::testing {

inline Type index_t() {
  Type t;
  t.kind = TypeKind::Index;
  return t;
}
inline Type tile_t(std::vector<int64_t> shape, ElemType e = ElemType::F32) {
  Type t;
  t.kind = TypeKind::Tile;
  t.elem = e;
  t.tile_shape = std::move(shape);
  return t;
}
inline Type scalar_t(ElemType e = ElemType::F32) {
  Type t;
  t.kind = TypeKind::Scalar;
  t.elem = e;
  return t;
}

inline ExprPtr mk(ExprKind k, Type t = {}) {
  auto e = std::make_unique<Expr>(k, SourceRange{});
  e->type = std::move(t);
  return e;
}
inline ExprPtr lit(int64_t v) {
  auto e = mk(ExprKind::IntLit, index_t());
  e->int_value = v;
  return e;
}
inline ExprPtr flit(double v) {
  auto e = mk(ExprKind::FloatLit, scalar_t());
  e->float_value = v;
  return e;
}
inline ExprPtr name(const std::string &n, NameRef ref, int idx, Type t) {
  auto e = mk(ExprKind::Name, std::move(t));
  e->name = n;
  e->ref = ref;
  e->ref_index = idx;
  return e;
}
inline ExprPtr cst(const Program &p, const std::string &n) {
  for (size_t i = 0; i < p.consts.size(); ++i)
    if (p.consts[i].name == n)
      return name(n, NameRef::Const, int(i), index_t());
  return nullptr;
}
inline ExprPtr dim(const std::string &n, int i) { return name(n, NameRef::Dim, i, index_t()); }
inline ExprPtr tvar(const std::string &n, int i) {
  return name(n, NameRef::TaskIndex, i, index_t());
}
inline ExprPtr lvar(const std::string &n, int i) { return name(n, NameRef::LoopVar, i, index_t()); }
inline ExprPtr local(const std::string &n, int i, Type t) {
  return name(n, NameRef::Local, i, std::move(t));
}
inline ExprPtr inf() { return name("inf", NameRef::Builtin, -1, scalar_t()); }

inline ExprPtr bin(BinOp op, ExprPtr a, ExprPtr b, Type t = index_t()) {
  auto e = mk(ExprKind::Binary, std::move(t));
  e->bin_op = op;
  e->args.push_back(std::move(a));
  e->args.push_back(std::move(b));
  return e;
}
inline ExprPtr neg(ExprPtr a) {
  Type t = a->type;
  auto e = mk(ExprKind::Unary, t);
  e->un_op = UnOp::Neg;
  e->args.push_back(std::move(a));
  return e;
}
inline ExprPtr call(const std::string &f, std::vector<ExprPtr> args, Type t) {
  auto e = mk(ExprKind::Call, std::move(t));
  e->name = f;
  e->builtin = find_builtin(f); // as sema resolves it
  for (auto &a : args)
    e->args.push_back(std::move(a));
  return e;
}
inline ExprPtr kw(ExprPtr c, const std::string &n, ExprPtr v) {
  KwArg k;
  k.name = n;
  k.value = std::move(v);
  c->kwargs.push_back(std::move(k));
  return c;
}
inline ExprPtr range_plus(ExprPtr lo, ExprPtr ext) {
  auto e = mk(ExprKind::Range, index_t());
  e->plus_extent = true;
  e->args.push_back(std::move(lo));
  e->args.push_back(std::move(ext));
  return e;
}
inline ExprPtr slice(const KernelDecl &k, const std::string &tensor, std::vector<ExprPtr> comps,
                     std::vector<int64_t> shape) {
  int ti = -1;
  for (size_t i = 0; i < k.tensors.size(); ++i)
    if (k.tensors[i].name == tensor)
      ti = int(i);
  Type s;
  s.kind = TypeKind::Slice;
  s.elem = k.tensors[size_t(ti)].type.elem;
  s.tile_shape = shape;
  auto e = mk(ExprKind::Index, s);
  Type tt;
  tt.kind = TypeKind::Tensor;
  e->args.push_back(name(tensor, NameRef::Tensor, ti, tt));
  for (auto &c : comps)
    e->args.push_back(std::move(c));
  return e;
}
inline ExprPtr load(ExprPtr sl) {
  auto c = call("load", {}, tile_t(sl->type.tile_shape, sl->type.elem));
  c->args.push_back(std::move(sl));
  return c;
}
inline ExprPtr store(ExprPtr sl, ExprPtr v) {
  auto c = call("store", {}, Type{});
  c->args.push_back(std::move(sl));
  c->args.push_back(std::move(v));
  return c;
}
inline ExprPtr cdiv(ExprPtr a, ExprPtr b) {
  auto c = call("cdiv", {}, index_t());
  c->args.push_back(std::move(a));
  c->args.push_back(std::move(b));
  return c;
}

inline StmtPtr let(const std::string &n, int slot, ExprPtr v, bool is_var = false) {
  auto s = std::make_unique<Stmt>(is_var ? StmtKind::Var : StmtKind::Let, SourceRange{});
  s->name = n;
  s->local_index = slot;
  s->value = std::move(v);
  return s;
}
inline StmtPtr assign(const std::string &n, int slot, ExprPtr v, bool compound = false,
                      BinOp op = BinOp::Add) {
  auto s = std::make_unique<Stmt>(StmtKind::Assign, SourceRange{});
  s->name = n;
  s->local_index = slot;
  s->value = std::move(v);
  s->compound = compound;
  s->assign_op = op;
  return s;
}
inline StmtPtr expr_stmt(ExprPtr v) {
  auto s = std::make_unique<Stmt>(StmtKind::ExprStmt, SourceRange{});
  s->value = std::move(v);
  return s;
}
inline StmtPtr for_loop(const std::string &v, int slot, ExprPtr lo, ExprPtr hi,
                        std::vector<StmtPtr> body) {
  auto s = std::make_unique<Stmt>(StmtKind::For, SourceRange{});
  s->name = v;
  s->local_index = slot;
  s->lo = std::move(lo);
  s->hi = std::move(hi);
  s->body = std::move(body);
  return s;
}

inline void add_const(Program &p, const std::string &n, int64_t v) {
  ConstDecl c;
  c.name = n;
  c.value = lit(v);
  c.folded = v;
  p.consts.push_back(std::move(c));
}
inline void add_tensor(KernelDecl &k, const std::string &n, std::vector<ExprPtr> shape,
                       bool buffer = false) {
  TensorDecl t;
  t.name = n;
  t.is_buffer = buffer;
  t.type.elem = ElemType::F32;
  t.type.shape = std::move(shape);
  k.tensors.push_back(std::move(t));
  if (!buffer)
    k.num_params++;
}
inline EventRef event_ref(const KernelDecl &k, const std::string &ev, std::vector<ExprPtr> idx) {
  EventRef r;
  r.event = ev;
  for (size_t i = 0; i < k.events.size(); ++i)
    if (k.events[i].name == ev)
      r.event_index = int(i);
  r.indices = std::move(idx);
  return r;
}
inline TaskIndexDecl domain_var(const std::string &n, ExprPtr lo, ExprPtr hi) {
  TaskIndexDecl d;
  d.name = n;
  d.lo = std::move(lo);
  d.hi = std::move(hi);
  return d;
}
inline LocalVar local_decl(const std::string &n, Type t, bool is_var = false) {
  LocalVar l;
  l.name = n;
  l.type = std::move(t);
  l.is_var = is_var;
  return l;
}

template <class... E> std::vector<ExprPtr> exprs(E... e) {
  std::vector<ExprPtr> v;
  (v.push_back(std::move(e)), ...);
  return v;
}

/// examples/rowsum/rowsum.etl, as sema annotates it.
inline std::unique_ptr<Program> rowsum_program(int64_t TM, int64_t TN) {
  auto p = std::make_unique<Program>();
  add_const(*p, "TM", TM);
  add_const(*p, "TN", TN);
  Program &P = *p;
  P.kernels.emplace_back();
  KernelDecl &k = P.kernels.back();
  k.name = "rowsum";
  k.dims.push_back({"M", {}});
  k.dims.push_back({"N", {}});
  add_tensor(k, "x", exprs(dim("M", 0), dim("N", 1)));
  add_tensor(k, "y", exprs(dim("M", 0)));
  add_tensor(k, "part", exprs(cdiv(dim("N", 1), cst(P, "TN")), dim("M", 0)), true);
  EventDecl ev;
  ev.name = "E";
  ev.shape = exprs(cdiv(dim("M", 0), cst(P, "TM")));
  k.events.push_back(std::move(ev));

  k.tasks.emplace_back();
  TaskDecl &partial = k.tasks.back();
  partial.name = "partial";
  partial.domain.push_back(domain_var("i", lit(0), cdiv(dim("M", 0), cst(P, "TM"))));
  partial.domain.push_back(domain_var("j", lit(0), cdiv(dim("N", 1), cst(P, "TN"))));
  partial.notifies.push_back(event_ref(k, "E", exprs(tvar("i", 0))));
  partial.locals.push_back(local_decl("t", tile_t({TM, TN})));
  partial.body.push_back(
      let("t", 0,
          load(slice(k, "x",
                     exprs(range_plus(bin(BinOp::Mul, tvar("i", 0), cst(P, "TM")), cst(P, "TM")),
                           range_plus(bin(BinOp::Mul, tvar("j", 1), cst(P, "TN")), cst(P, "TN"))),
                     {TM, TN}))));
  partial.body.push_back(expr_stmt(store(
      slice(k, "part",
            exprs(tvar("j", 1),
                  range_plus(bin(BinOp::Mul, tvar("i", 0), cst(P, "TM")), cst(P, "TM"))),
            {TM}),
      kw(call("sum", exprs(local("t", 0, tile_t({TM, TN}))), tile_t({TM})), "axis", lit(1)))));

  k.tasks.emplace_back();
  TaskDecl &fin = k.tasks.back();
  fin.name = "final";
  fin.domain.push_back(domain_var("i", lit(0), cdiv(dim("M", 0), cst(P, "TM"))));
  fin.waits.push_back(event_ref(k, "E", exprs(tvar("i", 0))));
  fin.locals.push_back(local_decl("acc", tile_t({TM}), true));
  fin.num_loops = 1;
  auto z = call("zeros", {}, tile_t({TM}));
  z->type_arg = ElemType::F32;
  z->shape_args.push_back(cst(P, "TM"));
  fin.body.push_back(let("acc", 0, std::move(z), true));
  std::vector<StmtPtr> body;
  body.push_back(
      assign("acc", 0,
             load(slice(k, "part",
                        exprs(lvar("j", 0), range_plus(bin(BinOp::Mul, tvar("i", 0), cst(P, "TM")),
                                                       cst(P, "TM"))),
                        {TM})),
             true, BinOp::Add));
  fin.body.push_back(for_loop("j", 0, lit(0), cdiv(dim("N", 1), cst(P, "TN")), std::move(body)));
  fin.body.push_back(expr_stmt(store(
      slice(k, "y", exprs(range_plus(bin(BinOp::Mul, tvar("i", 0), cst(P, "TM")), cst(P, "TM"))),
            {TM}),
      local("acc", 0, tile_t({TM})))));
  return p;
}

/// examples/softmax/softmax.etl, as sema annotates it.
inline std::unique_ptr<Program> softmax_program(int64_t TB, int64_t TN) {
  auto p = std::make_unique<Program>();
  add_const(*p, "TB", TB);
  add_const(*p, "TN", TN);
  Program &P = *p;
  P.kernels.emplace_back();
  KernelDecl &k = P.kernels.back();
  k.name = "softmax";
  k.dims.push_back({"B", {}});
  k.dims.push_back({"N", {}});
  add_tensor(k, "x", exprs(dim("B", 0), dim("N", 1)));
  add_tensor(k, "y", exprs(dim("B", 0), dim("N", 1)));
  add_tensor(k, "row_max", exprs(dim("B", 0)), true);
  add_tensor(k, "row_sum", exprs(dim("B", 0)), true);
  EventDecl ev;
  ev.name = "S";
  ev.shape = exprs(cdiv(dim("B", 0), cst(P, "TB")));
  k.events.push_back(std::move(ev));
  auto rows = [&](int var) {
    return range_plus(bin(BinOp::Mul, tvar("b", var), cst(P, "TB")), cst(P, "TB"));
  };
  auto cols_j = [&](ExprPtr j) {
    return range_plus(bin(BinOp::Mul, std::move(j), cst(P, "TN")), cst(P, "TN"));
  };
  Type row = tile_t({TB}), tile = tile_t({TB, TN}), col = tile_t({TB, 1});
  auto maxax = [&](ExprPtr t) { return kw(call("max", exprs(std::move(t)), row), "axis", lit(1)); };
  auto expand = [&](ExprPtr t) {
    return kw(call("expand", exprs(std::move(t)), col), "axis", lit(1));
  };
  auto ex = [&](ExprPtr t, Type ty) { return call("exp", exprs(std::move(t)), ty); };

  k.tasks.emplace_back();
  TaskDecl &st = k.tasks.back();
  st.name = "stats";
  st.domain.push_back(domain_var("b", lit(0), cdiv(dim("B", 0), cst(P, "TB"))));
  st.notifies.push_back(event_ref(k, "S", exprs(tvar("b", 0))));
  st.locals = {local_decl("m", row, true), local_decl("l", row, true), local_decl("t", tile),
               local_decl("m_new", row)};
  st.num_loops = 1;
  auto full = call("full", exprs(neg(inf())), row);
  full->type_arg = ElemType::F32;
  full->shape_args.push_back(cst(P, "TB"));
  st.body.push_back(let("m", 0, std::move(full), true));
  auto z = call("zeros", {}, row);
  z->type_arg = ElemType::F32;
  z->shape_args.push_back(cst(P, "TB"));
  st.body.push_back(let("l", 1, std::move(z), true));
  std::vector<StmtPtr> body;
  body.push_back(let(
      "t", 2,
      kw(load(slice(k, "x", exprs(rows(0), cols_j(lvar("j", 0))), {TB, TN})), "pad", neg(inf()))));
  body.push_back(
      let("m_new", 3, call("max", exprs(local("m", 0, row), maxax(local("t", 2, tile))), row)));
  body.push_back(assign(
      "l", 1,
      bin(BinOp::Add,
          bin(BinOp::Mul, local("l", 1, row),
              ex(bin(BinOp::Sub, local("m", 0, row), local("m_new", 3, row), row), row), row),
          kw(call("sum",
                  exprs(
                      ex(bin(BinOp::Sub, local("t", 2, tile), expand(local("m_new", 3, row)), tile),
                         tile)),
                  row),
             "axis", lit(1)),
          row)));
  body.push_back(assign("m", 0, local("m_new", 3, row)));
  st.body.push_back(for_loop("j", 0, lit(0), cdiv(dim("N", 1), cst(P, "TN")), std::move(body)));
  st.body.push_back(
      expr_stmt(store(slice(k, "row_max", exprs(rows(0)), {TB}), local("m", 0, row))));
  st.body.push_back(
      expr_stmt(store(slice(k, "row_sum", exprs(rows(0)), {TB}), local("l", 1, row))));

  k.tasks.emplace_back();
  TaskDecl &nz = k.tasks.back();
  nz.name = "normalize";
  nz.domain.push_back(domain_var("b", lit(0), cdiv(dim("B", 0), cst(P, "TB"))));
  nz.domain.push_back(domain_var("j", lit(0), cdiv(dim("N", 1), cst(P, "TN"))));
  nz.waits.push_back(event_ref(k, "S", exprs(tvar("b", 0))));
  nz.locals = {local_decl("t", tile), local_decl("m", col), local_decl("l", col)};
  nz.body.push_back(
      let("t", 0, load(slice(k, "x", exprs(rows(0), cols_j(tvar("j", 1))), {TB, TN}))));
  nz.body.push_back(let("m", 1, expand(load(slice(k, "row_max", exprs(rows(0)), {TB})))));
  nz.body.push_back(let("l", 2, expand(load(slice(k, "row_sum", exprs(rows(0)), {TB})))));
  nz.body.push_back(expr_stmt(store(
      slice(k, "y", exprs(rows(0), cols_j(tvar("j", 1))), {TB, TN}),
      bin(BinOp::Div, ex(bin(BinOp::Sub, local("t", 0, tile), local("m", 1, col), tile), tile),
          local("l", 2, col), tile))));
  return p;
}

} // namespace etl::testing
