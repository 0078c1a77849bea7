//===- target/sim.cpp - The CPU-simulator machine ------------------------===//
//
// What this owns: the Machine for the `sim` target. Every machine operation
// loads the function pointer at its field position in the `etl_sim_ops` table
// that the runtime stores, after dlopen, in the object's exported global
// `__etl_sim_ops` (runtime/abi/etl_abi.h), and calls it; each simulated thread
// runs etl_main itself, so the code is the same SIMT code as on the GPU.
// Tensor loads and stores call check_access first. Math uses the generic LLVM
// intrinsics (libm). Emission: an x86-64 PIC object through a TargetMachine,
// linked by the system C compiler into a shared object (`cc -shared ... -lm`).
//
//===----------------------------------------------------------------------===//
#include "target/machine.h"
#include "target/optimize.h"

#include "etl_abi.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <optional>

namespace etl {

namespace {

constexpr const char *kTriple = "x86_64-pc-linux-gnu";

/// Field positions in etl_sim_ops, from the ABI's X-macro.
enum SimOp : unsigned {
#define ETL_SIM_OP_INDEX(name, ret, params) kOp_##name,
  ETL_SIM_OPS(ETL_SIM_OP_INDEX)
#undef ETL_SIM_OP_INDEX
};

class SimMachine : public Machine {
public:
  explicit SimMachine(std::unique_ptr<llvm::TargetMachine> tm) : tm_(std::move(tm)) {}

  const std::string &target() const override { return name_; }
  llvm::TargetMachine &target_machine() override { return *tm_; }

  void init_module(llvm::Module &m) override {
    m.setTargetTriple(kTriple);
    m.setDataLayout(tm_->createDataLayout());
    m.setPICLevel(llvm::PICLevel::BigPIC);
    auto *p = llvm::PointerType::get(m.getContext(), 0);
    ops_ = new llvm::GlobalVariable(m, p, false, llvm::GlobalValue::ExternalLinkage,
                                    llvm::ConstantPointerNull::get(p), ETL_SIM_OPS_SYMBOL);
    ops_->setVisibility(llvm::GlobalValue::DefaultVisibility);
    ops_->setAlignment(llvm::Align(8));
  }

  llvm::Function *create_kernel(llvm::Module &m) override {
    auto &c = m.getContext();
    auto *fty =
        llvm::FunctionType::get(llvm::Type::getVoidTy(c), {llvm::PointerType::get(c, 0)}, false);
    auto *f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, ETL_KERNEL_ENTRY, m);
    f->setVisibility(llvm::GlobalValue::DefaultVisibility);
    return f;
  }
  void finish_kernel(llvm::Module &, llvm::Function *, unsigned, unsigned) override {}

