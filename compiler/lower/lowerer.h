//===- lower/lowerer.h - Shared state of the tile lowering (internal) -----===//
//
// What this owns: the Lowerer that walks one kernel and emits LLVM IR
// against a Machine, the class every lower_*.cpp file implements a part
// of. The kernel plan, the register-tile value and the free helpers they
// share are in lower/plan.h. Not included outside compiler/lower.
//
// Every task body is lowered from its tile IR (compiler/tile, after layout
// assignment and shared-memory planning): a value's registers hold the
// elements its layout gives the thread (lower_tile_*.cpp). A body the tile
// IR cannot lower is an internal compiler error naming the op, never a
// detour. Shared memory: the 32-byte header [0, kSmemScratch) broadcasts
// the queue entry, the abort flag, the dynamic-loop decision and the
// progress count (offsets below); the scratch area starts at kSmemScratch,
// its buffers placed by tile/smem.cpp (plan_shared).
//
// Element types in registers: f32 and f16 are f32 (f16 results are rounded
// to half precision after each op), i32 is i32, i8/i16/u8/u16/u32 are an i32
// holding the value sign- or zero-extended (wrap_int after each op; u32 uses
// the unsigned forms of `/ % >>` and comparisons), and bool is an i32 holding 0
// or 1 (comparisons zero-extend their i1).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "lower/backend.h"
#include "lower/plan.h"
#include "target/machine.h"
#include "taskgraph/taskgraph.h"
#include "tile/ir.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace etl {

class Lowerer {
public:
  Lowerer(const KernelPlan &plan, Machine &m, llvm::Module &mod, unsigned threads);
  /// Emits etl_main and one internal function per group.
  llvm::Function *lower_kernel();
  unsigned smem_bytes() const;

  // ---- lower_kernel.cpp -----------------------------------------------------
private:
  /// Group g's function, from its tile IR.
  llvm::Function *lower_group(int g);
  void emit_event_ops(const GroupPlan &gp, bool wait);
  /// Group `g` waits: emits the load ops of `tile` prefetch.cpp lets run
  /// before the waits and records them so the body skips them.
  void emit_prefetch(const GroupPlan &gp, const TileFunc &tile);
  /// In a kernel with dynamic groups the wait loop may run dynamic items
  /// (emit_static_wait_loop): the prefetched registers wait in allocas
  /// (prefetch_slots), are issued again after each item the wait runs
  /// (prefetch_reissue), so none lives across an item, and are read back
  /// once the waits are done (prefetch_reload, into tile_preloaded).
  void prefetch_store();
  void prefetch_reissue();
  void prefetch_reload();
  std::set<int> written; ///< written_tensors of the kernel
  std::set<const TOp *> hoisted_ops;
  std::vector<const TOp *> prefetch_ops; ///< of the group being lowered, with prefetch_slots
  std::vector<std::pair<int, std::vector<llvm::AllocaInst *>>> prefetch_slots;
  /// Registers of values the body starts with (lower_tile_body sets them
  /// after tile_begin): the prefetched loads prefetch_reload read back.
  std::vector<std::pair<int, std::vector<llvm::Value *>>> tile_preloaded;

public:
  /// Per group, how many loads were issued before its waits
  /// (backend.h's BackendResult::prefetched).
  std::vector<std::pair<std::string, size_t>> prefetched;
  /// Per group, how many loads its loops issue one iteration ahead.
  std::vector<std::pair<std::string, size_t>> pipelined;
  size_t pipelined_loads = 0; ///< of the group being lowered

private:
  /// One notification of element `off` (absolute counter index) of `event`,
  /// firing it for dynamic consumers when it reaches zero.
  void notify_element(int event, llvm::Value *off);
  void emit_data_notify_release(const GroupPlan &gp);
  /// Thread 0: counts a finished task in shared memory (kSmemProgress).
  void mark_progress();
  /// Thread 0, in etl_main: every kPollEveryTasks-th call or after
  /// kPollEveryNs, reads the abort flag and publishes the progress count;
  /// returns the flag read (i32), 0 when it was not due.
  llvm::Value *poll_control();
  /// Thread 0, before a spin-wait: the clock (an i64 alloca) that
  /// spin_abort_flag measures from.
  llvm::AllocaInst *spin_clock();
  /// Thread 0, in a spin-wait's back-off: the abort flag (i32), read from
  /// the host-mapped control block only once kPollEveryNs has passed since
  /// `*last` (which it then resets), else 0: a PCIe read per spin would
  /// queue every waiting CTA behind the others' reads.
  llvm::Value *spin_abort_flag(llvm::AllocaInst *last);
  /// Thread 0: copies the shared progress count to CTA `cta`'s control word.
  void publish_progress(llvm::Value *cta);
  /// etl_main's poll state (thread 0): calls since the last poll, its clock.
  llvm::AllocaInst *poll_since = nullptr, *poll_last = nullptr;
  /// CTA `cta`'s progress word in the control block (etl_abi.h).
  llvm::Value *progress_word(llvm::Value *cta);
  /// Thread 0, when args[ETL_SLOT_TIMELINE] is set: writes the clock into
  /// the task's timeline record (start also writes sm and cta).
  void timeline_mark(bool start);
  /// Offset (i64) of each element of `use` in the counter array; calls `f`
  /// for each one (loops over `*` components).
  /// `notify`: the elements are notified (names the clause in the error
  /// record of a data-dependent index out of range).
  void for_each_event_element(const EventUse &use, const std::function<void(llvm::Value *)> &f,
                              bool notify);

