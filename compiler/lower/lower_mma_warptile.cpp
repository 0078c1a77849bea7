//===- lower/lower_mma_warptile.cpp - Warp tiles of a tensor-core K loop --===//
//
// What this owns: the warp tile of the pipelined K loops (lower_mma.cpp's
// lower_pipelined_for, lower_mma_pipeline.cpp's lower_pipelined_dots), whose
// accumulators live in registers across the loop as `sets` fragment sets
// per warp (one set: one m16 x nb output unit, 4 n8 f32 registers per n8).
//
// Without a warp tile, warp w owns units w, w + W, ... (mma_for_units) and
// each unit loads its own A fragment (ldmatrix.x4) and B fragments
// (ldmatrix.x4.trans for nb = 16) per k16 step: one ldmatrix per mma at
// nb = 16. With a warp tile, warp w owns a block of wm x wn units (a
// (16 wm) x (nb wn) tile of the output) and per k16 step loads its wm A
// fragments and wn B fragments once, then issues the wm wn n8 mma of the
// block: (wm + wn) / (wm wn n8) ldmatrix per mma (0.5 for a 32 x 32 warp
// tile, 0.375 for 64 x 32 or 32 x 64: examples/gemm's 128 x 128 tile at 8
// warps, 32 x 64 each, 64 accumulator registers = kMmaLoopAccRegs).
//
// The rule (mma_warp_tile): a warp tile applies when the accumulators
// persist across the loop (the caller's register budget, kMmaLoopAccRegs),
// every warp owns the same number of units (units % W == 0, sets = units /
// W >= 2), and the unit grid (M / 16 rows x N / nb columns) divides into W
// blocks of wm x wn units with wm wn = sets; of those the one with the
// fewest fragment loads per k16 (wm + wn, then the squarer) is taken. Any
// other dot keeps the unit-per-warp order. Every accumulator sees the same
// mma in the same k order as before, so results are bit for bit the same.
//
//===----------------------------------------------------------------------===//
#include "lower/lowerer.h"

namespace etl {

Lowerer::MmaWarpTile Lowerer::mma_warp_tile(const MmaTile &t, int64_t sets) const {
  MmaWarpTile wt;
  const int64_t W = std::max<int64_t>(T / 32, 1), rows = t.M / 16;
  if (sets < 2 || t.units % W != 0 || t.units / W != sets)
    return wt;
  for (int64_t wm = 1; wm <= sets; ++wm) {
    if (sets % wm != 0)
      continue;
    const int64_t wn = sets / wm;
    if (rows % wm != 0 || t.n_units % wn != 0)
      continue;
    auto cost = [](int64_t m, int64_t n) { return std::make_pair(m + n, std::max(m, n)); };
    if (wt.wm == 0 || cost(wm, wn) < cost(wt.wm, wt.wn))
      wt.wm = wm, wt.wn = wn;
  }
  return wt;
}

llvm::Value *Lowerer::mma_warp_unit(const MmaTile &t, const MmaWarpTile &wt, unsigned i) {
  // Warp w's block: block row w / (N / (nb wn)), block column the remainder.
  llvm::Value *warp = b.CreateUDiv(b.CreateZExt(tid, i64), b.getInt64(32));
  const int64_t per_row = t.n_units / wt.wn;
  llvm::Value *br = b.CreateUDiv(warp, b.getInt64(per_row));
  llvm::Value *bc = b.CreateURem(warp, b.getInt64(per_row));
  llvm::Value *row = b.CreateAdd(b.CreateMul(br, b.getInt64(wt.wm)), b.getInt64(i / wt.wn));
  llvm::Value *col = b.CreateAdd(b.CreateMul(bc, b.getInt64(wt.wn)), b.getInt64(i % wt.wn));
  return b.CreateAdd(b.CreateMul(row, b.getInt64(t.n_units)), col);
}

void Lowerer::mma_sets_for_units(const MmaTile &t, const MmaWarpTile &wt, int64_t sets,
                                 const std::function<void(unsigned, llvm::Value *)> &f) {
  if (!wt.on()) {
    mma_for_units(t, sets, f);
    return;
  }
  for (unsigned i = 0; i < unsigned(sets); ++i)
    f(i, mma_warp_unit(t, wt, i));
}

void Lowerer::mma_accumulate_sets(const MmaTile &t, const MmaWarpTile &wt,
                                  const std::vector<std::vector<llvm::AllocaInst *>> &frags,
                                  llvm::Value *a_base, llvm::Value *b_base, unsigned line) {
  if (!wt.on()) {
    mma_for_units(t, int64_t(frags.size()), [&](unsigned i, llvm::Value *u) {
      mma_accumulate(t, frags[i], u, a_base, b_base, line);
    });
    return;
  }
  // The block's first unit gives its first row (r0) and column (n0).
  llvm::Value *u0 = mma_warp_unit(t, wt, 0);
  llvm::Value *r0 = b.CreateMul(b.CreateUDiv(u0, b.getInt64(t.n_units)), b.getInt64(16));
  llvm::Value *n0 = b.CreateMul(b.CreateURem(u0, b.getInt64(t.n_units)), b.getInt64(t.nb));
  llvm::Value *lane = b.CreateURem(b.CreateZExt(tid, i64), b.getInt64(32));
  llvm::Value *lrow = b.CreateAnd(lane, 15),
              *lhalf = b.CreateMul(b.CreateLShr(lane, 4), b.getInt64(8));
  const int64_t a_cols = t.K; // A is [M, K] rows, swizzled as lower_mma.cpp's stage_chunks
  for_range(b.getInt64(0), b.getInt64(t.K), b.getInt64(16), [&](llvm::Value *k0) {
    // wm A fragments (rows r0 + 16 r + (l & 15), col k0 + (l >> 4) 8), wn
    // B fragment pairs, then every mma of the block.
    std::vector<std::vector<llvm::Value *>> fa, fb;
    for (int64_t r = 0; r < wt.wm; ++r) {
      llvm::Value *row = b.CreateAdd(r0, b.CreateAdd(b.getInt64(16 * r), lrow));
      fa.push_back(
          m.ldmatrix(b, mma_a_ptr(a_cols, a_base, row, b.CreateAdd(k0, lhalf)), 4, false, line));
    }
    for (int64_t c = 0; c < wt.wn; ++c)
      fb.push_back(mma_load_b(t, b_base, k0, b.CreateAdd(n0, b.getInt64(c * t.nb)), lane, line));
    for (int64_t r = 0; r < wt.wm; ++r)
      for (int64_t c = 0; c < wt.wn; ++c) {
        const std::vector<llvm::AllocaInst *> &acc = frags[size_t(r * wt.wn + c)];
        for (unsigned j = 0; j < t.n8; ++j) {
          std::vector<llvm::Value *> cc;
          for (unsigned i = 0; i < 4; ++i)
            cc.push_back(b.CreateLoad(f32, acc[4 * j + i]));
          std::vector<llvm::Value *> d = m.mma_m16n8k16(
              b, t.bf16, fa[size_t(r)], {fb[size_t(c)][2 * j], fb[size_t(c)][2 * j + 1]}, cc, line);
          for (unsigned i = 0; i < 4; ++i)
            b.CreateStore(d[i], acc[4 * j + i]);
        }
      }
  });
}

} // namespace etl
