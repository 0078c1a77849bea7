//===- lower/lower_ctx.cpp - LowerCtx: types and control-flow helpers -----===//
//
// What this owns: LowerCtx's constructor (the common LLVM types), the
// register type of each element type, and the helpers every lowering file
// emits control flow with (entry allocas, if_then, for_range). The
// argument slots and index expressions are lower_index.cpp's, the element
// conversions lower_convert.cpp's.
//
//===----------------------------------------------------------------------===//
#include "lower/lower_ctx.h"

namespace etl {

LowerCtx::LowerCtx(const KernelPlan &p, Machine &mach, llvm::Module &md, unsigned threads)
    : plan(p), m(mach), mod(md), ctx(md.getContext()), b(md.getContext()), T(threads) {
  i1 = b.getInt1Ty();
  i32 = b.getInt32Ty();
  i64 = b.getInt64Ty();
  f32 = b.getFloatTy();
  ptr = b.getPtrTy();
}

llvm::Type *LowerCtx::reg_type(ElemType t) const {
  if (t == ElemType::I64)
    return i64;
  if (is_integer(t) || t == ElemType::Bool) // bool: an i32 holding 0 or 1; i8 .. u32 extended
    return i32;
  return f32; // f16 and bf16 are computed in f32
}

llvm::CmpInst::Predicate LowerCtx::int_predicate(llvm::CmpInst::Predicate p, ElemType t) {
  return is_unsigned(t) ? llvm::ICmpInst::getUnsignedPredicate(p) : p;
}

llvm::AllocaInst *LowerCtx::entry_alloca(llvm::Type *ty, const char *name) {
  llvm::BasicBlock &entry = fn->getEntryBlock();
  llvm::IRBuilder<> eb(&entry, entry.getFirstInsertionPt());
  return eb.CreateAlloca(ty, nullptr, name);
}

void LowerCtx::if_then(llvm::Value *cond, const std::function<void()> &then) {
  auto *tb = llvm::BasicBlock::Create(ctx, "then", fn);
  auto *jb = llvm::BasicBlock::Create(ctx, "endif", fn);
  b.CreateCondBr(cond, tb, jb);
  b.SetInsertPoint(tb);
  then();
  b.CreateBr(jb);
  b.SetInsertPoint(jb);
}

std::vector<llvm::Value *>
LowerCtx::guarded_regs(llvm::Value *when, llvm::Type *ty, llvm::Value *otherwise, const char *name,
                       const std::function<std::vector<llvm::Value *>()> &then) {
  llvm::BasicBlock *from = b.GetInsertBlock();
  auto *tb = llvm::BasicBlock::Create(ctx, name, fn);
  auto *jb = llvm::BasicBlock::Create(ctx, std::string(name) + ".done", fn);
  b.CreateCondBr(when, tb, jb);
  b.SetInsertPoint(tb);
  std::vector<llvm::Value *> got = then();
  llvm::BasicBlock *tend = b.GetInsertBlock();
  b.CreateBr(jb);
  b.SetInsertPoint(jb);
  std::vector<llvm::Value *> out;
  for (llvm::Value *x : got) {
    llvm::PHINode *phi = b.CreatePHI(ty, 2);
    phi->addIncoming(otherwise, from);
    phi->addIncoming(x, tend);
    out.push_back(phi);
  }
  return out;
}

void LowerCtx::for_range(llvm::Value *lo, llvm::Value *hi, llvm::Value *step,
                        const std::function<void(llvm::Value *)> &body) {
  llvm::AllocaInst *iv = entry_alloca(i64, "iv");
  b.CreateStore(lo, iv);
  auto *head = llvm::BasicBlock::Create(ctx, "for.head", fn);
  auto *bb = llvm::BasicBlock::Create(ctx, "for.body", fn);
  auto *done = llvm::BasicBlock::Create(ctx, "for.end", fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::Value *v = b.CreateLoad(i64, iv);
  b.CreateCondBr(b.CreateICmpSLT(v, hi), bb, done);
  b.SetInsertPoint(bb);
  body(v);
  b.CreateStore(b.CreateAdd(b.CreateLoad(i64, iv), step), iv);
  b.CreateBr(head);
  b.SetInsertPoint(done);
}

} // namespace etl
