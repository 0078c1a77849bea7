//===- target/machine.h - What the lowering needs from a target ------------===//
//
// What this owns: the small abstract machine the target-neutral lowering
// (lower/*.cpp) emits against, in the style of Triton's TargetInfo / Halide's
// CodeGen_GPU_Dev. A tile program becomes SIMT code over the threads of one
// CTA; everything that differs between a real GPU and the CPU simulator sits
// behind this interface:
//   target/nvptx.cpp  NVVM intrinsics, addrspace(3) shared memory, inline PTX
//                      for acquire/release atomics, fences and nanosleep;
//   target/sim.cpp    calls through the runtime's `etl_sim_ops` table.
// Pointers handed to and returned from the machine are generic (addrspace 0).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "target/target.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>
#include <vector>

namespace etl {

using Builder = llvm::IRBuilder<>;

/// How a machine generates code, from the command line.
struct MachineOptions {
  /// Contract a*b+c into one fused multiply-add (NVPTX: AllowFPOpFusion=Fast,
  /// so mul/add lose `.rn` and ptxas fuses too; `etlc --fmad=false` turns it
  /// off, as nvcc's flag does). sim never fuses: its results stay
  /// bit-reproducible against the reference tests.
  bool fmad = true;
};

/// f32 math the lowering needs; targets pick instructions/intrinsics. Pow
/// takes two operands, the others one. Exp2 and Log2 every machine has:
/// lower/lower_math.cpp composes the functions a machine lacks from them.
enum class MathFn {
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Sin,
  Cos,
  Tanh,
  Erf,
  Pow,
  Floor,
  Ceil,
  Round, ///< to nearest, ties to even
  Exp2,
  Log2
};

/// The relaxed read-modify-writes of tensor elements (atomic_add, ...).
enum class AtomicOp { Add, Max, Min, Cas };

/// Warp shuffle modes (PTX `shfl.sync`); the values are etl_shfl_mode's
/// (runtime/abi/etl_abi.h), which the sim machine passes on.
enum class ShflMode : unsigned { Up = 0, Down = 1, Bfly = 2, Idx = 3 };

class Machine {
public:
  virtual ~Machine() = default;

  /// "sm_90", "sm_80", "sim".
  virtual const std::string &target() const = 0;
  /// The LLVM target machine used for the data layout, passes and emission.
  virtual llvm::TargetMachine &target_machine() = 0;

  /// Sets the module's triple and data layout, declares target globals.
  virtual void init_module(llvm::Module &m) = 0;
  /// Creates the kernel `void etl_main(ptr args)` (external, exported).
  virtual llvm::Function *create_kernel(llvm::Module &m) = 0;
  /// After lowering: kernel annotations (NVPTX: .maxntid, .minnctapersm 1).
  /// `smem_bytes` is the dynamic shared memory the launch provides.
  virtual void finish_kernel(llvm::Module &m, llvm::Function *kernel, unsigned threads_per_cta,
                             unsigned smem_bytes) = 0;

