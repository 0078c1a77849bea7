//===- lower/lower_mma.cpp - `dot` of f16/bf16 tiles on tensor cores ------===//
//
// What this owns: the tensor-core path of `dot` (Lowerer::dot_mma) and the
// test that picks it (Lowerer::mma_eligible). A dot of two f16 (or two bf16)
// tiles [M, K] x [K, N] with M % 16 == 0, N % 8 == 0, K % 16 == 0 runs as
// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.f32 with f32
// accumulation (Machine::mma_m16n8k16; sim: the warp rendezvous of
// runtime/src/sim_warp.c, products exact, summed in k order, so its results
// equal the FMA path's bit for bit):
//
//   1. staging: every thread writes its elements of both operands as 16-bit
//      values into the scratch area, row-major with a 16-byte-chunk XOR
//      swizzle (swizzled_offset below: the chunk of row r is chunk ^
//      ((r / perPhase) % maxPhase), Triton's #shared / CUTLASS's swizzle),
//      then a barrier;
//      A dot whose operands are loads of slices, `dot(load(a[..]),
//      load(b[..]))` of 16-bit tensors without mask, pad or gather
//      (dot_async, Lowerer::chunk_load), skips the registers: each thread
//      copies 16-byte chunks (8 elements of a row) straight from global to
//      their swizzled place with cp.async (Machine::async_copy), then
//      commit_group, wait_group 0 and the barrier; a chunk that crosses the
//      tensor's edge or whose address is not 16-byte aligned is read
//      element by element (0 outside) into registers and stored as one
//      16-byte chunk at the same place (no extra bank conflicts).
//      A `for` loop whose body is `acc += dot(load(..), load(..))`
//      (lower_pipelined_for) is a ring of S operand stages (S = 3 when it
//      fits the artifact's shared-memory budget, KernelPlan::smem_budget,
//      else 2): a prologue issues iterations lo .. lo + S - 2 (one
//      commit_group each, empty past hi);
//      iteration k waits with wait_group S - 2 (its own group is in), meets
//      the CTA at one barrier (every thread's copies visible; every warp
//      done with iteration k - 1's ldmatrix, so its slot may be refilled),
//      issues iteration k + S - 1 into slot (k - lo + S - 1) % S, commits,
//      and runs ldmatrix + mma on slot (k - lo) % S; the loop, and the
//      statements after it in its block (Lowerer::tid_after_mma_loop, taken
//      by lower_stmts), see the thread index plus an opaque 0 so that LLVM
//      keeps their thread-dependent offsets in the task instead of hoisting
//      them out of the megakernel's task loop (examples/gemm's 128 x 128
//      tile spilled without it). The same ring takes
//      `acc += dot(load(..), load(..), precision = tf32)` of f32 slices
//      (MmaTile::tf32): stages in lower_mma_tf32.cpp's layout, 4 floats per
//      chunk, rounded at its fragment loads, m16n8k8 per k8;
//   2. warp tiles: the output is cut into m16 x n16 units (n8 when N % 16 !=
//      0); warp w owns units w, w + W, ... Per k16 a unit loads its A
//      fragment with ldmatrix.x4 and its B fragments with ldmatrix.x4.trans
//      (x2.trans for n8: B is row-major [K, N]; plain .x4 / .x2 when B is
//      staged as [N, K] rows, MmaTile::b_nk: the b of dot(a, transpose(b)),
//      lower_mma_operands.cpp; mma_load_b) and issues one mma per n8;
//      the accumulators stay in registers over K. A single dot runs the
//      warp's units one after the other (a warp-uniform loop); the pipelined
//      loop keeps ceil(units / W) fragment sets per warp (unrolled, the last
//      guarded when units % W != 0) zeroed once before the loop and in
//      registers across all its iterations, as one warp tile whose A and B
//      fragments load once per k16 where the sets form one
//      (lower_mma_warptile.cpp; kMaxAccRegs bounds them; a
//      bigger tile runs a whole dot per iteration as below, and says so
//      in a MmaLoopAccumulators remark; so does a two-stage ring, a long K
//      slice whose unrolled chain beside the live sets made ptxas spill);
//   3. back to the register layout of lower/lowerer.h: each warp writes its
//      accumulators (PTX's C fragment: row g + 8(i >> 1), col 2t + (i & 1))
//      to an f32 [M, N] area (rows padded: result_stride) as 8-byte pairs,
//      a barrier, and every thread reads its own elements; a barrier ends
//      it (the scratch is free). A single dot does this once; the pipelined
//      loop once after its last iteration (wait_group 0 and a barrier, the
//      area overlapping the drained ring), then `acc += result`, so acc's
//      initial value is kept (and untouched when the loop runs no iteration).
//
// Shared memory: 2 (MK + KN) bytes of operands, then 4 M mma_result_stride(N)
// bytes of result; a pipelined loop needs max(S 2 (MK + KN), 4 M
// mma_result_stride(N)) (S 2 (MK + KN) + the result when the accumulators do
// not persist).
// A dot that does not fit the budget (KernelPlan::smem_budget), or whose
// shape or types do not qualify, keeps the FMA path of lower_compute.cpp
// and says why in a remark (DiagId::DotFmaPath).
//
//===----------------------------------------------------------------------===//
#include "lower/lowerer.h"

