//===- lower/lower_compute.cpp - Compute tile ops to per-thread SIMT code -===//
//
// What this owns: lowering of the compute builtins sema checks in
// check_compute_call and of tile comparisons: comparisons and `&&`/`||`
// (bool results), select, arange, transpose and dot (cumsum and
// argmax/argmin are lower/lower_reduce.cpp's).
// Register layouts and the scratch protocol are those of lower/lowerer.h;
// every op that changes which thread owns an element spills its operand(s)
// with spill_to_scratch, reads them back with the new mapping and ends with
// a barrier so the next re-layout may reuse the scratch area.
//
//===----------------------------------------------------------------------===//
#include "lower/lowerer.h"

#include <llvm/IR/Constants.h>

#include <optional>
#include <utility>

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

//===-- Comparisons and select -------------------------------------------===//

TileVal Lowerer::compare(BinOp op, const TileVal &a, const TileVal &c,
                         const std::vector<int64_t> &shape) {
  TileVal r;
  r.elem = ElemType::Bool;
  r.shape = shape;
  if (op == BinOp::And || op == BinOp::Or) {
    TileVal x = coerce(a, shape, ElemType::Bool), y = coerce(c, shape, ElemType::Bool);
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
    r.regs.assign(shape.empty() ? 1 : regs_for(r.numel()), cmp(a.regs[0], c.regs[0], false));
    return r;
  }
  TileVal x = coerce(a, shape, elem), y = coerce(c, shape, elem);
  for (size_t k = 0; k < x.regs.size(); ++k)
    r.regs.push_back(cmp(x.regs[k], y.regs[k], is_float(elem)));
  return r;
}

TileVal Lowerer::select(const TileVal &cond, const TileVal &a, const TileVal &c,
                        const std::vector<int64_t> &shape, ElemType elem) {
  TileVal m = coerce(cond, shape, ElemType::Bool);
  TileVal x = coerce(a, shape, elem), y = coerce(c, shape, elem);
  for (size_t k = 0; k < x.regs.size(); ++k)
    x.regs[k] = b.CreateSelect(b.CreateICmpNE(m.regs[k], b.getInt32(0)), x.regs[k], y.regs[k]);
  return x;
}

//===-- arange -----------------------------------------------------------===//

TileVal Lowerer::arange(int64_t n, ElemType elem) {
  TileVal r;
  r.elem = elem;
  r.shape = {n};
  for (unsigned k = 0; k < regs_for(n); ++k) {
    llvm::Value *e = elem_index(k);
    llvm::Value *v =
        is_float(elem) ? b.CreateSIToFP(e, f32) : wrap_int(b.CreateTrunc(e, i32), elem);
    if (elem == ElemType::F16)
      v = b.CreateFPExt(b.CreateFPTrunc(v, b.getHalfTy()), f32);
    r.regs.push_back(v);
  }
  return r;
}

//===-- transpose and dot ------------------------------------------------===//

TileVal Lowerer::transpose(const TileVal &v) {
  if (v.shape.size() != 2)
    throw LowerError("transpose of a tile that is not 2-D");
  TileVal r;
  r.elem = v.elem;
  r.shape = {v.shape[1], v.shape[0]};
  llvm::Type *ty = reg_type(v.elem);
  spill_to_scratch(v);
  for (unsigned k = 0; k < regs_for(r.numel()); ++k) {
    llvm::AllocaInst *tmp = entry_alloca(ty);
    b.CreateStore(llvm::Constant::getNullValue(ty), tmp);
    auto read = [&, k] {
      std::vector<llvm::Value *> c = coords(elem_index(k), r.shape);
      // r[i, j] = v[j, i], v row-major with v.shape[1] columns.
      llvm::Value *src = b.CreateAdd(b.CreateMul(c[1], b.getInt64(v.shape[1])), c[0]);
      b.CreateStore(scratch_load(ty, src), tmp);
    };
    if (llvm::Value *alive = elem_alive(k, r.numel()))
      if_then(alive, read);
    else
      read();
    r.regs.push_back(b.CreateLoad(ty, tmp));
  }
  m.barrier(b);
  return r;
}

TileVal Lowerer::dot(const TileVal &a, const TileVal &c, SourceRange where) {
  if (a.shape.empty() || a.shape.size() > 2 || c.shape.size() != 2 ||
      a.shape.back() != c.shape[0] || !is_float(a.elem) || !is_float(c.elem))
    throw LowerError("dot operands must be float [M, K] (or [K]) and [K, N] tiles");
  std::string mma = mma_eligible(a, c);
  if (mma == "ok")
    return dot_mma(a, c, where.begin.line);
  if (!mma.empty()) {
    auto type = [](const TileVal &v) {
      std::string s = std::string(spelling(v.elem)) + "[";
      for (size_t i = 0; i < v.shape.size(); ++i)
        s += (i ? ", " : "") + std::to_string(v.shape[i]);
      return s + "]";
    };
    remarks.push_back({where, {type(a), type(c), mma}});
  }
  bool gemv = a.shape.size() == 1;
  int64_t M = gemv ? 1 : a.shape[0], K = c.shape[0], N = c.shape[1];
  TileVal r;
  r.elem = ElemType::F32;
  r.shape = gemv ? std::vector<int64_t>{N} : std::vector<int64_t>{M, N};
  int64_t boff = a.numel();
  spill_to_scratch(a);
  spill_to_scratch(c, boff);
  for (unsigned k = 0; k < regs_for(r.numel()); ++k) {
    llvm::AllocaInst *acc = entry_alloca(f32, "dot.acc");
    b.CreateStore(llvm::ConstantFP::get(f32, 0.0), acc);
    auto body = [&, k] {
      llvm::Value *e = elem_index(k);
      llvm::Value *row = b.CreateUDiv(e, b.getInt64(N)), *col = b.CreateURem(e, b.getInt64(N));
      llvm::Value *arow = b.CreateMul(row, b.getInt64(K));
      llvm::Value *bcol = b.CreateAdd(col, b.getInt64(boff));
      for_range(b.getInt64(0), b.getInt64(K), b.getInt64(1), [&](llvm::Value *kk) {
        llvm::Value *x = scratch_load(f32, b.CreateAdd(arow, kk));
        llvm::Value *y = scratch_load(f32, b.CreateAdd(bcol, b.CreateMul(kk, b.getInt64(N))));
        b.CreateStore(b.CreateFAdd(b.CreateLoad(f32, acc), b.CreateFMul(x, y)), acc);
      });
    };
    if (llvm::Value *alive = elem_alive(k, r.numel()))
      if_then(alive, body);
    else
      body();
    r.regs.push_back(b.CreateLoad(f32, acc));
  }
  m.barrier(b);
  return r;
}

} // namespace etl
