//===- tile/passes.h - The passes over the tile IR ------------------------===//
//
// What this owns: the entry points the driver calls after build_tile_ir
// (tile/ir.h): the layout pass and the verifier.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "diag/diag.h"
#include "tile/ir.h"

#include <string>
#include <vector>

namespace etl {

/// The memory facts of every load and store (contiguity, alignment from the
/// `where` facts and slice offsets, in-bounds tiles, read-only tensors),
/// their vector widths, and a NarrowAccess remark where a missing `where`
/// fact forced narrow accesses.
void analyse_memory(TileModule &m, const KernelDecl &k, const TaskGraph &g, Diag &diag);

/// Picks a layout for every tile value (TILE-IR.md (c)): anchors at loads
/// (coalesced, `vec` elements per thread on the contiguous dim), `dot`
/// (FMA operand layouts) and stores of values that can take any layout;
/// forward propagation (elementwise ops keep a layout, reductions give the
/// slice layout, expand/broadcast/splat/arange take their users' layout);
/// a convert_layout (or a clone of a splat/arange) only where a use needs
/// another layout than its operand has. Runs analyse_memory first if needed.
void assign_layouts(TileModule &m, const KernelDecl &k, const TaskGraph &g, Diag &diag);

/// Every rule of every op (operands defined before use, shapes, element
/// types; after assignment: every tile value has a layout of its shape that
/// covers the tile, and each op's layout rule). Empty when the IR is valid.
std::vector<std::string> verify_tile(const TileModule &m);

} // namespace etl