  // -- SIMT state -----------------------------------------------------------
  virtual llvm::Value *thread_id(Builder &b) = 0; ///< i32
  virtual llvm::Value *cta_id(Builder &b) = 0;    ///< i32
  /// bar.sync 0 over the CTA; every thread must reach it.
  virtual void barrier(Builder &b) = 0;
  /// Before a load or store of `bytes` at `ptr` in shared memory (the
  /// scratch area): sim reports it to its profile counters; a GPU does
  /// nothing (Nsight Compute counts there).
  virtual void shared_access(Builder &b, llvm::Value *ptr, unsigned bytes, bool store) {
    (void)b, (void)ptr, (void)bytes, (void)store;
  }
  /// shfl.sync.MODE.b32 over the lanes of `mask` (every one of them must
  /// reach it with the same operands): `v` (i32 or f32) of the source lane
  /// that `lane` (i32: delta, xor mask or lane index) and PTX's `c` operand
  /// (31 for bfly/down/idx over the whole warp, 0 for up) select; an invalid
  /// source gives the lane its own `v`. `line`: the source line of the
  /// operation, named by sim's divergence report (ETL_ERROR_DIVERGENCE).
  virtual llvm::Value *shuffle(Builder &b, ShflMode mode, llvm::Value *v, llvm::Value *lane,
                               unsigned c, unsigned mask, unsigned line) = 0;
  /// mma.sync.aligned.m16n8k16.row.col.f32.{bf16|f16}.f32 over the whole
  /// warp (all 32 lanes, warp-uniform control flow): `a` (4 x i32) and `bf`
  /// (2 x i32) are the lane's A and B fragments (two 16-bit values each, the
  /// lower-indexed in bits 0-15), `c` its 4 f32 accumulators; returns D (4
  /// f32). PTX's fragment layouts (etl_abi.h, `mma`); marked convergent.
  virtual std::vector<llvm::Value *> mma_m16n8k16(Builder &b, bool bf16,
                                                  const std::vector<llvm::Value *> &a,
                                                  const std::vector<llvm::Value *> &bf,
                                                  const std::vector<llvm::Value *> &c,
                                                  unsigned line) = 0;
  /// cvt.rna.tf32.f32: `v` (f32) rounded to tf32 (10 mantissa bits, to
  /// nearest, ties away from zero), as an f32 bit pattern (i32) whose low 13
  /// bits the mma ignores (sim: zero; a NaN stays a NaN).
  virtual llvm::Value *to_tf32(Builder &b, llvm::Value *v) = 0;
  /// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 over the whole warp:
  /// `a` (4 x i32) and `bf` (2 x i32) hold one tf32 (to_tf32's bits) each,
  /// A reg i: row g + 8(i & 1), col t + 4(i >> 1); B reg j: k = t + 4j, n = g
  /// (g = lane >> 2, t = lane & 3); `c` and D as mma_m16n8k16. Convergent.
  virtual std::vector<llvm::Value *> mma_m16n8k8_tf32(Builder &b,
                                                      const std::vector<llvm::Value *> &a,
                                                      const std::vector<llvm::Value *> &bf,
                                                      const std::vector<llvm::Value *> &c,
                                                      unsigned line) = 0;
  /// ldmatrix.sync.aligned.m8n8.x`n`[.trans].shared.b16 (n = 1, 2, 4) over
  /// the whole warp: `p` (generic, into shared memory, 16-byte aligned) is
  /// the lane's row address; returns n i32 registers. Marked convergent.
  virtual std::vector<llvm::Value *> ldmatrix(Builder &b, llvm::Value *p, unsigned n, bool trans,
                                              unsigned line) = 0;
  /// cp.async.{cg|ca}.shared.global [dst], [src], `bytes` (16: .cg, 4 or 8:
  /// .ca; sm_80+): an asynchronous copy of `bytes` from global `src` to
  /// shared `dst` (generic pointers, both aligned to `bytes`), in this
  /// thread's open group. Its data is there only after async_wait and then
  /// a barrier for the other threads. sim: the global read is
  /// check_access'ed at issue and the copy queued per thread; it lands at the
  /// async_wait that covers its group, and a shared-memory access to its
  /// destination before then fails the run (runtime/src/sim_async.h).
  virtual void async_copy(Builder &b, llvm::Value *dst, llvm::Value *src, unsigned bytes) = 0;
  /// cp.async.commit_group: closes this thread's open group of copies.
  virtual void async_commit(Builder &b) = 0;
  /// cp.async.wait_group `pending`: waits until at most `pending` of this
  /// thread's committed groups are still in flight (sim: lands the copies
  /// of the older groups, oldest first).
  virtual void async_wait(Builder &b, unsigned pending) = 0;
  /// This CTA's shared memory, a generic pointer to `smem_bytes` bytes.
  virtual llvm::Value *shared_base(Builder &b) = 0;

  // -- mbarrier (PTX mbarrier.*, sm_90: expect_tx and parity waits) ---------
  // `bar` is a generic pointer to an 8-byte-aligned mbarrier object in
  // shared memory. A phase completes when its pending arrivals reach 0
  // and its transaction bytes (expect_tx, less what complete_tx copies
  // delivered) reach 0; the barrier then enters the next phase (parity
  // flips) with `count` pending arrivals again.
  /// mbarrier.init.shared::cta.b64 [bar], count (one thread).
  virtual void mbarrier_init(Builder &b, llvm::Value *bar, unsigned count);
  /// mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes: this thread
  /// arrives and the phase expects `bytes` (i32) more transaction bytes.
  virtual void mbarrier_arrive_expect_tx(Builder &b, llvm::Value *bar, llvm::Value *bytes);
  /// Waits (mbarrier.try_wait.parity.shared::cta.b64 in a loop) until the
  /// phase of parity `parity` (i32, 0 or 1) has completed; acquire at CTA
  /// scope: what completed the phase (the TMA copies) is visible after it.
  /// `line`: the source line (sim's messages).
  virtual void mbarrier_wait(Builder &b, llvm::Value *bar, llvm::Value *parity, unsigned line);
  /// mbarrier.inval.shared::cta.b64 [bar] (one thread, every waiter done):
  /// before its bytes serve anything else.
  virtual void mbarrier_inval(Builder &b, llvm::Value *bar);
  /// fence.proxy.async.shared::cta: orders this thread's generic-proxy
  /// shared-memory accesses (an mbarrier's init, earlier stores to a slot)
  /// before the async proxy's (TMA) that follow. sim: nothing to order.
  virtual void fence_proxy_async(Builder &b) { (void)b; }

