//===- tile/build.cpp - Checked AST + task graph -> tile IR ---------------===//
//
// Walks each checked task body in program order and emits IR: every value gets a static shape and element type, numpy
// broadcasts and implicit element conversions become explicit expand,
// broadcast, splat and cast ops, index arithmetic stays symbolic (an `index`
// op or a slice part holding the Sym sema computed; an element read of
// tensor data in it, `kv_len[b]`, is a rank-0 load binding the symbol sema
// named it by), a `var` assigned in a `for` becomes an iter_arg, one
// assigned in a branch a result of its `if` op (`else` is an `if` on the
// negated condition), and the task's waits open and its notifies close the
// body. Every math builtin is a `map` of the builtin's name, an atomic an
// `atomic` op; a constant keeps every bit of its literal. Runs only on
// programs sema accepted.
//
//===----------------------------------------------------------------------===//
#include "taskgraph/taskgraph.h"
#include "ast/builtins.h"
#include "tile/ir.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

namespace etl {

unsigned tile_warps(unsigned threads) {
  unsigned w = 1;
  while (w * 2 <= threads / 32)
    w *= 2;
  return w;
}

namespace {

/// `v` in the fewest significant digits that read back as `v` (the
/// lowering reads it back with tile_number: a constant keeps every bit).
std::string number(double v) {
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  std::string t;
  for (int digits = 6; digits <= 17; ++digits) {
    std::ostringstream s;
    s.precision(digits);
    s << v;
    t = s.str();
    if (std::strtod(t.c_str(), nullptr) == v)
      break;
  }
  if (t.find_first_of(".en") == std::string::npos)
    t += ".0";
  return t;
}

} // namespace

double tile_number(const std::string &text, bool *ok) {
  if (ok)
    *ok = true;
  if (text.empty())
    return 0;
  if (text == "inf")
    return INFINITY;
  if (text == "-inf")
    return -INFINITY;
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (ok)
    *ok = end && !*end;
  return v;
}

namespace {

class Builder {
public:
  Builder(const KernelDecl &k, const Program &p, TileFunc &f) : k_(k), p_(p), f_(f) {}

  void task(const TaskDecl &t) {
    task_ = &t;
    cur_ = &f_.body;
    locals_.assign(t.locals.size(), -1);
    for (const EventRef &w : t.waits)
      event_op(TileOpKind::Wait, w);
    stmts(t.body);
    for (const EventRef &n : t.notifies)
      event_op(TileOpKind::Notify, n);
  }

private:
  const KernelDecl &k_;
  const Program &p_;
  TileFunc &f_;
  const TaskDecl *task_ = nullptr;
  std::vector<TOp> *cur_ = nullptr;
  std::vector<int> locals_;
  /// Element reads (`kv_len[b]`) loaded in the enclosing scopes: the
  /// symbol sema named them by -> the rank-0 load that binds it.
  std::map<std::string, int> reads_;

  int new_value(ElemType elem, std::vector<int64_t> shape, bool index = false) {
    TValue v;
    v.elem = elem;
    v.shape = std::move(shape);
    v.index = index;
    f_.values.push_back(v);
    return int(f_.values.size()) - 1;
  }
  int emit(TOp op, ElemType elem, std::vector<int64_t> shape, bool index = false) {
    int v = new_value(elem, std::move(shape), index);
    op.results = {v};
    cur_->push_back(std::move(op));
    return v;
  }
  static TOp make(TileOpKind k, SourceRange loc, std::vector<int> operands = {},
                  std::string attr = "") {
    TOp op;
    op.kind = k;
    op.loc = loc;
    op.operands = std::move(operands);
    op.attr = std::move(attr);
    return op;
  }
  const TValue &val(int v) const { return f_.values[size_t(v)]; }

  void event_op(TileOpKind kind, const EventRef &r) {
    TOp op = make(kind, r.range, {}, r.event);
    for (const ExprPtr &i : r.indices)
      op.event_idx.push_back(!i ? "*" : i->sym ? i->sym->str() : "?");
    cur_->push_back(std::move(op));
  }

