//===- target/machine.cpp - A target's machine ----------------------------===//
//
// What this owns: make_machine, the one place a target's kind picks the
// Machine implementation, and the relaxed tensor atomics both machines emit.
//
//===----------------------------------------------------------------------===//
#include "target/machine.h"

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

} // namespace etl
