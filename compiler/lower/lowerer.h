//===- lower/lowerer.h - Shared state of the tile lowering (internal) -----===//
//
// What this owns: the Lowerer that walks one kernel and emits LLVM IR
// against a Machine, the class every lower_*.cpp file implements a part
// of. The kernel plan, the register-tile value and the free helpers they
// share are in lower/plan.h. Not included outside compiler/lower.
//
// Two paths: a task body whose tile IR (compiler/tile) has only ported ops
// is lowered from it (lower_tile_*.cpp: registers per the IR's layouts);
// every other body from the AST with the implicit layout below.
//
// AST path tile layout: a tile of static shape S (rank 0..3, numel elements) is spread
// over the CTA's T threads; thread `tid` owns the row-major linear elements
// e = tid + k*T for k = 0 .. ceil(numel/T)-1 (e >= numel: dead). Every thread
// keeps its elements as SSA values (`TileVal::regs[k]`); locals live in
// allocas that mem2reg turns back into registers. Scalars (rank 0) hold one
// uniform value. An op that changes which thread owns an element (broadcast
// of a smaller operand, transpose) goes through the shared scratch area:
// write own elements, barrier, read with the new mapping, barrier; a
// reduction moves only its partial results that way (see below).
// `expand` only inserts a size-1 dim, which keeps the linear order, so it is
// free. Shared memory: the 32-byte header [0, kSmemScratch) broadcasts the
// queue entry, the abort flag, the dynamic-loop decision and the progress
// count (offsets below); the scratch area starts at kSmemScratch and is sized
// by the largest need of one re-layout (4 bytes per element, 8 for i64).
//
// Element types in registers: f32 and f16 are f32 (f16 results are rounded
// to half precision after each op), i32 is i32, i8/i16/u8/u16/u32 are an i32
// holding the value sign- or zero-extended (wrap_int after each op; u32 uses
// the unsigned forms of `/ % >>` and comparisons), and bool is an i32 holding 0
// or 1 (so bool tiles spill to scratch, select and reduce like i32 ones;
// comparisons zero-extend their i1). Reductions and scans combine within a
// thread, then across lanes with warp shuffles, then across warps through
// scratch (lower/lower_reduce.cpp); dot spills both operands side by side
// (a at 0, b after it) and each thread runs a K loop for the outputs it
// owns, so its scratch need is (|a| + |b|) * 4 bytes, which sema bounds by
// the smallest budget of the targets compiled for (target/targets.def:
// dynamic shared memory up to the opt-in maximum).
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
  /// Group g's function, from its tile IR when the plan has one (falling
  /// back to the AST path if that throws LowerError), else from the AST.
  llvm::Function *lower_group(int g);
  llvm::Function *lower_group(int g, const TileFunc *tile);
  void emit_event_ops(const GroupPlan &gp, bool wait);
  /// Group `g` waits: emits the loads prefetch.cpp lets run before the
  /// waits (AST statements, or tile IR load ops of `tile`) and records them
  /// so the body skips them.
  void emit_prefetch(const GroupPlan &gp, const TileFunc *tile);
  std::set<int> written; ///< written_tensors of the kernel
  std::set<const Stmt *> hoisted_stmts;
  std::set<const TOp *> hoisted_ops;

