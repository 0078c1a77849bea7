//===- target/machine.cpp - A target's machine ----------------------------===//
//
// What this owns: make_machine, the one place a target's kind picks the
// Machine implementation, the relaxed tensor atomics both machines emit, and
// the opaque zero (Machine::opaque_zero's fallback and its inline-asm form).
//
//===----------------------------------------------------------------------===//
#include "target/machine.h"

#include <llvm/IR/InlineAsm.h>

#include <stdexcept>

namespace etl {

std::unique_ptr<Machine> make_machine(const TargetDesc &t, const MachineOptions &opts,
                                      std::string &error) {
  switch (t.kind) {
  case TargetKind::Sim:
    return make_sim_machine(error);
  case TargetKind::Nvptx:
    return make_nvptx_machine(t.name, opts, error);
  }
  error = std::string("no machine for target '") + t.name + "'";
  return nullptr;
}

llvm::Value *emit_relaxed_atomic(Builder &b, AtomicOp op, llvm::Value *p, llvm::Value *v,
                                 llvm::Value *desired) {
  const auto order = llvm::AtomicOrdering::Monotonic;
  if (op == AtomicOp::Cas) {
    llvm::Value *pair = b.CreateAtomicCmpXchg(p, v, desired, llvm::MaybeAlign(), order, order);
    return b.CreateExtractValue(pair, 0);
  }
  using RMW = llvm::AtomicRMWInst::BinOp;
  bool fl = v->getType()->isFloatingPointTy();
  RMW kind = op == AtomicOp::Add   ? (fl ? RMW::FAdd : RMW::Add)
             : op == AtomicOp::Max ? (fl ? RMW::FMax : RMW::Max)
                                   : (fl ? RMW::FMin : RMW::Min);
  return b.CreateAtomicRMW(kind, p, v, llvm::MaybeAlign(), order);
}

llvm::Value *Machine::opaque_zero(Builder &b, llvm::IntegerType *ty) {
  llvm::Function *f = b.GetInsertBlock()->getParent();
  llvm::IRBuilder<> entry(&f->getEntryBlock(), f->getEntryBlock().begin());
  llvm::AllocaInst *slot = entry.CreateAlloca(ty, nullptr, "opaque.zero");
  entry.CreateStore(llvm::ConstantInt::get(ty, 0), slot);
  return b.CreateLoad(ty, slot, /*isVolatile=*/true);
}

// A machine without mbarriers or TMA (has_tma false) is never asked for them.
void Machine::mbarrier_init(Builder &, llvm::Value *, unsigned) {
  throw std::logic_error(target() + ": no mbarrier");
}
void Machine::mbarrier_arrive_expect_tx(Builder &, llvm::Value *, llvm::Value *) {
  throw std::logic_error(target() + ": no mbarrier");
}
void Machine::mbarrier_wait(Builder &, llvm::Value *, llvm::Value *, unsigned) {
  throw std::logic_error(target() + ": no mbarrier");
}
void Machine::mbarrier_inval(Builder &, llvm::Value *) {
  throw std::logic_error(target() + ": no mbarrier");
}
void Machine::tma_load(Builder &, llvm::Value *, llvm::Value *, const std::vector<llvm::Value *> &,
                       llvm::Value *) {
  throw std::logic_error(target() + ": no TMA");
}

llvm::Value *opaque_asm_value(Builder &b, llvm::Type *ty, const char *text, const char *cons) {
  auto *fty = llvm::FunctionType::get(ty, false);
  llvm::CallInst *c = b.CreateCall(fty, llvm::InlineAsm::get(fty, text, cons, /*sideeffect=*/true));
  c->setOnlyAccessesInaccessibleMemory();
  c->setDoesNotThrow();
  c->addFnAttr(llvm::Attribute::WillReturn);
  return c;
}

} // namespace etl