  // ---- lower_dynamic.cpp ----------------------------------------------------
  bool any_dynamic() const;
  /// Does some dynamic group wait on event `e`?
  bool has_dynamic_consumer(int e) const;
  /// Pointer to word `w` of the dynamic-scheduling array (args[ETL_SLOT_DYN]).
  llvm::Value *dyn_word(llvm::Value *w);
  llvm::Value *dyn_word(unsigned w) { return dyn_word(b.getInt64(w)); }
  /// Declares etl.dyn.run(args, tid, smem): runs the dynamic item whose id
  /// thread 0 left in shared memory (kSmemDynItem), then counts it finished.
  void declare_dyn_run();
  void define_dyn_run(const std::vector<llvm::Function *> &group_fns);
  /// Thread 0 only: takes a queue ticket (one fetch-and-add of head) unless
  /// it holds one (smem kSmemDynTicket), then looks at the ticket's slot.
  /// `wait`: take a ticket even if the queue looks empty and spin until the
  /// slot is filled, no item remains or abort; else (a static task's wait)
  /// take one only when head < tail and look once. i1: an item was taken
  /// (its id in smem kSmemDynItem, its timeline index in kSmemPos); on abort
  /// while waiting smem kSmemAbort is set.
  llvm::Value *emit_try_pop(bool wait);
  /// Thread 0 only: emit_try_pop, then the CTA's decision (run, stop,
  /// pause) in smem kSmemDynDecision.
  void emit_pop_decision(bool wait);
  /// Thread 0 only: claims `n` (i32) slots with one add on tail. Returns the
  /// first slot (i32); `*fits` (i1) is whether all fit (else the error word
  /// and the abort flag are raised).
  llvm::Value *emit_push_claim(llvm::Value *n, llvm::Value **fits);
  /// Thread 0 only: release-stores item `id` (i32) into claimed slot `s`.
  void emit_push_store(llvm::Value *s, llvm::Value *id);
  /// Thread 0 only: pushes item `id` (i32).
  void emit_push(llvm::Value *id);
  /// Thread 0 only, after element `rel` (i64, offset inside event `ev`)
  /// reached zero: decrements the dependency counter of every dynamic task
  /// waiting on it and pushes those that become ready.
  void emit_fire(int ev, llvm::Value *rel);
  /// Thread 0 only: every element `gp` waits on is zero (i1), no spinning.
  llvm::Value *all_waits_ready(const GroupPlan &gp);
  /// CTA-wide loop of the main kernel once its static queue is empty: run
  /// dynamic items until none remain (or abort), then branch to `exit`.
  void emit_dyn_loop(llvm::BasicBlock *exit);
  /// CTA-wide wait of a static task when the program has dynamic groups:
  /// while its waits are not done, run ready dynamic items. Branches to
  /// `out` on abort; continues at the insertion point when ready.
  void emit_static_wait_loop(const GroupPlan &gp, int g, llvm::Value *lin, llvm::BasicBlock *out);
  llvm::Function *dyn_run = nullptr;
  /// etl.expand.<group>(args, prefix, tid, smem) for a group whose range
  /// reads data: thread 0 evaluates the range of prefix task `prefix`, adds
  /// its tasks to `remaining`, settles the elements they notify (one token
  /// per expander each: + n - 1, firing what reaches zero) and pushes them.
  llvm::Function *lower_expander(int g);
  /// Thread 0: an event index that reads data is outside [0, extent): fill
  /// the error record (args[ETL_SLOT_ERROR], first writer wins), raise the
  /// abort flag and this CTA's shared abort word.
  void emit_index_error(int event, size_t dim, llvm::Value *value, llvm::Value *extent,
                        bool notify);
  int cur_group = -1;             ///< the group being lowered (error record)
  llvm::Value *cur_lin = nullptr; ///< its task's linear index (i32)

