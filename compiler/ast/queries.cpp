//===- ast/queries.cpp - Small read-only questions about checked nodes ----===//
//
// Helpers the later stages (tile IR builder, lowering) ask of an annotated
// tree: a call's keyword argument by name, the compile-time integer an
// axis or extent expression stands for, the tensor a slice names, and the
// tensors a kernel's tasks write.
//
//===----------------------------------------------------------------------===//
#include "ast/ast.h"

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

namespace {

void collect_written(const Expr &e, std::set<int> &out) {
  if (e.kind == ExprKind::Call && (e.builtin == Builtin::Store || is_atomic_fn(e.builtin))) {
    int t = e.args.empty() || !e.args[0] ? -1 : slice_tensor(*e.args[0]);
    // A store whose target we cannot name: every tensor may be written.
    out.insert(t);
  }
  for (const ExprPtr &a : e.args)
    if (a)
      collect_written(*a, out);
  for (const KwArg &k : e.kwargs)
    if (k.value)
      collect_written(*k.value, out);
}

void collect_written(const std::vector<StmtPtr> &body, std::set<int> &out) {
  for (const StmtPtr &s : body) {
    for (const ExprPtr *x : {&s->value, &s->lo, &s->hi, &s->step})
      if (*x)
        collect_written(**x, out);
    collect_written(s->body, out);
    collect_written(s->else_body, out);
  }
}

} // namespace

std::set<int> written_tensors(const KernelDecl &k) {
  std::set<int> out;
  for (const TaskDecl &t : k.tasks)
    collect_written(t.body, out);
  return out;
}

} // namespace etl
