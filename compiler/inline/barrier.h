//===- inline/barrier.h - The barrier baseline (`--events=barrier`) -------===//
//
// What this owns: rewriting a program's fine-grained event edges into
// whole-group barriers, the "unfused megakernel" baseline the benefit of
// event tensors is measured against (same tile code, same groups, coarser
// synchronisation). Runs after inline_fns and before sema, on the AST:
//
//   task P[i ..] notifies E[i] { .. }          task P[i ..] notifies P.all[0] { .. }
//   task C[j ..] waits E[j]   { .. }     =>    task C[j ..] waits P.all[0] { .. }
//
// For every group C and every `waits E[...]` of C: each group P != C that
// notifies E gets one event `P.all[1]` (declared once) that every task of P
// notifies, and the wait is replaced by `waits P.all[0]` for each such P
// (deduplicated): C's tasks start only when every task of every group they
// depend on is done. A wait on an event C notifies itself (a chain within a
// group, such as a block-wise scan) is kept as written, since a group cannot
// wait for all of its own tasks. An event no task waits on any more is
// removed with its `notifies` clauses, so the baseline pays for no
// fine-grained notification. Event names containing '.' cannot clash
// with the program's identifiers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"

namespace etl {

/// Rewrites every kernel of `p` as above. Returns the number of wait clauses
/// replaced.
int make_barrier_events(Program &p);

} // namespace etl
