//===- ast/tunables.h - Tunable constants: values and constraints --------===//
//
// What this owns: evaluating a tunable's `where` constraints
// (`const TN = 64 in [32, 64, 128] where TM * TN <= 16384;`) for given
// values of the program's consts, and formatting a const's value. Sema
// checks the constraints at the values a compilation uses
// (sema/check_tunables.cpp); `--emit=tunables` (driver/tunables.cpp)
// counts the candidate combinations they allow.
//
// A constraint is an integer condition over consts: literals, const names,
// + - * / % (division and remainder of non-negative operands), comparisons,
// !, && and ||. Anything else is not a constraint (`why` says what).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace etl {

/// The value of a const by name, or nullopt when `name` is no integer const.
using ConstLookup = std::function<std::optional<int64_t>(const std::string &name)>;

/// `e` evaluated with `value` for the consts it names (a condition: 1 or
/// 0). nullopt with `why` set, and `at` the offending sub-expression, when
/// `e` is not an integer expression over consts or divides by zero.
std::optional<int64_t> eval_constraint(const Expr &e, const ConstLookup &value, std::string &why,
                                       const Expr *&at);

/// The const names `e` mentions, in order of first appearance.
std::vector<std::string> constraint_names(const Expr &e);

/// A float const's value as etlc prints it (shortest round-trip text).
std::string format_float_const(double v);

} // namespace etl