  /// `v` at `shape` and `elem`: splat a scalar, cast, expand leading dims,
  /// broadcast extent-1 dims.
  int coerce(int v, const std::vector<int64_t> &shape, ElemType elem, SourceRange loc) {
    if (!val(v).is_tile()) {
      if (shape.empty()) {
        if (val(v).index || val(v).elem != elem)
          return emit(make(TileOpKind::Cast, loc, {v}), elem, {});
        return v;
      }
      return emit(make(TileOpKind::Splat, loc, {v}), elem, shape);
    }
    if (val(v).elem != elem)
      v = emit(make(TileOpKind::Cast, loc, {v}), elem, val(v).shape);
    if (shape.empty()) // a one-element tile used as a scalar
      return emit(make(TileOpKind::Reshape, loc, {v}), elem, {});
    while (val(v).shape.size() < shape.size()) {
      std::vector<int64_t> s = val(v).shape;
      s.insert(s.begin(), 1);
      TOp op = make(TileOpKind::Expand, loc, {v});
      op.axis = 0;
      v = emit(op, elem, s);
    }
    if (val(v).shape != shape)
      v = emit(make(TileOpKind::Broadcast, loc, {v}), elem, shape);
    return v;
  }

  void stmts(const std::vector<StmtPtr> &body) {
    for (const StmtPtr &s : body)
      stmt(*s);
  }

  const Type &local_type(int idx) const { return task_->locals[size_t(idx)].type; }

  int at_local_type(int v, int idx, SourceRange loc) {
    const Type &t = local_type(idx);
    if (t.kind == TypeKind::Tile)
      return coerce(v, t.tile_shape, t.elem, loc);
    if (t.kind == TypeKind::Scalar)
      return coerce(v, {}, t.elem, loc);
    return v;
  }

  void stmt(const Stmt &s) {
    switch (s.kind) {
    case StmtKind::Let:
    case StmtKind::Var:
      if (s.value->type.kind == TypeKind::Index) {
        // Its uses carry the symbolic value; an element read in it
        // (`let k = off[i]`) is loaded here, binding its symbol for them.
        bind_reads(s.value.get());
        return;
      }
      locals_[size_t(s.local_index)] = at_local_type(value(*s.value), s.local_index, s.range);
      return;
    case StmtKind::Assign: {
      int v = value(*s.value);
      if (s.compound) {
        const Type &t = local_type(s.local_index);
        int old = locals_[size_t(s.local_index)];
        std::vector<int64_t> shape = t.kind == TypeKind::Tile ? t.tile_shape : val(old).shape;
        v = binary(s.assign_op, old, v, shape, t.elem, s.range);
      }
      locals_[size_t(s.local_index)] = at_local_type(v, s.local_index, s.range);
      return;
    }
    case StmtKind::For:
      return loop(s);
    case StmtKind::If:
      return branch(s);
    case StmtKind::ExprStmt:
      value(*s.value);
      return;
    }
  }

  static void assigned(const std::vector<StmtPtr> &body, std::set<int> &out) {
    for (const StmtPtr &s : body) {
      if (s->kind == StmtKind::Assign)
        out.insert(s->local_index);
      if (s->kind == StmtKind::For || s->kind == StmtKind::If) {
        assigned(s->body, out);
        assigned(s->else_body, out);
      }
    }
  }

  /// `if c { a } else { b }`: an `if` op on c with body a, then one on
  /// !c with body b (c is an SSA value computed before both, so exactly one
  /// body runs); an `else if` is an `if` inside the second body.
  void branch(const Stmt &s) {
    int c = coerce(value(*s.value), {}, ElemType::Bool, s.range);
    one_branch(c, s.body, s.range);
    if (s.else_body.empty())
      return;
    int nc = emit(make(TileOpKind::Unary, s.range, {c}, "not"), ElemType::Bool, {});
    one_branch(nc, s.else_body, s.range);
  }