  llvm::Value *thread_id(Builder &b) override { return call(b, kOp_tid, b.getInt32Ty(), {}); }
  llvm::Value *cta_id(Builder &b) override { return call(b, kOp_ctaid, b.getInt32Ty(), {}); }
  void barrier(Builder &b) override { call(b, kOp_barrier, b.getVoidTy(), {}); }
  void shared_access(Builder &b, llvm::Value *p, unsigned bytes, bool store) override {
    call(b, kOp_shared_access, b.getVoidTy(), {p, b.getInt64(bytes), b.getInt32(store ? 1 : 0)});
  }
  llvm::Value *shuffle(Builder &b, ShflMode mode, llvm::Value *v, llvm::Value *lane, unsigned c,
                       unsigned mask, unsigned line) override {
    bool fl = v->getType()->isFloatTy();
    llvm::Value *x = fl ? b.CreateBitCast(v, b.getInt32Ty()) : v;
    llvm::Value *r = call(
        b, kOp_shuffle, b.getInt32Ty(),
        {x, b.getInt32(unsigned(mode)), lane, b.getInt32(c), b.getInt32(mask), b.getInt32(line)});
    return fl ? b.CreateBitCast(r, b.getFloatTy()) : r;
  }
  std::vector<llvm::Value *> mma_m16n8k16(Builder &b, bool bf16,
                                          const std::vector<llvm::Value *> &a,
                                          const std::vector<llvm::Value *> &bf,
                                          const std::vector<llvm::Value *> &c,
                                          unsigned line) override {
    return mma(b, bf16 ? ETL_MMA_BF16 : ETL_MMA_F16, a, bf, c, line);
  }
  // Round half away from zero on the magnitude: add half an ulp of tf32
  // (bit 12) and clear the 13 low bits (a carry into the exponent is the
  // right rounding, up to inf); a NaN becomes the quiet NaN 0x7FFFE000.
  llvm::Value *to_tf32(Builder &b, llvm::Value *v) override {
    llvm::Value *bits = b.CreateBitCast(v, b.getInt32Ty());
    llvm::Value *r = b.CreateAnd(b.CreateAdd(bits, b.getInt32(0x1000)), b.getInt32(0xFFFFE000u));
    return b.CreateSelect(b.CreateFCmpUNO(v, v), b.getInt32(0x7FFFE000), r);
  }
  std::vector<llvm::Value *> mma_m16n8k8_tf32(Builder &b, const std::vector<llvm::Value *> &a,
                                              const std::vector<llvm::Value *> &bf,
                                              const std::vector<llvm::Value *> &c,
                                              unsigned line) override {
    return mma(b, ETL_MMA_TF32, a, bf, c, line);
  }
  std::vector<llvm::Value *> ldmatrix(Builder &b, llvm::Value *p, unsigned n, bool trans,
                                      unsigned line) override {
    llvm::Type *i32 = b.getInt32Ty();
    llvm::Value *out = entry_array(b, 4);
    call(b, kOp_ldmatrix, b.getVoidTy(),
         {p, b.getInt32(n | (trans ? ETL_LDMATRIX_TRANS : 0u)), out, b.getInt32(line)});
    std::vector<llvm::Value *> r;
    for (unsigned i = 0; i < n; ++i)
      r.push_back(b.CreateLoad(i32, b.CreateConstGEP1_32(i32, out, i)));
    return r;
  }
  // The global read is check_access'ed here, at issue (bounds, race check,
  // profile); the runtime's async_copy reads the source at once and queues
  // the shared store until an async_wait lands it (runtime/src/sim_async.h).
  void async_copy(Builder &b, llvm::Value *dst, llvm::Value *src, unsigned bytes) override {
    llvm::Type *ty = bytes == 4 ? static_cast<llvm::Type *>(b.getInt32Ty())
                                : llvm::FixedVectorType::get(b.getInt32Ty(), bytes / 4);
    check(b, src, ty, 0);
    call(b, kOp_async_copy, b.getVoidTy(), {dst, src, b.getInt32(bytes)});
  }
  void async_commit(Builder &b) override { call(b, kOp_async_commit, b.getVoidTy(), {}); }
  void async_wait(Builder &b, unsigned pending) override {
    call(b, kOp_async_wait, b.getVoidTy(), {b.getInt32(pending)});
  }
  // mbarriers and TMA (runtime/src/sim_tma.c): the runtime models both, so
  // the sim runs the TMA rings sm_90a runs (lower/lower_tma.cpp).
  bool has_tma() const override { return true; }
  void mbarrier_init(Builder &b, llvm::Value *bar, unsigned count) override {
    call(b, kOp_mbar_init, b.getVoidTy(), {bar, b.getInt32(count)});
  }
  void mbarrier_arrive_expect_tx(Builder &b, llvm::Value *bar, llvm::Value *bytes) override {
    call(b, kOp_mbar_arrive_tx, b.getVoidTy(), {bar, bytes});
  }
  void mbarrier_wait(Builder &b, llvm::Value *bar, llvm::Value *parity, unsigned line) override {
    call(b, kOp_mbar_wait, b.getVoidTy(), {bar, parity, b.getInt32(line)});
  }
  void mbarrier_inval(Builder &b, llvm::Value *bar) override {
    call(b, kOp_mbar_inval, b.getVoidTy(), {bar});
  }
  void tma_load(Builder &b, llvm::Value *dst, llvm::Value *map,
                const std::vector<llvm::Value *> &coords, llvm::Value *bar) override {
    llvm::Value *c = entry_array(b, 5);
    for (size_t i = 0; i < coords.size(); ++i)
      b.CreateStore(coords[i], b.CreateGEP(b.getInt32Ty(), c, b.getInt64(i)));
    call(b, kOp_tma_load, b.getVoidTy(),
         {dst, map, c, b.getInt32(uint32_t(coords.size())), bar});
  }
  llvm::Value *shared_base(Builder &b) override {
    return call(b, kOp_shared_base, b.getPtrTy(), {});
  }

