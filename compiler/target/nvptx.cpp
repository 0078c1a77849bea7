//===- target/nvptx.cpp - The NVPTX machine ------------------------------===//
//
// What this owns: the Machine for NVIDIA GPUs (sm_80, sm_90, sm_90a, ...): NVVM
// intrinsics for tid/ctaid/bar.sync/shfl.sync, one dynamic addrspace(3)
// shared array (`.extern .shared __etl_smem[]`: its size is the launch's
// dynamic shared memory, so a kernel may use up to the device's opt-in
// maximum beyond the 48 KiB of static shared memory), inline PTX for what LLVM 19's NVPTX
// cannot select or silently weakens (release atomics, acquire loads,
// fence.acq_rel.gpu, nanosleep; see docs/ARCHITECTURE.md, "Toolchain facts") and
// for the timeline's %globaltimer/%smid, approximate NVVM math (never
// llvm.exp & co., which NVPTX cannot select),
// `nvvm.annotations` kernel metadata (.maxntid = threads per CTA and
// .minnctapersm 1, so ptxas may use up to 255 registers a thread instead of
// spilling), and PTX emission through a TargetMachine for nvptx64-nvidia-cuda
// with the PTX ISA version of targets.def ("+ptx78", "+ptx80" for sm_90a),
// multiply-add contraction on unless MachineOptions::fmad is off. What no
// LLVM 19 intrinsic selects (Hopper's wgmma, TMA, mbarrier parity waits,
// fence.proxy.async, elect.sync, stmatrix) is inline PTX here, one
// Machine helper per instruction family, as the orderings below are
// (mbarrier_* and tma_load on sm_90a).
//
//===----------------------------------------------------------------------===//
#include "target/machine.h"
#include "target/optimize.h"
#include "target/wgmma.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/raw_ostream.h>

#include <cmath>
#include <cstdlib>
#include <optional>

