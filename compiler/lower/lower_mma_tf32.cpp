//===- lower/lower_mma_tf32.cpp - f32 `dot` on tensor cores as tf32 -------===//
//
// What this owns: `dot(a, b, precision = tf32)` of two f32 tiles
// (Lowerer::dot_tf32, picked in lower_tile.cpp; sema checks the keyword). A
// dot [M, K] x [K, N] with M % 16 == 0, N % 8 == 0, K % 8 == 0 runs as
// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 with f32 accumulation
// (Machine::mma_m16n8k8_tf32; sim: the warp rendezvous of
// runtime/src/sim_warp.c, ETL_MMA_TF32: operands rounded as cvt.rna does,
// products exact, summed in f32 in k order, so a sim result equals an f32
// k-order sum of tf32-rounded products bit for bit):
//
//   1. staging: every thread rounds its elements of both operands with
//      cvt.rna.tf32.f32 (Machine::to_tf32: 10 mantissa bits, nearest, ties
//      away from zero) and writes the 32-bit patterns row-major into the
//      scratch area, then a barrier. ldmatrix moves 16-bit elements, so the
//      fragments are read with plain 32-bit shared loads, laid out so that
//      each warp-wide load hits 32 different banks: A's (row g, col t), g <
//      8, t < 4, and B's (row t, col g). Rows of a multiple of 32 floats are
//      XOR-swizzled in 16-byte chunks (A: chunk ^ row % 8; B: chunk ^ 2 (row
//      % 4)), which also keeps the staging stores (32 consecutive elements of
//      a row per warp) conflict-free; other rows are padded instead, A's to
//      K + 4 floats (a stride = 4 mod 8: g * stride covers the 8 multiples
//      of 4 mod 32), B's to N or N + 8 (= 8 mod 16: t * stride covers 0, 8,
//      16, 24), where a warp's staging store that crosses a row may take two
//      wavefronts (a one-off cost next to the repeated fragment loads);
//   2. warp tiles as dot_mma's: m16 x n16 units (n8 when N % 16 != 0), warp
//      w runs units w, w + W, ...; per k8 four A loads (PTX's A fragment:
//      row g + 8(i & 1), col t + 4(i >> 1)) and per n8 two B loads (k = t +
//      4j, n = g), one mma per n8, the accumulators in registers over K;
//   3. the write-back of lower_mma.cpp (Lowerer::mma_store_frags and
//      mma_read_result), the same C fragment layout: 8-byte pair stores to
//      an f32 [M, N] area with rows of mma_mma_result_stride(N) floats, a
//      barrier, every thread reads its elements.
//
// Shared memory: 4 (M Ka + K Nb) bytes of operands (the strides above),
// then 4 M mma_result_stride(N) bytes of result. A tf32 dot that is one
// row, of another shape, or too large keeps the exact f32 FMA path of
// lower_compute.cpp and says why in a remark (DiagId::DotFmaPath). Not done:
// cp.async staging of `dot(load, load, precision = tf32)` and the pipelined
// K loop of lower_mma.cpp (such a loop runs each dot as here).
//
//===----------------------------------------------------------------------===//
#include "lower/lowerer.h"

#include <llvm/IR/Constants.h>

