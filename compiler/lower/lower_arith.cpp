//===- lower/lower_arith.cpp - Per-register arithmetic of every element type ===//
//
// What this owns: the arithmetic the tile IR's maps (lower_tile_map.cpp)
// and reductions (lower_tile_reduce.cpp) apply register by register: + - *
// / % and the bit operators (integer division floors, a zero divisor gives
// 0; shift amounts modulo the width), popc, comparisons (bool results as
// i32 0/1; NaN unordered), select, argmax/argmin's combine, and shuffles
// of any register type (an i64 in two halves). Operands
// come in the result's layout (the layout pass made them so); a rank-0
// operand is one uniform register, splat here. Element types in registers:
// lower/lower_ctx.h; rounding after each float op and wrapping after each
// integer one: lower_convert.cpp.
//
//===----------------------------------------------------------------------===//
#include "lower/body_lowerer.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <optional>

namespace etl {

namespace {

/// The (float, signed integer) LLVM predicates of a comparison operator;
/// NaN compares unequal and unordered for everything else.
std::optional<std::pair<llvm::CmpInst::Predicate, llvm::CmpInst::Predicate>>
comparison_predicates(BinOp op) {
  using P = llvm::CmpInst::Predicate;
  switch (op) {
  case BinOp::Eq:
    return std::make_pair(P::FCMP_OEQ, P::ICMP_EQ);
  case BinOp::Ne:
    return std::make_pair(P::FCMP_UNE, P::ICMP_NE);
  case BinOp::Lt:
    return std::make_pair(P::FCMP_OLT, P::ICMP_SLT);
  case BinOp::Le:
    return std::make_pair(P::FCMP_OLE, P::ICMP_SLE);
  case BinOp::Gt:
    return std::make_pair(P::FCMP_OGT, P::ICMP_SGT);
  case BinOp::Ge:
    return std::make_pair(P::FCMP_OGE, P::ICMP_SGE);
  default:
    return std::nullopt;
  }
}

} // namespace

TileVal BodyLowerer::coerce(const TileVal &v, size_t n, ElemType elem) {
  if (v.regs.size() != n && v.regs.size() != 1)
    throw LowerError("tile IR operand of " + std::to_string(v.regs.size()) +
                     " registers where its op has " + std::to_string(n));
  TileVal r;
  r.elem = elem;
  r.shape = v.shape;
  for (size_t k = 0; k < n; ++k) // a uniform value (one register) splat
    r.regs.push_back(convert_scalar(v.regs[v.regs.size() == 1 ? 0 : k], v, elem));
  return r;
}


//===-- Element-wise -----------------------------------------------------===//

/// Integer tile `/` and `%` round like index arithmetic: floor division and
/// a modulo with the divisor's sign. A zero divisor gives 0 (no trap, on any
/// target).
llvm::Value *BodyLowerer::int_div(llvm::Value *l, llvm::Value *r, bool mod, bool is_unsigned) {
  llvm::Value *zero = llvm::Constant::getNullValue(r->getType());
  llvm::Value *one = llvm::ConstantInt::get(r->getType(), 1);
  llvm::Value *is0 = b.CreateICmpEQ(r, zero);
  llvm::Value *d = b.CreateSelect(is0, one, r);
  if (is_unsigned) // no rounding question
    return b.CreateSelect(is0, zero, mod ? b.CreateURem(l, d) : b.CreateUDiv(l, d));
  llvm::Value *q = b.CreateSDiv(l, d), *m = b.CreateSRem(l, d);
  // The remainder is non-zero and its sign differs from the divisor's.
  llvm::Value *adjust = b.CreateAnd(
      b.CreateICmpNE(m, zero), b.CreateICmpNE(b.CreateICmpSLT(m, zero), b.CreateICmpSLT(d, zero)));
  llvm::Value *v = mod ? b.CreateSelect(adjust, b.CreateAdd(m, d), m)
                       : b.CreateSelect(adjust, b.CreateSub(q, one), q);
  return b.CreateSelect(is0, zero, v);
}

/// `& | ^ << >>` of two integer registers. A shift amount is taken modulo
/// the bit width (`x << 33` on i32 is `x << 1`; a negative amount uses its
/// low bits), the same on every target: LLVM leaves an amount >= width
/// poison and PTX clamps it, so the mask makes sim and NVPTX agree. The
/// width is the type's (8 for i8/u8, 16 for i16/u16). `>>` is arithmetic for
/// signed types and logical for unsigned ones (whose registers hold the value
/// zero-extended, so a logical shift of the register is the type's).
llvm::Value *BodyLowerer::bit_op(BinOp op, llvm::Value *l, llvm::Value *r, ElemType t) {
  if (op == BinOp::BitAnd)
    return b.CreateAnd(l, r);
  if (op == BinOp::BitOr)
    return b.CreateOr(l, r);
  if (op == BinOp::BitXor)
    return b.CreateXor(l, r);
  unsigned w = std::min(elem_bits(t), l->getType()->getIntegerBitWidth());
  llvm::Value *amount = b.CreateAnd(r, llvm::ConstantInt::get(r->getType(), w - 1));
  if (op == BinOp::Shl)
    return b.CreateShl(l, amount);
  return is_unsigned(t) ? b.CreateLShr(l, amount) : b.CreateAShr(l, amount);
}

/// popc of an integer register of `t`: the set bits of the type's width
/// (an i8 register holds the value sign-extended), as an i32.
llvm::Value *BodyLowerer::popc_reg(llvm::Value *r, ElemType t) {
  unsigned w = elem_bits(t);
  llvm::Value *x = w < 32 ? b.CreateAnd(r, b.getInt32((1u << w) - 1)) : r;
  return b.CreateSExtOrTrunc(b.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, x), i32);
}