  // -- TMA (cp.async.bulk.tensor, sm_90a) -------------------------------------
  /// Does this machine copy tiles by TMA? Else a TMA ring of the tile IR
  /// (tile/pipeline.cpp, kTmaRing) is lowered as a cp.async ring.
  virtual bool has_tma() const { return false; }
  /// cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes
  /// [dst], [map, {coords}], [bar], issued by one thread: the box of tensor
  /// map `map` (a generic pointer to the 64-byte-aligned, 128-byte
  /// CUtensorMap in global memory) at element coordinates `coords` (i32,
  /// innermost first; out-of-bounds elements are the map's fill, zero)
  /// lands row-major at `dst` (shared, 128-byte aligned) and completes its
  /// bytes on mbarrier `bar`. Its data may be read only after a wait on
  /// that phase (sim: a read before it fails with ETL_ERROR_RACE).
  virtual void tma_load(Builder &b, llvm::Value *dst, llvm::Value *map,
                        const std::vector<llvm::Value *> &coords, llvm::Value *bar);

  // -- wgmma (sm_90a; sim models it) ----------------------------------------
  // One family, target/wgmma.cpp (PTX's wgmma is inline asm on every LLVM:
  // no intrinsic). The lowering calls it only where TargetInfo::wgmma holds;
  // a machine without it fails loudly (these defaults).
  /// The i32 shared-memory address of `p` (generic, into shared memory) that
  /// a wgmma matrix descriptor names (NVPTX: cvta.to.shared; sim: the offset
  /// from shared_base). Descriptors are built from it with integer ops.
  virtual llvm::Value *wgmma_smem_addr(Builder &b, llvm::Value *p);
  /// wgmma.fence.sync.aligned: orders this thread's earlier register and
  /// shared-memory writes before the wgmmas that follow.
  virtual void wgmma_fence(Builder &b);
  /// wgmma.mma_async.sync.aligned.m64n`n`k16.f32.{bf16|f16} over the
  /// warpgroup (128 threads, warp-uniform control): D = A B + `acc`, A and B
  /// by 64-bit descriptors (`trans_b`: B is MN-major, [K, N] rows), `acc`
  /// the thread's n / 2 f32 accumulators (register 4j + i: mma.sync's m16n8
  /// accumulator register i of n8 tile j, rows of warp w of the warpgroup
  /// 16w ..). Returns the registers in flight: only a chained wgmma (their
  /// `acc`) or wgmma_wait may take them.
  virtual std::vector<llvm::Value *> wgmma_mma(Builder &b, unsigned n, bool bf16, bool trans_b,
                                               llvm::Value *desc_a, llvm::Value *desc_b,
                                               const std::vector<llvm::Value *> &acc,
                                               unsigned line);
  /// wgmma.commit_group.sync.aligned.
  virtual void wgmma_commit(Builder &b);
  /// wgmma.wait_group.sync.aligned `pending`: returns `acc` (wgmma_mma's
  /// registers in flight) as values any code may read (NVPTX: tied through
  /// the wait's inline asm, so nothing reads or moves them before it; sim:
  /// landed, then read under the race check).
  virtual std::vector<llvm::Value *> wgmma_wait(Builder &b, unsigned pending,
                                                const std::vector<llvm::Value *> &acc,
                                                unsigned line);

  // -- Global memory ---------------------------------------------------------
  /// A load/store of tensor data (sim: check_access first).
  /// `ty` may be a vector (`<4 x float>`, ...): one access of all of its
  /// bytes, aligned to its size (the caller proved it; sim accepts any
  /// element-aligned address).
  virtual llvm::Value *global_load(Builder &b, llvm::Type *ty, llvm::Value *ptr) = 0;
  virtual void global_store(Builder &b, llvm::Value *v, llvm::Value *ptr) = 0;
  /// A load of a tensor the kernel never writes (NVPTX: ld.global.nc,
  /// through the read-only data cache).
  virtual llvm::Value *global_load_nc(Builder &b, llvm::Type *ty, llvm::Value *ptr) {
    return global_load(b, ty, ptr);
  }

  /// A relaxed (monotonic), gpu-scope atomic on the tensor element at `ptr`
  /// (sim: check_access first, as an atomic): Add/Max/Min of `v` (i32, i64:
  /// signed max/min; float: fadd, maxnum/minnum), or Cas of expected `v` and
  /// `desired` (i16, i32, i64). Returns the old value.
  virtual llvm::Value *global_atomic(Builder &b, AtomicOp op, llvm::Value *ptr, llvm::Value *v,
                                     llvm::Value *desired) = 0;
  /// A hardware add of a 16-bit float (`bits`: its f16 or bf16 bits, i16)
  /// to the tensor element at `ptr`, returning the old bits; null when the
  /// machine has none (the lowering then loops on a 16-bit Cas).
  virtual llvm::Value *atomic_add16(Builder &b, llvm::Value *ptr, llvm::Value *bits, bool bf16) {
    (void)b, (void)ptr, (void)bits, (void)bf16;
    return nullptr;
  }

