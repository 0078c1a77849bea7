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

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace etl {

struct CompileOptions; // driver/pipeline.h

/// One value per tunable (name, value as text), in declaration order.
using TunableChoice = std::vector<std::pair<std::string, std::string>>;

/// Every combination of the tunables' candidates that the constraints
/// allow (the other consts at their values in `p`); `total` is the number
/// of combinations. nullopt when there are more than `limit`.
std::optional<std::vector<TunableChoice>> allowed_combinations(const Program &p, uint64_t &total,
                                                              uint64_t limit);

/// `etlc tune`: per allowed combination, a compilation up to the task graph
/// (`opts` with the combination's values as -D); a combination whose
/// compilation fails (shared memory over the budget, a constraint) or that
/// warns of register spills is pruned, saying why. Ranking the rest is not
/// implemented yet. Returns the exit code.
int tune(const CompileOptions &opts, std::ostream &out, std::ostream &err);

/// The `--emit=tunables` text of a checked program.
std::string print_tunables(const Program &p, const SourceManager &sm);

} // namespace etl
