//===- target/wgmma.cpp - wgmma: the Machine helper family ---------------===//
//
// What this owns: Machine's wgmma helpers (target/machine.h): the defaults
// of a machine without them (a loud failure: the lowering asks only where
// TargetInfo::wgmma holds), and the NVPTX forms, inline PTX (no LLVM has a
// wgmma.mma_async intrinsic; LLVM 19 has none of the family), called by
// target/nvptx.cpp's machine: `wgmma.fence.sync.aligned`,
// `wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T` with A and B by
// descriptor (scale-d by a predicate set from a register, scale-a/b 1,
// trans-a 0, trans-b as asked), `wgmma.commit_group.sync.aligned`, and
// `wgmma.wait_group.sync.aligned N` with every accumulator register tied in
// and out (Triton's form), so that neither LLVM nor ptxas moves a read of
// them above the wait. Each is side-effecting and convergent. The sim's
// forms are in target/sim.cpp (the wgmma_* ops of etl_sim_ops).
//
//===----------------------------------------------------------------------===//
#include "target/wgmma.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/Support/ErrorHandling.h>

#include <string>

namespace etl {

namespace {

[[noreturn]] void no_wgmma(const Machine &m) {
  llvm::report_fatal_error(llvm::Twine("target '") + m.target() + "' has no wgmma");
}

llvm::CallInst *asm_call(Builder &b, llvm::Type *ret, const std::vector<llvm::Value *> &args,
                         const std::string &text, const std::string &cons) {
  std::vector<llvm::Type *> params;
  for (llvm::Value *a : args)
    params.push_back(a->getType());
  auto *fty = llvm::FunctionType::get(ret, params, false);
  llvm::CallInst *c = b.CreateCall(fty, llvm::InlineAsm::get(fty, text, cons, true), args);
  c->addFnAttr(llvm::Attribute::Convergent);
  return c;
}

/// `{$first, ..., $(first + n - 1)}`
std::string reg_list(unsigned first, unsigned n) {
  std::string s = "{";
  for (unsigned i = 0; i < n; ++i)
    s += (i ? ", $" : "$") + std::to_string(first + i);
  return s + "}";
}

/// n "=f" outputs, then `middle`, then n inputs tied to the outputs.
std::string tied_constraints(unsigned n, const std::string &middle) {
  std::string c;
  for (unsigned i = 0; i < n; ++i)
    c += (i ? ",=f" : "=f");
  c += middle;
  for (unsigned i = 0; i < n; ++i)
    c += "," + std::to_string(i);
  return c;
}

std::vector<llvm::Value *> unpack(Builder &b, llvm::Value *s, unsigned n) {
  std::vector<llvm::Value *> r;
  for (unsigned i = 0; i < n; ++i)
    r.push_back(b.CreateExtractValue(s, i));
  return r;
}

} // namespace

llvm::Value *Machine::wgmma_smem_addr(Builder &, llvm::Value *) { no_wgmma(*this); }
void Machine::wgmma_fence(Builder &) { no_wgmma(*this); }
std::vector<llvm::Value *> Machine::wgmma_mma(Builder &, unsigned, bool, bool, llvm::Value *,
                                              llvm::Value *, const std::vector<llvm::Value *> &,
                                              unsigned) {
  no_wgmma(*this);
}
void Machine::wgmma_commit(Builder &) { no_wgmma(*this); }
std::vector<llvm::Value *> Machine::wgmma_wait(Builder &, unsigned,
                                               const std::vector<llvm::Value *> &, unsigned) {
  no_wgmma(*this);
}

llvm::Value *nvptx_wgmma_smem_addr(Builder &b, llvm::Value *p) {
  return b.CreatePtrToInt(b.CreateAddrSpaceCast(p, b.getPtrTy(3)), b.getInt32Ty());
}

void nvptx_wgmma_fence(Builder &b) {
  asm_call(b, b.getVoidTy(), {}, "wgmma.fence.sync.aligned;", "~{memory}");
}

void nvptx_wgmma_commit(Builder &b) {
  asm_call(b, b.getVoidTy(), {}, "wgmma.commit_group.sync.aligned;", "~{memory}");
}

std::vector<llvm::Value *> nvptx_wgmma_mma(Builder &b, unsigned n, bool bf16, bool trans_b,
                                           llvm::Value *desc_a, llvm::Value *desc_b,
                                           const std::vector<llvm::Value *> &acc) {
  const unsigned r = n / 2;
  const char *t = bf16 ? "bf16" : "f16";
  const std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(r + 2) +
                           ", 0;\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(n) +
                           "k16.f32." + t + "." + t + " " + reg_list(0, r) + ", $" +
                           std::to_string(r) + ", $" + std::to_string(r + 1) + ", p, 1, 1, 0, " +
                           (trans_b ? "1" : "0") + ";\n}";
  std::vector<llvm::Type *> outs(r, b.getFloatTy());
  std::vector<llvm::Value *> args = {desc_a, desc_b, b.getInt32(1)};
  args.insert(args.end(), acc.begin(), acc.end());
  llvm::CallInst *c = asm_call(b, llvm::StructType::get(b.getContext(), outs), args, text,
                               tied_constraints(r, ",l,l,r"));
  return unpack(b, c, r);
}

std::vector<llvm::Value *> nvptx_wgmma_wait(Builder &b, unsigned pending,
                                            const std::vector<llvm::Value *> &acc) {
  const unsigned r = unsigned(acc.size());
  std::vector<llvm::Type *> outs(r, b.getFloatTy());
  llvm::CallInst *c =
      asm_call(b, llvm::StructType::get(b.getContext(), outs), acc,
               "wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";",
               tied_constraints(r, "") + ",~{memory}");
  return unpack(b, c, r);
}

} // namespace etl
