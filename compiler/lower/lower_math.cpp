//===- lower/lower_math.cpp - Float math builtins ---------------------------===//
//
// What this owns: the float math builtins (exp log sqrt rsqrt sin cos tanh
// erf floor ceil round, and pow) as per-element code. Each register goes to
// the Machine (target/machine.h): NVPTX answers with the PTX ISA's
// approximate instructions, sim with libm. What a machine has no form of
// (NVPTX: erf, pow) is composed here from Exp2/Log2 and IEEE arithmetic, so
// no libdevice is needed:
//   erf(x)    |x| < 0.921875: x + x * P(x^2), P of degree 5;
//             else sign(x) * (1 - 2^Q(min(|x|, 4))), Q of degree 7;
//             P and Q are least-squares fits (scripts/fit_erf.py, which
//             also measures the composition: <= 1.07 ulp with an exact 2^x).
//   pow(x, y) 2^(y * log2|x|), negated for x < 0 and an odd integer y, NaN
//             for x < 0 and a non-integer y, 1 for y == 0 or x == 1 (C's
//             powf on those cases).
// f16/bf16 operands are computed in f32 and rounded once at the end.
// `math_regs` is the per-register code the tile IR's `map.sin` ..
// `map.pow` (lower_tile_map.cpp) call.
//
//===----------------------------------------------------------------------===//
#include "lower/body_lowerer.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <limits>

namespace etl {

static MathFn math_fn(Builtin f) {
  switch (f) {
  case Builtin::Exp:
    return MathFn::Exp;
  case Builtin::Log:
    return MathFn::Log;
  case Builtin::Sqrt:
    return MathFn::Sqrt;
  case Builtin::Rsqrt:
    return MathFn::Rsqrt;
  case Builtin::Sin:
    return MathFn::Sin;
  case Builtin::Cos:
    return MathFn::Cos;
  case Builtin::Tanh:
    return MathFn::Tanh;
  case Builtin::Erf:
    return MathFn::Erf;
  case Builtin::Pow:
    return MathFn::Pow;
  case Builtin::Floor:
    return MathFn::Floor;
  case Builtin::Ceil:
    return MathFn::Ceil;
  case Builtin::Round:
    return MathFn::Round;
  default:
    throw LowerError(std::string("'") + builtin_name(f) + "' is not a math function");
  }
}

std::optional<MathFn> math_fn_named(const std::string &name) {
  Builtin f = find_builtin(name);
  if (!is_unary_math_fn(f) && f != Builtin::Pow)
    return std::nullopt;
  return math_fn(f);
}

namespace {

/// erf's polynomials (scripts/fit_erf.py), highest degree first.
/// |x| < kErfSplit: erf(x) = x + x * P(x^2).
constexpr float kErfSplit = 0.921875f;
constexpr float kErfP[] = {-0x1.3a19e4p-11f, 0x1.473c40p-8f,  -0x1.b68b74p-6f,
                           0x1.ce1a6ep-4f,   -0x1.8126e6p-2f, 0x1.06eba6p-3f};
/// |x| >= kErfSplit: erf(|x|) = 1 - 2^Q(min(|x|, 4)) (1 - erf(4) < 2^-25).
constexpr float kErfQ[] = {-0x1.005f92p-15f, 0x1.496396p-11f, -0x1.8ad32ap-8f, 0x1.290600p-5f,
                           -0x1.3ffc20p-3f,  -0x1.d3d0bep-1f, -0x1.a12aaep+0f, 0x1.0acd84p-12f};

} // namespace

llvm::Value *BodyLowerer::fconst(double v) { return llvm::ConstantFP::get(f32, v); }

llvm::Value *BodyLowerer::horner(llvm::Value *x, const float *c, size_t n) {
  llvm::Value *p = fconst(c[0]);
  for (size_t k = 1; k < n; ++k)
    p = b.CreateIntrinsic(llvm::Intrinsic::fma, {f32}, {p, x, fconst(c[k])});
  return p;
}

llvm::Value *BodyLowerer::erf_composed(llvm::Value *x) {
  llvm::Value *t = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // Small: x + x * P(x^2).
  llvm::Value *p = horner(b.CreateFMul(x, x), kErfP, std::size(kErfP));
  llvm::Value *small = b.CreateIntrinsic(llvm::Intrinsic::fma, {f32}, {x, p, x});
  // Large: 1 - 2^Q(|x|), |x| clamped to 4 (a compare, so NaN stays NaN).
  llvm::Value *tc = b.CreateSelect(b.CreateFCmpOGT(t, fconst(4.0)), fconst(4.0), t);
  llvm::Value *q = horner(tc, kErfQ, std::size(kErfQ));
  llvm::Value *large = b.CreateFSub(fconst(1.0), m.math(b, MathFn::Exp2, q));
  large = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, large, x);
  return b.CreateSelect(b.CreateFCmpOLT(t, fconst(kErfSplit)), small, large);
}

llvm::Value *BodyLowerer::pow_composed(llvm::Value *x, llvm::Value *y) {
  llvm::Value *ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value *r = m.math(b, MathFn::Exp2, b.CreateFMul(y, m.math(b, MathFn::Log2, ax)));
  // The sign for x < 0: an odd integer y negates, a non-integer y gives NaN.
  llvm::Value *half = b.CreateFMul(y, fconst(0.5));
  llvm::Value *is_int = b.CreateFCmpOEQ(b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, y), y);
  llvm::Value *is_odd = b.CreateAnd(
      is_int, b.CreateFCmpONE(b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, half), half));
  llvm::Value *neg = b.CreateFCmpOLT(x, fconst(0.0));
  r = b.CreateSelect(b.CreateAnd(neg, is_odd), b.CreateFNeg(r), r);
  r = b.CreateSelect(b.CreateAnd(neg, b.CreateNot(is_int)),
                     fconst(std::numeric_limits<double>::quiet_NaN()), r);
  llvm::Value *one = b.CreateOr(b.CreateFCmpOEQ(y, fconst(0.0)), b.CreateFCmpOEQ(x, fconst(1.0)));
  return b.CreateSelect(one, fconst(1.0), r);
}

llvm::Value *BodyLowerer::math_reg(MathFn fn, llvm::Value *x, llvm::Value *y) {
  if (llvm::Value *r = m.math(b, fn, x, y))
    return r;
  if (fn == MathFn::Erf)
    return erf_composed(x);
  if (fn == MathFn::Pow)
    return pow_composed(x, y);
  throw LowerError("target '" + m.target() + "' has no form of a math function");
}

std::vector<llvm::Value *> BodyLowerer::math_regs(MathFn fn, const std::vector<llvm::Value *> &x,
                                              const std::vector<llvm::Value *> &y, ElemType want) {
  TileVal f;
  f.elem = ElemType::F32;
  std::vector<llvm::Value *> out;
  for (size_t k = 0; k < x.size(); ++k) // rounds once to f16 / bf16
    out.push_back(
        convert_scalar(math_reg(fn, x[k], fn == MathFn::Pow ? y.at(k) : nullptr), f, want));
  return out;
}

} // namespace etl