#include <llvm/IR/Constants.h>

#include <algorithm>

namespace etl {

namespace {

/// The staging layout of a row-major [rows, cols] tile of 16-bit values
/// (cols % 8 == 0): rows of cols * 2 bytes cut into 16-byte chunks; the
/// chunk index is XORed with a per-row phase so that the 8 row addresses of
/// one ldmatrix phase hit 8 different 16-byte bank groups.
struct Swizzle {
  int64_t cols, row_bytes, per_phase, max_phase;
  explicit Swizzle(int64_t c) : cols(c), row_bytes(c * 2) {
    int64_t chunks = row_bytes / 16;
    max_phase = 1; // the largest power of two dividing chunks, at most 8: the XOR stays in the row
    while (max_phase < 8 && chunks % (max_phase * 2) == 0)
      max_phase *= 2;
    per_phase = row_bytes >= 128 ? 1 : 128 / row_bytes;
  }
};

/// The most f32 accumulators per thread a pipelined K loop keeps in
/// registers across its iterations (lower_pipelined_for); CUTLASS's largest
/// warp tiles (64 x 64 per warp) hold 128, but the megakernel's other tasks
/// share the register budget of its one entry.
constexpr int64_t kMaxAccRegs = kMmaLoopAccRegs;

} // namespace

int64_t mma_result_stride(int64_t n) { return n + ((8 - n % 32) + 32) % 32; }

/// Byte offset (i64) of element (row, col) in the swizzled layout `s`.
static llvm::Value *swizzled_offset(Builder &b, const Swizzle &s, llvm::Value *row,
                                    llvm::Value *col) {
  llvm::Value *phase =
      b.CreateURem(b.CreateUDiv(row, b.getInt64(s.per_phase)), b.getInt64(s.max_phase));
  llvm::Value *chunk = b.CreateXor(b.CreateUDiv(col, b.getInt64(8)), phase);
  llvm::Value *off = b.CreateMul(row, b.getInt64(s.row_bytes));
  off = b.CreateAdd(off, b.CreateMul(chunk, b.getInt64(16)));
  return b.CreateAdd(off, b.CreateMul(b.CreateURem(col, b.getInt64(8)), b.getInt64(2)));
}

llvm::Value *Lowerer::mma_a_ptr(int64_t cols, llvm::Value *base, llvm::Value *row,
                                llvm::Value *col) {
  return scratch_ptr(b.CreateAdd(swizzled_offset(b, Swizzle(cols), row, col), base), 1);
}

std::string Lowerer::mma_fits(const TileVal &a, const TileVal &c, int64_t k_step, const char *mma,
                              int64_t elem_bytes, int64_t (*a_cols)(int64_t),
                              int64_t (*b_cols)(int64_t)) const {
  if (a.shape.size() != 2)
    return "a one-row (GEMV) dot keeps the memory-bound path";
  int64_t M = a.shape[0], K = c.shape[0], N = c.shape[1];
  if (M % 16 || N % 8 || K % k_step)
    return "its shape [" + std::to_string(M) + ", " + std::to_string(K) + "] x [" +
           std::to_string(K) + ", " + std::to_string(N) + "] is not a multiple of the " + mma +
           " shape (M % 16, K % " + std::to_string(k_step) + ", N % 8)";
  if (T % 32)
    return "the CTA's " + std::to_string(T) + " threads are not whole warps";
  int64_t bytes = elem_bytes * (M * a_cols(K) + K * b_cols(N)) + 4 * M * mma_result_stride(N);
  int64_t budget = int64_t(plan.smem_budget) - int64_t(kSmemScratch);
  if (bytes > budget)
    return "its staged operands and result need " + std::to_string(bytes) +
           " bytes of shared memory, more than the " + std::to_string(budget) + " available";
  return "ok";
}

std::string Lowerer::mma_eligible(const TileVal &a, const TileVal &c) const {
  if (a.elem != c.elem || (a.elem != ElemType::F16 && a.elem != ElemType::BF16))
    return "";
  auto row = [](int64_t n) { return n; }; // unpadded rows (the XOR swizzle keeps them)
  return mma_fits(a, c, 16, "mma", 2, row, row);
}

std::optional<TileVal> Lowerer::dot_async(const Expr &call) {
  if (call.args.size() != 2 || !call.kwargs.empty())
    return std::nullopt;
  for (const ExprPtr &x : call.args) // cheap checks before chunk_load emits any IR
    if (x->kind != ExprKind::Call || x->builtin != Builtin::Load || !x->kwargs.empty())
      return std::nullopt;
  std::optional<ChunkLoad> la = chunk_load(*call.args[0]);
  if (!la)
    return std::nullopt;
  std::optional<ChunkLoad> lb = chunk_load(*call.args[1]);
  if (!lb)
    return std::nullopt;
  TileVal a, c;
  a.elem = la->elem, a.shape = la->shape;
  c.elem = lb->elem, c.shape = lb->shape;
  if (a.shape[1] != c.shape[0] || mma_eligible(a, c) != "ok")
    return std::nullopt;
  const int64_t M = a.shape[0], K = c.shape[0];
  const ChunkLoad &ra = *la, &rb = *lb;
  return dot_mma(a, c, call.range.begin.line, [&, M, K] {
    if (ra.barrier_before || rb.barrier_before) // sema/hazards.h, as lower_load
      m.barrier(b);
    stage_chunks(ra, K, b.getInt64(0));
    stage_chunks(rb, c.shape[1], b.getInt64(2 * M * K));
    m.async_commit(b);
    m.async_wait(b, 0);
  });
}

void Lowerer::stage_chunks(const ChunkLoad &l, int64_t cols, llvm::Value *base,
                           const ChunkPlace &place) {
  // One 16-byte chunk (8 16-bit or 4 32-bit elements of a row) per copy:
  // cp.async where the chunk lies inside the tensor and its address is
  // 16-byte aligned, else element by element (0 outside), as lower_load
  // reads them.
  const Swizzle s(cols);
  const unsigned bytes = byte_size(l.elem), per = 16 / bytes;
  llvm::Type *ety = b.getIntNTy(8 * bytes);
  const int64_t cpr = cols / per, chunks = l.shape[0] * cpr;
  auto chunk = [&](llvm::Value *row, llvm::Value *col) {
    llvm::Value *e = b.CreateAdd(b.CreateMul(row, b.getInt64(cols)), col);
    llvm::Value *off = b.CreateAdd(place ? place(row, col) : swizzled_offset(b, s, row, col), base);
    auto [src, inside] = l.at(e, per);
    llvm::Value *p = src; // a structured binding cannot be captured in C++17 (clang)
    llvm::Value *aligned =
        b.CreateICmpEQ(b.CreateAnd(b.CreatePtrToInt(p, i64), b.getInt64(15)), b.getInt64(0));
    llvm::Value *fast = b.CreateAnd(inside, aligned);
    if_then(fast, [&] { m.async_copy(b, scratch_ptr(off, 1), p, 16); });
    if_then(b.CreateNot(fast), [&] {
      // The chunk's elements (0 outside) gathered in registers, then one
      // 16-byte store: the same place and width as the cp.async it stands
      // for, so a ragged edge costs no extra shared wavefronts.
      llvm::Type *vty = llvm::FixedVectorType::get(ety, per);
      llvm::AllocaInst *tmp = entry_alloca(vty, "mma.edge");
      b.CreateStore(llvm::Constant::getNullValue(vty), tmp);
      for (unsigned j = 0; j < per; ++j) {
        auto [pj, in] = l.at(b.CreateAdd(e, b.getInt64(j)), 1);
        llvm::Value *pp = pj;
        if_then(in, [&] {
          llvm::Value *x = m.global_load(b, ety, pp);
          b.CreateStore(b.CreateInsertElement(b.CreateLoad(vty, tmp), x, b.getInt32(j)), tmp);
        });
      }
      scratch_store(b.CreateLoad(vty, tmp), off, 1);
    });
  };
  if (chunks % T == 0 && T % cpr == 0 && chunks / T <= 2) {
    // Every thread copies chunks / T chunks, all in the column its thread id
    // gives and T / cpr rows apart: unrolled, the row and column computed
    // once (a loop over q = tid, tid + T, ... divides q in each turn). Only
    // up to two: prefill_attention's o_proj copies 8 + 4, and unrolled its
    // task function outgrew LLVM's inliner (a `.func` call, spilling).
    llvm::Value *t = b.CreateZExt(tid, i64);
    llvm::Value *row0 = b.CreateUDiv(t, b.getInt64(cpr));
    llvm::Value *col = b.CreateMul(b.CreateURem(t, b.getInt64(cpr)), b.getInt64(per));
    for (int64_t i = 0; i < chunks / T; ++i)
      chunk(b.CreateAdd(row0, b.getInt64(i * (T / cpr))), col);
    return;
  }
  for_range(b.CreateZExt(tid, i64), b.getInt64(chunks), b.getInt64(T), [&](llvm::Value *q) {
    chunk(b.CreateUDiv(q, b.getInt64(cpr)),
          b.CreateMul(b.CreateURem(q, b.getInt64(cpr)), b.getInt64(per)));
  });
}

Lowerer::MmaTile Lowerer::mma_tile(const TileVal &a, const TileVal &c) const {
  MmaTile t;
  t.bf16 = a.elem == ElemType::BF16;
  t.tf32 = a.elem == ElemType::F32;
  t.M = a.shape[0], t.K = c.shape[0], t.N = c.shape[1];
  t.nb = t.N % 16 == 0 ? 16 : 8;
  t.n_units = t.N / t.nb;
  t.units = (t.M / 16) * t.n_units;
  t.n8 = unsigned(t.nb / 8);
  return t;
}

void Lowerer::mma_stage_regs(const TileVal &v, int64_t cols, llvm::Value *base, bool bf16) {
  const Swizzle s(cols);
  llvm::Type *i16 = b.getInt16Ty();
  for (unsigned k = 0; k < v.regs.size(); ++k) {
    auto write = [&, k] {
      llvm::Value *e = elem_index(k);
      llvm::Value *row = b.CreateUDiv(e, b.getInt64(s.cols));
      llvm::Value *col = b.CreateURem(e, b.getInt64(s.cols));
      llvm::Value *bits;
      if (bf16) // the register holds a bf16 value exactly: its top 16 bits
        bits = b.CreateTrunc(b.CreateLShr(b.CreateBitCast(v.regs[k], i32), 16), i16);
      else
        bits = b.CreateBitCast(b.CreateFPTrunc(v.regs[k], b.getHalfTy()), i16);
      scratch_store(bits, b.CreateAdd(swizzled_offset(b, s, row, col), base), 1);
    };
    if (llvm::Value *alive = elem_alive(k, v.numel()))
      if_then(alive, write);
    else
      write();
  }
}

void Lowerer::mma_for_units(const MmaTile &t, int64_t sets,
                            const std::function<void(unsigned, llvm::Value *)> &f) {
  const int64_t W = T / 32;
  llvm::Value *warp = b.CreateUDiv(b.CreateZExt(tid, i64), b.getInt64(32));
  if (sets == 0) {
    for_range(warp, b.getInt64(t.units), b.getInt64(W), [&](llvm::Value *u) { f(0, u); });
    return;
  }
  // Unit i = warp + i W exists for every warp while (i + 1) W <= units; the
  // guards nest (a warp without unit i has none after it), so every block
  // of a later unit lies inside the earlier ones' (the guards are uniform).
  std::function<void(unsigned)> unit = [&](unsigned i) {
    if (int64_t(i) == sets)
      return;
    llvm::Value *u = b.CreateAdd(warp, b.getInt64(int64_t(i) * W));
    auto body = [&, i, u] {
      f(i, u);
      unit(i + 1);
    };
    if ((int64_t(i) + 1) * W <= t.units)
      body();
    else
      if_then(b.CreateICmpULT(u, b.getInt64(t.units)), body);
  };
  unit(0);
}

std::vector<llvm::AllocaInst *> Lowerer::mma_zero_frags(const MmaTile &t) {
  std::vector<llvm::AllocaInst *> acc;
  for (unsigned i = 0; i < 4 * t.n8; ++i) {
    acc.push_back(entry_alloca(f32, "mma.acc"));
    b.CreateStore(llvm::ConstantFP::get(f32, 0.0), acc.back());
  }
  return acc;
}

void Lowerer::mma_accumulate(const MmaTile &t, const std::vector<llvm::AllocaInst *> &acc,
                             llvm::Value *u, llvm::Value *a_base, llvm::Value *b_base,
                             unsigned line) {
  const Swizzle sa(t.K);
  llvm::Value *lane = b.CreateURem(b.CreateZExt(tid, i64), b.getInt64(32));
  llvm::Value *lrow = b.CreateAnd(lane, 15),
              *lhalf = b.CreateMul(b.CreateLShr(lane, 4), b.getInt64(8));
  llvm::Value *r0 = b.CreateMul(b.CreateUDiv(u, b.getInt64(t.n_units)), b.getInt64(16));
  llvm::Value *n0 = b.CreateMul(b.CreateURem(u, b.getInt64(t.n_units)), b.getInt64(t.nb));
  auto at = [&](llvm::Value *base, const Swizzle &s, llvm::Value *row, llvm::Value *col) {
    return scratch_ptr(b.CreateAdd(swizzled_offset(b, s, row, col), base), 1);
  };
  for_range(b.getInt64(0), b.getInt64(t.K), b.getInt64(16), [&](llvm::Value *k0) {
    // A [r0 .. r0+16) x [k0 .. k0+16): lane l gives row r0 + (l & 15), col k0 + (l >> 4) * 8.
    std::vector<llvm::Value *> fa = m.ldmatrix(
        b, at(a_base, sa, b.CreateAdd(r0, lrow), b.CreateAdd(k0, lhalf)), 4, false, line);
    std::vector<llvm::Value *> fb = mma_load_b(t, b_base, k0, n0, lane, line);
    for (unsigned j = 0; j < t.n8; ++j) {
      std::vector<llvm::Value *> cc;
      for (unsigned i = 0; i < 4; ++i)
        cc.push_back(b.CreateLoad(f32, acc[4 * j + i]));
      std::vector<llvm::Value *> d =
          m.mma_m16n8k16(b, t.bf16, fa, {fb[2 * j], fb[2 * j + 1]}, cc, line);
      for (unsigned i = 0; i < 4; ++i)
        b.CreateStore(d[i], acc[4 * j + i]);
    }
  });
}

std::vector<llvm::Value *> Lowerer::mma_load_b(const MmaTile &t, llvm::Value *b_base,
                                               llvm::Value *k0, llvm::Value *n0, llvm::Value *lane,
                                               unsigned line) {
  const Swizzle s(t.b_nk ? t.K : t.N);
  llvm::Value *row, *col;
  if (t.b_nk) {
    // B as [N, K] rows, PTX's col-major B: plain 8x8 loads. Lane l gives a
    // row of matrix i = (l >> 3) & 3: n0 + 8 (i >> 1) + (l & 7) (the n8
    // block; one for nb = 8, where lanes 16 .. 31 repeat 0 .. 15), k0 +
    // 8 (i & 1) (the k half): registers (2j, 2j + 1) are n8 block j's b0b1,
    // b2b3.
    llvm::Value *i = b.CreateAnd(b.CreateLShr(lane, 3), 3);
    row = b.CreateAdd(n0, b.CreateAnd(lane, 7));
    if (t.nb == 16)
      row = b.CreateAdd(row, b.CreateMul(b.CreateLShr(i, 1), b.getInt64(8)));
    col = b.CreateAdd(k0, b.CreateMul(b.CreateAnd(i, 1), b.getInt64(8)));
  } else {
    // B [k0 .. k0+16) x [n0 .. n0+nb), row-major: transposed 8x8 loads;
    // lane l gives row k0 + (l & 15), col n0 (+ 8 (l >> 4) for nb = 16).
    row = b.CreateAdd(k0, b.CreateAnd(lane, 15));
    col = t.nb == 16 ? b.CreateAdd(n0, b.CreateMul(b.CreateLShr(lane, 4), b.getInt64(8))) : n0;
  }
  llvm::Value *p = scratch_ptr(b.CreateAdd(swizzled_offset(b, s, row, col), b_base), 1);
  return m.ldmatrix(b, p, 2 * t.n8, !t.b_nk, line);
}

void Lowerer::mma_store_frags(const MmaTile &t, const std::vector<llvm::AllocaInst *> &acc,
                              llvm::Value *u, int64_t c_base) {
  // Registers (0, 1) and (2, 3) of a C fragment are adjacent columns (row
  // g + 8 (i >> 1), col 2t + (i & 1)): one 8-byte store each.
  const int64_t cs = mma_result_stride(t.N);
  llvm::Value *lane = b.CreateURem(b.CreateZExt(tid, i64), b.getInt64(32));
  llvm::Value *g = b.CreateLShr(lane, 2), *q = b.CreateAnd(lane, 3);
  llvm::Value *r0 = b.CreateMul(b.CreateUDiv(u, b.getInt64(t.n_units)), b.getInt64(16));
  llvm::Value *n0 = b.CreateMul(b.CreateURem(u, b.getInt64(t.n_units)), b.getInt64(t.nb));
  auto *v2 = llvm::FixedVectorType::get(f32, 2);
  for (unsigned j = 0; j < t.n8; ++j)
    for (unsigned i = 0; i < 4; i += 2) {
      llvm::Value *row = b.CreateAdd(r0, b.CreateAdd(g, b.getInt64(8 * (i >> 1))));
      llvm::Value *col =
          b.CreateAdd(n0, b.CreateAdd(b.CreateMul(q, b.getInt64(2)), b.getInt64(8 * j)));
      llvm::Value *e = b.CreateAdd(b.CreateMul(row, b.getInt64(cs)), col);
      llvm::Value *pair = llvm::PoisonValue::get(v2);
      pair = b.CreateInsertElement(pair, b.CreateLoad(f32, acc[4 * j + i]), uint64_t(0));
      pair = b.CreateInsertElement(pair, b.CreateLoad(f32, acc[4 * j + i + 1]), uint64_t(1));
      scratch_store(pair, b.CreateAdd(b.CreateMul(e, b.getInt64(4)), b.getInt64(c_base)), 1);
    }
}

TileVal Lowerer::mma_read_result(const MmaTile &t, int64_t c_base) {
  const int64_t cs = mma_result_stride(t.N);
  m.barrier(b);
  TileVal r;
  r.elem = ElemType::F32;
  r.shape = {t.M, t.N};
  for (unsigned k = 0; k < regs_for(r.numel()); ++k) {
    llvm::AllocaInst *tmp = entry_alloca(f32, "mma.out");
    b.CreateStore(llvm::ConstantFP::get(f32, 0.0), tmp);
    auto read = [&, k] {
      llvm::Value *e = elem_index(k);
      e = b.CreateAdd(b.CreateMul(b.CreateUDiv(e, b.getInt64(t.N)), b.getInt64(cs)),
                      b.CreateURem(e, b.getInt64(t.N)));
      llvm::Value *off = b.CreateAdd(b.CreateMul(e, b.getInt64(4)), b.getInt64(c_base));
      b.CreateStore(scratch_load(f32, off, 1), tmp);
    };
    if (llvm::Value *alive = elem_alive(k, r.numel()))
      if_then(alive, read);
    else
      read();
    r.regs.push_back(b.CreateLoad(f32, tmp));
  }
  m.barrier(b);
  return r;
}

TileVal Lowerer::dot_mma(const TileVal &a, const TileVal &c, unsigned line,
                         const std::function<void()> &stage_async, llvm::Value *op_base,
                         int64_t stages) {
  const MmaTile t = mma_tile(a, c);
  const int64_t c_base = stages * 2 * (t.M * t.K + t.K * t.N);
  llvm::Value *a_base = op_base ? op_base : b.getInt64(0);
  llvm::Value *b_base = b.CreateAdd(a_base, b.getInt64(2 * t.M * t.K));
  note_scratch((c_base + 4 * t.M * mma_result_stride(t.N)) / 4);
  // 1. Both operands swizzled in shared memory, then a barrier.
  if (stage_async)
    stage_async();
  else {
    mma_stage_regs(a, t.K, a_base, t.bf16);
    mma_stage_regs(c, t.N, b_base, t.bf16);
  }
  m.barrier(b);
  // 2. and 3a. One unit at a time: zeroed accumulators, the K loop, the
  // fragments to the result area.
  mma_for_units(t, 0, [&](unsigned, llvm::Value *u) {
    std::vector<llvm::AllocaInst *> acc = mma_zero_frags(t);
    mma_accumulate(t, acc, u, a_base, b_base, line);
    mma_store_frags(t, acc, u, c_base);
  });
  // 3b. Back to the register layout.
  return mma_read_result(t, c_base);
}

void Lowerer::ring_prologue(llvm::Value *lo, llvm::Value *hi, int64_t S,
                            const std::function<void(llvm::Value *, llvm::Value *)> &issue,
                            const std::function<llvm::Value *(int64_t)> &slot) {
  for (int64_t p = 0; p + 1 < S; ++p) {
    llvm::Value *iv = b.CreateAdd(lo, b.getInt64(p));
    if_then(b.CreateICmpSLT(iv, hi), [&] { issue(iv, slot(p)); });
    m.async_commit(b);
  }
}

llvm::Value *Lowerer::ring_advance(llvm::Value *iv, llvm::Value *lo, llvm::Value *hi, int64_t S,
                                   llvm::AllocaInst *var,
                                   const std::function<void(llvm::Value *, llvm::Value *)> &issue) {
  llvm::Value *n = b.CreateSub(iv, lo);
  llvm::Value *buf = b.CreateURem(n, b.getInt64(S));
  llvm::Value *next = b.CreateAdd(iv, b.getInt64(S - 1));
  // Groups committed: S - 1 + n, iteration iv's the (n + 1)-th: once at
  // most S - 2 are pending it is this thread's; the barrier makes every
  // thread's copies (and element stores) visible, and it is also where
  // every warp has finished the mma of iteration iv - 1, so the slot that
  // iteration read, (n + S - 1) % S, may be refilled with iteration
  // iv + S - 1: one barrier per iteration.
  m.async_wait(b, unsigned(S - 2));
  m.barrier(b);
  if_then(b.CreateICmpSLT(next, hi),
          [&] { issue(next, b.CreateURem(b.CreateAdd(n, b.getInt64(S - 1)), b.getInt64(S))); });
  m.async_commit(b);
  b.CreateStore(iv, var);
  return buf;
}

bool Lowerer::lower_pipelined_for(const Stmt &s) {
  if (s.step || s.body.size() != 1)
    return false;
  const Stmt &st = *s.body[0];
  if (st.kind != StmtKind::Assign || !st.compound || st.assign_op != BinOp::Add)
    return false;
  const Expr &d = *st.value;
  // f16/bf16 dots, or f32 ones with `precision = tf32` (lower_mma_tf32.cpp).
  const bool tf32 = dot_wants_tf32(d);
  if (d.kind != ExprKind::Call || d.builtin != Builtin::Dot || d.args.size() != 2 ||
      d.kwargs.size() != (tf32 ? 1 : 0))
    return false;
  for (const ExprPtr &x : d.args)
    if (x->kind != ExprKind::Call || x->builtin != Builtin::Load || !x->kwargs.empty() ||
        x->barrier_before)
      return false;
  llvm::Value *lo = index(*s.lo), *hi = index(*s.hi);
  llvm::AllocaInst *slot = entry_alloca(i64, s.name.c_str());
  loop_vars[s.local_index] = slot;
  loop_by_name[s.name].push_back(slot);
  b.CreateStore(lo, slot);
  // The shapes and the form of both slices (chunk_load's IR here is dead).
  const int eb = tf32 ? 4 : 2;
  std::optional<ChunkLoad> la = chunk_load(*d.args[0], eb), lb = chunk_load(*d.args[1], eb);
  TileVal a, c;
  if (la && lb) {
    a.elem = la->elem, a.shape = la->shape;
    c.elem = lb->elem, c.shape = lb->shape;
  }
  const int64_t M = la ? a.shape[0] : 0, K = la ? a.shape[1] : 0, N = lb ? c.shape[1] : 0;
  const bool ok = la && lb && c.shape[0] == K &&
                  (tf32 ? tf32_eligible(a, c) == "ok" : mma_eligible(a, c) == "ok");
  const MmaTile t = ok ? mma_tile(a, c) : MmaTile{};
  const int64_t stage_bytes = t.tf32 ? tf32_stage_bytes(t) : 2 * (M * K + K * N),
                b_off = t.tf32 ? tf32_b_offset(t) : 2 * M * K,
                result_bytes = 4 * M * mma_result_stride(N);
  const int64_t budget = int64_t(plan.smem_budget) - int64_t(kSmemScratch);
  // Accumulators in registers across the loop: the warp's units as a static
  // number of fragment sets, 4 n8 f32 registers each; past kMaxAccRegs
  // (ptxas would spill) every iteration runs a whole dot as before.
  const int64_t W = std::max<int64_t>(T / 32, 1), sets = (t.units + W - 1) / W;
  bool persist = sets * 4 * int64_t(t.n8) <= kMaxAccRegs;
  // Shared memory: the ring of stages; the result area overlaps it after the
  // loop when the accumulators persist, else it follows the ring.
  auto need = [&](int64_t n, bool keep) {
    return keep ? std::max(n * stage_bytes, result_bytes) : n * stage_bytes + result_bytes;
  };
  // Only a three-stage ring keeps them: a stage too big for three is a long
  // K slice, whose unrolled ldmatrix/mma chain on top of fragment sets live
  // across the loop made ptxas spill (prefill_attention's o_proj, K = 128,
  // on sm_80), so a two-stage ring runs a whole dot per iteration.
  const bool three = need(3, persist) <= budget;
  const bool persist_sets = persist; // the remark's case: too many registers
  persist = persist && three;
  const int64_t S = three ? 3 : need(2, persist) <= budget ? 2 : 0;
  if (!ok || S == 0) {
    loop_by_name[s.name].pop_back();
    loop_vars.erase(s.local_index);
    return false;
  }
  auto type = [](const TileVal &v) {
    return std::string(spelling(v.elem)) + "[" + std::to_string(v.shape[0]) + ", " +
           std::to_string(v.shape[1]) + "]";
  };
  if (!persist_sets)
    remarks.push_back(
        {d.range,
         {type(a), type(c), std::to_string(sets * 4 * t.n8), std::to_string(kMaxAccRegs)},
         DiagId::MmaLoopAccumulators});
  const int64_t c_base = persist ? 0 : S * stage_bytes;
  // Each warp's sets as one warp tile where they form one (lower_mma_warptile.cpp).
  const MmaWarpTile wt = persist ? mma_warp_tile(t, sets) : MmaWarpTile{};
  note_scratch(need(S, persist) / 4);
  // The thread index plus an opaque 0 (Machine::opaque_zero) for the loop's
  // whole lowering, as lower_mma_pipeline.cpp does: the ring's and the
  // fragments' offsets, constant but for it, would otherwise be hoisted out
  // of the megakernel's task loop, live across every task (examples/gemm's
  // 128 x 128 tile spilled on sm_80 and sm_90 without it).
  llvm::Value *const saved_tid = tid;
  tid = b.CreateAdd(tid, b.CreateTrunc(m.opaque_zero(b, b.getInt64Ty()), tid->getType()));
  // Copies of iteration `iv` into ring slot `buf` (i64): the slices are
  // evaluated with the loop variable at `iv`.
  auto issue = [&](llvm::Value *iv, llvm::Value *buf) {
    b.CreateStore(iv, slot);
    std::optional<ChunkLoad> xa = chunk_load(*d.args[0], eb), xb = chunk_load(*d.args[1], eb);
    llvm::Value *base = b.CreateMul(buf, b.getInt64(stage_bytes));
    if (t.tf32) {
      tf32_stage_chunks(t, *xa, *xb, base);
      return;
    }
    stage_chunks(*xa, K, base);
    stage_chunks(*xb, N, b.CreateAdd(base, b.getInt64(b_off)));
  };
  // Prologue: iterations lo .. lo + S - 2 in flight, one group each (empty
  // past hi, so that the group count per iteration is uniform).
  ring_prologue(lo, hi, S, issue, [&](int64_t p) { return b.getInt64(p); });
  std::vector<std::vector<llvm::AllocaInst *>> frags;
  if (persist)
    for (int64_t i = 0; i < sets; ++i)
      frags.push_back(mma_zero_frags(t));
  for_range(lo, hi, b.getInt64(1), [&](llvm::Value *iv) {
    llvm::Value *buf = ring_advance(iv, lo, hi, S, slot, issue);
    llvm::Value *a_base = b.CreateMul(buf, b.getInt64(stage_bytes));
    llvm::Value *b_base = b.CreateAdd(a_base, b.getInt64(b_off));
    if (persist) {
      if (t.tf32)
        tf32_accumulate_sets(t, wt, frags, a_base, b_base, d.range.begin.line);
      else
        mma_accumulate_sets(t, wt, frags, a_base, b_base, d.range.begin.line);
      return;
    }
    mma_for_units(t, 0, [&](unsigned, llvm::Value *u) {
      std::vector<llvm::AllocaInst *> acc = mma_zero_frags(t);
      if (t.tf32)
        tf32_accumulate_unit(t, acc, u, a_base, b_base, true, d.range.begin.line);
      else
        mma_accumulate(t, acc, u, a_base, b_base, d.range.begin.line);
      mma_store_frags(t, acc, u, c_base);
    });
    TileVal cur = read_local(st.local_index);
    assign_local(st.local_index,
                 arith(st.assign_op, cur, mma_read_result(t, c_base), cur.shape, cur.elem));
  });
  m.async_wait(b, 0); // the groups left are empty
  if (persist)
    // Once, after the loop (none when it ran no iteration, so that acc keeps
    // its value exactly): the barrier lets every warp finish its last mma
    // before the result area overwrites the ring, then the fragments go to
    // the register layout and acc += the sum.
    if_then(b.CreateICmpSLT(lo, hi), [&] {
      m.barrier(b);
      mma_sets_for_units(t, wt, sets, [&](unsigned i, llvm::Value *u) {
        mma_store_frags(t, frags[i], u, c_base);
      });
      TileVal cur = read_local(st.local_index);
      assign_local(st.local_index,
                   arith(st.assign_op, cur, mma_read_result(t, c_base), cur.shape, cur.elem));
    });
  if (persist)
    tid_after_mma_loop = tid; // for the result's consumers (lower_stmts)
  tid = saved_tid;
  loop_by_name[s.name].pop_back();
  return true;
}

} // namespace etl