  // ---- lower_index.cpp ------------------------------------------------------
public:
  /// An index-typed expression as i64.
  llvm::Value *index(const Expr &e);
  /// `t[i, j]` of an i32 tensor in an index expression (reads_data), as i64.
  llvm::Value *element_read(const Expr &e);
  llvm::Value *floordiv(llvm::Value *a, llvm::Value *b);
  llvm::Value *floormod(llvm::Value *a, llvm::Value *b);
  llvm::Value *cdiv(llvm::Value *a, llvm::Value *b);
  llvm::Value *arg_slot_i64(unsigned slot);
  llvm::Value *arg_slot_ptr(unsigned slot);
  llvm::Value *arg_load(llvm::Type *ty, unsigned slot);
  unsigned dim_slot(int i) const;
  unsigned tensor_slot(int i) const;
  unsigned event_slot(int i) const;
  unsigned scalar_slot(int i) const;
  /// A scalar parameter's value, read from its argument slot (the value's
  /// bits in the slot's low bytes) into its register type.
  TileVal scalar_param(const Expr &e);
  TileVal scalar_param(int index); ///< kernel scalar `index`

  // ---- lower_arith.cpp ------------------------------------------------------
  /// `v`'s registers (n of them; one register splat) in the register form
  /// of `elem`.
  TileVal coerce(const TileVal &v, size_t n, ElemType elem);
  /// `& | ^ << >>` of two integer registers (shift amounts modulo the width).
  llvm::Value *bit_op(BinOp op, llvm::Value *l, llvm::Value *r, ElemType t);
  /// popc of an integer register of `t` (its width's bits), as an i32.
  llvm::Value *popc_reg(llvm::Value *r, ElemType t);
  /// An integer register wrapped to the width of `t` (i8/u8/i16/u16), the
  /// canonical form every op leaves; other types unchanged (lower_convert.cpp).
  llvm::Value *wrap_int(llvm::Value *v, ElemType t);
  /// Element-wise `a op b` (Add/Sub/Mul/Div/Mod and the bit operators) at
  /// the result's element type, register by register.
  TileVal arith(BinOp op, const TileVal &a, const TileVal &b, const std::vector<int64_t> &shape,
                ElemType elem);
  /// Comparisons (bool result) and `&&`/`||` of bool operands.
  TileVal compare(BinOp op, const TileVal &a, const TileVal &c, const std::vector<int64_t> &shape);
  /// select(cond, a, b) at the result's element type.
  TileVal select(const TileVal &cond, const TileVal &a, const TileVal &c,
                 const std::vector<int64_t> &shape, ElemType elem);
  /// argmax/argmin's combine: does candidate (qv, qi) beat the current
  /// (pv, pi)? The larger (smaller) value, then the lower index; a NaN at
  /// index 0 beats everything, other NaNs lose to every number.
  llvm::Value *arg_wins(ElemType t, bool is_max, llvm::Value *pv, llvm::Value *pi, llvm::Value *qv,
                        llvm::Value *qi);
  /// Machine::shuffle of one register of any type: an i64 as two 32-bit
  /// shuffles of its halves.
  llvm::Value *shuffle_reg(ShflMode mode, llvm::Value *v, llvm::Value *lane, unsigned line);
  /// Integer floor division / modulo of two registers (0 for a zero divisor).
  llvm::Value *int_div(llvm::Value *l, llvm::Value *r, bool mod, bool is_unsigned = false);