namespace etl {

namespace {

constexpr const char *kTriple = "nvptx64-nvidia-cuda";
constexpr const char *kSmemName = "__etl_smem";

/// The module's `extern [0 x i8]` in addrspace(3): PTX `.extern .shared
/// .align 16 .b8 __etl_smem[]`, dynamic shared memory. (GCC 12 reports a
/// false -Wmismatched-new-delete on GlobalVariable's operand-allocating `new`
/// with an address space; it is confined to this helper.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
llvm::GlobalVariable *new_shared_array(llvm::Module &m, const char *name) {
  auto *ty = llvm::ArrayType::get(llvm::Type::getInt8Ty(m.getContext()), 0);
  auto *gv = new llvm::GlobalVariable(m, ty, false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                      name, nullptr, llvm::GlobalValue::NotThreadLocal, 3);
  gv->setAlignment(llvm::Align(16));
  return gv;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

class NvptxMachine : public Machine {
public:
  NvptxMachine(const TargetDesc &desc, std::unique_ptr<llvm::TargetMachine> tm)
      : sm_(desc.name), cc_(desc.sm), tma_(etl::has_tma(desc)), tm_(std::move(tm)) {}

  const std::string &target() const override { return sm_; }
  /// 80 for "sm_80" (targets.def's compute capability).
  unsigned sm_number() const { return cc_; }
  llvm::TargetMachine &target_machine() override { return *tm_; }

  void init_module(llvm::Module &m) override {
    m.setTargetTriple(kTriple);
    m.setDataLayout(tm_->createDataLayout());
    smem_ = new_shared_array(m, kSmemName);
  }

  llvm::Function *create_kernel(llvm::Module &m) override {
    auto &c = m.getContext();
    auto *fty =
        llvm::FunctionType::get(llvm::Type::getVoidTy(c), {llvm::PointerType::get(c, 0)}, false);
    auto *f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, "etl_main", m);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    return f;
  }

  void finish_kernel(llvm::Module &m, llvm::Function *k, unsigned threads, unsigned) override {
    auto &c = m.getContext();
    // Kernel annotations; the shared array is dynamic (sized at launch).
    llvm::NamedMDNode *ann = m.getOrInsertNamedMetadata("nvvm.annotations");
    auto *i32 = llvm::Type::getInt32Ty(c);
    auto md = [&](const char *key, unsigned v) {
      llvm::Metadata *ops[] = {llvm::ValueAsMetadata::get(k), llvm::MDString::get(c, key),
                               llvm::ValueAsMetadata::get(llvm::ConstantInt::get(i32, v))};
      ann->addOperand(llvm::MDNode::get(c, ops));
    };
    if (tma_used_ && smem_->getAlign().valueOrOne() < llvm::Align(128)) // TMA's destinations:
      smem_->setAlignment(llvm::Align(128)); // 128-byte aligned (wgmma's 1024 may be set already)
    md("kernel", 1);
    md("maxntidx", threads);
    md("minctasm", 1);
  }

  llvm::Value *thread_id(Builder &b) override {
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {});
  }
  llvm::Value *cta_id(Builder &b) override {
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, {}, {});
  }
  void barrier(Builder &b) override { b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); }
  llvm::Value *shuffle(Builder &b, ShflMode mode, llvm::Value *v, llvm::Value *lane, unsigned c,
                       unsigned mask, unsigned) override {
    using namespace llvm;
    bool fl = v->getType()->isFloatTy();
    static const Intrinsic::ID ids[4][2] = {
        {Intrinsic::nvvm_shfl_sync_up_i32, Intrinsic::nvvm_shfl_sync_up_f32},
        {Intrinsic::nvvm_shfl_sync_down_i32, Intrinsic::nvvm_shfl_sync_down_f32},
        {Intrinsic::nvvm_shfl_sync_bfly_i32, Intrinsic::nvvm_shfl_sync_bfly_f32},
        {Intrinsic::nvvm_shfl_sync_idx_i32, Intrinsic::nvvm_shfl_sync_idx_f32}};
    return b.CreateIntrinsic(ids[unsigned(mode)][fl ? 1 : 0], {},
                             {b.getInt32(mask), v, lane, b.getInt32(c)});
  }
  std::vector<llvm::Value *> mma_m16n8k16(Builder &b, bool bf16,
                                          const std::vector<llvm::Value *> &a,
                                          const std::vector<llvm::Value *> &bf,
                                          const std::vector<llvm::Value *> &c, unsigned) override {
    using namespace llvm;
    std::vector<Value *> ops;
    auto *h2 = FixedVectorType::get(b.getHalfTy(), 2);
    for (const auto *v : {&a, &bf})
      for (Value *x : *v)
        ops.push_back(bf16 ? x : b.CreateBitCast(x, h2));
    ops.insert(ops.end(), c.begin(), c.end());
    // LLVM 19 does not mark the mma intrinsics convergent: the call site does.
    CallInst *call = b.CreateIntrinsic(bf16 ? Intrinsic::nvvm_mma_m16n8k16_row_col_bf16
                                            : Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32,
                                       {}, ops);
    call->addFnAttr(Attribute::Convergent);
    std::vector<Value *> d;
    for (unsigned i = 0; i < 4; ++i)
      d.push_back(b.CreateExtractValue(call, i));
    return d;
  }
  llvm::Value *to_tf32(Builder &b, llvm::Value *v) override {
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_f2tf32_rna, {}, {v});
  }
  std::vector<llvm::Value *> mma_m16n8k8_tf32(Builder &b, const std::vector<llvm::Value *> &a,
                                              const std::vector<llvm::Value *> &bf,
                                              const std::vector<llvm::Value *> &c,
                                              unsigned) override {
    using namespace llvm;
    std::vector<Value *> ops(a.begin(), a.end());
    ops.insert(ops.end(), bf.begin(), bf.end());
    ops.insert(ops.end(), c.begin(), c.end());
    CallInst *call = b.CreateIntrinsic(Intrinsic::nvvm_mma_m16n8k8_row_col_tf32, {}, ops);
    call->addFnAttr(Attribute::Convergent); // as mma_m16n8k16
    std::vector<Value *> d;
    for (unsigned i = 0; i < 4; ++i)
      d.push_back(b.CreateExtractValue(call, i));
    return d;
  }
  std::vector<llvm::Value *> ldmatrix(Builder &b, llvm::Value *p, unsigned n, bool trans,
                                      unsigned) override {
    using namespace llvm;
    Intrinsic::ID id = n == 4   ? (trans ? Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16
                                         : Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16)
                       : n == 2 ? (trans ? Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16
                                         : Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16)
                                : (trans ? Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x1_trans_b16
                                         : Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x1_b16);
    Value *s = b.CreateAddrSpaceCast(p, b.getPtrTy(3));
    CallInst *call = b.CreateIntrinsic(id, {b.getPtrTy(3)}, {s});
    call->addFnAttr(Attribute::Convergent);
    if (n == 1)
      return {call};
    std::vector<Value *> r;
    for (unsigned i = 0; i < n; ++i)
      r.push_back(b.CreateExtractValue(call, i));
    return r;
  }
  // cp.async through LLVM's intrinsics (GPU-CODEGEN.md section 3): .cg
  // (L2 only) for 16 bytes, .ca for 4 and 8.
  void async_copy(Builder &b, llvm::Value *dst, llvm::Value *src, unsigned bytes) override {
    using namespace llvm;
    Intrinsic::ID id = bytes == 16  ? Intrinsic::nvvm_cp_async_cg_shared_global_16
                       : bytes == 8 ? Intrinsic::nvvm_cp_async_ca_shared_global_8
                                    : Intrinsic::nvvm_cp_async_ca_shared_global_4;
    b.CreateIntrinsic(
        id, {},
        {b.CreateAddrSpaceCast(dst, b.getPtrTy(3)), b.CreateAddrSpaceCast(src, b.getPtrTy(1))});
  }
  void async_commit(Builder &b) override {
    b.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {});
  }
  void async_wait(Builder &b, unsigned pending) override {
    b.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {}, {b.getInt32(pending)});
  }
  llvm::Value *shared_base(Builder &b) override {
    return b.CreateAddrSpaceCast(smem_, b.getPtrTy(0));
  }

  // mbarrier and TMA (docs/ARCHITECTURE.md, "TMA rings"): inline PTX, LLVM
  // 19 selects neither expect_tx, parity waits, fence.proxy.async nor
  // cp.async.bulk.tensor. Shared addresses are 32-bit (`r`).
  bool has_tma() const override { return tma_; }
  void mbarrier_init(Builder &b, llvm::Value *bar, unsigned count) override {
    asm_call(b, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}",
             {shared32(b, bar), b.getInt32(count)});
  }
  void mbarrier_arrive_expect_tx(Builder &b, llvm::Value *bar, llvm::Value *bytes) override {
    asm_call(b, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r,~{memory}",
             {shared32(b, bar), bytes});
  }
  void mbarrier_wait(Builder &b, llvm::Value *bar, llvm::Value *parity, unsigned) override {
    // try_wait suspends the thread for a while itself: no back-off here.
    llvm::Function *fn = b.GetInsertBlock()->getParent();
    auto *loop = llvm::BasicBlock::Create(b.getContext(), "mbar.wait", fn);
    auto *done = llvm::BasicBlock::Create(b.getContext(), "mbar.done", fn);
    llvm::Value *a = shared32(b, bar);
    b.CreateBr(loop);
    b.SetInsertPoint(loop);
    llvm::Value *ok = asm_call(b,
                               "{\n.reg .pred p;\n"
                               "mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\n"
                               "selp.b32 $0, 1, 0, p;\n}",
                               "=r,r,r,~{memory}", {a, parity}, b.getInt32Ty());
    b.CreateCondBr(b.CreateICmpNE(ok, b.getInt32(0)), done, loop);
    b.SetInsertPoint(done);
  }
  void mbarrier_inval(Builder &b, llvm::Value *bar) override {
    asm_call(b, "mbarrier.inval.shared::cta.b64 [$0];", "r,~{memory}", {shared32(b, bar)});
  }
  void fence_proxy_async(Builder &b) override {
    asm_call(b, "fence.proxy.async.shared::cta;", "~{memory}", {});
  }
  void tma_load(Builder &b, llvm::Value *dst, llvm::Value *map,
                const std::vector<llvm::Value *> &coords, llvm::Value *bar) override {
    const size_t n = coords.size();
    std::string text = "cp.async.bulk.tensor." + std::to_string(n) +
                       "d.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1, {";
    std::string cons = "r,l";
    std::vector<llvm::Value *> args = {shared32(b, dst), b.CreatePtrToInt(map, b.getInt64Ty())};
    for (size_t i = 0; i < n; ++i) {
      text += (i ? ", $" : "$") + std::to_string(2 + i);
      cons += ",r";
      args.push_back(coords[i]);
    }
    text += "}], [$" + std::to_string(2 + n) + "];";
    cons += ",r,~{memory}";
    args.push_back(shared32(b, bar));
    asm_call(b, text, cons, args);
    tma_used_ = true;
  }

  // wgmma (sm_90a): inline PTX, target/wgmma.cpp.
  llvm::Value *wgmma_smem_addr(Builder &b, llvm::Value *p) override {
    // A descriptor's swizzle reads absolute address bits: the shared array
    // (and so the 1024-byte aligned rings, tile/smem.cpp) is aligned to the
    // 128-byte swizzle's 1024-byte pattern.
    smem_->setAlignment(llvm::Align(1024));
    return nvptx_wgmma_smem_addr(b, p);
  }
  void wgmma_fence(Builder &b) override { nvptx_wgmma_fence(b); }
  std::vector<llvm::Value *> wgmma_mma(Builder &b, unsigned n, bool bf16, bool trans_b,
                                       llvm::Value *da, llvm::Value *db,
                                       const std::vector<llvm::Value *> &acc, unsigned) override {
    return nvptx_wgmma_mma(b, n, bf16, trans_b, da, db, acc);
  }
  void wgmma_commit(Builder &b) override { nvptx_wgmma_commit(b); }
  std::vector<llvm::Value *> wgmma_wait(Builder &b, unsigned pending,
                                        const std::vector<llvm::Value *> &acc, unsigned) override {
    return nvptx_wgmma_wait(b, pending, acc);
  }

  // Tensor data is global memory: ld.global / st.global, not generic.
  llvm::Value *global_load(Builder &b, llvm::Type *ty, llvm::Value *p) override {
    return b.CreateLoad(ty, b.CreateAddrSpaceCast(p, b.getPtrTy(1)));
  }
  void global_store(Builder &b, llvm::Value *v, llvm::Value *p) override {
    b.CreateStore(v, b.CreateAddrSpaceCast(p, b.getPtrTy(1)));
  }
  // ld.global.nc through llvm.nvvm.ldg.global.{f,i} (shared/design/
  // GPU-CODEGEN.md section 5): `!invariant.load` would do too, but the
  // optimiser scalarises a vector load and drops it. Half elements travel
  // as i32 (or i16) words.
  llvm::Value *global_load_nc(Builder &b, llvm::Type *ty, llvm::Value *p) override {
    llvm::Value *g = b.CreateAddrSpaceCast(p, b.getPtrTy(1));
    llvm::Type *el = ty->getScalarType();
    unsigned bits = unsigned(ty->getPrimitiveSizeInBits());
    llvm::Type *as = ty;
    bool fl = el->isFloatTy();
    if (el->isHalfTy()) {
      if (bits > 32)
        as = llvm::FixedVectorType::get(b.getInt32Ty(), bits / 32);
      else
        as = bits == 32 ? b.getInt32Ty() : b.getInt16Ty();
      fl = false;
    }
    llvm::Value *v = b.CreateIntrinsic(fl ? llvm::Intrinsic::nvvm_ldg_global_f
                                          : llvm::Intrinsic::nvvm_ldg_global_i,
                                       {as, b.getPtrTy(1)}, {g, b.getInt32(bits / 8)});
    return as == ty ? v : b.CreateBitCast(v, ty);
  }
  /// atom.global.{add,max,min,cas}: LLVM 19 selects the relaxed forms (no
  /// ordering qualifier, i.e. .relaxed.gpu) and expands what PTX lacks
  /// (f32 max/min) to a 32-bit cas loop.
  llvm::Value *global_atomic(Builder &b, AtomicOp op, llvm::Value *p, llvm::Value *v,
                             llvm::Value *desired) override {
    return emit_relaxed_atomic(b, op, b.CreateAddrSpaceCast(p, b.getPtrTy(1)), v, desired);
  }
  /// atom.global.add.noftz.f16 (sm_70+) and .bf16 (sm_90+): inline PTX,
  /// LLVM 19 has no selection for either.
  llvm::Value *atomic_add16(Builder &b, llvm::Value *p, llvm::Value *bits, bool bf16) override {
    if (bf16 && sm_number() < 90)
      return nullptr;
    llvm::Value *g = b.CreateAddrSpaceCast(p, b.getPtrTy(1));
    auto *fty = llvm::FunctionType::get(b.getInt16Ty(), {b.getPtrTy(1), b.getInt16Ty()}, false);
    auto *asm_ = llvm::InlineAsm::get(fty,
                                      bf16 ? "atom.global.add.noftz.bf16 $0, [$1], $2;"
                                           : "atom.global.add.noftz.f16 $0, [$1], $2;",
                                      "=h,l,h,~{memory}", /*hasSideEffects=*/true);
    return b.CreateCall(fty, asm_, {g, bits});
  }

  llvm::Value *atomic_add_release(Builder &b, llvm::Value *p, llvm::Value *v) override {
    llvm::Value *g = b.CreateAddrSpaceCast(p, b.getPtrTy(1));
    auto *fty = llvm::FunctionType::get(b.getInt32Ty(), {b.getPtrTy(1), b.getInt32Ty()}, false);
    auto *asm_ = llvm::InlineAsm::get(fty, "atom.release.gpu.global.add.u32 $0, [$1], $2;",
                                      "=r,l,r,~{memory}", /*hasSideEffects=*/true);
    return b.CreateCall(fty, asm_, {g, v});
  }
  llvm::Value *load_acquire(Builder &b, llvm::Value *p) override {
    llvm::Value *g = b.CreateAddrSpaceCast(p, b.getPtrTy(1));
    auto *fty = llvm::FunctionType::get(b.getInt32Ty(), {b.getPtrTy(1)}, false);
    auto *asm_ =
        llvm::InlineAsm::get(fty, "ld.acquire.gpu.global.u32 $0, [$1];", "=r,l,~{memory}", true);
    return b.CreateCall(fty, asm_, {g});
  }
  llvm::Value *atomic_add_acq_rel(Builder &b, llvm::Value *p, llvm::Value *v) override {
    llvm::Value *g = b.CreateAddrSpaceCast(p, b.getPtrTy(1));
    auto *fty = llvm::FunctionType::get(b.getInt32Ty(), {b.getPtrTy(1), b.getInt32Ty()}, false);
    auto *asm_ = llvm::InlineAsm::get(fty, "atom.acq_rel.gpu.global.add.u32 $0, [$1], $2;",
                                      "=r,l,r,~{memory}", /*hasSideEffects=*/true);
    return b.CreateCall(fty, asm_, {g, v});
  }
  llvm::Value *atomic_cas(Builder &b, llvm::Value *p, llvm::Value *e, llvm::Value *d) override {
    llvm::Value *g = b.CreateAddrSpaceCast(p, b.getPtrTy(1));
    auto *fty = llvm::FunctionType::get(b.getInt32Ty(),
                                        {b.getPtrTy(1), b.getInt32Ty(), b.getInt32Ty()}, false);
    auto *asm_ = llvm::InlineAsm::get(fty, "atom.acq_rel.gpu.global.cas.b32 $0, [$1], $2, $3;",
                                      "=r,l,r,r,~{memory}", /*hasSideEffects=*/true);
    return b.CreateCall(fty, asm_, {g, e, d});
  }
  void fence(Builder &b) override { void_asm(b, "fence.acq_rel.gpu;"); }
  void spin_pause(Builder &b) override { void_asm(b, "nanosleep.u32 64;"); }
  void task_begin(Builder &, llvm::Value *, llvm::Value *) override {}
  void task_end(Builder &) override {}
  llvm::Value *clock_ns(Builder &b) override {
    return value_asm(b, b.getInt64Ty(), "mov.u64 $0, %globaltimer;", "=l");
  }
  llvm::Value *sm_id(Builder &b) override {
    return value_asm(b, b.getInt32Ty(), "mov.u32 $0, %smid;", "=r");
  }
  llvm::Value *opaque_zero(Builder &b, llvm::IntegerType *ty) override {
    if (ty->getBitWidth() == 64)
      return opaque_asm_value(b, ty, "mov.u64 $0, 0;", "=l");
    if (ty->getBitWidth() == 32)
      return opaque_asm_value(b, ty, "mov.u32 $0, 0;", "=r");
    return Machine::opaque_zero(b, ty);
  }

  /// x - 2 pi k with k = round(x / (2 pi)), in two fma steps (Cody-Waite,
  /// 2 pi as f32 plus its f32 remainder): sin/cos.approx are accurate in
  /// [-pi, pi] and lose accuracy with |x| outside it (RoPE angles reach
  /// thousands of radians).
  static llvm::Value *reduce_2pi(Builder &b, llvm::Value *x) {
    auto f32 = [&](double c) { return llvm::ConstantFP::get(b.getFloatTy(), c); };
    const float hi = float(2 * M_PI);
    const float lo = float(2 * M_PI - double(hi));
    llvm::Value *k =
        b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, b.CreateFMul(x, f32(1 / (2 * M_PI))));
    llvm::Value *nk = b.CreateFNeg(k);
    llvm::Value *r = b.CreateIntrinsic(llvm::Intrinsic::fma, {b.getFloatTy()}, {nk, f32(hi), x});
    return b.CreateIntrinsic(llvm::Intrinsic::fma, {b.getFloatTy()}, {nk, f32(lo), r});
  }

  /// The PTX ISA's approximate instructions (MUFU): sin/cos.approx (after
  /// reduce_2pi),
  /// ex2/lg2.approx, rsqrt.approx, tanh.approx (sm_75+, inline PTX: LLVM 19
  /// has no intrinsic for it); floor/ceil/round as cvt.rmi/rpi/rni. Erf and
  /// Pow have no instruction: null, composed by lower/lower_math.cpp.
  llvm::Value *math(Builder &b, MathFn fn, llvm::Value *x, llvm::Value *) override {
    auto nvvm = [&](llvm::Intrinsic::ID id, llvm::Value *v) {
      return b.CreateIntrinsic(id, {}, {v});
    };
    auto f32 = [&](double c) { return llvm::ConstantFP::get(b.getFloatTy(), c); };
    switch (fn) {
    case MathFn::Exp: // 2^(x * log2 e)
      return nvvm(llvm::Intrinsic::nvvm_ex2_approx_f, b.CreateFMul(x, f32(M_LOG2E)));
    case MathFn::Log: // lg2(x) * ln 2
      return b.CreateFMul(nvvm(llvm::Intrinsic::nvvm_lg2_approx_f, x), f32(M_LN2));
    case MathFn::Exp2:
      return nvvm(llvm::Intrinsic::nvvm_ex2_approx_f, x);
    case MathFn::Log2:
      return nvvm(llvm::Intrinsic::nvvm_lg2_approx_f, x);
    case MathFn::Sqrt:
      return nvvm(llvm::Intrinsic::nvvm_sqrt_rn_f, x);
    case MathFn::Rsqrt:
      return nvvm(llvm::Intrinsic::nvvm_rsqrt_approx_f, x);
    case MathFn::Sin:
      return nvvm(llvm::Intrinsic::nvvm_sin_approx_f, reduce_2pi(b, x));
    case MathFn::Cos:
      return nvvm(llvm::Intrinsic::nvvm_cos_approx_f, reduce_2pi(b, x));
    case MathFn::Tanh: {
      auto *fty = llvm::FunctionType::get(b.getFloatTy(), {b.getFloatTy()}, false);
      auto *tanh = llvm::InlineAsm::get(fty, "tanh.approx.f32 $0, $1;", "=f,f",
                                        /*hasSideEffects=*/false);
      return b.CreateCall(fty, tanh, {x});
    }
    case MathFn::Floor:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
    case MathFn::Ceil:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
    case MathFn::Round:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, x);
    case MathFn::Erf:
    case MathFn::Pow:
      return nullptr;
    }
    return nullptr;
  }

  bool emit(llvm::Module &m, std::string &code, std::string &error) override {
    llvm::SmallString<0> buf;
    llvm::raw_svector_ostream os(buf);
    llvm::legacy::PassManager pm;
    if (tm_->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile)) {
      error = "the NVPTX target cannot emit assembly";
      return false;
    }
    pm.run(m);
    code.assign(buf.begin(), buf.end());
    return true;
  }

