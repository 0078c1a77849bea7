//===- ast/queries.cpp - Small read-only questions about checked nodes ----===//
//
// Helpers the later stages (tile IR builder, lowering) ask of an annotated
// tree: a call's keyword argument by name, the compile-time integer an
// axis or extent expression stands for, the tensor a slice names, and the
// tensors a kernel's tasks write; the walks of ast/walk.h.
//
//===----------------------------------------------------------------------===//
#include "ast/ast.h"
#include "ast/walk.h"

namespace etl {

const KwArg *find_kwarg(const Expr &call, const char *name) {
  for (const KwArg &k : call.kwargs)
    if (k.name == name)
      return &k;
  return nullptr;
}

std::optional<int64_t> static_int(const Program &p, const Expr &e) {
  switch (e.kind) {
  case ExprKind::IntLit:
    return e.int_value;
  case ExprKind::Name:
    if (e.ref == NameRef::Const)
      for (const ConstDecl &c : p.consts)
        if (c.name == e.name && !c.is_float)
          return c.folded;
    return std::nullopt;
  case ExprKind::Unary:
    if (e.un_op == UnOp::Neg)
      if (auto v = static_int(p, *e.args[0]))
        return -*v;
    return std::nullopt;
  case ExprKind::Binary: {
    auto l = static_int(p, *e.args[0]), r = static_int(p, *e.args[1]);
    if (l && r && e.bin_op == BinOp::Add)
      return *l + *r;
    if (l && r && e.bin_op == BinOp::Sub)
      return *l - *r;
    if (l && r && e.bin_op == BinOp::Mul)
      return *l * *r;
    break;
  }
  default:
    break;
  }
  if (e.sym)
    return e.sym->as_constant();
  return std::nullopt;
}

int slice_tensor(const Expr &slice) {
  if (slice.kind != ExprKind::Index || slice.args.empty())
    return -1;
  const Expr &base = *slice.args[0];
  return base.kind == ExprKind::Name && base.ref == NameRef::Tensor ? base.ref_index : -1;
}

std::set<int> written_tensors(const KernelDecl &k) {
  std::set<int> out;
  auto store = [&](const Expr &e) {
    if (e.kind == ExprKind::Call && (e.builtin == Builtin::Store || is_atomic_fn(e.builtin)))
      // A store whose target we cannot name: every tensor may be written (-1).
      out.insert(e.args.empty() || !e.args[0] ? -1 : slice_tensor(*e.args[0]));
  };
  for (const TaskDecl &t : k.tasks)
    walk_body(
        t.body, [](const Stmt &) {}, store);
  return out;
}

void walk_expr(const Expr *e, const std::function<void(const Expr &)> &f) {
  if (!e)
    return;
  f(*e);
  for (const ExprPtr &a : e->args)
    walk_expr(a.get(), f);
  for (const KwArg &k : e->kwargs)
    walk_expr(k.value.get(), f);
  for (const ExprPtr &a : e->shape_args)
    walk_expr(a.get(), f);
}

void walk_body(const std::vector<StmtPtr> &body, const std::function<void(const Stmt &)> &on_stmt,
               const std::function<void(const Expr &)> &on_expr) {
  for (const StmtPtr &s : body) {
    if (!s)
      continue;
    on_stmt(*s);
    for (const Expr *x : {s->value.get(), s->lo.get(), s->hi.get(), s->step.get()})
      walk_expr(x, on_expr);
    walk_body(s->body, on_stmt, on_expr);
    walk_body(s->else_body, on_stmt, on_expr);
  }
}

} // namespace etl
