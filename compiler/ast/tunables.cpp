//===- ast/tunables.cpp - Tunable constants: values and constraints ------===//
#include "ast/tunables.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace etl {
namespace {

std::optional<int64_t> fail(const Expr &e, const std::string &msg, std::string &why,
                            const Expr *&at) {
  why = msg;
  at = &e;
  return std::nullopt;
}

} // namespace

std::optional<int64_t> eval_constraint(const Expr &e, const ConstLookup &value, std::string &why,
                                       const Expr *&at) {
  switch (e.kind) {
  case ExprKind::IntLit:
    return e.int_value;
  case ExprKind::Name:
    if (auto v = value(e.name))
      return v;
    return fail(e, "'" + e.name + "' is not an integer const", why, at);
  case ExprKind::Unary: {
    auto a = eval_constraint(*e.args[0], value, why, at);
    if (!a)
      return a;
    if (e.un_op == UnOp::Neg && *a != std::numeric_limits<int64_t>::min())
      return -*a;
    if (e.un_op == UnOp::Not)
      return int64_t(*a == 0);
    return fail(e, "this operator is not allowed", why, at);
  }
  case ExprKind::Binary: {
    auto a = eval_constraint(*e.args[0], value, why, at);
    if (!a)
      return a;
    // && and || short-circuit, so `TK > 0 && K % TK == 0` never divides by 0.
    if (e.bin_op == BinOp::And && !*a)
      return int64_t(0);
    if (e.bin_op == BinOp::Or && *a)
      return int64_t(1);
    auto b = eval_constraint(*e.args[1], value, why, at);
    if (!b)
      return b;
    int64_t x = *a, y = *b, r = 0;
    switch (e.bin_op) {
    case BinOp::Add:
      if (__builtin_add_overflow(x, y, &r))
        return fail(e, "it overflows 64 bits", why, at);
      return r;
    case BinOp::Sub:
      if (__builtin_sub_overflow(x, y, &r))
        return fail(e, "it overflows 64 bits", why, at);
      return r;
    case BinOp::Mul:
      if (__builtin_mul_overflow(x, y, &r))
        return fail(e, "it overflows 64 bits", why, at);
      return r;
    case BinOp::Div:
    case BinOp::Mod:
      if (y <= 0 || x < 0)
        return fail(e, "it divides a negative number, or by a number <= 0", why, at);
      return e.bin_op == BinOp::Div ? x / y : x % y;
    case BinOp::Eq:
      return int64_t(x == y);
    case BinOp::Ne:
      return int64_t(x != y);
    case BinOp::Lt:
      return int64_t(x < y);
    case BinOp::Le:
      return int64_t(x <= y);
    case BinOp::Gt:
      return int64_t(x > y);
    case BinOp::Ge:
      return int64_t(x >= y);
    case BinOp::And:
    case BinOp::Or:
      return int64_t(y != 0);
    default:
      return fail(e, "this operator is not allowed", why, at);
    }
  }
  default:
    return fail(e, "this expression is not allowed", why, at);
  }
}

std::vector<std::string> constraint_names(const Expr &e) {
  std::vector<std::string> r;
  std::function<void(const Expr &)> walk = [&](const Expr &x) {
    if (x.kind == ExprKind::Name && std::find(r.begin(), r.end(), x.name) == r.end())
      r.push_back(x.name);
    for (const ExprPtr &a : x.args)
      if (a)
        walk(*a);
  };
  walk(e);
  return r;
}

std::string format_float_const(double v) {
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  return buf;
}

} // namespace etl