  llvm::Value *global_load(Builder &b, llvm::Type *ty, llvm::Value *p) override {
    check(b, p, ty, 0);
    llvm::LoadInst *l = b.CreateLoad(ty, p);
    if (ty->isVectorTy()) // x86 takes any element-aligned vector (movups)
      l->setAlignment(llvm::Align(ty->getScalarSizeInBits() / 8));
    return l;
  }
  void global_store(Builder &b, llvm::Value *v, llvm::Value *p) override {
    check(b, p, v->getType(), 1);
    llvm::StoreInst *s = b.CreateStore(v, p);
    if (v->getType()->isVectorTy())
      s->setAlignment(llvm::Align(v->getType()->getScalarSizeInBits() / 8));
  }
  /// x86 `lock` instructions (cmpxchg loops for the float ops) on the host
  /// memory the tensors are bound to, so CTAs on different host threads
  /// really update each element atomically; check_access sees it as an
  /// atomic (is_store 2: bounds-checked like a store, and the race check
  /// lets atomics of unordered tasks meet).
  llvm::Value *global_atomic(Builder &b, AtomicOp op, llvm::Value *p, llvm::Value *v,
                             llvm::Value *desired) override {
    check(b, p, v->getType(), kAccessAtomic);
    return emit_relaxed_atomic(b, op, p, v, desired);
  }
  llvm::Value *atomic_add_release(Builder &b, llvm::Value *p, llvm::Value *v) override {
    return call(b, kOp_atomic_add_release, b.getInt32Ty(), {p, v});
  }
  llvm::Value *load_acquire(Builder &b, llvm::Value *p) override {
    return call(b, kOp_load_acquire, b.getInt32Ty(), {p});
  }
  llvm::Value *atomic_add_acq_rel(Builder &b, llvm::Value *p, llvm::Value *v) override {
    return call(b, kOp_atomic_add_acq_rel, b.getInt32Ty(), {p, v});
  }
  llvm::Value *atomic_cas(Builder &b, llvm::Value *p, llvm::Value *e, llvm::Value *d) override {
    return call(b, kOp_atomic_cas, b.getInt32Ty(), {p, e, d});
  }
  void fence(Builder &b) override { call(b, kOp_fence, b.getVoidTy(), {}); }
  void spin_pause(Builder &b) override { call(b, kOp_spin_pause, b.getVoidTy(), {}); }
  void task_begin(Builder &b, llvm::Value *g, llvm::Value *lin) override {
    call(b, kOp_task_begin, b.getVoidTy(), {g, lin});
  }
  void task_end(Builder &b) override { call(b, kOp_task_end, b.getVoidTy(), {}); }
  llvm::Value *clock_ns(Builder &b) override { return call(b, kOp_clock_ns, b.getInt64Ty(), {}); }
  llvm::Value *sm_id(Builder &b) override { return call(b, kOp_sm_id, b.getInt32Ty(), {}); }
  llvm::Value *opaque_zero(Builder &b, llvm::IntegerType *ty) override {
    if (ty->getBitWidth() == 64 || ty->getBitWidth() == 32) // x86-64, AT&T syntax
      return opaque_asm_value(b, ty, "mov $$0, $0", "=r");
    return Machine::opaque_zero(b, ty);
  }

