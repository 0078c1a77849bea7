//===- lower/lower_tile_wgmma.cpp - The tile IR path: dot as wgmma -------===//
//
// What this owns: a tensor-core `dot` that tile/mma.cpp's wgmma_gap lets
// run as Hopper's warpgroup MMA (every target of the compilation has it:
// sm_90a, and sim modelling it), and the wgmma ops tile/pipeline.cpp placed
// around it (wgmma.fence before, wgmma.commit after, wgmma.wait N on the
// registers it accumulates into). Its operands are ring slots in
// wgmma_staging_layout (the copies wrote them so: BodyLowerer::staging16),
// 1024-byte aligned in shared memory (tile/smem.cpp), so each k16 step of
// each operand is one 64-bit shared-memory matrix descriptor built with
// integer ops from the slot's address (Machine::wgmma_smem_addr):
//
//   bits 0-13 (address + offset) >> 4, 16-29 LBO >> 4, 32-45 SBO >> 4,
//   62-63 the swizzle (1: 128 bytes, 2: 64, 3: 32; W below),
//
//   - A [M, K] (K-major): warpgroup g's rows 64g .. at 64g W, the k16 step
//     kk in column block 16kk / (W / 2) (block_bytes apart) at byte
//     2 (16kk % (W / 2)) of the row; SBO = 8 W (8-row groups), LBO unused;
//   - B [K, N] (MN-major, trans-b 1): k rows 16kk .. at 16kk W; LBO =
//     block_bytes (the next W / 2 columns), SBO = 8 W (the next 8 k rows);
//     B [N, K] (the operand of dot(a, transpose(x)): K-major) as A.
//
// The accumulator layout (mma_layout(Acc, [M, N], warps, 1), M = 16 warps)
// is wgmma's m64nN fragment: register 4j + i of the layout (col bit 1, row
// bit 8, then n8 tile j) is register 4j + i of the wgmma, so the value's
// registers are the wgmma's operands and results: nothing moves. One
// wgmma.mma_async m64nNk16 per k16 step per warpgroup, chained on the same
// registers (the hardware orders them; no fence between them), results in
// flight until the wait: Machine::wgmma_mma returns registers only a
// chained wgmma or the wait may take. `acc + dot` with acc in the same
// layout accumulates onto acc (tile_fused), as the mma.sync path does.
//
// Numerics: each wgmma adds its 16 products to each accumulator in k order
// (sim: exact products, f32 sums, runtime/src/sim_wgmma.h), so the K loop
// gives the mma.sync path's bits.
//
//===----------------------------------------------------------------------===//
#include "lower/body_lowerer.h"

#include "target/target.h"

#include "tile/layout.h"
#include "tile/passes.h"

#include <llvm/IR/Constants.h>

