//===- lower/lower_body.cpp - BodyLowerer: regions and scratch ------------===//
//
// What this owns: the body lowering's scoped regions (if_then and for_range
// that keep the thread coordinates built inside a region out of the code
// after it) and its scratch accounting: addresses, loads and stores of
// the scratch area from the staging op's planned buffer (scratch_floor),
// the check that a staging op stays inside the buffer tile/smem.cpp planned
// for it, and its trailing barrier.
//
//===----------------------------------------------------------------------===//
#include "lower/body_lowerer.h"

namespace etl {

void BodyLowerer::if_then(llvm::Value *cond, const std::function<void()> &then) {
  LowerCtx::if_then(cond, [&] {
    CoordScope scope(*this); // coordinates built in the branch stay in it
    then();
  });
}

void BodyLowerer::for_range(llvm::Value *lo, llvm::Value *hi, llvm::Value *step,
                            const std::function<void(llvm::Value *)> &body) {
  LowerCtx::for_range(lo, hi, step, [&](llvm::Value *v) {
    CoordScope scope(*this); // the body dominates nothing after the loop
    body(v);
  });
}

llvm::Value *BodyLowerer::scratch_ptr(llvm::Value *elem, unsigned bytes) {
  llvm::Value *off = b.CreateAdd(b.CreateMul(elem, b.getInt64(bytes)),
                                 b.getInt64(int64_t(kSmemScratch) + scratch_floor));
  return b.CreateGEP(b.getInt8Ty(), smem, off);
}

llvm::Value *BodyLowerer::scratch_load(llvm::Type *ty, llvm::Value *elem, unsigned bytes) {
  llvm::Value *p = scratch_ptr(elem, bytes);
  m.shared_access(b, p, unsigned(ty->getPrimitiveSizeInBits() / 8), false);
  return b.CreateLoad(ty, p);
}

void BodyLowerer::scratch_store(llvm::Value *v, llvm::Value *elem, unsigned bytes) {
  llvm::Value *p = scratch_ptr(elem, bytes);
  m.shared_access(b, p, unsigned(v->getType()->getPrimitiveSizeInBits() / 8), true);
  b.CreateStore(v, p);
}

void BodyLowerer::note_scratch(int64_t numel) {
  if (tf && tf->smem_planned && !tile_staging)
    throw LowerError("tile IR op stages through shared memory outside plan_shared's ops");
  if (tile_staging) {
    if (!tile_buf)
      throw LowerError("tile IR op stages through shared memory without a planned buffer");
    if (numel * 4 > tile_buf->bytes)
      throw LowerError("tile IR " + tile_buf->what + ": needs more shared memory than planned");
    tile_buf_used = true;
  }
  numel += scratch_floor / 4;
  if (numel > max_scratch_elems)
    max_scratch_elems = numel;
}

void BodyLowerer::scratch_release() {
  if (!tile_buf || tile_buf->barrier_after)
    m.barrier(b);
}

unsigned BodyLowerer::scratch_bytes(ElemType t) const { return t == ElemType::I64 ? 8 : 4; }

} // namespace etl