  /// libm, through LLVM's intrinsics where it has one (the object links
  /// with -lm) and a direct call of tanhf / erff where it has none.
  llvm::Value *math(Builder &b, MathFn fn, llvm::Value *x, llvm::Value *y) override {
    auto un = [&](llvm::Intrinsic::ID id) { return b.CreateUnaryIntrinsic(id, x); };
    auto libm = [&](const char *name) {
      llvm::Module *m = b.GetInsertBlock()->getModule();
      llvm::FunctionCallee f = m->getOrInsertFunction(
          name, llvm::FunctionType::get(b.getFloatTy(), {b.getFloatTy()}, false));
      if (auto *fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
        fn->setDoesNotThrow();
      }
      return b.CreateCall(f, {x});
    };
    switch (fn) {
    case MathFn::Exp:
      return un(llvm::Intrinsic::exp);
    case MathFn::Log:
      return un(llvm::Intrinsic::log);
    case MathFn::Exp2:
      return un(llvm::Intrinsic::exp2);
    case MathFn::Log2:
      return un(llvm::Intrinsic::log2);
    case MathFn::Sqrt:
      return un(llvm::Intrinsic::sqrt);
    case MathFn::Rsqrt:
      return b.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0), un(llvm::Intrinsic::sqrt));
    case MathFn::Sin:
      return un(llvm::Intrinsic::sin);
    case MathFn::Cos:
      return un(llvm::Intrinsic::cos);
    case MathFn::Tanh:
      return libm("tanhf");
    case MathFn::Erf:
      return libm("erff");
    case MathFn::Pow:
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, y);
    case MathFn::Floor:
      return un(llvm::Intrinsic::floor);
    case MathFn::Ceil:
      return un(llvm::Intrinsic::ceil);
    case MathFn::Round:
      return un(llvm::Intrinsic::roundeven);
    }
    return nullptr;
  }

  bool emit(llvm::Module &m, std::string &code, std::string &error) override;

  // -- wgmma: the ops of etl_sim_ops (runtime/src/sim_wgmma.h) ---------------
  // The accumulators live in a per-site [n/2 x float] the runtime writes at
  // the wait that covers them; a wgmma's results come back as loads of it
  // behind a `wgmma_read` check (ETL_ERROR_RACE while a result is in
  // flight). A chained wgmma or the wait that takes exactly those loads
  // drops them and their check (the registers never left the wgmma), so
  // only a read the lowering put before the wait keeps its check, and
  // fails the run.
  llvm::Value *wgmma_smem_addr(Builder &b, llvm::Value *p) override {
    llvm::Value *off = b.CreateSub(b.CreatePtrToInt(p, b.getInt64Ty()),
                                   b.CreatePtrToInt(shared_base(b), b.getInt64Ty()));
    return b.CreateTrunc(off, b.getInt32Ty());
  }
  void wgmma_fence(Builder &b) override { call(b, kOp_wgmma_fence, b.getVoidTy(), {}); }
  std::vector<llvm::Value *> wgmma_mma(Builder &b, unsigned n, bool bf16, bool trans_b,
                                       llvm::Value *da, llvm::Value *db,
                                       const std::vector<llvm::Value *> &acc,
                                       unsigned line) override {
    llvm::Value *buf = wgmma_regs(b, acc);
    const uint32_t shape = n | (bf16 ? 1u << 16 : 0u) | (trans_b ? 1u << 17 : 0u);
    call(b, kOp_wgmma_mma, b.getVoidTy(), {da, db, buf, b.getInt32(shape), b.getInt32(line)});
    return wgmma_read(b, buf, unsigned(acc.size()), line);
  }
  void wgmma_commit(Builder &b) override { call(b, kOp_wgmma_commit, b.getVoidTy(), {}); }
  std::vector<llvm::Value *> wgmma_wait(Builder &b, unsigned pending,
                                        const std::vector<llvm::Value *> &acc,
                                        unsigned line) override {
    llvm::Value *buf = wgmma_regs(b, acc);
    call(b, kOp_wgmma_wait, b.getVoidTy(), {b.getInt32(pending)});
    return wgmma_read(b, buf, unsigned(acc.size()), line);
  }

