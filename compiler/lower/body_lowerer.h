//===- lower/body_lowerer.h - One task body from its tile IR (internal) ---===//
//
// What this owns: BodyLowerer, the lowering of a task body from its tile IR
// (compiler/tile, after layout assignment and shared-memory planning) on
// the LowerCtx of its group's function: the per-body state (the tile
// function, each value's registers, the thread coordinates of each layout,
// the staging buffer of the op being lowered, the rings and views of the
// Async family) and the op families, one file each (lower_tile_control.cpp
// dispatches: Scalar, Control, Event; lower_tile_memory.cpp, _map, _reduce,
// _dot, _mma, lower_mma_smem.cpp) with their per-register helpers
// (lower_arith.cpp, lower_math.cpp, lower_atomic.cpp). A value's registers
// hold the elements its layout gives the thread. A body the tile IR cannot
// lower is an internal compiler error naming the op, never a detour. The
// kernel skeleton (lower/kernel_lowerer.h) calls lower_tile_body per group.
// Shared memory: the 32-byte header [0, kSmemScratch) belongs to the
// skeleton (lower/plan.h); the scratch area starts at kSmemScratch, its
// buffers placed by tile/smem.cpp (plan_shared). Not included outside
// compiler/lower.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "lower/backend.h"
#include "lower/lower_ctx.h"
#include "tile/ir.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace etl {

class BodyLowerer : public LowerCtx {
public:
  using LowerCtx::LowerCtx;

  /// if_then and for_range of LowerCtx, keeping the thread coordinates
  /// built inside the region (tcoord_cache) out of the code after it.
  void if_then(llvm::Value *cond, const std::function<void()> &then);
  void for_range(llvm::Value *lo, llvm::Value *hi, llvm::Value *step,
                 const std::function<void(llvm::Value *)> &body);

