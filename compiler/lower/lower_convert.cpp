//===- lower/lower_convert.cpp - Element types in registers and memory ---===//
//
// What this owns: how each element type is held in registers and in memory
// (lower/lower_ctx.h): f16, bf16 and FP8 in f32 registers rounded to their
// precision after each op (bf16 and FP8 rounding with integer ops, the same
// on every target), i8 .. u32 in i32 registers wrapped to their width, packed
// i4/u4 nibbles picked from their byte; and `convert_scalar`, the one
// conversion between element types (`cast`, mixed operands, pads).
//
//===----------------------------------------------------------------------===//
#include "lower/lower_ctx.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <cmath>

namespace etl {

/// The bf16 bits (i16) of an f32 value: round to nearest even, NaN stays a
/// (quiet) NaN. Plain integer ops, so NVPTX needs no bf16 support.
llvm::Value *f32_to_bf16_bits(Builder &b, llvm::Value *v) {
  llvm::Value *bits = b.CreateBitCast(v, b.getInt32Ty());
  llvm::Value *lsb = b.CreateAnd(b.CreateLShr(bits, 16), b.getInt32(1));
  llvm::Value *rounded = b.CreateLShr(b.CreateAdd(bits, b.CreateAdd(lsb, b.getInt32(0x7FFF))), 16);
  llvm::Value *nan = b.CreateOr(b.CreateLShr(bits, 16), b.getInt32(0x40));
  llvm::Value *r = b.CreateSelect(b.CreateFCmpUNO(v, v), nan, rounded);
  return b.CreateTrunc(r, b.getInt16Ty());
}

/// The f32 value of bf16 bits (i16).
llvm::Value *bf16_bits_to_f32(Builder &b, llvm::Value *h) {
  return b.CreateBitCast(b.CreateShl(b.CreateZExt(h, b.getInt32Ty()), 16), b.getFloatTy());
}

/// An f32 of the given bits.
static llvm::Value *f32_of_bits(Builder &b, llvm::Value *bits) {
  return b.CreateBitCast(bits, b.getFloatTy());
}

/// The FP8 bits (i8) of an f32 value: round to nearest even, values past the
/// largest finite one (and infinities) saturate to it, NaN stays NaN (the
/// rules of PTX's cvt.rn.satfinite). Plain integer and f32 ops, the same on
/// sim and every GPU (sm_89+ has a cvt for pairs of FP8; sm_80 has none):
/// the quantum of |x| is 2^(max(exponent, emin) - M), |x| / quantum is
/// rounded to an integer (exact scaling by powers of two), and the result,
/// exactly representable, is encoded.
static llvm::Value *f32_to_f8_bits(Builder &b, llvm::Value *v, ElemType t) {
  bool e4 = t == ElemType::F8E4M3;
  const int M = e4 ? 3 : 2, bias = e4 ? 7 : 15, emin = 1 - bias;
  const double maxnorm = e4 ? 448.0 : 57344.0;
  llvm::Type *i32 = b.getInt32Ty(), *f32 = b.getFloatTy();
  llvm::Value *xb = b.CreateBitCast(v, i32);
  llvm::Value *sign = b.CreateAnd(b.CreateLShr(xb, 24), b.getInt32(0x80));
  llvm::Value *ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v);
  llvm::Value *eb = b.CreateSub(b.CreateLShr(b.CreateBitCast(ax, i32), 23), b.getInt32(127));
  llvm::Value *e = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, eb, b.getInt32(emin));
  llvm::Value *q = f32_of_bits(b, b.CreateShl(b.CreateAdd(e, b.getInt32(127 - M)), 23));
  llvm::Value *inv = f32_of_bits(b, b.CreateShl(b.CreateSub(b.getInt32(127 + M), e), 23));
  llvm::Value *r =
      b.CreateFMul(b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b.CreateFMul(ax, inv)), q);
  r = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, r, llvm::ConstantFP::get(f32, maxnorm));
  llvm::Value *rb = b.CreateBitCast(r, i32);
  llvm::Value *re = b.CreateSub(b.CreateLShr(rb, 23), b.getInt32(127 - bias)); // biased exponent
  llvm::Value *normal = b.CreateOr(b.CreateShl(re, M),
                                   b.CreateAnd(b.CreateLShr(rb, 23 - M), b.getInt32((1 << M) - 1)));
  llvm::Value *sub =
      b.CreateFPToUI(b.CreateFMul(r, llvm::ConstantFP::get(f32, std::ldexp(1.0, M - emin))), i32);
  llvm::Value *is_sub = b.CreateFCmpOLT(r, llvm::ConstantFP::get(f32, std::ldexp(1.0, emin)));
  llvm::Value *bits = b.CreateSelect(is_sub, sub, normal);
  bits = b.CreateSelect(b.CreateFCmpUNO(v, v), b.getInt32(e4 ? 0x7F : 0x7E), bits);
  return b.CreateTrunc(b.CreateOr(bits, sign), b.getInt8Ty());
}