private:
  /// A generic pointer into shared memory as PTX's 32-bit shared address.
  static llvm::Value *shared32(Builder &b, llvm::Value *p) {
    return b.CreateTrunc(b.CreatePtrToInt(b.CreateAddrSpaceCast(p, b.getPtrTy(3)), b.getInt64Ty()),
                         b.getInt32Ty());
  }
  /// Side-effecting inline PTX on `args` (void, or a `ret` value).
  static llvm::Value *asm_call(Builder &b, const std::string &text, const std::string &cons,
                               const std::vector<llvm::Value *> &args,
                               llvm::Type *ret = nullptr) {
    std::vector<llvm::Type *> tys;
    for (llvm::Value *a : args)
      tys.push_back(a->getType());
    auto *fty = llvm::FunctionType::get(ret ? ret : b.getVoidTy(), tys, false);
    return b.CreateCall(fty, llvm::InlineAsm::get(fty, text, cons, true), args);
  }
  /// Side-effecting, so it is neither merged with nor moved across others.
  static llvm::Value *value_asm(Builder &b, llvm::Type *ty, const char *text, const char *cons) {
    auto *fty = llvm::FunctionType::get(ty, false);
    return b.CreateCall(fty, llvm::InlineAsm::get(fty, text, cons, true));
  }
  static void void_asm(Builder &b, const char *text) {
    auto *fty = llvm::FunctionType::get(b.getVoidTy(), false);
    b.CreateCall(fty, llvm::InlineAsm::get(fty, text, "~{memory}", true));
  }

  std::string sm_;
  unsigned cc_; ///< compute capability x 10
  bool tma_;              ///< TMA and mbarrier expect_tx (sm_90a)
  bool tma_used_ = false; ///< a tma_load was emitted
  std::unique_ptr<llvm::TargetMachine> tm_;
  llvm::GlobalVariable *smem_ = nullptr;
};

} // namespace

