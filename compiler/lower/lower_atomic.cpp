//===- lower/lower_atomic.cpp - Atomic read-modify-writes of tensor elements -===//
//
// What this owns: the per-element code of atomic_add, atomic_max,
// atomic_min and atomic_cas (tile_atomic in lower/lower_tile_memory.cpp
// walks the slice, the mask and the threads, as for a store): the relaxed atomics of
// the machine for f32, i32 and i64 (Machine::global_atomic), and for the
// 16-bit floats the machine's hardware add (f16, and bf16 on sm_90) or a
// loop on a 16-bit compare-and-swap that computes in f32 and rounds once,
// so every form gives the correctly rounded result of each update.
//
//===----------------------------------------------------------------------===//
#include "lower/body_lowerer.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

namespace etl {

namespace {

AtomicOp atomic_op(Builtin f) {
  switch (f) {
  case Builtin::AtomicAdd:
    return AtomicOp::Add;
  case Builtin::AtomicMax:
    return AtomicOp::Max;
  case Builtin::AtomicMin:
    return AtomicOp::Min;
  case Builtin::AtomicCas:
    return AtomicOp::Cas;
  default:
    throw LowerError(std::string("not an atomic: ") + builtin_name(f));
  }
}

} // namespace

llvm::Value *BodyLowerer::atomic_elem(Builtin f, ElemType t, llvm::Value *p, llvm::Value *v,
                                  llvm::Value *desired) {
  AtomicOp op = atomic_op(f);
  if (t == ElemType::F32 || t == ElemType::I32 || t == ElemType::I64)
    return m.global_atomic(b, op, p, v, desired);
  if (t != ElemType::F16 && t != ElemType::BF16)
    throw LowerError("atomics on this element type");
  if (op == AtomicOp::Cas)
    throw LowerError("atomic_cas of a float tensor"); // sema reports it
  const bool bf = t == ElemType::BF16;
  llvm::Type *i16 = b.getInt16Ty();
  auto to_bits = [&](llvm::Value *x) {
    return bf ? f32_to_bf16_bits(b, x) : b.CreateBitCast(b.CreateFPTrunc(x, b.getHalfTy()), i16);
  };
  auto from_bits = [&](llvm::Value *h) {
    return bf ? bf16_bits_to_f32(b, h) : b.CreateFPExt(b.CreateBitCast(h, b.getHalfTy()), f32);
  };
  if (op == AtomicOp::Add)
    if (llvm::Value *old = m.atomic_add16(b, p, to_bits(v), bf))
      return from_bits(old);
  // old = 0; loop { new = round(op(f32(old), v)); seen = cas(p, old, new);
  // if (seen == old) break; old = seen; } -- the bits compare, so a NaN ends
  // it. Guessing 0 instead of loading first keeps every access an atomic
  // (the sim's race check), for at most one more cas.
  llvm::Value *first = b.getInt16(0);
  llvm::BasicBlock *entry = b.GetInsertBlock();
  auto *loop = llvm::BasicBlock::Create(ctx, "atomic16", fn);
  auto *done = llvm::BasicBlock::Create(ctx, "atomic16.done", fn);
  b.CreateBr(loop);
  b.SetInsertPoint(loop);
  llvm::PHINode *old = b.CreatePHI(i16, 2);
  old->addIncoming(first, entry);
  llvm::Value *cur = from_bits(old);
  llvm::Value *next =
      op == AtomicOp::Add
          ? b.CreateFAdd(cur, v)
          : b.CreateBinaryIntrinsic(
                op == AtomicOp::Max ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum, cur, v);
  llvm::Value *seen = m.global_atomic(b, AtomicOp::Cas, p, old, to_bits(next));
  old->addIncoming(seen, b.GetInsertBlock());
  b.CreateCondBr(b.CreateICmpEQ(seen, old), done, loop);
  b.SetInsertPoint(done);
  return cur;
}

} // namespace etl
