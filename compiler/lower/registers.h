//===- lower/registers.h - Registers a task's tiles need ------------------===//
//
// What this owns: the estimate, before code generation, of how many
// registers per thread a task body keeps busy with tile elements, and the
// warning when that is more than the target gives a thread (ptxas would
// spill to local memory). The estimate reads the body's tile IR after
// layout assignment (the IR the back end lowers): a value holds its
// layout's registers per thread (Layout::num_regs, two for 8-byte
// elements), live from its op to its last use (to the end of a loop that
// uses it when defined outside); a dot's result is its accumulators, an
// operand staged in shared memory takes none, renamings (broadcast,
// transpose, expand) share their operand's, and an elementwise value read
// only by elementwise ops and stores of its body is computed where it is
// read. The need is 5/4 of the busiest op's sum: addresses, bounds and
// loop counters beside the values (one address per vector access).
// Calibrated with `ptxas -v` on sm_80 and sm_90 over every example and
// the runtime and PTX test programs (grammar/REFERENCE.md section 18):
// none of them spills and none is warned about; the test programs that
// spill (registers_test's four live [128, 128] loads, 256 tile registers;
// tests/unit/target/mma_hoist_budget.etl, 292) are.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "diag/diag.h"
#include "target/target.h"
#include "tile/ir.h"

#include <string>
#include <vector>

namespace etl {

/// A RegisterSpill warning at each task of `k` whose register_need exceeds
/// what a thread has on some GPU target of `target` (target/target.h,
/// TargetInfo::register_limit), from its body in `tiles` (layouts
/// assigned); sim has no register file and is never warned about.
void warn_register_spills(const KernelDecl &k, unsigned threads, const TargetInfo &target,
                          Diag &diag, const TileModule &tiles);

/// The registers per thread a body needs whose tile values keep
/// `tile_regs` live (tile_ir_registers): 5/4 of them.
int64_t register_need(int64_t tile_regs);

/// Registers per thread the tile values of `f` keep live at its busiest
/// op, from their layouts (Layout::num_regs).
int64_t tile_ir_registers(const TileFunc &f);

} // namespace etl