/// The f32 value of FP8 bits (i8). E5M2 is the top byte of an f16; E4M3
/// (bias 7, subnormals m * 2^-9, S.1111.111 NaN, no infinities) is built
/// from its fields.
static llvm::Value *f8_bits_to_f32(Builder &b, llvm::Value *byte, ElemType t) {
  llvm::Type *i32 = b.getInt32Ty(), *f32 = b.getFloatTy();
  if (t == ElemType::F8E5M2)
    return b.CreateFPExt(
        b.CreateBitCast(b.CreateShl(b.CreateZExt(byte, b.getInt16Ty()), 8), b.getHalfTy()), f32);
  llvm::Value *u = b.CreateZExt(byte, i32);
  llvm::Value *sign = b.CreateShl(b.CreateAnd(u, b.getInt32(0x80)), 24);
  llvm::Value *e = b.CreateAnd(b.CreateLShr(u, 3), b.getInt32(15));
  llvm::Value *m = b.CreateAnd(u, b.getInt32(7));
  llvm::Value *normal = b.CreateOr(
      sign, b.CreateOr(b.CreateShl(b.CreateAdd(e, b.getInt32(120)), 23), b.CreateShl(m, 20)));
  llvm::Value *sub = b.CreateOr(
      sign, b.CreateBitCast(b.CreateFMul(b.CreateUIToFP(m, f32),
                                         llvm::ConstantFP::get(f32, std::ldexp(1.0, -9))),
                            i32));
  llvm::Value *bits = b.CreateSelect(b.CreateICmpEQ(e, b.getInt32(0)), sub, normal);
  llvm::Value *nan = b.CreateICmpEQ(b.CreateAnd(u, b.getInt32(0x7F)), b.getInt32(0x7F));
  bits = b.CreateSelect(nan, b.CreateOr(sign, b.getInt32(0x7FC00000)), bits);
  return f32_of_bits(b, bits);
}

static bool is_f8(ElemType t) { return t == ElemType::F8E4M3 || t == ElemType::F8E5M2; }

/// Rounds an f32 register to the precision of `t` (f16, bf16, FP8); others as is.
llvm::Value *round_to(Builder &b, llvm::Value *v, ElemType t) {
  if (t == ElemType::F16)
    return b.CreateFPExt(b.CreateFPTrunc(v, b.getHalfTy()), b.getFloatTy());
  if (t == ElemType::BF16)
    return bf16_bits_to_f32(b, f32_to_bf16_bits(b, v));
  if (is_f8(t))
    return f8_bits_to_f32(b, f32_to_f8_bits(b, v, t), t);
  return v;
}

/// An integer register (i32, or i64 for i64) wrapped to the width of `t`:
/// i8, i16, u8, u16 keep their low bits, sign- or zero-extended back to the
/// i32 register; the other types are as they are.
llvm::Value *LowerCtx::wrap_int(llvm::Value *v, ElemType t) {
  unsigned w = elem_bits(t);
  if (!is_integer(t) || w >= 32 || v->getType() != i32)
    return v;
  llvm::Value *low = b.CreateTrunc(v, b.getIntNTy(w));
  return is_unsigned(t) ? b.CreateZExt(low, i32) : b.CreateSExt(low, i32);
}

