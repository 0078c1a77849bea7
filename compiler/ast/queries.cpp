//===- ast/queries.cpp - Small read-only questions about checked nodes ----===//
//
// Helpers the later stages (tile IR builder, lowering) ask of an annotated
// tree: a call's keyword argument by name, and the compile-time integer an
// axis or extent expression stands for.
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

} // namespace etl