TileVal BodyLowerer::arith(BinOp op, const TileVal &a, const TileVal &c,
                       const std::vector<int64_t> &shape, ElemType elem) {
  const size_t n = std::max(a.regs.size(), c.regs.size());
  TileVal x = coerce(a, n, elem), y = coerce(c, n, elem);
  TileVal r;
  r.elem = elem;
  r.shape = shape;
  bool fl = is_float(elem);
  for (size_t k = 0; k < x.regs.size(); ++k) {
    llvm::Value *l = x.regs[k], *rr = y.regs[k], *v = nullptr;
    switch (op) {
    case BinOp::Add:
      v = fl ? b.CreateFAdd(l, rr) : b.CreateAdd(l, rr);
      break;
    case BinOp::Sub:
      v = fl ? b.CreateFSub(l, rr) : b.CreateSub(l, rr);
      break;
    case BinOp::Mul:
      v = fl ? b.CreateFMul(l, rr) : b.CreateMul(l, rr);
      break;
    case BinOp::Div:
      v = fl ? b.CreateFDiv(l, rr) : int_div(l, rr, /*mod=*/false, is_unsigned(elem));
      break;
    case BinOp::Mod:
      if (fl)
        throw LowerError("'%' on a float tile");
      v = int_div(l, rr, /*mod=*/true, is_unsigned(elem));
      break;
    case BinOp::BitAnd:
    case BinOp::BitOr:
    case BinOp::BitXor:
    case BinOp::Shl:
    case BinOp::Shr:
      if (fl)
        throw LowerError(std::string("'") + spelling(op) + "' on a float tile");
      v = bit_op(op, l, rr, elem);
      break;
    default:
      throw LowerError(std::string("operator '") + spelling(op) + "' is not supported on tiles");
    }
    r.regs.push_back(fl ? round_to(b, v, elem) : wrap_int(v, elem));
  }
  return r;
}

//===-- Comparisons and select -------------------------------------------===//