  // ---- lower_convert.cpp ----------------------------------------------------
  llvm::Value *convert_scalar(llvm::Value *v, const TileVal &from, ElemType to);
  /// The type an element of `t` has in memory (bf16: i16; FP8, i4/u4: i8).
  llvm::Type *memory_type(ElemType t);
  /// A loaded element (of memory_type) in its register form; `lin`: its
  /// linear index in the tensor (a packed type's nibble is its low bit).
  llvm::Value *from_memory(llvm::Value *v, ElemType t, llvm::Value *lin);
  /// A register in its memory form (not for packed types).
  llvm::Value *to_memory(llvm::Value *x, ElemType t);
  // ---- lower_mma_smem.cpp ---------------------------------------------------
  /// The shape of a tensor-core dot's B fragment loads (lower_tile_mma.cpp):
  /// [M, K] x [K, N], column units of nb (16, or 8) columns, n8 mmas per
  /// unit and k16; B staged as [N, K] rows (b_nk: plain ldmatrix) or [K, N]
  /// rows (ldmatrix.trans).
  struct MmaTile {
    bool bf16 = false;
    int64_t M = 0, K = 0, N = 0, nb = 16, n_units = 0;
    unsigned n8 = 2;
    bool b_nk = false;
  };
  /// Scratch pointer (i8, shared) of element (row, col) of an operand area
  /// of `cols` columns at `base` in the XOR-swizzled staging layout.
  llvm::Value *mma_a_ptr(int64_t cols, llvm::Value *base, llvm::Value *row, llvm::Value *col);
  /// The B fragments of the k16 step at `k0`, columns from `n0` (2 n8
  /// registers each) from the B area at `b_base`.
  std::vector<llvm::Value *> mma_load_b(const MmaTile &t, llvm::Value *b_base, llvm::Value *k0,
                                        llvm::Value *n0, llvm::Value *lane, unsigned line);
  /// Optimisation remarks (DiagId::DotFmaPath, ...), for BackendResult::remarks.
  std::vector<BackendRemark> remarks;

  // ---- lower_atomic.cpp -----------------------------------------------------
  /// One element's atomic `op` (atomic_add, ...) at `p` of a tensor of `t`:
  /// `v` (and `desired` for cas) in register form; returns the old value in
  /// register form. f16/bf16: the machine's 16-bit add, else a loop on a
  /// 16-bit compare-and-swap computing in f32.
  llvm::Value *atomic_elem(Builtin op, ElemType t, llvm::Value *p, llvm::Value *v,
                           llvm::Value *desired);

  // ---- lower_math.cpp -------------------------------------------------------
  /// One f32 register: the machine's form of `fn`, or a composition.
  llvm::Value *math_reg(MathFn fn, llvm::Value *x, llvm::Value *y);
  /// math_reg of every f32 register of `x` (and `y`, pow's exponent),
  /// rounded once to `want`.
  std::vector<llvm::Value *> math_regs(MathFn fn, const std::vector<llvm::Value *> &x,
                                       const std::vector<llvm::Value *> &y, ElemType want);
  llvm::Value *erf_composed(llvm::Value *x);
  llvm::Value *pow_composed(llvm::Value *x, llvm::Value *y);
  /// c[0]*x^(n-1) + ... + c[n-1] by fma.
  llvm::Value *horner(llvm::Value *x, const float *c, size_t n);
  llvm::Value *fconst(double v);