  /// An `if` op on `cond`: the locals defined before it that `body`
  /// assigns are its results (the yielded values when `cond` holds, their
  /// values before it otherwise).
  void one_branch(int cond, const std::vector<StmtPtr> &body, SourceRange loc) {
    std::set<int> carried_set;
    assigned(body, carried_set);
    std::vector<int> carried;
    for (int i : carried_set)
      if (i >= 0 && size_t(i) < locals_.size() && locals_[size_t(i)] >= 0)
        carried.push_back(i);
    TOp op = make(TileOpKind::If, loc, {cond});
    std::vector<int> before;
    for (int i : carried) {
      before.push_back(locals_[size_t(i)]);
      op.operands.push_back(locals_[size_t(i)]);
    }
    std::vector<TOp> *outer = cur_;
    std::map<std::string, int> outer_reads = reads_;
    cur_ = &op.body;
    stmts(body);
    reads_ = std::move(outer_reads);
    TOp y = make(TileOpKind::Yield, loc);
    for (int i : carried)
      y.operands.push_back(locals_[size_t(i)]);
    cur_->push_back(std::move(y));
    cur_ = outer;
    for (size_t j = 0; j < carried.size(); ++j) {
      const TValue b = val(before[j]);
      int r = new_value(b.elem, b.shape, b.index);
      op.results.push_back(r);
      locals_[size_t(carried[j])] = r;
    }
    cur_->push_back(std::move(op));
  }

  void loop(const Stmt &s) {
    std::set<int> carried_set;
    assigned(s.body, carried_set);
    std::vector<int> carried;
    for (int i : carried_set)
      if (i >= 0 && size_t(i) < locals_.size() && locals_[size_t(i)] >= 0)
        carried.push_back(i);
    bind_reads(s.lo.get());
    bind_reads(s.hi.get());
    TOp op = make(TileOpKind::For, s.range);
    op.var = s.name;
    op.lo = s.lo->sym;
    op.hi = s.hi->sym;
    if (s.step)
      op.step = static_int(p_, *s.step).value_or(1);
    for (int i : carried) {
      int init = locals_[size_t(i)];
      op.operands.push_back(init);
      int arg = new_value(val(init).elem, val(init).shape, val(init).index);
      op.block_args.push_back(arg);
      locals_[size_t(i)] = arg;
    }
    std::vector<TOp> *outer = cur_;
    std::map<std::string, int> outer_reads = reads_;
    cur_ = &op.body;
    stmts(s.body);
    reads_ = std::move(outer_reads);
    TOp y = make(TileOpKind::Yield, s.range);
    for (int i : carried)
      y.operands.push_back(locals_[size_t(i)]);
    cur_->push_back(std::move(y));
    cur_ = outer;
    for (size_t j = 0; j < carried.size(); ++j) {
      int arg = op.block_args[j];
      int r = new_value(val(arg).elem, val(arg).shape, val(arg).index);
      op.results.push_back(r);
      locals_[size_t(carried[j])] = r;
    }
    cur_->push_back(std::move(op));
  }

  /// Result shape and element type of a checked expression.
  static std::vector<int64_t> shape_of(const Expr &e) {
    return e.type.is_tile() ? e.type.tile_shape : std::vector<int64_t>{};
  }

  int binary(BinOp op, int a, int c, const std::vector<int64_t> &shape, ElemType elem,
             SourceRange loc) {
    static const char *names[] = {"add", "sub", "mul", "div", "mod",  "eq",  "ne",   "lt",  "le",
                                  "gt",  "ge",  "and", "or",  "band", "bor", "bxor", "shl", "shr"};
    static_assert(sizeof(names) / sizeof(names[0]) == size_t(BinOp::Shr) + 1,
                  "a name for every BinOp (ast/kinds.def order)");
    std::string name = names[int(op)];
    if (op == BinOp::Add || op == BinOp::Sub || op == BinOp::Mul || op == BinOp::Div ||
        op == BinOp::Mod || op == BinOp::BitAnd || op == BinOp::BitOr || op == BinOp::BitXor ||
        op == BinOp::Shl || op == BinOp::Shr) {
      a = coerce(a, shape, elem, loc);
      c = coerce(c, shape, elem, loc);
      return emit(make(TileOpKind::Binary, loc, {a, c}, name), elem, shape);
    }
    ElemType common = op == BinOp::And || op == BinOp::Or ? ElemType::Bool
                      : val(a).is_tile() || !val(a).index ? val(a).elem
                                                          : val(c).elem;
    if (val(a).index && val(c).index)
      common = ElemType::I64;
    a = coerce(a, shape, common, loc);
    c = coerce(c, shape, common, loc);
    return emit(make(TileOpKind::Compare, loc, {a, c}, name), ElemType::Bool, shape);
  }