  // -- Event protocol --------------------------------------------------------
  /// atom.release.gpu.add.u32; returns the old value (i32).
  virtual llvm::Value *atomic_add_release(Builder &b, llvm::Value *ptr, llvm::Value *v) = 0;
  /// ld.acquire.gpu.u32 (i32).
  virtual llvm::Value *load_acquire(Builder &b, llvm::Value *ptr) = 0;
  /// u32 atomic add, acquire+release, gpu scope; returns the old value.
  virtual llvm::Value *atomic_add_acq_rel(Builder &b, llvm::Value *ptr, llvm::Value *v) = 0;
  /// u32 compare-and-swap, acquire+release, gpu scope; returns the old value.
  virtual llvm::Value *atomic_cas(Builder &b, llvm::Value *ptr, llvm::Value *expected,
                                  llvm::Value *desired) = 0;
  /// fence.acq_rel.gpu
  virtual void fence(Builder &b) = 0;
  /// Back-off inside a spin-wait loop.
  virtual void spin_pause(Builder &b) = 0;
  /// Task bracketing (timeline, simulator bookkeeping); group/linear are i32.
  virtual void task_begin(Builder &b, llvm::Value *group, llvm::Value *linear) = 0;
  virtual void task_end(Builder &b) = 0;
  /// Timeline clock: i64 nanoseconds, comparable across CTAs (NVPTX:
  /// %globaltimer; sim: the clock_ns op, CLOCK_MONOTONIC).
  virtual llvm::Value *clock_ns(Builder &b) = 0;
  /// i32 id of the multiprocessor running this CTA (NVPTX: %smid; sim: the
  /// sm_id op, the worker index).
  virtual llvm::Value *sm_id(Builder &b) = 0;

  /// A zero of integer type `ty` that the optimiser can neither see through,
  /// hoist nor merge: each call is computed where it stands. The lowering
  /// adds it to offsets that would be constant but for the thread index, so
  /// LLVM keeps them in the task rather than hoisting them out of the
  /// persistent loop, live across every task. NVPTX and sim: an inline `mov`
  /// of 0 into a register (side-effecting, touching no memory the program
  /// sees); this default, for other machines: a volatile load of a stack
  /// slot holding 0.
  virtual llvm::Value *opaque_zero(Builder &b, llvm::IntegerType *ty);

  // -- Math -----------------------------------------------------------------
  /// f32 -> f32 (`y` is pow's exponent, else null); only selectable
  /// instructions/intrinsics. Null when the machine has no direct form of
  /// `fn` (never for Exp2, Log2): lower/lower_math.cpp then composes it.
  virtual llvm::Value *math(Builder &b, MathFn fn, llvm::Value *x, llvm::Value *y) = 0;
  llvm::Value *math(Builder &b, MathFn fn, llvm::Value *x) { return math(b, fn, x, nullptr); }

  // -- Emission -------------------------------------------------------------
  /// Turns the optimised module into the target's code (PTX text or .so
  /// bytes). Returns false with `error` set on failure.
  virtual bool emit(llvm::Module &m, std::string &code, std::string &error) = 0;
};

/// `atomicrmw`/`cmpxchg` with monotonic ordering for Machine::global_atomic
/// (target/machine.cpp), on a pointer of any address space.
llvm::Value *emit_relaxed_atomic(Builder &b, AtomicOp op, llvm::Value *ptr, llvm::Value *v,
                                 llvm::Value *desired);

/// An inline-asm register value for Machine::opaque_zero (target/machine.cpp):
/// `text` with constraints `cons` ("=r", ...), side-effecting (never merged or
/// hoisted) but touching only memory the program cannot see (no clobber of
/// its loads and stores).
llvm::Value *opaque_asm_value(Builder &b, llvm::Type *ty, const char *text, const char *cons);

/// The machine for `t` (target/targets.def). Null with `error` set if LLVM
/// cannot provide it.
std::unique_ptr<Machine> make_machine(const TargetDesc &t, const MachineOptions &opts,
                                      std::string &error);

/// target/nvptx.cpp: `sm` is an Nvptx target's name ("sm_80", "sm_90", ...).
/// Null with `error` set if LLVM lacks the NVPTX target.
std::unique_ptr<Machine> make_nvptx_machine(const std::string &sm, const MachineOptions &opts,
                                            std::string &error);
/// target/sim.cpp: x86-64 host code calling the simulator's ops table.
std::unique_ptr<Machine> make_sim_machine(std::string &error);

} // namespace etl
