//===- tile/passes.h - The passes over the tile IR ------------------------===//
//
// What this owns: the entry points the driver calls after build_tile_ir
// (tile/ir.h): the layout pass and the verifier.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "diag/diag.h"
#include "target/target.h"
#include "tile/ir.h"

#include <optional>
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

/// A PadNotIdentity warning (with a note at the reduction) for each load
/// whose padding reaches a `max`/`min`/`sum`/`argmax`/`argmin` along a
/// padded axis as something that may change its result (tile/padding.cpp).
/// After analyse_memory (the loads' in-bounds dims).
void warn_pad_reductions(const TileModule &m, Diag &diag);

/// A `for` whose iter_arg adds a cross-thread `reduce sum` of %p each step
/// carries %p's partial sums in %p's layout instead and reduces them once
/// after the loop (tile/sums.cpp: float sums reassociated). After
/// assign_layouts, before pipeline_loops.
void hoist_loop_sums(TileModule &m);

/// Ring stages a pipelined loop takes at most (tile/pipeline.cpp).
constexpr int64_t kMaxStages = 3;
/// Software pipelining (tile/pipeline.cpp), after assign_layouts: the
/// loads of a `for` that read what the body never writes (tensor-core dot
/// operands, and plain tiles) become an S-stage cp.async
/// ring (smem.alloc, async.copy, async.commit, async.wait, barrier,
/// smem.view), S <= kMaxStages, the rings and the body's other staging
/// within the scratch plan_shared gives it on `target`.
/// Returns the loops with tensor-core dots it left as they are, and why.
struct LoopNotPipelined {
  SourceRange loc;
  std::string var, why;
};
std::vector<LoopNotPipelined> pipeline_loops(TileModule &m, const TargetInfo &target);

/// The shared-memory allocator (tile/smem.cpp), after assign_layouts: the
/// buffer each staging op needs (shared_need), its live range over the
/// body, and offsets that let buffers whose ranges are disjoint share
/// bytes. A buffer's trailing barrier is dropped when the bytes it frees
/// can be given to the buffers its reads may race with, within the scratch
/// the body took op by op (its largest buffer). Each body's budget is the
/// scratch `target`'s smem_budget leaves after the header
/// (TileFunc::smem_budget); smem_over_budget reports a body past it.
void plan_shared(TileModule &m, const TargetInfo &target);
/// After plan_shared: does `f`'s scratch (smem_bytes) exceed its budget?
/// Such a body is a resource-limit error (lower/backend.cpp, run_backend);
/// --emit=tile says so under its buffers.
bool smem_over_budget(const TileFunc &f);

/// Bytes of shared memory op `op` of `f` stages through (the lowering's
/// decision: a convert_layout not done in registers or by shuffles, a
/// reduction across warps, an FMA dot's operands), 0 for none; `align`:
/// 128 for the swizzled areas (convert_layout, dot), else 16.
int64_t shared_need(const TileFunc &f, const TOp &op, int64_t &align);
/// The bytes a Reduction-family op (reduce, argreduce, scan) stages through
/// shared memory (0: none, no warp bit along its axis): the cross-warp step
/// of a fold, the largest warp run of a scan (lower/lower_tile_reduce.cpp
/// notes exactly this).
int64_t reduction_scratch_bytes(const TileFunc &f, const TOp &op);

