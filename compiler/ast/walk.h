//===- ast/walk.h - Visiting every node of a checked body -------*- C++ -*-===//
//
// Pre-order walks over expressions and statement lists, for the passes that
// look for a pattern anywhere in a body (inlining's renames, the mma
// lowerings' operand and loop checks). Defined in ast/queries.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef ETL_AST_WALK_H
#define ETL_AST_WALK_H

#include "ast/ast.h"

#include <functional>
#include <vector>

namespace etl {

/// Calls `f` on `e` (nothing when null) and then on every expression under
/// it: call arguments, keyword values and shape arguments.
void walk_expr(const Expr *e, const std::function<void(const Expr &)> &f);

/// Calls `on_stmt` on every statement of `body`, nested ones included, each
/// before its children, and `on_expr` (walk_expr) on the value, range and
/// step expressions of each.
void walk_body(const std::vector<StmtPtr> &body, const std::function<void(const Stmt &)> &on_stmt,
               const std::function<void(const Expr &)> &on_expr);

} // namespace etl

#endif // ETL_AST_WALK_H