/// Conversions (`cast`, mixed operands): integer to integer keeps the low
/// bits (two's complement wrap; a signed source is sign-extended, an
/// unsigned one zero-extended first); float to integer rounds toward zero and
/// saturates to the target's range, NaN giving 0 (llvm.fpto[su]i.sat, the
/// same on sim and NVPTX); integer to float rounds to nearest even (then to
/// f16/bf16 precision); to bool is `x != 0`.
llvm::Value *LowerCtx::convert_scalar(llvm::Value *v, const TileVal &from, ElemType to) {
  if (to == ElemType::Bool && (from.is_index || from.elem != ElemType::Bool)) { // x != 0
    llvm::Value *nz = is_float(from.elem) && !from.is_index
                          ? b.CreateFCmpUNE(v, llvm::ConstantFP::get(f32, 0.0))
                          : b.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    return b.CreateZExt(nz, i32);
  }
  bool from_int = from.is_index || !is_float(from.elem);
  bool from_unsigned = !from.is_index && is_unsigned(from.elem);
  if (!is_float(to)) {
    llvm::Type *rt = reg_type(to);
    if (from_int)
      return wrap_int(from_unsigned ? b.CreateZExtOrTrunc(v, rt) : b.CreateSExtOrTrunc(v, rt), to);
    unsigned w = std::max(elem_bits(to), 8u);
    llvm::Value *x = b.CreateIntrinsic(is_unsigned(to) ? llvm::Intrinsic::fptoui_sat
                                                       : llvm::Intrinsic::fptosi_sat,
                                       {b.getIntNTy(w), f32}, {v});
    return is_unsigned(to) ? b.CreateZExtOrTrunc(x, rt) : b.CreateSExtOrTrunc(x, rt);
  }
  if (from_int)
    v = from_unsigned ? b.CreateUIToFP(v, f32) : b.CreateSIToFP(v, f32);
  if (from_int || from.elem != to) // round to half / bfloat precision
    v = round_to(b, v, to);
  return v;
}

//===-- Memory forms ------------------------------------------------------===//

llvm::Type *LowerCtx::memory_type(ElemType t) {
  if (t == ElemType::F16)
    return b.getHalfTy();
  if (t == ElemType::BF16)
    return b.getInt16Ty();
  if (is_f8(t))
    return b.getInt8Ty();
  if (is_integer(t) && t != ElemType::I64)
    return b.getIntNTy(std::max(elem_bits(t), 8u)); // i4/u4: the byte that holds it
  return reg_type(t);
}

llvm::Value *LowerCtx::from_memory(llvm::Value *v, ElemType t, llvm::Value *lin) {
  if (t == ElemType::F16)
    return b.CreateFPExt(v, f32);
  if (t == ElemType::BF16)
    return bf16_bits_to_f32(b, v);
  if (is_f8(t))
    return f8_bits_to_f32(b, v, t);
  if (is_packed(t)) { // nibble lin % 2 of the byte: low first
    llvm::Value *sh = b.CreateTrunc(b.CreateShl(b.CreateAnd(lin, b.getInt64(1)), 2), i32);
    llvm::Value *nib = b.CreateAnd(b.CreateLShr(b.CreateZExt(v, i32), sh), b.getInt32(0xF));
    return is_unsigned(t) ? nib : b.CreateSub(b.CreateXor(nib, b.getInt32(8)), b.getInt32(8));
  }
  llvm::Type *ty = reg_type(t);
  if (v->getType() != ty) // i8 .. u16: extended into the i32 register
    return is_unsigned(t) ? b.CreateZExt(v, ty) : b.CreateSExt(v, ty);
  return v;
}

llvm::Value *LowerCtx::to_memory(llvm::Value *x, ElemType t) {
  if (t == ElemType::F16)
    return b.CreateFPTrunc(x, b.getHalfTy());
  if (t == ElemType::BF16)
    return f32_to_bf16_bits(b, x);
  if (is_f8(t))
    return f32_to_f8_bits(b, x, t);
  if (x->getType() != memory_type(t)) // i8 .. u16: the low bits
    return b.CreateTrunc(x, memory_type(t));
  return x;
}

} // namespace etl