  // ---- lower_arith.cpp ------------------------------------------------------
  /// `v`'s registers (n of them; one register splat) in the register form
  /// of `elem`.
  TileVal coerce(const TileVal &v, size_t n, ElemType elem);
  /// `& | ^ << >>` of two integer registers (shift amounts modulo the width).
  llvm::Value *bit_op(BinOp op, llvm::Value *l, llvm::Value *r, ElemType t);
  /// popc of an integer register of `t` (its width's bits), as an i32.
  llvm::Value *popc_reg(llvm::Value *r, ElemType t);
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
  /// tile/layout.h's smem_place of `s` in LLVM IR: the byte offset (i64)
  /// of element (row, col) of a staging area, or for a lines layout the
  /// element index of row-major index `col` (the one home of the XOR
  /// swizzles: mma_a_ptr, mma_load_b, tile_tf32_ptr, tile_scratch_index).
  /// `chunk_first`: build the chunk's term first (tile_tf32_ptr's order).
  llvm::Value *smem_offset(const SmemLayout &s, llvm::Value *row, llvm::Value *col,
                           bool chunk_first = false);
  /// Scratch pointer (i8, shared) of element (row, col) of an operand area
  /// of `cols` columns at `base` in the XOR-swizzled staging layout.
  llvm::Value *mma_a_ptr(int64_t rows, int64_t cols, llvm::Value *base, llvm::Value *row,
                         llvm::Value *col);
  /// The 16-bit staging of a tensor-core dot's operand of `rows` x `cols`:
  /// tile/smem_layout.cpp's wgmma_staging_layout where the compilation's
  /// targets have wgmma (the layout its descriptors name), else
  /// mma_staging_layout. ldmatrix reads either.
  SmemLayout staging16(int64_t rows, int64_t cols) const;
  /// The B fragments of the k16 step at `k0`, columns from `n0` (2 n8
  /// registers each) from the B area at `b_base`.
  std::vector<llvm::Value *> mma_load_b(const MmaTile &t, llvm::Value *b_base, llvm::Value *k0,
                                        llvm::Value *n0, llvm::Value *lane, unsigned line);

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
  /// Per dim, the constant register r of layout `l` adds to thread_dims'
  /// coordinates, when each is an add (its bits disjoint from the lane
  /// and warp bits'), so that r's address is the thread's plus a constant;
  /// empty otherwise.
  std::vector<int64_t> reg_offsets(const Layout &l, uint32_t r) const;
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
  /// A slot of a row-major ring (tile/pipeline.cpp, kRowMajorRing) at byte
  /// `slot` of the scratch into the registers of `view`'s result, in its
  /// layout, as the load it replaces would have (lower_tile_memory.cpp).
  void tile_ring_read(const TOp &view, llvm::Value *slot);
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
  /// Such a dot as wgmma.mma_async (tile/mma.cpp wgmma_gap empty;
  /// lower/lower_tile_wgmma.cpp), and the wgmma ops tile/pipeline.cpp placed
  /// around it.
  void tile_wgmma_dot(const TOp &op);
  void tile_wgmma_op(const TOp &op);
  /// `x + dot(..)` as dot result `ir`'s one use, x computed already, f32 in
  /// the dot's layout `lr`: the add (x in *x), which the dot's accumulators
  /// start from and which is then done (tile_fused); else null.
  const TOp *dot_add_onto(int ir, const Layout &lr, int *x);
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
  /// no commit, wait or barrier); `row_major`: unswizzled rows of any
  /// element type, a rank-1 `shape` one row (a plain ring's slot).
  void tile_mma_copy(const TOp &load, const std::vector<int64_t> &shape, llvm::Value *base,
                     ElemType elem, bool row_major = false);
  /// tile_mma_copy's interior path: this thread's first chunk of a tile of
  /// `shape` (rank 1: one row) in 16-byte chunks of `elem` (row, column;
  /// i64), and its address in `load`'s tensor (where `aligned`, given:
  /// i1, the tensor's base is 16-byte aligned).
  struct CopyChunk {
    llvm::Value *row, *col, *src;
  };
  CopyChunk copy_first_chunk(const TOp &load, const std::vector<int64_t> &shape, ElemType elem,
                             llvm::Value **aligned);
  /// Bytes by which `op`'s slice moves when loop variable `var` grows by
  /// `step`, where every index of the slice is affine in it (its
  /// coefficients fixed outside the loop); null otherwise
  /// (lower_tile_memory.cpp).
  llvm::Value *tile_affine_step(const TOp &op, const std::string &var, int64_t step);
  /// With `var` bound to lo: the first value of `var` (i64, lo, lo + step,
  /// ...) from which the `shape` tile `op` slices may leave the tensor,
  /// where each index grows by a constant >= 0 per step (before it, every
  /// step's tile lies inside); null where an index does otherwise
  /// (lower_tile_memory.cpp).
  llvm::Value *tile_inside_until(const TOp &op, const std::vector<int64_t> &shape,
                                 const std::string &var, int64_t step, llvm::Value *lo);
  /// A pipelined loop's async.copy whose slice is affine in the loop
  /// variable (tile_for, ring_copy_bump): this thread's first-chunk source
  /// pointer at lo (`from`), bumped by `by` bytes per step in a phi
  /// (`ptr`), and `until`: the interior path's steps (every chunk inside
  /// the tensor and 16-byte aligned) are those before it, so a step tests
  /// its variable against it instead of its tile's bounds (null: tested).
  struct RingBump {
    const TOp *copy;
    std::string var;
    llvm::Value *from, *by, *until;
    llvm::PHINode *ptr;
  };
  /// Before a pipelined loop (its variable bound to lo): the bump of one of
  /// its body's copies, if its slice is affine (lower_tile_mma.cpp).
  std::optional<RingBump> ring_copy_bump(const TOp &copy, const TOp &loop, llvm::Value *lo);
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
  /// The slot an async.copy or smem.view names, from its loop's counter
  /// where it is one of the counter's expressions (i64).
  llvm::Value *ring_slot_value(const Sym &slot);
  /// The swizzled scratch index of tile coordinates `c` from element `base`
  /// (a multiple of 128 bytes), and the write of a tile's registers there
  /// (one writer per replica group, vectors where the layout allows; no
  /// barrier): tile_convert's scheme, which tile_dot shares.
  llvm::Value *tile_scratch_index(const std::vector<llvm::Value *> &c,
                                  const std::vector<int64_t> &shape, unsigned bytes, int64_t base);
  void tile_scratch_write(const Layout &ls, const std::vector<llvm::Value *> &in, ElemType elem,
                          const std::vector<int64_t> &shape, int64_t base);
  // ---- scratch (lower_body.cpp) ---------------------------------------------
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

