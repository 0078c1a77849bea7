//===- sema/check.h - Names, types and symbolic shapes --------------------===//
//
// What this owns: deciding whether a parsed program means something. It
// resolves names, folds constants, types every expression (index, scalar,
// tile with a static shape, tensor with a symbolic shape), and proves with
// shape/symbolic.h what shapes, slices, extents and event indices require.
// It annotates the AST in place (the fields marked "sema:" in ast/ast.h) and
// reports every problem it finds; errors in one task do not stop the next.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "diag/diag.h"
#include "target/target.h"

#include <string>
#include <vector>

namespace etl {

/// Checks and annotates `p` for the targets of `target` (the shared memory
/// per CTA they allow bounds dot, re-layout and broadcast scratch). Returns
/// false if any error was reported.
bool check_program(Program &p, Diag &diag, const TargetInfo &target);

} // namespace etl