private:
  /// A wgmma's registers in flight: the loads handed out and their check.
  struct WgmmaRegs {
    llvm::Value *buf;
    llvm::CallInst *check;
    std::vector<llvm::LoadInst *> loads;
  };
  std::vector<WgmmaRegs> wgmma_out_;
  /// The registers `acc` names: a wgmma's in flight (exactly its loads: its
  /// buffer; the loads and the check go if nothing else reads them), or
  /// values stored into a fresh buffer.
  llvm::Value *wgmma_regs(Builder &b, const std::vector<llvm::Value *> &acc) {
    for (size_t i = 0; i < wgmma_out_.size(); ++i) {
      WgmmaRegs &w = wgmma_out_[i];
      if (w.loads.size() != acc.size() ||
          !std::equal(acc.begin(), acc.end(), w.loads.begin()))
        continue;
      llvm::Value *buf = w.buf;
      bool read = false;
      for (llvm::LoadInst *l : w.loads)
        read = read || !l->use_empty();
      if (!read) {
        for (llvm::LoadInst *l : w.loads)
          l->eraseFromParent();
        w.check->eraseFromParent();
      }
      wgmma_out_.erase(wgmma_out_.begin() + long(i));
      return buf;
    }
    llvm::Function *f = b.GetInsertBlock()->getParent();
    llvm::IRBuilder<> e(&f->getEntryBlock(), f->getEntryBlock().begin());
    llvm::Value *buf = e.CreateAlloca(llvm::ArrayType::get(b.getFloatTy(), acc.size()));
    for (size_t i = 0; i < acc.size(); ++i)
      b.CreateStore(acc[i], b.CreateConstGEP1_32(b.getFloatTy(), buf, unsigned(i)));
    return buf;
  }
  std::vector<llvm::Value *> wgmma_read(Builder &b, llvm::Value *buf, unsigned n, unsigned line) {
    WgmmaRegs w{buf, nullptr, {}};
    w.check = llvm::cast<llvm::CallInst>(
        call(b, kOp_wgmma_read, b.getVoidTy(), {buf, b.getInt32(line)}));
    for (unsigned i = 0; i < n; ++i)
      w.loads.push_back(b.CreateLoad(b.getFloatTy(), b.CreateConstGEP1_32(b.getFloatTy(), buf, i)));
    wgmma_out_.push_back(w);
    return {w.loads.begin(), w.loads.end()};
  }

  /// The `mma` op of etl_sim_ops (one per warp, etl_abi.h) of `kind`.
  std::vector<llvm::Value *> mma(Builder &b, unsigned kind, const std::vector<llvm::Value *> &a,
                                 const std::vector<llvm::Value *> &bf,
                                 const std::vector<llvm::Value *> &c, unsigned line) {
    llvm::Type *i32 = b.getInt32Ty();
    llvm::Value *in = entry_array(b, 10), *out = entry_array(b, 4);
    unsigned k = 0;
    for (const auto *v : {&a, &bf, &c})
      for (llvm::Value *x : *v)
        b.CreateStore(x->getType()->isFloatTy() ? b.CreateBitCast(x, i32) : x,
                      b.CreateConstGEP1_32(i32, in, k++));
    call(b, kOp_mma, b.getVoidTy(), {b.getInt32(kind), in, out, b.getInt32(line)});
    std::vector<llvm::Value *> d;
    for (unsigned i = 0; i < 4; ++i)
      d.push_back(
          b.CreateBitCast(b.CreateLoad(i32, b.CreateConstGEP1_32(i32, out, i)), b.getFloatTy()));
    return d;
  }
  /// ((etl_sim_ops *)__etl_sim_ops)->field(args...)
  llvm::Value *call(Builder &b, unsigned field, llvm::Type *ret, std::vector<llvm::Value *> args) {
    std::vector<llvm::Type *> params;
    for (llvm::Value *a : args)
      params.push_back(a->getType());
    auto *fty = llvm::FunctionType::get(ret, params, false);
    llvm::Value *table = b.CreateLoad(b.getPtrTy(), ops_, "sim.ops");
    llvm::Value *slot = b.CreateConstGEP1_64(b.getPtrTy(), table, field);
    llvm::Value *f = b.CreateLoad(b.getPtrTy(), slot);
    return b.CreateCall(fty, f, args);
  }
  /// An [n x i32] in the function's entry block (mem2reg-free: its address
  /// goes to the runtime).
  llvm::Value *entry_array(Builder &b, unsigned n) {
    llvm::Function *f = b.GetInsertBlock()->getParent();
    llvm::IRBuilder<> e(&f->getEntryBlock(), f->getEntryBlock().begin());
    return e.CreateAlloca(llvm::ArrayType::get(b.getInt32Ty(), n));
  }
  /// check_access's is_store: 0 a load, 1 a store, ETL_SIM_ACCESS_ATOMIC.
  static constexpr unsigned kAccessAtomic = ETL_SIM_ACCESS_ATOMIC;
  void check(Builder &b, llvm::Value *p, llvm::Type *ty, unsigned kind) {
    uint64_t bytes = tm_->createDataLayout().getTypeStoreSize(ty);
    call(b, kOp_check_access, b.getVoidTy(), {p, b.getInt64(bytes), b.getInt32(kind)});
  }

  std::string name_ = "sim";
  std::unique_ptr<llvm::TargetMachine> tm_;
  llvm::GlobalVariable *ops_ = nullptr;
};