  // ---- lower_tile_control.cpp, lower_tile_memory.cpp, lower_tile_map.cpp,
  //      lower_tile_reduce.cpp, lower_tile_dot.cpp: the tile IR path -------
  /// The body of a task from its tile IR (every op ported): a value's
  /// registers hold the elements its layout gives the thread, register r at
  /// hardware index (r, lane, warp).
  void lower_tile_body(const TileFunc &f);
  /// Lowering state of `f` (its values, every layout's thread coordinates)
  /// at the insertion point; lower_tile_body calls it unless emit_prefetch
  /// did, before the waits.
  void tile_begin(const TileFunc &f);
  void tile_ops(const std::vector<TOp> &ops);
  void tile_op(const TOp &op);
  void tile_op_at(const TOp &op);
  /// The staging op being lowered (tile_op, after plan_shared): its buffer
  /// (null: it must not stage), whether note_scratch saw it staged.
  const SmemBuffer *tile_buf = nullptr;
  bool tile_buf_used = false, tile_staging = false;
  /// The trailing barrier of a staging op, which frees its scratch for the
  /// next one: kept unless plan_shared gave the next ones other bytes.
  void scratch_release();
  void tile_for(const TOp &op);
  void tile_if(const TOp &op);
  /// The `loads` (ops of `loop`'s body) with the loop variable at `at`,
  /// issued only when `when` (i1) holds (zeros otherwise); their registers.
  std::vector<std::vector<llvm::Value *>> tile_loads_at(const TOp &loop,
                                                        const std::vector<const TOp *> &loads,
                                                        llvm::Value *at, llvm::Value *when);
  /// ETL_PREFETCH=0 turns the weight prefetch and the loop pipelining off.
  static bool prefetch_on();
  /// A uniform i64 from a symbolic expression (dims, task and loop vars).
  llvm::Value *sym_value(const Sym &s);
  /// The registers of value `v` (one for a scalar) as a TileVal.
  TileVal tval(int v) const;
  const Layout &layout_of(int v) const;
  /// Per dim, the coordinate (i64) this thread's lane and warp bits
  /// contribute; register r adds its field of Layout::apply(r, 0, 0) (XOR).
  const std::vector<llvm::Value *> &thread_dims(const Layout &l);
  /// Per dim, the coordinate (i64) of register `r` of layout `l`.
  std::vector<llvm::Value *> reg_coords(const Layout &l, uint32_t r);
  /// i1: the element of register r lies inside the logical shape (null:
  /// always), for shapes padded to powers of two.
  llvm::Value *reg_alive(const Layout &l, uint32_t r);
  /// i1: this thread writes for its replica group (null: every thread).
  llvm::Value *replica_writer(const Layout &l);
  /// Does register r repeat a lower register (a zero register basis)?
  static bool reg_replica(const Layout &l, uint32_t r);
  /// Registers per shared access of tile_convert (lower/lower_tile_map.cpp).
  static unsigned scratch_vec(const Layout &l, const std::vector<int64_t> &shape, unsigned bytes);
  void tile_load(const TOp &op);
  void tile_store(const TOp &op);
  /// An atomic: one writer per replica group applies it per element
  /// (atomic_elem); the old values, when used, reach the copies by register
  /// moves, shuffles or the op's scratch buffer (lower_tile_memory.cpp).
  void tile_atomic(const TOp &op);
  void tile_elementwise(const TOp &op);
  void tile_shape_op(const TOp &op);
  void tile_convert(const TOp &op);
  bool tile_convert_shuffle(const TOp &op);
  /// reduce and argreduce: one fold along the axis over (value[, index])
  /// parts; scan: the inclusive prefix along the axis, in the operand's
  /// layout (lower/lower_tile_reduce.cpp).
  void tile_reduce(const TOp &op);
  void tile_scan(const TOp &op);
  /// The FMA `dot` of f32 tiles (lower/lower_tile_dot.cpp).
  void tile_dot(const TOp &op);
  /// A tensor-core `dot` (tile/mma.cpp's mma_dot) whose result registers
  /// are the mma accumulators (lower/lower_tile_mma.cpp).
  void tile_mma_dot(const TOp &op);
  /// Value v's registers to its swizzled staging area at byte `base`:
  /// [R, C] rows, or [C, R] rows when `nk` (no barrier); 16-bit elements
  /// of `elem` (f16, bf16), or for F32 (a tf32 dot's) cvt.rna's tf32 bits,
  /// 32-bit, where a 16-bit tile of twice the columns would be.
  void tile_mma_stage(int v, bool nk, int64_t base, ElemType elem);
  /// The 16 bits (i16) of an f16/bf16 value held in an f32 register.
  llvm::Value *mma_half_bits(llvm::Value *v, bool bf16);
  /// Address (i8 pointer) and in-bounds test (null: none) of the element of
  /// load or store `op` at tile coordinates `c`; `aligned` (when given):
  /// i1, the tensor's base is a multiple of `n` elements
  /// (lower_tile_memory.cpp).
  std::pair<llvm::Value *, llvm::Value *> tile_elem_addr(const TOp &op,
                                                         const std::vector<llvm::Value *> &c,
                                                         unsigned n, llvm::Value **aligned);
  /// Uniform facts of the `shape` tile load or store `op` slices, for a
  /// path without per-element tests: i1, every element lies inside the
  /// tensor (null: tile/memory.cpp proved it), and per tile dim its byte
  /// stride in memory (lower_tile_memory.cpp).
  llvm::Value *tile_inside(const TOp &op, const std::vector<int64_t> &shape,
                           std::vector<llvm::Value *> &stride_bytes);
  /// The load a tensor-core dot's b is (through a transpose too), which the
  /// dot copies global -> shared by cp.async instead of through registers,
  /// or null (lower_tile_mma.cpp); tile_direct: such loads and transposes,
  /// which emit nothing where they stand.
  const TOp *mma_direct_b(const TOp &dot);
  /// The slice of `load` (a load or an async.copy, of `shape` and `elem`:
  /// f16/bf16, or a tf32 dot's raw f32) copied by cp.async into a swizzled
  /// staging area at byte `base` (row-major, its last dim along the rows;
  /// no commit, wait or barrier).
  void tile_mma_copy(const TOp &load, const std::vector<int64_t> &shape, llvm::Value *base,
                     ElemType elem);
  /// The place (i8 pointer) of element (row, col) of a tf32 dot's f32
  /// operand staged at byte `base` as rows of `cols` (lower_tile_mma.cpp's
  /// swizzle: 16-byte chunks, conflict-free for ldmatrix and B loads).
  llvm::Value *tile_tf32_ptr(int64_t cols, llvm::Value *base, llvm::Value *row, llvm::Value *col);
  /// The B fragments (b0, b1 per n8 tile: registers 2j, 2j + 1; tf32 bits)
  /// of a tf32 dot for k8 step `kk` and this warp's unit at column `n0`:
  /// ldmatrix of [N, K] rows (t.b_nk), else 32-bit loads of [K, N] rows;
  /// `raw`: f32 as copied, rounded here.
  std::vector<llvm::Value *> tile_tf32_load_b(const MmaTile &t, llvm::Value *b_base, int64_t kk,
                                              llvm::Value *n0, bool raw, unsigned line);
  /// The Async family (tile/pipeline.cpp's rings, lower_tile_mma.cpp):
  /// smem.alloc, async.copy, async.commit, async.wait, barrier, smem.view.
  void tile_async(const TOp &op);
  /// Per ring (smem.alloc): slot 0's offset from the scratch start, a
  /// slot's bytes; per slot view (smem.view, or its transpose): its offset
  /// (i64) and whether it is [N, K] rows.
  std::map<int, std::pair<int64_t, int64_t>> tile_rings;
  std::map<int, std::pair<llvm::Value *, bool>> tile_views;
  std::set<const TOp *> tile_direct;
  /// Per value of the body being lowered: the ops that use it (tile_begin).
  std::map<int, std::vector<const TOp *>> tile_users;
  /// Adds a tensor-core dot accumulated into (lower_tile_mma.cpp): done.
  std::set<const TOp *> tile_fused;
  /// The swizzled scratch index of tile coordinates `c` from element `base`
  /// (a multiple of 128 bytes), and the write of a tile's registers there
  /// (one writer per replica group, vectors where the layout allows; no
  /// barrier): tile_convert's scheme, which tile_dot shares.
  llvm::Value *tile_scratch_index(const std::vector<llvm::Value *> &c,
                                  const std::vector<int64_t> &shape, unsigned bytes, int64_t base);
  void tile_scratch_write(const Layout &ls, const std::vector<llvm::Value *> &in, ElemType elem,
                          const std::vector<int64_t> &shape, int64_t base);
  const TileFunc *tf = nullptr;
  std::vector<std::vector<llvm::Value *>> tregs; ///< per value id
  std::map<std::string, llvm::Value *> tile_loop_vars;
  /// Element reads of tensor data (`kv_len[b]`) by the symbol sema named
  /// them: the i64 a rank-0 load op with that `attr` bound (scoped like the
  /// ops: tile_for restores the outer map after its body).
  std::map<std::string, llvm::Value *> tile_data_syms;
  /// Per layout, thread_dims' coordinates, valid where they dominate.
  std::map<const Layout *, std::vector<llvm::Value *>> tcoord_cache;
  /// Keeps tcoord_cache as it was for the code after a region (a branch,
  /// a loop body) that builds coordinates which do not dominate that code.
  struct CoordScope {
    Lowerer &L;
    std::map<const Layout *, std::vector<llvm::Value *>> saved;
    explicit CoordScope(Lowerer &l) : L(l), saved(l.tcoord_cache) {}
    ~CoordScope() { L.tcoord_cache = std::move(saved); }
    CoordScope(const CoordScope &) = delete;
    CoordScope &operator=(const CoordScope &) = delete;
  };