  void untiled(const std::string &what) {
    if (f_.untiled.empty())
      f_.untiled = what;
  }

  /// Emits a rank-0 load for every element read of tensor data in index
  /// expression `e` (`kv_len[b]`, `offset[e] + m * TM`) not loaded in this
  /// scope yet, inner reads first; each binds the symbol sema named it by
  /// (its `attr`), so the Syms that mention it stay symbolic.
  void bind_reads(const Expr *e) {
    if (!e || e->type.is_tile())
      return;
    for (const ExprPtr &a : e->args)
      bind_reads(a.get());
    if (e->kind != ExprKind::Index || !e->reads_data || !e->sym || e->args.empty())
      return;
    std::string name = e->sym->str();
    if (reads_.count(name))
      return;
    const Expr &tn = *e->args[0];
    TOp op = make(TileOpKind::Load, e->range, {}, name);
    op.tensor = tn.ref_index;
    op.tensor_name = tn.name;
    op.barrier_before = e->barrier_before;
    for (size_t d = 1; d < e->args.size(); ++d) {
      SlicePart part;
      part.at = e->args[d]->sym;
      op.parts.push_back(part);
    }
    ElemType elem = op.tensor >= 0 && size_t(op.tensor) < k_.tensors.size()
                        ? k_.tensors[size_t(op.tensor)].type.elem
                        : ElemType::I64;
    reads_[name] = emit(op, elem, {});
  }

  int index_value(const Expr &e) {
    bind_reads(&e);
    TOp op = make(TileOpKind::Index, e.range, {}, e.sym ? e.sym->str() : "?");
    op.sym = e.sym;
    if (!e.sym)
      untiled("an index that reads data");
    return emit(op, ElemType::I64, {}, true);
  }

  int constant(double v, ElemType elem, SourceRange loc) {
    return emit(make(TileOpKind::Const, loc, {}, number(v)), elem, {});
  }
  /// An integer literal: its digits for an integer type (every bit of an
  /// i64), else the float it converts to.
  int constant(int64_t v, ElemType elem, SourceRange loc) {
    if (is_float(elem))
      return constant(double(v), elem, loc);
    return emit(make(TileOpKind::Const, loc, {}, std::to_string(v)), elem, {});
  }

  int value(const Expr &e) {
    if (e.type.kind == TypeKind::Index)
      return index_value(e);
    ElemType want = e.type.kind == TypeKind::Unknown ? ElemType::F32 : e.type.elem;
    switch (e.kind) {
    case ExprKind::IntLit:
      return constant(int64_t(e.int_value), want, e.range);
    case ExprKind::FloatLit:
      return constant(e.float_value, want, e.range);
    case ExprKind::Name:
      if (e.ref == NameRef::Local && locals_[size_t(e.ref_index)] >= 0)
        return locals_[size_t(e.ref_index)];
      if (e.ref == NameRef::Builtin)
        return constant(INFINITY, ElemType::F32, e.range);
      if (e.ref == NameRef::Scalar && e.ref_index >= 0 &&
          size_t(e.ref_index) < k_.scalars.size()) // a scalar parameter: `const $name`
        return emit(make(TileOpKind::Const, e.range, {}, "$" + e.name),
                    k_.scalars[size_t(e.ref_index)].elem, {});
      if (e.ref == NameRef::Const)
        return constant(p_.consts[size_t(e.ref_index)].float_folded, want, e.range);
      return index_value(e);
    case ExprKind::Unary: {
      if (e.args[0]->kind == ExprKind::Name && e.args[0]->ref == NameRef::Builtin &&
          e.un_op == UnOp::Neg)
        return constant(-INFINITY, ElemType::F32, e.range);
      int a = coerce(value(*e.args[0]), shape_of(e), want, e.range);
      const char *name = e.un_op == UnOp::Neg ? "neg" : e.un_op == UnOp::Not ? "not" : "bnot";
      return emit(make(TileOpKind::Unary, e.range, {a}, name), want, shape_of(e));
    }
    case ExprKind::Binary: {
      // Left operand first: argument evaluation order is unspecified (gcc and
      // clang differ), and the dump must be the same with either compiler.
      int lhs = value(*e.args[0]);
      int rhs = value(*e.args[1]);
      return binary(e.bin_op, lhs, rhs, shape_of(e), want, e.range);
    }
    case ExprKind::Index: // an element read of a float tensor: a rank-0 load
      return memory(e, e, nullptr);
    case ExprKind::Call:
      return call(e, want);
    default:
      untiled("an expression the tile IR has no op for");
      return constant(int64_t(0), want, e.range);
    }
  }

