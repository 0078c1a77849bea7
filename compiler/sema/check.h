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

#include <string>
#include <vector>

namespace etl {

/// Checks and annotates `p`. Returns false if any error was reported.
/// `smem_limit`: shared memory per CTA the compilation's targets allow
/// (target/target.h, smem_limit_for); 0: the smallest of every target.
bool check_program(Program &p, Diag &diag, unsigned smem_limit = 0);

} // namespace etl