namespace etl {

namespace {

/// Row strides (f32 elements) of the staged A [M, K] and B [K, N], and the
/// rows of their XOR phase (0: padded rows instead; banner).
int64_t a_stride(int64_t k) { return k % 32 == 0 || k % 8 == 4 ? k : k + 4; }
int64_t b_stride(int64_t n) { return n % 32 == 0 || (n / 8) % 2 == 1 ? n : n + 8; }
unsigned a_xor(int64_t k) { return k % 32 == 0 ? 8 : 0; }
unsigned b_xor(int64_t n) { return n % 32 == 0 ? 4 : 0; }

std::string type_str(const TileVal &v) {
  std::string s = std::string(spelling(v.elem)) + "[";
  for (size_t i = 0; i < v.shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v.shape[i]);
  return s + "]";
}

} // namespace

bool dot_wants_tf32(const Expr &call) {
  const KwArg *k = find_kwarg(call, "precision");
  return k && k->value && k->value->kind == ExprKind::Name && k->value->name == "tf32";
}

std::string Lowerer::tf32_eligible(const TileVal &a, const TileVal &c) const {
  return mma_fits(a, c, 8, "tf32 mma", 4, a_stride, b_stride);
}

TileVal Lowerer::dot_tf32(const TileVal &a, const TileVal &c, SourceRange where) {
  if (a.elem != ElemType::F32 || c.elem != ElemType::F32 || a.shape.empty() || a.shape.size() > 2 ||
      c.shape.size() != 2 || a.shape.back() != c.shape[0])
    throw LowerError("dot(precision = tf32) needs f32 [M, K] (or [K]) and [K, N] tiles");
  std::string why = tf32_eligible(a, c);
  if (why != "ok") {
    remarks.push_back({where, {type_str(a), type_str(c), why}});
    return dot(a, c, where); // f32 operands: no second remark there
  }
  const int64_t M = a.shape[0], K = c.shape[0], N = c.shape[1];
  const int64_t sa = a_stride(K), sb = b_stride(N), cs = mma_result_stride(N);
  const int64_t b_base = 4 * M * sa, c_base = b_base + 4 * K * sb;
  note_scratch((c_base + 4 * M * cs) / 4);
  const unsigned line = where.begin.line;
  // Byte offset of (row, col): rows of `stride` floats, the 16-byte chunk
  // XORed with (row % 8) * `mul` when `xor_rows` (A: mul 1, B: mul 2).
  auto offset = [&](int64_t base, int64_t stride, unsigned xor_rows, llvm::Value *row,
                    llvm::Value *col) {
    llvm::Value *off = b.CreateMul(row, b.getInt64(4 * stride));
    llvm::Value *chunk = b.CreateLShr(col, 2);
    if (xor_rows)
      chunk = b.CreateXor(
          chunk, b.CreateMul(b.CreateURem(row, b.getInt64(xor_rows)), b.getInt64(8 / xor_rows)));
    off = b.CreateAdd(off, b.CreateMul(chunk, b.getInt64(16)));
    off = b.CreateAdd(off, b.CreateMul(b.CreateAnd(col, 3), b.getInt64(4)));
    return b.CreateAdd(off, b.getInt64(base));
  };
  const unsigned xa = a_xor(K), xb = b_xor(N);

  // 1. Stage both operands as tf32 bit patterns, rows padded.
  auto stage = [&](const TileVal &v, int64_t cols, int64_t stride, unsigned x, int64_t base) {
    for (unsigned k = 0; k < v.regs.size(); ++k) {
      auto write = [&, k] {
        llvm::Value *e = elem_index(k);
        llvm::Value *row = b.CreateUDiv(e, b.getInt64(cols)),
                    *col = b.CreateURem(e, b.getInt64(cols));
        scratch_store(m.to_tf32(b, v.regs[k]), offset(base, stride, x, row, col), 1);
      };
      if (llvm::Value *alive = elem_alive(k, v.numel()))
        if_then(alive, write);
      else
        write();
    }
  };
  stage(a, K, sa, xa, 0);
  stage(c, N, sb, xb, b_base);
  m.barrier(b);

  // 2. Warp tiles as dot_mma's (mma_tile, mma_for_units), one k8 step at a
  // time; 3. its write-back (mma_store_frags, mma_read_result).
  const MmaTile tile = mma_tile(a, c);
  llvm::Value *lane = b.CreateURem(b.CreateZExt(tid, i64), b.getInt64(32));
  llvm::Value *g = b.CreateLShr(lane, 2), *t = b.CreateAnd(lane, 3);
  mma_for_units(tile, 0, [&](unsigned, llvm::Value *u) {
    llvm::Value *r0 = b.CreateMul(b.CreateUDiv(u, b.getInt64(tile.n_units)), b.getInt64(16));
    llvm::Value *n0 = b.CreateMul(b.CreateURem(u, b.getInt64(tile.n_units)), b.getInt64(tile.nb));
    std::vector<llvm::AllocaInst *> acc = mma_zero_frags(tile);
    for_range(b.getInt64(0), b.getInt64(K), b.getInt64(8), [&](llvm::Value *k0) {
      std::vector<llvm::Value *> fa;
      for (unsigned i = 0; i < 4; ++i) {
        llvm::Value *row = b.CreateAdd(r0, b.CreateAdd(g, b.getInt64(8 * (i & 1))));
        llvm::Value *col = b.CreateAdd(k0, b.CreateAdd(t, b.getInt64(4 * (i >> 1))));
        fa.push_back(scratch_load(i32, offset(0, sa, xa, row, col), 1));
      }
      for (unsigned j = 0; j < tile.n8; ++j) {
        std::vector<llvm::Value *> fb, cc;
        for (unsigned i = 0; i < 2; ++i) {
          llvm::Value *row = b.CreateAdd(k0, b.CreateAdd(t, b.getInt64(4 * i)));
          llvm::Value *col = b.CreateAdd(n0, b.CreateAdd(g, b.getInt64(8 * j)));
          fb.push_back(scratch_load(i32, offset(b_base, sb, xb, row, col), 1));
        }
        for (unsigned i = 0; i < 4; ++i)
          cc.push_back(b.CreateLoad(f32, acc[4 * j + i]));
        std::vector<llvm::Value *> d = m.mma_m16n8k8_tf32(b, fa, fb, cc, line);
        for (unsigned i = 0; i < 4; ++i)
          b.CreateStore(d[i], acc[4 * j + i]);
      }
    });
    mma_store_frags(tile, acc, u, c_base);
  });
  return mma_read_result(tile, c_base);
}

} // namespace etl
