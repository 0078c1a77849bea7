//===- ast/builtins.h - The builtin functions, from builtins.def ----------===//
//
// What this owns: the Builtin enum (one value per line of ast/builtins.def)
// and the lookups between an enum value and its spelling. Sema stores the
// builtin a call resolves to in Expr::builtin; later stages switch on it and
// never compare callee names.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

namespace etl {

enum class Builtin {
  None, ///< not a builtin (before sema, or an unknown function)
#define ETL_BUILTIN(E, NAME, WHAT) E,
#include "ast/builtins.def"
};

/// The builtin spelled `name`, or Builtin::None.
Builtin find_builtin(const std::string &name);
/// The spelling of `b` ("" for None).
const char *builtin_name(Builtin b);
/// Every builtin's spelling, in builtins.def order (for "did you mean").
const std::vector<std::string> &builtin_names();
/// cdiv, min and max: with two index arguments they compute an index (and
/// may appear in shapes, ranges and event indices).
inline bool is_index_fn(Builtin b) {
  return b == Builtin::Cdiv || b == Builtin::Min || b == Builtin::Max;
}

/// The float math functions of one argument (exp .. rsqrt, sin .. round):
/// f32/f16/bf16 in, the same type out (compiler/lower/lower_math.cpp).
inline bool is_unary_math_fn(Builtin b) {
  switch (b) {
  case Builtin::Exp:
  case Builtin::Log:
  case Builtin::Sqrt:
  case Builtin::Rsqrt:
  case Builtin::Sin:
  case Builtin::Cos:
  case Builtin::Tanh:
  case Builtin::Erf:
  case Builtin::Floor:
  case Builtin::Ceil:
  case Builtin::Round:
    return true;
  default:
    return false;
  }
}

/// The atomic read-modify-writes of tensor elements (atomic_add, _max,
/// _min, _cas): a statement, or a value (the elements' old values).
inline bool is_atomic_fn(Builtin b) {
  return b == Builtin::AtomicAdd || b == Builtin::AtomicMax || b == Builtin::AtomicMin ||
         b == Builtin::AtomicCas;
}

} // namespace etl
