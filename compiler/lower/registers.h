//===- lower/registers.h - Registers a task's tiles need ------------------===//
//
// What this owns: the estimate, before code generation, of how many
// registers per thread a task body keeps busy with tile elements, and the
// warning when that is more than the target gives a thread (ptxas would
// spill to local memory). The estimate follows the lowering's layout
// (lower/lowerer.h): a tile of numel elements takes ceil(numel / T)
// registers per thread (two for 8-byte elements), a `let`/`var` is live from
// its definition to its last use (to the end of a loop that uses it when
// defined outside), and an expression needs its operands and its result at
// once. The need in registers is 7/4 of that: the loads and stores of the
// elements keep addresses and bounds tests live beside the values
// (calibrated with `ptxas -v` on sm_90: five live [64, 64] f32 tiles, 160
// registers a thread at 128 threads, spill; a 128x128 load and its
// transpose, 128, do not; see grammar/REFERENCE.md section 18). ptxas uses
// more where it has them (unrolled index arithmetic), so the estimate errs
// low: it warns only where a spill is all but certain.
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

/// Registers per thread the tiles of task `t` keep live at the busiest
/// point of its body, with `threads` threads per CTA.
int64_t tile_registers(const TaskDecl &t, unsigned threads);

/// The registers per thread task `t` needs: tile_registers * 7 / 4.
int64_t register_need(const TaskDecl &t, unsigned threads);

/// A RegisterSpill warning at each task of `k` whose register_need exceeds
/// what a thread has on some GPU target of `target` (target/target.h,
/// TargetInfo::register_limit); sim has no register file and is never
/// warned about.
/// `tiles` (the tile IR with layouts, or null): a body with tensor-core
/// dots that the tile IR lowers is estimated from its layouts instead
/// (tile_ir_registers, 5/4 of it with the addresses).
void warn_register_spills(const KernelDecl &k, unsigned threads, const TargetInfo &target,
                          Diag &diag, const TileModule *tiles = nullptr);

/// Registers per thread the tile values of `f` keep live at its busiest
/// op, from their layouts (Layout::num_regs).
int64_t tile_ir_registers(const TileFunc &f);

} // namespace etl