/// The op of `body` (or of a nested body) whose results include value `v`.
const TOp *defining_op(const std::vector<TOp> &body, int v);
/// A `dot` the tile IR runs on tensor cores (tile/mma.cpp): f16 or bf16
/// [M, K] x [K, N], default precision, M % 16 == K % 16 == N % 8 == 0,
/// K <= 256; or f32 with `precision = tf32`, K % 8 == 0, K <= 128 (the
/// layouts cover the shape padded to powers of two).
bool mma_dot(const TileFunc &f, const TOp &op);
/// The K of one mma of such a dot: 16 (m16n8k16), 8 for tf32 (m16n8k8).
int64_t mma_k_step(const TOp &op);
/// A `dot` the tile IR runs on the exact FMA path (lower/lower_tile_dot.cpp,
/// tile/mma.cpp): f32 tiles at the default precision, f16/bf16 ones that
/// tensor cores cannot tile (one row, or a shape off m16n8k16), or f32 ones
/// with `precision = tf32` off m16n8k8 (or one row), on the f32 values
/// their registers hold. `why` (when given) gets the DotFmaPath remark's
/// reason for a 16-bit or tf32 one, empty for the others.
bool fma_dot(const TileFunc &f, const TOp &op, std::string *why = nullptr);
/// How many of `warps` split the columns of such a dot's result: 1 when
/// it feeds another dot's a (a chained dot keeps row blocks per warp, so
/// its P stays in registers), else the fewest that leave no warp a
/// replica, or, for `acc + dot(..)` with acc a
/// loop's iter_arg, the warp tile with the fewest accumulators that hold
/// real elements (a shape that is not a power of two), then the fewest
/// ldmatrix per k16.
unsigned mma_dot_col_warps(const TileFunc &f, const TOp &op, unsigned warps);
/// Its result layout, mma_layout(Acc, [M, N], warps, mma_dot_col_warps);
/// nullopt for any other op.
std::optional<Layout> mma_dot_layout(const TileFunc &f, const TOp &op, unsigned warps);
/// How such a dot (after assign_layouts) stages its operands in its shared
/// buffer: a from registers (in the A layout) or at byte 0, [M, K] swizzled;
/// b at `b_base`, [K, N] or, for a transposed b, [N, K] rows; `bytes` in all.
struct MmaStaging {
  bool ok = false; ///< an mma dot whose result has the accumulator layout
  bool a_regs = false, b_nk = false;
  /// `precision = tf32`: f32 operands, 4 bytes an element, a never in
  /// registers (tile/mma.cpp).
  bool tf32 = false;
  /// An operand that is a ring slot (smem.view, tile/pipeline.cpp): read
  /// where it is, nothing staged for it.
  bool a_view = false, b_view = false;
  int64_t b_base = 0, bytes = 0;
};
MmaStaging mma_staging(const TileFunc &f, const TOp &op);
/// Why such a dot does not run as wgmma.mma_async (empty: it does), after
/// tile/pipeline.cpp made its ring slots: every target of the compilation
/// has wgmma (TileFunc::wgmma); f16/bf16; its accumulator layout is
/// mma_layout(Acc, [M, N], warps, 1) with M = 16 warps (a multiple of 4:
/// warpgroups; warp w owns rows 16w .., all N columns: wgmma's m64nN
/// fragment per warpgroup, which is mma.sync's m16n8 accumulator per warp
/// and n8 tile); N a power of two <= 256; a and b ring slots (smem.view) in
/// wgmma_staging_layout, whose rows are 32, 64 or a multiple of 128
/// bytes. Any other dot lowers by mma.sync in the same layout.
std::string wgmma_gap(const TileFunc &f, const TOp &op);

/// The bytes of one slot of ring `v` (smem.alloc's [S, R, C] or [S, C]
/// result): its elements' bytes, whole 128-byte lines.
int64_t ring_slot_bytes(const TValue &v);
/// smem.alloc's attr for a ring of plain tiles (tile/pipeline.cpp): slots
/// row-major, unswizzled, read back into the registers of the load they
/// replace; an empty attr is a ring of dot operands in the dot's swizzled
/// staging.
inline constexpr const char *kRowMajorRing = "row-major";
/// smem.alloc's and async.copy's attr for a plain ring a target with TMA
/// (TargetInfo::tma) fills by cp.async.bulk.tensor: slots row-major as
/// kRowMajorRing's, (the ring's S mbarriers, 8 bytes each,
/// lie after its slots); the copy's axis is its tensor map
/// (TileModule::tma_maps). A machine without TMA lowers it as kRowMajorRing.
inline constexpr const char *kTmaRing = "tma";
/// Is `attr` a ring of plain tiles (row-major slots)?
inline bool row_major_ring(const std::string &attr) {
  return attr == kRowMajorRing || attr == kTmaRing;
}
/// The ring slot of iteration `e` of `loop` (a `for`) in a ring of
/// `stages` slots: ((e - lo) / step) mod stages (tile/pipeline.cpp's
/// async.copy and smem.view name their slots so; the lowering carries the
/// view's as a counter that wraps).
Sym ring_slot(const TOp &loop, const Sym &e, int64_t stages);

/// Do two buffers' live ranges meet?
bool live_overlap(const SmemBuffer &a, const SmemBuffer &b);

/// First fit by decreasing size: each buffer's offset the lowest multiple
/// of its alignment whose bytes no buffer live with it holds; returns the
/// bytes they take.
int64_t pack_buffers(std::vector<SmemBuffer> &bufs);

/// Every rule of every op (operands defined before use, shapes, element
/// types; after assignment: every tile value has a layout of its shape that
/// covers the tile, and each op's layout rule). Empty when the IR is valid.
std::vector<std::string> verify_tile(const TileModule &m);

} // namespace etl
