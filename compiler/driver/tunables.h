//===- driver/tunables.h - `--emit=tunables`: a program's tunable consts --===//
//
// What this owns: the listing of a program's tunable consts after sema
// (`const TK = 64 in [16, 32, 64, 128] where ...;`, grammar/REFERENCE.md
// section 1): per tunable its value in this compilation (the default, or
// pinned by -D / --variant), the default, the candidates and its
// constraints, then how many candidate combinations the constraints allow.
// The count evaluates the constraints with the other consts at their values
// in this compilation (a const computed from a tunable is not recomputed).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "diag/source.h"

#include <string>

namespace etl {

/// The `--emit=tunables` text of a checked program.
std::string print_tunables(const Program &p, const SourceManager &sm);

} // namespace etl