public:
  /// Per group, how many loads were issued before its waits (the last
  /// lowering of each group; backend.h's BackendResult::prefetched).
  std::vector<std::pair<std::string, size_t>> prefetched;
  /// Per group, how many loads its loops issue one iteration ahead.
  std::vector<std::pair<std::string, size_t>> pipelined;
  size_t pipelined_loads = 0; ///< of the group being lowered
  /// Per group whose tile IR path threw: the LowerError (lower_group then
  /// lowered it from the AST; BackendResult::lowering reports it).
  std::vector<std::pair<std::string, std::string>> tile_fallbacks;

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
  void lower_stmts(const std::vector<StmtPtr> &body);
  void lower_stmt(const Stmt &s);

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
  unsigned dim_slot(int i) const;
  unsigned tensor_slot(int i) const;
  unsigned event_slot(int i) const;
  unsigned scalar_slot(int i) const;
  /// A scalar parameter's value, read from its argument slot (the value's
  /// bits in the slot's low bytes) into its register type.
  TileVal scalar_param(const Expr &e);
  TileVal scalar_param(int index); ///< kernel scalar `index`

  // ---- lower_tile.cpp -------------------------------------------------------
  TileVal value(const Expr &e);
  /// store, and the atomics (their old values; empty for a store).
  TileVal lower_store(const Expr &call);
  TileVal lower_load(const Expr &call);
  /// Broadcasts (numpy rules) and converts `v` to `shape`/`elem`.
  TileVal coerce(const TileVal &v, const std::vector<int64_t> &shape, ElemType elem);
  /// `& | ^ << >>` of two integer registers (shift amounts modulo the width).
  llvm::Value *bit_op(BinOp op, llvm::Value *l, llvm::Value *r, ElemType t);
  /// popc of an integer register of `t` (its width's bits), as an i32.
  llvm::Value *popc_reg(llvm::Value *r, ElemType t);
  /// An integer register wrapped to the width of `t` (i8/u8/i16/u16), the
  /// canonical form every op leaves; other types unchanged.
  llvm::Value *wrap_int(llvm::Value *v, ElemType t);
  /// Element-wise `a op b` (Add/Sub/Mul/Div/Mod and the bit operators) at the given result
  /// shape/elem.
  TileVal arith(BinOp op, const TileVal &a, const TileVal &b, const std::vector<int64_t> &shape,
                ElemType elem);
  // ---- lower_convert.cpp ----------------------------------------------------
  llvm::Value *convert_scalar(llvm::Value *v, const TileVal &from, ElemType to);
  /// The type an element of `t` has in memory (bf16: i16; FP8, i4/u4: i8).
  llvm::Type *memory_type(ElemType t);
  /// A loaded element (of memory_type) in its register form; `lin`: its
  /// linear index in the tensor (a packed type's nibble is its low bit).
  llvm::Value *from_memory(llvm::Value *v, ElemType t, llvm::Value *lin);
  /// A register in its memory form (not for packed types).
  llvm::Value *to_memory(llvm::Value *x, ElemType t);
  // ---- lower_tile.cpp (continued) --------------------------------------------
  /// Comparisons (bool result) and `&&`/`||` of bool operands, broadcast to `shape`.
  TileVal compare(BinOp op, const TileVal &a, const TileVal &c, const std::vector<int64_t> &shape);
  /// select(cond, a, b) at the result shape/elem.
  TileVal select(const TileVal &cond, const TileVal &a, const TileVal &c,
                 const std::vector<int64_t> &shape, ElemType elem);
  TileVal arange(int64_t n, ElemType elem);
  TileVal transpose(const TileVal &v);
  /// a [M, K] (or [K]) times b [K, N]: f32 [M, N] (or [N]), accumulated in
  /// f32: on tensor cores where mma_eligible says "ok", else the FMA path
  /// (with a remark at `where` when the operands are f16/bf16).
  TileVal dot(const TileVal &a, const TileVal &c, SourceRange where = {});

  // ---- lower_mma.cpp --------------------------------------------------------
  /// "" when a and c are not both f16 or both bf16, "ok" when the dot runs on
  /// tensor cores, else why it does not (the remark's text).
  std::string mma_eligible(const TileVal &a, const TileVal &c) const;
  /// The checks both tensor-core paths share (mma_eligible, tf32_eligible):
  /// "ok" when [M, K] x [K, N] is a multiple of m16 x k_step x n8, the CTA
  /// is whole warps and `elem_bytes` (M a_cols(K) + K b_cols(N)) of staged
  /// operands (rows of a_cols / b_cols elements) plus the f32 result fit the
  /// shared-memory budget; else why not.
  std::string mma_fits(const TileVal &a, const TileVal &c, int64_t k_step, const char *mma,
                       int64_t elem_bytes, int64_t (*a_cols)(int64_t),
                       int64_t (*b_cols)(int64_t)) const;
  /// The tensor-core dot (lower_mma.cpp's banner); `line` names it in sim's
  /// divergence reports.
  /// `stage`, when given, fills the swizzled operand area instead of the
  /// registers of a and c (dot_async); `op_base` (i64 bytes, null: 0) is
  /// where that area starts, `stages` how many operand areas precede the
  /// result area.
  TileVal dot_mma(const TileVal &a, const TileVal &c, unsigned line,
                  const std::function<void()> &stage = nullptr, llvm::Value *op_base = nullptr,
                  int64_t stages = 1);
  /// The warp tiling of a tensor-core dot [M, K] x [K, N]: m16 x nb output
  /// units (nb = 16, or 8 when N % 16 != 0), n_units per row of units;
  /// warp w owns units w, w + W, ... (W = T / 32 warps).
  struct MmaTile {
    bool bf16 = false;
    int64_t M = 0, K = 0, N = 0, nb = 16, n_units = 0, units = 0;
    unsigned n8 = 2; ///< mmas (n8 blocks) per unit and k16
    /// B staged as [N, K] rows (col-major B): plain ldmatrix, not .trans.
    bool b_nk = false;
    /// f32 operands on m16n8k8 tf32 (lower_mma_tf32.cpp): the staging
    /// layout, fragments and mma of that file.
    bool tf32 = false;
  };
  MmaTile mma_tile(const TileVal &a, const TileVal &c) const;
  /// The pieces of dot_mma that lower_pipelined_for reuses (lower_mma.cpp):
  /// the operand `v` ([rows, cols]) from registers into its swizzled area at
  /// `base` (i64 bytes);
  void mma_stage_regs(const TileVal &v, int64_t cols, llvm::Value *base, bool bf16);
  /// `f(set, unit)` for this warp's units: sets == 0, a warp-uniform loop
  /// over all of them (set always 0); else the first `sets` of them
  /// unrolled, unit i guarded (nested, warp-uniform) when it may not exist;
  void mma_for_units(const MmaTile &t, int64_t sets,
                     const std::function<void(unsigned, llvm::Value *)> &f);
  /// one unit's accumulators (4 * n8 f32 allocas), set to zero here;
  std::vector<llvm::AllocaInst *> mma_zero_frags(const MmaTile &t);
  /// the K loop of unit `u`: ldmatrix + mma into `acc` from the operand areas
  /// at `a_base` / `b_base` (i64 bytes);
  void mma_accumulate(const MmaTile &t, const std::vector<llvm::AllocaInst *> &acc, llvm::Value *u,
                      llvm::Value *a_base, llvm::Value *b_base, unsigned line);
  /// unit u's accumulators (PTX's C fragment) into the f32 result area at
  /// byte `c_base`;
  void mma_store_frags(const MmaTile &t, const std::vector<llvm::AllocaInst *> &acc, llvm::Value *u,
                       int64_t c_base);
  /// then a barrier, every thread reads its elements of the result, a
  /// barrier (the scratch is free again).
  TileVal mma_read_result(const MmaTile &t, int64_t c_base);
  /// `dot(load(a[..]), load(b[..]))` of f16/bf16 tiles on tensor cores with
  /// the operands copied global -> shared by cp.async (lower_mma.cpp); none
  /// when the call does not have that form (the caller takes dot()).
  std::optional<TileVal> dot_async(const Expr &call);
  /// `dot(a, b)` and `dot(a, transpose(b))` of f16/bf16 tiles on tensor
  /// cores (lower_mma_operands.cpp): each operand that is a load cp.async
  /// can stage goes global -> shared directly, the others from registers;
  /// a transposed b is staged as it is ([N, K], the col-major B operand),
  /// never re-laid out; an a that mma_hoist_begin staged before the loop is
  /// read where it lies. None (nothing emitted) when the call has none of
  /// these, or does not qualify for mma.
  std::optional<TileVal> dot_staged(const Expr &call);
  /// `dot(cast<f16|bf16>(f(dot(a1, b1))), b2)` with f elementwise
  /// (lower_mma_chain.cpp): the inner dot's accumulators become the outer
  /// dot's A fragments in registers (no shared-memory round trip of P).
  /// None (nothing emitted) when the call has another form or does not fit.
  std::optional<TileVal> dot_chained(const Expr &call);
  /// One register of f(acc) for dot_chained: `e` evaluated with `inner`
  /// (the dot) replaced by `acc` and its scalar leaves by `scalars`.
  llvm::Value *chain_eval(const Expr &e, const Expr *inner, llvm::Value *acc,
                          const std::map<const Expr *, llvm::Value *> &scalars);
  /// Before the AST `for` loop `s` (lower_mma_operands.cpp): the A operands
  /// of its dots that are locals the loop does not assign are staged once,
  /// swizzled, at the bottom of the scratch area, which the loop's other
  /// ops then start above (scratch_floor); returns the floor to restore.
  int64_t mma_hoist_begin(const Stmt &s);
  /// After the loop: its staged operands are gone, the floor restored.
  void mma_hoist_end(int64_t floor);
  /// Local index -> byte offset (from the scratch start) of its staged A
  /// operand, for the loops being lowered.
  std::map<int, int64_t> mma_hoisted;
  /// Bytes of scratch below every op's (hoisted operands): scratch_ptr and
  /// note_scratch count from here.
  int64_t scratch_floor = 0;
  /// A group's hoisted operands made it overflow the shared-memory budget:
  /// it is lowered again without them (lower_group).
  bool mma_hoist_off = false, mma_hoist_used = false;
  /// The B fragments of unit `u`'s k16 step at `k0` (2 n8 registers each)
  /// from the B area at `b_base`: ldmatrix.trans of [K, N] rows, or plain
  /// ldmatrix of [N, K] rows when t.b_nk (lower_mma.cpp).
  std::vector<llvm::Value *> mma_load_b(const MmaTile &t, llvm::Value *b_base, llvm::Value *k0,
                                        llvm::Value *n0, llvm::Value *lane, unsigned line);
  /// A load that cp.async can stage (lower_tile.cpp): a 2-D slice of a
  /// 16-bit tensor, no mask, pad or gather, its columns along the tensor's
  /// last (contiguous) dim. `at(e, n)`: the address of tile element `e`
  /// (i64, row-major) and whether elements e .. e + n - 1 of its row all lie
  /// inside the tensor.
  struct ChunkLoad {
    ElemType elem;
    std::vector<int64_t> shape;
    bool barrier_before = false;
    std::function<std::pair<llvm::Value *, llvm::Value *>(llvm::Value *, unsigned)> at;
  };
  /// `elem_bytes`: the element size asked for (2; 4 for the f32 operands
  /// of a tf32 dot).
  std::optional<ChunkLoad> chunk_load(const Expr &call, int elem_bytes = 2);
  /// cp.async copies of the slice `l` ([rows, cols]) into its swizzled
  /// staging area at byte offset `base` (i64) of the scratch area: 16-byte
  /// chunks (8 16-bit or 4 32-bit elements of a row); `place(row, col)`,
  /// when given, is the byte offset of a chunk's first element in another
  /// layout that keeps chunks contiguous (the tf32 one) instead of
  /// swizzled_offset's.
  using ChunkPlace = std::function<llvm::Value *(llvm::Value *, llvm::Value *)>;
  void stage_chunks(const ChunkLoad &l, int64_t cols, llvm::Value *base,
                    const ChunkPlace &place = nullptr);
  /// The two halves of a cp.async ring of S stages over the loop lo .. hi,
  /// shared by both pipelined loops. `issue(iv, buf)` copies iteration iv's
  /// operands into ring slot buf (both i64). ring_prologue puts iterations
  /// lo .. lo + S - 2 in flight, one commit group each (empty past hi, so
  /// the group count per iteration is uniform); `slot(p)` is slot p's value.
  void ring_prologue(llvm::Value *lo, llvm::Value *hi, int64_t S,
                     const std::function<void(llvm::Value *, llvm::Value *)> &issue,
                     const std::function<llvm::Value *(int64_t)> &slot);
  /// At the top of iteration iv: wait for its group, one barrier, refill
  /// the slot iteration iv - 1 read with iteration iv + S - 1, commit, and
  /// store iv back into the loop variable `var` (issue moved it). Returns
  /// iteration iv's slot, (iv - lo) % S.
  llvm::Value *ring_advance(llvm::Value *iv, llvm::Value *lo, llvm::Value *hi, int64_t S,
                            llvm::AllocaInst *var,
                            const std::function<void(llvm::Value *, llvm::Value *)> &issue);
  /// A `for` loop whose body is `acc += dot(load(a[..]), load(b[..]))` on
  /// tensor cores, as a cp.async ring of 2 or 3 stages with the mma
  /// accumulators in registers across the loop (lower_mma.cpp); false
  /// (nothing emitted that matters) when the loop does not have that form.
  bool lower_pipelined_for(const Stmt &s);
  /// The general pipelined K loop (lower_mma_pipeline.cpp): a body of lets,
  /// assignments and `acc_i += dot(a_i, b_i)` of f16/bf16 tiles, the raw
  /// loads of the operands in one cp.async ring, the other operands staged
  /// from registers, every accumulator in registers across the loop; false
  /// (after a MmaLoopNotPipelined remark when the body has such dots) when
  /// the loop does not qualify.
  bool lower_pipelined_dots(const Stmt &s);
  // ---- lower_mma_warptile.cpp -----------------------------------------------
  /// A warp's block of wm x wn output units of a pipelined K loop
  /// (lower_mma_warptile.cpp's banner); wm == 0: none, one unit at a time.
  struct MmaWarpTile {
    int64_t wm = 0, wn = 0;
    bool on() const { return wm > 0; }
  };
  /// The warp tile of `t` when its accumulators persist as `sets` fragment
  /// sets per warp, or none (the rule is the banner's).
  MmaWarpTile mma_warp_tile(const MmaTile &t, int64_t sets) const;
  /// The unit (i64) of this warp's set i in warp tile `wt`.
  llvm::Value *mma_warp_unit(const MmaTile &t, const MmaWarpTile &wt, unsigned i);
  /// mma_for_units over `sets` persistent sets, in `wt`'s order when on.
  void mma_sets_for_units(const MmaTile &t, const MmaWarpTile &wt, int64_t sets,
                          const std::function<void(unsigned, llvm::Value *)> &f);
  /// One iteration's ldmatrix + mma into every persistent set: per k16 the
  /// warp tile's fragments once and all its mma (wt on), else unit by unit.
  void mma_accumulate_sets(const MmaTile &t, const MmaWarpTile &wt,
                           const std::vector<std::vector<llvm::AllocaInst *>> &frags,
                           llvm::Value *a_base, llvm::Value *b_base, unsigned line);
  /// Scratch pointer (i8, shared) of element (row, col) of an A area of
  /// `cols` columns at `base` in the XOR-swizzled staging layout (lower_mma.cpp).
  llvm::Value *mma_a_ptr(int64_t cols, llvm::Value *base, llvm::Value *row, llvm::Value *col);
  // ---- lower_mma_tf32.cpp ---------------------------------------------------
  /// "ok" when an f32 dot with `precision = tf32` runs on tensor cores, else
  /// why not (the DotFmaPath remark's text).
  std::string tf32_eligible(const TileVal &a, const TileVal &c) const;
  /// `dot(a, b, precision = tf32)` (lower_mma_tf32.cpp's banner); the FMA
  /// path with a remark at `where` when tf32_eligible says why not.
  TileVal dot_tf32(const TileVal &a, const TileVal &c, SourceRange where);
  /// `dot(load(a[..]), load(b[..]), precision = tf32)`: both operands copied
  /// global -> shared by cp.async (raw f32, rounded at the fragment loads);
  /// none (nothing that matters emitted) when the call has another form or
  /// does not qualify (the caller takes dot_tf32, which says why).
  std::optional<TileVal> dot_tf32_async(const Expr &call);
  /// The pieces of a tf32 dot that the pipelined K loop shares
  /// (lower_pipelined_for): bytes of one stage (A then B, their padded or
  /// swizzled rows) and where B starts in it;
  int64_t tf32_stage_bytes(const MmaTile &t) const;
  int64_t tf32_b_offset(const MmaTile &t) const;
  /// bytes and placement (stage_chunks) of one operand area of `rows` x
  /// `cols` floats as an A ([M, K]) or B ([K, N], `b_role`) operand;
  int64_t tf32_area_bytes(int64_t rows, int64_t cols, bool b_role) const;
  ChunkPlace tf32_place(int64_t cols, bool b_role);
  /// an operand from registers into such an area at `base`, rounded;
  void tf32_stage_regs(const TileVal &v, int64_t cols, bool b_role, llvm::Value *base);
  /// both operands' cp.async copies into the stage at `base` (i64 bytes);
  void tf32_stage_chunks(const MmaTile &t, const ChunkLoad &la, const ChunkLoad &lb,
                         llvm::Value *base);
  /// the K loop of one warp block of wm x wn units from (r0, n0) (rows 16
  /// apart, columns nb apart; accumulators accs[r wn + c]) on the stage at
  /// a_base / b_base: per k8 its A fragments by ldmatrix.x4, B's by 32-bit
  /// loads (`raw`: f32 as copied, rounded here by cvt.rna; else tf32 bits), then
  /// its mma;
  void tf32_accumulate(const MmaTile &t, int64_t wm, int64_t wn, llvm::Value *r0, llvm::Value *n0,
                       const std::vector<const std::vector<llvm::AllocaInst *> *> &accs,
                       llvm::Value *a_base, llvm::Value *b_base, bool raw, unsigned line);
  /// unit u's K loop (one block of 1 x 1);
  void tf32_accumulate_unit(const MmaTile &t, const std::vector<llvm::AllocaInst *> &acc,
                            llvm::Value *u, llvm::Value *a_base, llvm::Value *b_base, bool raw,
                            unsigned line);
  /// mma_accumulate_sets for tf32 (raw operands: the ring's).
  void tf32_accumulate_sets(const MmaTile &t, const MmaWarpTile &wt,
                            const std::vector<std::vector<llvm::AllocaInst *>> &frags,
                            llvm::Value *a_base, llvm::Value *b_base, unsigned line);
  /// Every unit of a staged tf32 dot (operands at 0 and tf32_b_offset),
  /// through the result area at `c_base` to the register layout.
  TileVal tf32_units(const MmaTile &t, int64_t c_base, bool raw, unsigned line);
  /// Optimisation remarks (DiagId::DotFmaPath), for BackendResult::remarks.
  std::vector<BackendRemark> remarks;
  void assign_local(int index, const TileVal &v);
  TileVal read_local(int index);

  // ---- lower_atomic.cpp -----------------------------------------------------
  /// One element's atomic `op` (atomic_add, ...) at `p` of a tensor of `t`:
  /// `v` (and `desired` for cas) in register form; returns the old value in
  /// register form. f16/bf16: the machine's 16-bit add, else a loop on a
  /// 16-bit compare-and-swap computing in f32.
  llvm::Value *atomic_elem(Builtin op, ElemType t, llvm::Value *p, llvm::Value *v,
                           llvm::Value *desired);
  /// Thread 0's `v` (register form of `t`) in every thread, through scratch.
  llvm::Value *broadcast_from_thread0(llvm::Value *v, ElemType t);

  // ---- lower_math.cpp -------------------------------------------------------
  /// A float math builtin (is_unary_math_fn, pow) at the call's checked
  /// shape and element type.
  TileVal math_call(const Expr &e);
  /// One f32 register: the machine's form of `fn`, or a composition.
  llvm::Value *math_reg(MathFn fn, llvm::Value *x, llvm::Value *y);
  /// math_reg of every f32 register of `x` (and `y`, pow's exponent),
  /// rounded once to `want`: the per-element code of both paths.
  std::vector<llvm::Value *> math_regs(MathFn fn, const std::vector<llvm::Value *> &x,
                                       const std::vector<llvm::Value *> &y, ElemType want);
  llvm::Value *erf_composed(llvm::Value *x);
  llvm::Value *pow_composed(llvm::Value *x, llvm::Value *y);
  /// c[0]*x^(n-1) + ... + c[n-1] by fma.
  llvm::Value *horner(llvm::Value *x, const float *c, size_t n);
  llvm::Value *fconst(double v);

  // ---- lower_reduce.cpp -----------------------------------------------------
  /// sum/max/min along `axis` (warp shuffles where the shape allows).
  TileVal reduce(const TileVal &v, int axis, Builtin op);
  /// Inclusive prefix sum along `axis`.
  TileVal cumsum(const TileVal &v, int axis);
  /// Index (i32) of the first maximum (or minimum) along `axis`.
  TileVal arg_reduce(const TileVal &v, int axis, bool is_max);
  /// argmax/argmin's combine (both paths): does candidate (qv, qi) beat the
  /// current (pv, pi)? The larger (smaller) value, then the lower index; a
  /// NaN at index 0 beats everything, other NaNs lose to every number.
  llvm::Value *arg_wins(ElemType t, bool is_max, llvm::Value *pv, llvm::Value *pi, llvm::Value *qv,
                        llvm::Value *qi);
  /// The serial forms, for shapes the shuffle paths do not take.
  TileVal cumsum_serial(const TileVal &v, int axis);
  TileVal arg_reduce_serial(const TileVal &v, int axis, bool is_max);
  /// Source line of the reduction being lowered (sim's divergence report).
  unsigned cur_line = 0;

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
  std::map<const Layout *, std::vector<llvm::Value *>> tcoord_cache;

  // ---- helpers (lower_kernel.cpp) -------------------------------------------
  llvm::Type *reg_type(ElemType t) const;
  /// The signed integer predicate `p` made unsigned for an unsigned `t`.
  static llvm::CmpInst::Predicate int_predicate(llvm::CmpInst::Predicate p, ElemType t);
  llvm::AllocaInst *entry_alloca(llvm::Type *ty, const char *name = "");
  void if_then(llvm::Value *cond, const std::function<void()> &then);
  /// for (iv = lo; iv < hi; iv += step) body(iv); all i64, step > 0.
  void for_range(llvm::Value *lo, llvm::Value *hi, llvm::Value *step,
                 const std::function<void(llvm::Value *)> &body);
  /// Element index (i64) of register k, and whether it is alive (i1 or null
  /// when always alive).
  llvm::Value *elem_index(unsigned k);
  llvm::Value *elem_alive(unsigned k, int64_t numel);
  /// Row-major coordinates (i64) of linear element `e` in `shape`.
  std::vector<llvm::Value *> coords(llvm::Value *e, const std::vector<int64_t> &shape);
  unsigned regs_for(int64_t numel) const { return unsigned((numel + T - 1) / T); }
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
  /// Re-layout, first half: every thread writes its live elements of `v` to
  /// scratch at their linear index, then the CTA meets at a barrier. The
  /// caller reads them back with the new element-to-thread mapping. `at`
  /// offsets the elements (dot spills both operands side by side).
  void spill_to_scratch(const TileVal &v, int64_t at = 0);
  /// Integer floor division / modulo of two registers (0 for a zero divisor).
  llvm::Value *int_div(llvm::Value *l, llvm::Value *r, bool mod, bool is_unsigned = false);

  const KernelPlan &plan;
  Machine &m;
  llvm::Module &mod;
  llvm::LLVMContext &ctx;
  Builder b;
  unsigned T;
  llvm::Type *i1, *i32, *i64, *f32, *ptr;

  // Per group function.
  llvm::Function *fn = nullptr;
  llvm::Value *args = nullptr, *tid = nullptr, *smem = nullptr;
  /// Set by lower_pipelined_for when its accumulators persist: the thread
  /// index plus an opaque 0 that lower_stmts uses for the statements after
  /// the loop in its block (the consumer of the result, e.g. a store of a
  /// whole tile), so that LLVM does not hoist their per-register offsets
  /// out of the megakernel's task loop, live across it (lower_mma.cpp).
  llvm::Value *tid_after_mma_loop = nullptr;
  const TaskDecl *task = nullptr;
  std::vector<llvm::Value *> task_vars;
  std::map<int, llvm::AllocaInst *> loop_vars; ///< For local_index -> i64 slot
  std::map<std::string, std::vector<llvm::AllocaInst *>> loop_by_name;
  std::vector<LocalSlot> locals;

  int64_t max_scratch_elems = 0;
};

} // namespace etl