namespace etl {

namespace {

/// The descriptor's fixed part: LBO, SBO, the swizzle of W-byte rows.
uint64_t desc_fixed(int64_t w, int64_t lbo, int64_t sbo) {
  const uint64_t swz = w == 128 ? 1 : w == 64 ? 2 : 3;
  return (uint64_t(lbo >> 4) & 0x3FFF) << 16 | (uint64_t(sbo >> 4) & 0x3FFF) << 32 | swz << 62;
}

} // namespace

void BodyLowerer::tile_wgmma_dot(const TOp &op) {
  const MmaStaging st = mma_staging(*tf, op);
  const int ia = op.operands.at(0), ib = op.operands.at(1), ir = op.results.at(0);
  const TValue &av = tf->values[size_t(ia)], &bv = tf->values[size_t(ib)];
  const Layout &lr = layout_of(ir);
  const bool bf16 = av.elem == ElemType::BF16;
  const int64_t M = av.shape[0], K = av.shape[1], N = bv.shape[1];
  const unsigned line = op.loc.begin.line;
  // The slots' shared-memory addresses (ring views: landed before the
  // loop's barrier at the top of this iteration).
  auto slot_addr = [&](int v) {
    const TOp *d = defining_op(tf->body, v);
    if (d && d->kind == TileOpKind::Transpose)
      d = defining_op(tf->body, d->operands.at(0));
    if (!d || d->kind != TileOpKind::SmemView || !tile_views.count(d->results[0]))
      throw LowerError("tile IR wgmma dot whose operand is no ring slot");
    const auto &[off, sb] = tile_rings.at(d->operands.at(0));
    if ((int64_t(kSmemScratch) + off) % 1024 || sb % 1024)
      throw LowerError("tile IR wgmma dot whose ring is not 1024-byte aligned");
    llvm::Value *at = b.CreateAdd(tile_views.at(d->results[0]).first, b.getInt64(kSmemScratch));
    return m.wgmma_smem_addr(b, b.CreateGEP(b.getInt8Ty(), smem, at));
  };
  llvm::Value *a_addr = slot_addr(ia), *b_addr = slot_addr(ib);
  // Warpgroup g's first row of A: 64 g rows of W bytes.
  const SmemLayout la = staging16(M, K);
  const SmemLayout lb = st.b_nk ? staging16(N, K) : staging16(K, N);
  llvm::Value *g = b.CreateLShr(tid, b.getInt32(kLaneBits + 2));
  a_addr = b.CreateAdd(a_addr, b.CreateMul(g, b.getInt32(uint32_t(64 * la.row_bytes))));
  const uint64_t da = desc_fixed(la.row_bytes, 16, 8 * la.row_bytes);
  const uint64_t db = desc_fixed(lb.row_bytes, st.b_nk ? 16 : std::max<int64_t>(lb.block_bytes, 16),
                                 8 * lb.row_bytes);
  auto desc = [&](llvm::Value *addr, int64_t off, uint64_t fixed) {
    llvm::Value *start = b.CreateAnd(b.CreateLShr(b.CreateAdd(addr, b.getInt32(uint32_t(off))), 4),
                                     b.getInt32(0x3FFF));
    return b.CreateOr(b.CreateZExt(start, i64), b.getInt64(fixed));
  };
  // A k16 step's offset in a K-major operand: its column block, then its
  // bytes inside the W-byte row.
  auto k_off = [](const SmemLayout &l, int64_t kk) {
    const int64_t per = l.row_bytes / 2;
    return (16 * kk / per) * l.block_bytes + (16 * kk % per) * 2;
  };

  // `x + dot(a, b)` (the dot's one use, x in the same layout): accumulate
  // onto x (tile/pipeline.cpp put the wait after the add).
  int x = -1;
  const TOp *add = dot_add_onto(ir, lr, &x);
  std::vector<llvm::Value *> acc(lr.num_regs(), llvm::ConstantFP::get(f32, 0.0));
  if (add)
    acc = tregs[size_t(x)];
  for (int64_t kk = 0; kk < K / 16; ++kk) {
    llvm::Value *dak = desc(a_addr, k_off(la, kk), da);
    llvm::Value *dbk = desc(b_addr, st.b_nk ? k_off(lb, kk) : 16 * kk * lb.row_bytes, db);
    acc = m.wgmma_mma(b, unsigned(N), bf16, !st.b_nk, dak, dbk, acc, line);
  }
  tregs[size_t(ir)] = acc;
  if (add) {
    tregs[size_t(add->results[0])] = acc;
    tile_fused.insert(add);
  }
}

void BodyLowerer::tile_wgmma_op(const TOp &op) {
  switch (op.kind) {
  case TileOpKind::WgmmaFence:
    m.wgmma_fence(b);
    return;
  case TileOpKind::WgmmaCommit:
    m.wgmma_commit(b);
    return;
  case TileOpKind::WgmmaWait:
    tregs[size_t(op.results.at(0))] =
        m.wgmma_wait(b, unsigned(op.axis), tregs[size_t(op.operands.at(0))], op.loc.begin.line);
    return;
  default:
    throw LowerError(std::string("tile IR op '") + op_spelling(op.kind) + "' has no lowering");
  }
}

} // namespace etl