  static bool is_gather(const Expr &c) { return c.kind != ExprKind::Range && c.type.is_tile(); }

  /// A load (value == nullptr) or store of slice `ix`.
  int memory(const Expr &call, const Expr &ix, const Expr *stored) {
    TOp op = make(stored ? TileOpKind::Store : TileOpKind::Load, call.range);
    std::vector<int64_t> shape = stored ? ix.type.tile_shape : shape_of(call);
    if (!slice(op, call, ix, shape))
      return stored ? -1 : constant(int64_t(0), ElemType::F32, call.range);
    ElemType elem =
        op.tensor >= 0 ? loaded_elem(k_.tensors[size_t(op.tensor)].type.elem) : ElemType::F32;
    if (stored) {
      int v = coerce(value(*stored), shape, elem, stored->range);
      op.operands.insert(op.operands.begin(), v);
      cur_->push_back(std::move(op));
      return -1;
    }
    if (const KwArg *pad = find_kwarg(call, "pad")) {
      if (std::optional<std::string> c = pad_constant(*pad->value)) {
        op.pad = *c;
      } else { // evaluated here, a scalar of the loaded type
        op.pad_value = coerce(value(*pad->value), {}, elem, pad->value->range);
        op.operands.push_back(op.pad_value);
      }
    }
    return emit(op, elem, shape);
  }

  /// atomic_add/_max/_min/_cas(slice, v[, desired], mask=): an `atomic`
  /// op whose operands start with the values at the slice's shape and the
  /// tensor's type; its result (the old values) only when the call is used
  /// as a value (sema leaves a statement's type unknown).
  int atomic(const Expr &call) {
    static const std::pair<Builtin, const char *> kinds[] = {{Builtin::AtomicAdd, "add"},
                                                             {Builtin::AtomicMax, "max"},
                                                             {Builtin::AtomicMin, "min"},
                                                             {Builtin::AtomicCas, "cas"}};
    TOp op = make(TileOpKind::Atomic, call.range);
    for (const auto &[f, name] : kinds)
      if (call.builtin == f)
        op.attr = name;
    const Expr &ix = *call.args.at(0);
    std::vector<int64_t> shape = ix.type.tile_shape;
    if (!slice(op, call, ix, shape))
      return -1;
    ElemType elem = op.tensor >= 0 ? k_.tensors[size_t(op.tensor)].type.elem : ElemType::F32;
    std::vector<int> vals;
    for (size_t i = 1; i < call.args.size(); ++i)
      vals.push_back(coerce(value(*call.args[i]), shape, elem, call.args[i]->range));
    op.operands.insert(op.operands.begin(), vals.begin(), vals.end());
    if (call.type.kind == TypeKind::Unknown) { // a statement: no old values
      cur_->push_back(std::move(op));
      return -1;
    }
    return emit(op, elem, shape);
  }