  /// Optimisation remarks (DiagId::DotFmaPath, ...), for BackendResult::remarks.
  std::vector<BackendRemark> remarks;
  /// The body being lowered and the registers of each of its values (per
  /// value id); public for the family files' free helpers.
  const TileFunc *tf = nullptr;
  std::vector<std::vector<llvm::Value *>> tregs;

protected:
  /// The staging op being lowered (tile_op, after plan_shared): its buffer
  /// (null: it must not stage), whether note_scratch saw it staged.
  const SmemBuffer *tile_buf = nullptr;
  bool tile_buf_used = false, tile_staging = false;
  /// Per ring (smem.alloc): slot 0's offset from the scratch start, a
  /// slot's bytes; per slot view (smem.view, or its transpose): its offset
  /// (i64) and whether it is [N, K] rows.
  std::map<int, std::pair<int64_t, int64_t>> tile_rings;
  std::set<int> tile_row_major_rings; ///< the rings of plain tiles (kRowMajorRing)
  /// Per loop variable of a pipelined `for`: its rings' slot of the current
  /// iteration (i32, 0 at lo, incremented and wrapped at S: no division),
  /// S, and the slot expressions (tile/passes.h ring_slot) of the view and
  /// of the copies S - 1 iterations ahead, which read it.
  struct RingCounter {
    llvm::Value *slot;
    int64_t stages;
    std::string view, ahead;
    /// A loop with TMA rings: the parity of the view slot's mbarrier phase
    /// (i32 0/1, flips when the slot wraps); else null.
    llvm::Value *phase = nullptr;
  };
  /// The TMA rings being lowered (kTmaRing on a machine with TMA): ring
  /// value -> the byte offset of its S mbarriers (after its slots) and S.
  std::map<int, std::pair<int64_t, int64_t>> tile_tma_rings;
  /// cp.async copies lowered since the last `async.wait 0`: none (a loop of
  /// TMA rings only) and its commits and waits emit nothing.
  int tile_cp_async_copies = 0;
  /// mbarrier `s` of TMA ring `ring` (a generic pointer; slot: i64).
  llvm::Value *tma_barrier(int ring, llvm::Value *slot);
  /// The TMA path of tile_async (lower_tile_mma.cpp).
  void tma_ring_init(int ring);
  void tma_copy(const TOp &op, llvm::Value *slot);
  void tma_wait(const TOp &view);
  void tma_drain();
  std::map<std::string, RingCounter> tile_ring_counters;
  /// Per async.copy of a pipelined loop's body whose slice is affine in the
  /// loop variable: this thread's first-chunk source pointer, a phi
  /// computed once before the loop and bumped by a loop-invariant byte
  /// step per iteration (tile_for), which tile_mma_copy's interior path
  /// starts from instead of the index arithmetic of each step.
  std::map<const TOp *, RingBump> tile_copy_ptrs;
  std::map<int, std::pair<llvm::Value *, bool>> tile_views;
  std::set<const TOp *> tile_direct;
  /// Per value of the body being lowered: the ops that use it (tile_begin).
  std::map<int, std::vector<const TOp *>> tile_users;
  /// Adds a tensor-core dot accumulated into (lower_tile_mma.cpp): done.
  std::set<const TOp *> tile_fused;
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
    BodyLowerer &L;
    std::map<const Layout *, std::vector<llvm::Value *>> saved;
    explicit CoordScope(BodyLowerer &l) : L(l), saved(l.tcoord_cache) {}
    ~CoordScope() { L.tcoord_cache = std::move(saved); }
    CoordScope(const CoordScope &) = delete;
    CoordScope &operator=(const CoordScope &) = delete;
  };

  /// The kernel's written tensors (written_tensors): a loop pipelines only
  /// loads of the others (loop_prefetch).
  std::set<int> written;
  /// Ops lowered before the waits (the weight prefetch) or by a loop's
  /// pipelining ahead of their place: the body skips them.
  std::set<const TOp *> hoisted_ops;
  /// Registers of values the body starts with (lower_tile_body sets them
  /// after tile_begin): the prefetched loads KernelLowerer::prefetch_reload
  /// read back after a wait that may run dynamic items.
  std::vector<std::pair<int, std::vector<llvm::Value *>>> tile_preloaded;
  size_t pipelined_loads = 0; ///< loads the body's loops issue one iteration ahead
  int64_t max_scratch_elems = 0;
  /// Bytes of scratch below the staging op being lowered (its planned
  /// buffer's offset, tile/smem.cpp): scratch_ptr and note_scratch count
  /// from here.
  int64_t scratch_floor = 0;
};

} // namespace etl