  // ---- helpers (lower_kernel.cpp) -------------------------------------------
  llvm::Type *reg_type(ElemType t) const;
  /// The signed integer predicate `p` made unsigned for an unsigned `t`.
  static llvm::CmpInst::Predicate int_predicate(llvm::CmpInst::Predicate p, ElemType t);
  llvm::AllocaInst *entry_alloca(llvm::Type *ty, const char *name = "");
  void if_then(llvm::Value *cond, const std::function<void()> &then);
  /// for (iv = lo; iv < hi; iv += step) body(iv); all i64, step > 0.
  void for_range(llvm::Value *lo, llvm::Value *hi, llvm::Value *step,
                 const std::function<void(llvm::Value *)> &body);
  /// Scratch address of element `elem_index` of a tile of `bytes`-wide registers.
  llvm::Value *scratch_ptr(llvm::Value *elem_index, unsigned bytes = 4);
  /// A load or store of scratch element `elem_index` (through
  /// Machine::shared_access, so the sim profile counts it).
  llvm::Value *scratch_load(llvm::Type *ty, llvm::Value *elem_index, unsigned bytes = 4);
  void scratch_store(llvm::Value *v, llvm::Value *elem_index, unsigned bytes = 4);
  /// Register width in scratch: 8 for i64 tiles, else 4.
  unsigned scratch_bytes(ElemType t) const;
  /// Reserves scratch for `numel` 4-byte words.
  void note_scratch(int64_t numel);

  const KernelPlan &plan;
  Machine &m;
  llvm::Module &mod;
  llvm::LLVMContext &ctx;
  Builder b;
  unsigned T;
  /// While set, argument-block loads are `!invariant.load` (LLVM hoists
  /// them out of the loop around): set while a ring's copies are lowered
  /// (lower_index.cpp's arg_slot_i64).
  bool invariant_args = false;
  llvm::Type *i1, *i32, *i64, *f32, *ptr;

  // Per group function.
  llvm::Function *fn = nullptr;
  llvm::Value *args = nullptr, *tid = nullptr, *smem = nullptr;
  const TaskDecl *task = nullptr;
  std::vector<llvm::Value *> task_vars;

  int64_t max_scratch_elems = 0;
  /// Bytes of scratch below the staging op being lowered (its planned
  /// buffer's offset, tile/smem.cpp): scratch_ptr and note_scratch count
  /// from here.
  int64_t scratch_floor = 0;
};

} // namespace etl