TileVal BodyLowerer::compare(BinOp op, const TileVal &a, const TileVal &c,
                         const std::vector<int64_t> &shape) {
  TileVal r;
  r.elem = ElemType::Bool;
  r.shape = shape;
  const size_t n = std::max(a.regs.size(), c.regs.size());
  if (op == BinOp::And || op == BinOp::Or) {
    TileVal x = coerce(a, n, ElemType::Bool), y = coerce(c, n, ElemType::Bool);
    for (size_t k = 0; k < x.regs.size(); ++k)
      r.regs.push_back(op == BinOp::And ? b.CreateAnd(x.regs[k], y.regs[k])
                                        : b.CreateOr(x.regs[k], y.regs[k]));
    return r;
  }
  auto pred = comparison_predicates(op);
  if (!pred)
    throw LowerError(std::string("operator '") + spelling(op) + "' is not a comparison");
  // An index or a literal scalar takes the tile operand's type (as in sema).
  ElemType elem = a.is_index || (a.scalar() && !c.scalar() && !c.is_index) ? c.elem : a.elem;
  ElemType cmp_elem = a.is_index && c.is_index ? ElemType::I64 : elem; // u32: unsigned compares
  auto cmp = [&](llvm::Value *l, llvm::Value *rr, bool fl) -> llvm::Value * {
    return b.CreateZExt(fl ? b.CreateFCmp(pred->first, l, rr)
                           : b.CreateICmp(int_predicate(pred->second, cmp_elem), l, rr),
                        i32);
  };
  if (a.is_index && c.is_index) { // two i64 indices: a uniform bool scalar
    r.regs.assign(n, cmp(a.regs[0], c.regs[0], false));
    return r;
  }
  TileVal x = coerce(a, n, elem), y = coerce(c, n, elem);
  for (size_t k = 0; k < x.regs.size(); ++k)
    r.regs.push_back(cmp(x.regs[k], y.regs[k], is_float(elem)));
  return r;
}

TileVal BodyLowerer::select(const TileVal &cond, const TileVal &a, const TileVal &c,
                        const std::vector<int64_t> &shape, ElemType elem) {
  const size_t n = std::max({cond.regs.size(), a.regs.size(), c.regs.size()});
  TileVal m = coerce(cond, n, ElemType::Bool);
  TileVal x = coerce(a, n, elem), y = coerce(c, n, elem);
  x.shape = shape;
  for (size_t k = 0; k < x.regs.size(); ++k)
    x.regs[k] = b.CreateSelect(b.CreateICmpNE(m.regs[k], b.getInt32(0)), x.regs[k], y.regs[k]);
  return x;
}

//===-- Shuffles ---------------------------------------------------------===//

llvm::Value *BodyLowerer::shuffle_reg(ShflMode mode, llvm::Value *v, llvm::Value *lane,
                                  unsigned line) {
  auto shfl = [&](llvm::Value *x) { return m.shuffle(b, mode, x, lane, 31, 0xFFFFFFFFu, line); };
  if (!v->getType()->isIntegerTy(64))
    return shfl(v);
  llvm::Value *lo = shfl(b.CreateTrunc(v, i32));
  llvm::Value *hi = shfl(b.CreateTrunc(b.CreateLShr(v, 32), i32));
  return b.CreateOr(b.CreateZExt(lo, i64), b.CreateShl(b.CreateZExt(hi, i64), 32));
}

//===-- argmax / argmin ---------------------------------------------------===//

llvm::Value *BodyLowerer::arg_wins(ElemType t, bool is_max, llvm::Value *pv, llvm::Value *pi,
                               llvm::Value *qv, llvm::Value *qi) {
  bool fl = is_float(t);
  llvm::Value *lower = b.CreateICmpULT(qi, pi);
  llvm::Value *eq = fl ? b.CreateFCmpOEQ(qv, pv) : b.CreateICmpEQ(qv, pv);
  llvm::Value *better =
      fl ? (is_max ? b.CreateFCmpOGT(qv, pv) : b.CreateFCmpOLT(qv, pv))
         : b.CreateICmp(
               int_predicate(is_max ? llvm::CmpInst::ICMP_SGT : llvm::CmpInst::ICMP_SLT, t), qv,
               pv);
  llvm::Value *wins = b.CreateOr(better, b.CreateAnd(eq, lower));
  if (!fl)
    return wins;
  // The serial walk starts at index 0 and no comparison with a NaN succeeds.
  llvm::Value *pn = b.CreateFCmpUNO(pv, pv), *qn = b.CreateFCmpUNO(qv, qv);
  llvm::Value *ps = b.CreateAnd(pn, b.CreateICmpEQ(pi, b.getInt32(0)));
  llvm::Value *qs = b.CreateAnd(qn, b.CreateICmpEQ(qi, b.getInt32(0)));
  wins = b.CreateOr(wins, b.CreateAnd(pn, b.CreateNot(qn)));
  wins = b.CreateOr(wins, b.CreateAnd(b.CreateAnd(pn, qn), lower));
  return b.CreateOr(qs, b.CreateAnd(b.CreateNot(ps), wins));
}

} // namespace etl