  /// The tensor, slice parts (gathers as operands) and mask of a load,
  /// store or atomic of slice `ix` with tile shape `shape`; false (after
  /// untiled()) for a slice that is not `x[...]`.
  bool slice(TOp &op, const Expr &call, const Expr &ix, const std::vector<int64_t> &shape) {
    const Expr &tn = *ix.args[0];
    op.tensor = tn.ref_index;
    op.tensor_name = tn.name;
    op.barrier_before = call.barrier_before;
    if (ix.kind != ExprKind::Index) { // a whole tensor named as a slice: not reached
      untiled("a slice that is not x[...]");
      op.tensor = -1;
      return false;
    }
    int gather_dim = -1, next_dim = 0;
    for (size_t d = 1; d < ix.args.size(); ++d) {
      const Expr &c = *ix.args[d];
      SlicePart part;
      if (is_gather(c)) {
        part.kind = SlicePart::Gather;
        part.gather = value(c);
        if (gather_dim < 0)
          gather_dim = next_dim++;
        part.tile_dim = gather_dim;
        op.operands.push_back(part.gather);
      } else if (c.kind == ExprKind::Range) {
        bind_reads(c.args[0].get());
        part.kind = SlicePart::Range;
        part.at = c.args[0]->sym;
        part.tile_dim = next_dim++;
        part.n = size_t(part.tile_dim) < shape.size() ? shape[size_t(part.tile_dim)] : 0;
      } else {
        bind_reads(&c);
        part.at = c.sym;
      }
      op.parts.push_back(part);
    }
    if (const KwArg *m = find_kwarg(call, "mask")) {
      int mv = value(*m->value);
      op.mask = coerce(mv, shape, val(mv).index ? ElemType::I64 : val(mv).elem, m->value->range);
      op.operands.push_back(op.mask);
    }
    return true;
  }

  /// A pad= that is a constant, as its text (every bit kept); none for
  /// any other scalar (the load takes it as an operand, pad_value).
  std::optional<std::string> pad_constant(const Expr &e) {
    if (e.kind == ExprKind::FloatLit)
      return number(e.float_value);
    if (e.kind == ExprKind::IntLit)
      return std::to_string(e.int_value);
    if (e.kind == ExprKind::Name && e.ref == NameRef::Builtin)
      return "inf";
    if (e.kind == ExprKind::Unary && e.un_op == UnOp::Neg)
      if (std::optional<std::string> c = pad_constant(*e.args[0]))
        return "-" + *c;
    if (e.kind == ExprKind::Name && e.ref == NameRef::Const) {
      const ConstDecl &c = p_.consts[size_t(e.ref_index)];
      return c.is_float ? number(c.float_folded) : std::to_string(c.folded);
    }
    return std::nullopt;
  }

  /// A reduction along op.axis of `a`: the operand's shape without that
  /// axis; sema types a rank-1 reduction as a [1] tile, an expand of the
  /// scalar.
  int reduced(TOp op, int a, ElemType elem, const std::vector<int64_t> &shape) {
    std::vector<int64_t> s = val(a).shape;
    if (op.axis >= 0 && size_t(op.axis) < s.size())
      s.erase(s.begin() + op.axis);
    SourceRange loc = op.loc;
    int r = emit(std::move(op), elem, s);
    if (s.empty() && shape == std::vector<int64_t>{1}) {
      TOp x = make(TileOpKind::Expand, loc, {r});
      x.axis = 0;
      r = emit(x, elem, shape);
    }
    return r;
  }

  int axis_of(const Expr &e, size_t rank, bool expand) {
    const KwArg *ax = find_kwarg(e, "axis");
    int64_t a = ax ? static_int(p_, *ax->value).value_or(0) : 0;
    if (a < 0)
      a += int64_t(rank) + (expand ? 1 : 0);
    return int(a);
  }