/// Removes its files when it goes out of scope.
struct TempFiles {
  std::vector<llvm::SmallString<128>> paths;
  ~TempFiles() {
    for (auto &p : paths)
      llvm::sys::fs::remove(p);
  }
};

bool SimMachine::emit(llvm::Module &m, std::string &code, std::string &error) {
  TempFiles tmp;
  int fd = -1;
  llvm::SmallString<128> obj, so;
  if (llvm::sys::fs::createTemporaryFile("etl-sim", "o", fd, obj)) {
    error = "cannot create a temporary object file";
    return false;
  }
  tmp.paths.push_back(obj);
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    llvm::legacy::PassManager pm;
    if (tm_->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
      error = "the x86-64 target cannot emit an object file";
      return false;
    }
    pm.run(m);
    os.flush();
    if (os.has_error()) {
      error = "cannot write the sim object file";
      os.clear_error();
      return false;
    }
  }
  if (llvm::sys::fs::createTemporaryFile("etl-sim", "so", so)) {
    error = "cannot create a temporary shared-object file";
    return false;
  }
  tmp.paths.push_back(so);
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName("cc");
  if (!cc) {
    error = "the sim target needs a C compiler to link its shared object, and no `cc` is in PATH";
    return false;
  }
  llvm::SmallString<128> log;
  llvm::sys::fs::createTemporaryFile("etl-sim-link", "log", log);
  tmp.paths.push_back(log);
  std::string ccs = *cc, objs = std::string(obj), sos = std::string(so);
  llvm::StringRef argv[] = {ccs, "-shared", "-o", sos, objs, "-lm"};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                llvm::StringRef(log)};
  std::string msg;
  int rc = llvm::sys::ExecuteAndWait(ccs, argv, std::nullopt, redirects, 0, 0, &msg);
  if (rc != 0) {
    auto text = llvm::MemoryBuffer::getFile(log);
    error = "linking the sim shared object with `" + ccs + "` failed" +
            (msg.empty() ? "" : ": " + msg) + (text ? "\n" + (*text)->getBuffer().str() : "");
    return false;
  }
  auto bytes = llvm::MemoryBuffer::getFile(so, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!bytes) {
    error = "cannot read back the sim shared object";
    return false;
  }
  code = (*bytes)->getBuffer().str();
  return true;
}

} // namespace

std::unique_ptr<Machine> make_sim_machine(std::string &error) {
  init_llvm_targets();
  std::string err;
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(kTriple, err);
  if (!t) {
    error = "LLVM has no x86-64 target: " + err;
    return nullptr;
  }
  llvm::TargetOptions opts;
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(
      kTriple, "x86-64", "", opts, llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Default));
  if (!tm) {
    error = "cannot create the x86-64 target machine";
    return nullptr;
  }
  return std::make_unique<SimMachine>(std::move(tm));
}

} // namespace etl