std::unique_ptr<Machine> make_nvptx_machine(const std::string &sm, const MachineOptions &mo,
                                            std::string &error) {
  init_llvm_targets();
  std::string err;
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(kTriple, err);
  if (!t) {
    error = "LLVM has no NVPTX target: " + err;
    return nullptr;
  }
  const TargetDesc *desc = find_target(sm);
  if (!desc || desc->kind != TargetKind::Nvptx) {
    error = "unsupported GPU target '" + sm + "' (expected one of " + target_names() + ")";
    return nullptr;
  }
  llvm::TargetOptions opts;
  // fmad: fuse a*b+c (fma.rn.f32) and emit mul/add without `.rn`, which
  // lets ptxas contract what LLVM did not; off: every op rounds (`.rn`).
  opts.AllowFPOpFusion = mo.fmad ? llvm::FPOpFusion::Fast : llvm::FPOpFusion::Standard;
  // The CPU is the target's name (sm_90a too: LLVM 19 knows it), the PTX ISA
  // version its targets.def row's (`.version 7.8`, 8.0 for sm_90a).
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(
      kTriple, sm, "+ptx" + std::to_string(desc->ptx), opts, llvm::Reloc::Static, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!tm) {
    error = "cannot create the NVPTX target machine for " + sm;
    return nullptr;
  }
  return std::make_unique<NvptxMachine>(*desc, std::move(tm));
}

} // namespace etl