  int call(const Expr &e, ElemType want) {
    const Builtin f = e.builtin;
    std::vector<int64_t> shape = shape_of(e);
    auto arg = [&](size_t i) { return value(*e.args.at(i)); };
    if (is_unary_math_fn(f) || f == Builtin::Abs) { // one map op each
      int a = coerce(arg(0), shape, want, e.range);
      return emit(make(TileOpKind::Unary, e.range, {a}, builtin_name(f)), want, shape);
    }
    switch (f) {
    case Builtin::Load:
      return memory(e, *e.args.at(0), nullptr);
    case Builtin::Store:
      return memory(e, *e.args.at(0), e.args.at(1).get());
    case Builtin::AtomicAdd:
    case Builtin::AtomicMax:
    case Builtin::AtomicMin:
    case Builtin::AtomicCas:
      return atomic(e);
    case Builtin::Zeros:
      return coerce(constant(int64_t(0), want, e.range), shape, want, e.range);
    case Builtin::Full:
      return coerce(arg(0), shape, want, e.range);
    case Builtin::Cast:
      return coerce(arg(0), shape, want, e.range);
    case Builtin::Pow: { // float operands at the result's type (sema: both float)
      int x = coerce(arg(0), shape, want, e.range);
      int y = coerce(arg(1), shape, want, e.range);
      return emit(make(TileOpKind::Binary, e.range, {x, y}, "pow"), want, shape);
    }
    case Builtin::Sum:
    case Builtin::Max:
    case Builtin::Min: {
      if (e.args.size() == 2) {
        BinOp op = BinOp::Add;
        int a = coerce(arg(0), shape, want, e.range), c = coerce(arg(1), shape, want, e.range);
        (void)op;
        return emit(make(TileOpKind::Binary, e.range, {a, c}, builtin_name(f)), want, shape);
      }
      int a = arg(0);
      if (!find_kwarg(e, "axis")) { // sum(t): every axis, last first
        while (val(a).is_tile()) {
          std::vector<int64_t> s = val(a).shape;
          s.pop_back();
          TOp op = make(TileOpKind::Reduce, e.range, {a}, builtin_name(f));
          op.axis = int(val(a).shape.size()) - 1;
          a = emit(op, want, s);
        }
        return a;
      }
      TOp op = make(TileOpKind::Reduce, e.range, {a}, builtin_name(f));
      op.axis = axis_of(e, val(a).shape.size(), false);
      return reduced(op, a, want, shape);
    }
    case Builtin::Argmax:
    case Builtin::Argmin:
    case Builtin::Cumsum: {
      int a = arg(0);
      TOp op = make(f == Builtin::Cumsum ? TileOpKind::Scan : TileOpKind::ArgReduce, e.range, {a},
                    f == Builtin::Argmax   ? "argmax"
                    : f == Builtin::Argmin ? "argmin"
                                           : "cumsum");
      op.axis = axis_of(e, val(a).shape.size(), false);
      if (f == Builtin::Cumsum)
        return emit(op, want, shape);
      return reduced(op, a, want, shape);
    }
    case Builtin::Expand: {
      int a = arg(0);
      TOp op = make(TileOpKind::Expand, e.range, {a});
      op.axis = axis_of(e, val(a).shape.size(), true);
      return emit(op, val(a).elem, shape);
    }
    case Builtin::Select: {
      int c = coerce(arg(0), shape, ElemType::Bool, e.range);
      int a = coerce(arg(1), shape, want, e.range), b = coerce(arg(2), shape, want, e.range);
      return emit(make(TileOpKind::Select, e.range, {c, a, b}), want, shape);
    }
    case Builtin::Arange:
      return emit(make(TileOpKind::Arange, e.range), want, shape);
    case Builtin::Popc: // i32 or i64 operand, i32 count
      return emit(make(TileOpKind::Unary, e.range, {arg(0)}, "popc"), want, shape);
    case Builtin::Dot: { // attr: the precision when not the default ("tf32")
      const KwArg *pr = find_kwarg(e, "precision");
      std::string p = pr && pr->value && pr->value->kind == ExprKind::Name ? pr->value->name : "";
      int a = arg(0);
      return emit(make(TileOpKind::Dot, e.range, {a, arg(1)}, p == "ieee" ? "" : p), want, shape);
    }
    case Builtin::Transpose:
      return emit(make(TileOpKind::Transpose, e.range, {arg(0)}), want, shape);
    case Builtin::Reshape:
      return emit(make(TileOpKind::Reshape, e.range, {arg(0)}), want, shape);
    default:
      untiled(std::string("builtin ") + builtin_name(f));
      return constant(int64_t(0), want, e.range);
    }
  }
};

} // namespace

TileModule build_tile_ir(const KernelDecl &k, const TaskGraph &g, const Program &p,
                         unsigned threads) {
  TileModule m;
  m.kernel = k.name;
  m.threads = threads;
  for (const TaskGroup &grp : g.groups) {
    if (!grp.decl)
      continue;
    TileFunc f;
    f.name = grp.name;
    f.vars = grp.vars;
    Builder(k, p, f).task(*grp.decl);
    m.funcs.push_back(std::move(f));
  }
  return m;
}

} // namespace etl
