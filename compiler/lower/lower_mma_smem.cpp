//===- lower/lower_mma_smem.cpp - Swizzled 16-bit operands and their fragments ===//
//
// What this owns: where a staged operand or a re-layout's element lies in
// shared memory, and how a tensor-core dot's 16-bit fragments come back
// (lower_tile_mma.cpp stages and multiplies). The layouts are data
// (tile/layout.h's SmemLayout: mma_staging_layout, scratch_smem_layout in
// tile/smem_layout.cpp); smem_offset is tile/layout.h's smem_place on LLVM
// IR, the one home of the XOR swizzles: a row pitch, then the 16-byte
// chunk XORed with the row's phase so that the 8 row addresses of one
// ldmatrix phase hit 8 different 16-byte bank groups. mma_a_ptr gives an
// element's address, mma_load_b the B fragments of one k16 step
// (ldmatrix.trans of [K, N] rows, plain ldmatrix of [N, K] rows).
//
//===----------------------------------------------------------------------===//
#include "lower/body_lowerer.h"

#include "tile/layout.h"

namespace etl {

namespace {

/// tile/layout.h's smem_place arithmetic on LLVM IR (i64 values).
/// `chunk_first`: only the order of the instructions, as tile_tf32_ptr
/// built them before the swizzles were folded (its PTX byte-identical).
struct SmemIr {
  using Value = llvm::Value *;
  Builder &b;
  bool chunk_first = false;
  bool chunk_term_first() const { return chunk_first; }
  Value k(int64_t c) const { return b.getInt64(uint64_t(c)); }
  Value udiv(Value x, Value y) const { return b.CreateUDiv(x, y); }
  Value urem(Value x, Value y) const { return b.CreateURem(x, y); }
  Value mul(Value x, Value y) const { return b.CreateMul(x, y); }
  Value add(Value x, Value y) const { return b.CreateAdd(x, y); }
  Value and_(Value x, Value y) const { return b.CreateAnd(x, y); }
  Value xor_(Value x, Value y) const { return b.CreateXor(x, y); }
  Value or_(Value x, Value y) const { return b.CreateOr(x, y); }
  Value shl(Value x, unsigned n) const { return b.CreateShl(x, n); }
  Value lshr(Value x, unsigned n) const { return b.CreateLShr(x, n); }
};

} // namespace

llvm::Value *BodyLowerer::smem_offset(const SmemLayout &s, llvm::Value *row, llvm::Value *col,
                                      bool chunk_first) {
  SmemIr a{b, chunk_first};
  return smem_place(a, s, row, col);
}

SmemLayout BodyLowerer::staging16(int64_t rows, int64_t cols) const {
  return tf->wgmma ? wgmma_staging_layout(rows, cols) : mma_staging_layout(cols, 2);
}

llvm::Value *BodyLowerer::mma_a_ptr(int64_t rows, int64_t cols, llvm::Value *base,
                                    llvm::Value *row, llvm::Value *col) {
  return scratch_ptr(b.CreateAdd(smem_offset(staging16(rows, cols), row, col), base), 1);
}

std::vector<llvm::Value *> BodyLowerer::mma_load_b(const MmaTile &t, llvm::Value *b_base,
                                               llvm::Value *k0, llvm::Value *n0, llvm::Value *lane,
                                               unsigned line) {
  const SmemLayout s = t.b_nk ? staging16(t.N, t.K) : staging16(t.K, t.N);
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
  llvm::Value *p = scratch_ptr(b.CreateAdd(smem_offset(s, row, col), b_base), 1);
  return m.ldmatrix(b, p, 2 * t.n8, !t.b_nk, line);
}

} // namespace etl
