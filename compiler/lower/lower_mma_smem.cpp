//===- lower/lower_mma_smem.cpp - Swizzled 16-bit operands and their fragments ===//
//
// What this owns: where a tensor-core dot's staged 16-bit operand lies in
// shared memory and how its fragments come back (lower_tile_mma.cpp stages
// and multiplies). A row-major [rows, cols] tile (cols % 8 == 0) is rows of
// cols * 2 bytes cut into 16-byte chunks, the chunk index XORed with a
// per-row phase ((row / per_phase) % max_phase, Triton's #shared /
// CUTLASS's swizzle) so that the 8 row addresses of one ldmatrix phase hit 8
// different 16-byte bank groups: mma_a_ptr gives an element's address,
// mma_load_b the B fragments of one k16 step (ldmatrix.trans of [K, N] rows,
// plain ldmatrix of [N, K] rows).
//
//===----------------------------------------------------------------------===//
#include "lower/body_lowerer.h"

namespace etl {

namespace {

/// The staging layout of a row-major [rows, cols] tile of 16-bit values.
struct Swizzle {
  int64_t cols, row_bytes, per_phase, max_phase;
  explicit Swizzle(int64_t c) : cols(c), row_bytes(c * 2) {
    int64_t chunks = row_bytes / 16;
    max_phase = 1; // the largest power of two dividing chunks, at most 8: the XOR stays in the row
    while (max_phase < 8 && chunks % (max_phase * 2) == 0)
      max_phase *= 2;
    per_phase = row_bytes >= 128 ? 1 : 128 / row_bytes;
  }
};

/// Byte offset (i64) of element (row, col) in the swizzled layout `s`.
llvm::Value *swizzled_offset(Builder &b, const Swizzle &s, llvm::Value *row, llvm::Value *col) {
  llvm::Value *phase =
      b.CreateURem(b.CreateUDiv(row, b.getInt64(s.per_phase)), b.getInt64(s.max_phase));
  llvm::Value *chunk = b.CreateXor(b.CreateUDiv(col, b.getInt64(8)), phase);
  llvm::Value *off = b.CreateMul(row, b.getInt64(s.row_bytes));
  off = b.CreateAdd(off, b.CreateMul(chunk, b.getInt64(16)));
  return b.CreateAdd(off, b.CreateMul(b.CreateURem(col, b.getInt64(8)), b.getInt64(2)));
}

} // namespace

llvm::Value *BodyLowerer::mma_a_ptr(int64_t cols, llvm::Value *base, llvm::Value *row,
                                llvm::Value *col) {
  return scratch_ptr(b.CreateAdd(swizzled_offset(b, Swizzle(cols), row, col), base), 1);
}

std::vector<llvm::Value *> BodyLowerer::mma_load_b(const MmaTile &t, llvm::Value *b_base,
                                               llvm::Value *k0, llvm::Value *n0, llvm::Value *lane,
                                               unsigned line) {
  const Swizzle s(t.b_nk ? t.K : t.N);
  llvm::Value *row, *col;
  if (t.b_nk) {
    // B as [N, K] rows, PTX's col-major B: plain 8x8 loads. Lane l gives a
    // row of matrix i = (l >> 3) & 3: n0 + 8 (i >> 1) + (l & 7) (the n8
    // block; one for nb = 8, where lanes 16 .. 31 repeat 0 .. 15), k0 +
    // 8 (i & 1) (the k half): registers (2j, 2j + 1) are n8 block j's b0b1,
    // b2b3.
    llvm::Value *i = b.CreateAnd(b.CreateLShr(lane, 3), 3);
    row = b.CreateAdd(n0, b.CreateAnd(lane, 7));
    if (t.nb == 16)
      row = b.CreateAdd(row, b.CreateMul(b.CreateLShr(i, 1), b.getInt64(8)));
    col = b.CreateAdd(k0, b.CreateMul(b.CreateAnd(i, 1), b.getInt64(8)));
  } else {
    // B [k0 .. k0+16) x [n0 .. n0+nb), row-major: transposed 8x8 loads;
    // lane l gives row k0 + (l & 15), col n0 (+ 8 (l >> 4) for nb = 16).
    row = b.CreateAdd(k0, b.CreateAnd(lane, 15));
    col = t.nb == 16 ? b.CreateAdd(n0, b.CreateMul(b.CreateLShr(lane, 4), b.getInt64(8))) : n0;
  }
  llvm::Value *p = scratch_ptr(b.CreateAdd(swizzled_offset(b, s, row, col), b_base), 1);
  return m.ldmatrix(b, p, 2 * t.n8, !t.b_nk, line);
}

} // namespace etl
