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

/// `etlc tune`'s options: the compilation's (input, targets, -I, -D pins),
/// the bindings to rank for (`--bind`, one or more), the GPU the timing model
/// ranks on, and the JSON record to write ("": none).
struct TuneOptions {
  explicit TuneOptions(const CompileOptions &c) : compile(c) {}
  const CompileOptions &compile;
  std::vector<std::string> binds;
  std::string gpu = "h200";
  std::string record;
};

/// `etlc tune`: per allowed combination (those -D pins), a compilation up
/// to the task graph with the combination's values as -D; a combination
/// whose compilation fails (shared memory over the budget, a constraint),
/// that warns of register spills or that ptxas says spills is pruned,
/// saying why. With an sm_* target and a --bind, the rest are ranked by the
/// timing model (cost/timing.h) on the first sm_* target's code, per
/// binding, in a table of every candidate; `record` gets the JSON record.
/// Progress goes to `err`. Returns the exit code.
int tune(const TuneOptions &opts, std::ostream &out, std::ostream &err);

/// The `--emit=tunables` text of a checked program.
std::string print_tunables(const Program &p, const SourceManager &sm);

} // namespace etl
