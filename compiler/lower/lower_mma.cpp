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
//      element by element (0 outside) and stored as in the register path.
//      A `for` loop whose body is `acc += dot(load(..), load(..))`
//      (lower_pipelined_for) double-buffers this: a prologue group copies
//      iteration lo into buffer 0, iteration k copies k + 1 into buffer
//      (k + 1) % 2, commits, waits with wait_group 1 and computes on buffer
//      k % 2 (the result area follows both buffers);
//   2. warp tiles: the output is cut into m16 x n16 units (n8 when N % 16 !=
//      0); warp w runs units w, w + W, ... (warp-uniform loops). Per k16 it
//      loads the A fragment with ldmatrix.x4 and the B fragments with
//      ldmatrix.x4.trans (x2.trans for n8: B is row-major [K, N]) and
//      issues one mma per n8; the accumulators stay in registers over K;
//   3. back to the register layout of lower/lowerer.h: each warp writes its
//      accumulators (PTX's C fragment: row g + 8(i >> 1), col 2t + (i & 1))
//      to an f32 [M, N] area (rows padded: result_stride) after the staged
//      operands as 8-byte pairs, a barrier, and every
//      thread reads its own elements; a barrier ends it (the scratch is free).
//
// Shared memory: 2 (MK + KN) bytes of operands (twice in a pipelined
// loop), then 4 M result_stride(N) bytes of result.
// A dot that does not fit the portable budget, or whose shape or types do
// not qualify, keeps the FMA path of lower_compute.cpp and says why in a
// remark (DiagId::DotFmaPath).
//
//===----------------------------------------------------------------------===//
#include "lower/lowerer.h"

#include <llvm/IR/Constants.h>

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

/// Row stride (f32 elements) of the result area: N padded to 8 mod 32, so
/// the 8-byte pair stores of one C fragment (rows g, columns 2t) fill the
/// 32 banks twice: two wavefronts per 256 bytes, the minimum.
int64_t result_stride(int64_t n) { return n + ((8 - n % 32) + 32) % 32; }

} // namespace

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

std::string Lowerer::mma_eligible(const TileVal &a, const TileVal &c) const {
  if (a.elem != c.elem || (a.elem != ElemType::F16 && a.elem != ElemType::BF16))
    return "";
  if (a.shape.size() != 2)
    return "a one-row (GEMV) dot keeps the memory-bound path";
  int64_t M = a.shape[0], K = c.shape[0], N = c.shape[1];
  if (M % 16 || N % 8 || K % 16)
    return "its shape [" + std::to_string(M) + ", " + std::to_string(K) + "] x [" +
           std::to_string(K) + ", " + std::to_string(N) +
           "] is not a multiple of the mma shape (M % 16, K % 16, N % 8)";
  if (T % 32)
    return "the CTA's " + std::to_string(T) + " threads are not whole warps";
  int64_t bytes = 2 * (M * K + K * N) + 4 * M * result_stride(N);
  int64_t budget = int64_t(portable_smem_limit()) - int64_t(kSmemScratch);
  if (bytes > budget)
    return "its staged operands and result need " + std::to_string(bytes) +
           " bytes of shared memory, more than the " + std::to_string(budget) + " available";
  return "ok";
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

void Lowerer::stage_chunks(const ChunkLoad &l, int64_t cols, llvm::Value *base) {
  // One 16-byte chunk (8 elements of a row) per copy: cp.async where the
  // chunk lies inside the tensor and its address is 16-byte aligned, else
  // element by element (0 outside), as lower_load reads them.
  const Swizzle s(cols);
  const int64_t cpr = cols / 8, chunks = l.shape[0] * cpr;
  for_range(b.CreateZExt(tid, i64), b.getInt64(chunks), b.getInt64(T), [&](llvm::Value *q) {
    llvm::Value *row = b.CreateUDiv(q, b.getInt64(cpr));
    llvm::Value *col = b.CreateMul(b.CreateURem(q, b.getInt64(cpr)), b.getInt64(8));
    llvm::Value *e = b.CreateAdd(b.CreateMul(row, b.getInt64(cols)), col);
    llvm::Value *off = b.CreateAdd(swizzled_offset(b, s, row, col), base);
    auto [src, inside] = l.at(e, 8);
    llvm::Value *p = src; // a structured binding cannot be captured in C++17 (clang)
    llvm::Value *aligned =
        b.CreateICmpEQ(b.CreateAnd(b.CreatePtrToInt(p, i64), b.getInt64(15)), b.getInt64(0));
    llvm::Value *fast = b.CreateAnd(inside, aligned);
    if_then(fast, [&] { m.async_copy(b, scratch_ptr(off, 1), p, 16); });
    if_then(b.CreateNot(fast), [&] {
      for (unsigned j = 0; j < 8; ++j) {
        auto [pj, in] = l.at(b.CreateAdd(e, b.getInt64(j)), 1);
        llvm::Value *pp = pj;
        llvm::AllocaInst *tmp = entry_alloca(b.getInt16Ty(), "mma.edge");
        b.CreateStore(b.getInt16(0), tmp);
        if_then(in, [&] { b.CreateStore(m.global_load(b, b.getInt16Ty(), pp), tmp); });
        scratch_store(b.CreateLoad(b.getInt16Ty(), tmp), b.CreateAdd(off, b.getInt64(2 * j)), 1);
      }
    });
  });
}

bool Lowerer::lower_pipelined_for(const Stmt &s) {
  if (s.step || s.body.size() != 1)
    return false;
  const Stmt &st = *s.body[0];
  if (st.kind != StmtKind::Assign || !st.compound || st.assign_op != BinOp::Add)
    return false;
  const Expr &d = *st.value;
  if (d.kind != ExprKind::Call || d.builtin != Builtin::Dot || d.args.size() != 2 ||
      !d.kwargs.empty())
    return false;
  for (const ExprPtr &x : d.args)
    if (x->kind != ExprKind::Call || x->builtin != Builtin::Load || !x->kwargs.empty() ||
        x->barrier_before)
      return false;
  llvm::Value *lo = index(*s.lo), *hi = index(*s.hi), *step = b.getInt64(1);
  llvm::AllocaInst *slot = entry_alloca(i64, s.name.c_str());
  loop_vars[s.local_index] = slot;
  loop_by_name[s.name].push_back(slot);
  b.CreateStore(lo, slot);
  // The shapes and the form of both slices (chunk_load's IR here is dead).
  std::optional<ChunkLoad> la = chunk_load(*d.args[0]), lb = chunk_load(*d.args[1]);
  TileVal a, c;
  if (la && lb) {
    a.elem = la->elem, a.shape = la->shape;
    c.elem = lb->elem, c.shape = lb->shape;
  }
  const int64_t M = la ? a.shape[0] : 0, K = la ? a.shape[1] : 0, N = lb ? c.shape[1] : 0;
  const int64_t stage_bytes = 2 * (M * K + K * N);
  const int64_t budget = int64_t(portable_smem_limit()) - int64_t(kSmemScratch);
  if (!la || !lb || c.shape[0] != K || mma_eligible(a, c) != "ok" ||
      2 * stage_bytes + 4 * M * result_stride(N) > budget) {
    loop_by_name[s.name].pop_back();
    loop_vars.erase(s.local_index);
    return false;
  }
  // Copies of iteration `iv` into buffer `buf` (i64, 0 or 1): the slices
  // are evaluated with the loop variable at `iv`.
  auto issue = [&](llvm::Value *iv, llvm::Value *buf) {
    b.CreateStore(iv, slot);
    std::optional<ChunkLoad> xa = chunk_load(*d.args[0]), xb = chunk_load(*d.args[1]);
    llvm::Value *base = b.CreateMul(buf, b.getInt64(stage_bytes));
    stage_chunks(*xa, K, base);
    stage_chunks(*xb, N, b.CreateAdd(base, b.getInt64(2 * M * K)));
  };
  // Prologue: iteration lo's copies in flight.
  if_then(b.CreateICmpSLT(lo, hi), [&] { issue(lo, b.getInt64(0)); });
  m.async_commit(b);
  for_range(lo, hi, step, [&](llvm::Value *iv) {
    llvm::Value *buf = b.CreateAnd(b.CreateSub(iv, lo), b.getInt64(1));
    llvm::Value *next = b.CreateAdd(iv, step);
    // Iteration iv + 1's copies go to the other buffer (its last readers
    // passed the barrier that ended the previous dot), then wait for all
    // but that newest group: iteration iv's data is in.
    if_then(b.CreateICmpSLT(next, hi), [&] { issue(next, b.CreateXor(buf, b.getInt64(1))); });
    b.CreateStore(iv, slot);
    m.async_commit(b);
    m.async_wait(b, 1);
    TileVal r = dot_mma(
        a, c, d.range.begin.line, [] {}, b.CreateMul(buf, b.getInt64(stage_bytes)), 2);
    TileVal cur = read_local(st.local_index);
    assign_local(st.local_index, arith(st.assign_op, cur, r, cur.shape, cur.elem));
  });
  m.async_wait(b, 0);
  loop_by_name[s.name].pop_back();
  return true;
}

TileVal Lowerer::dot_mma(const TileVal &a, const TileVal &c, unsigned line,
                         const std::function<void()> &stage_async, llvm::Value *op_base,
                         int64_t stages) {
  const bool bf16 = a.elem == ElemType::BF16;
  const int64_t M = a.shape[0], K = c.shape[0], N = c.shape[1];
  const Swizzle sa(K), sb(N);
  const int64_t c_base = stages * 2 * (M * K + K * N), cs = result_stride(N);
  llvm::Value *a_base = op_base ? op_base : b.getInt64(0);
  llvm::Value *b_base = b.CreateAdd(a_base, b.getInt64(2 * M * K));
  note_scratch((c_base + 4 * M * cs) / 4);
  llvm::Type *i16 = b.getInt16Ty();

  // 1. Stage both operands as 16-bit values, swizzled.
  auto stage = [&](const TileVal &v, const Swizzle &s, llvm::Value *base) {
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
  };
  if (stage_async)
    stage_async();
  else {
    stage(a, sa, a_base);
    stage(c, sb, b_base);
  }
  m.barrier(b);

  // 2. Warp tiles of m16 x nb, each warp a strided share of them.
  const int64_t nb = N % 16 == 0 ? 16 : 8, n_units = N / nb, units = (M / 16) * n_units;
  const unsigned n8 = unsigned(nb / 8);
  llvm::Value *t64 = b.CreateZExt(tid, i64);
  llvm::Value *warp = b.CreateUDiv(t64, b.getInt64(32)), *lane = b.CreateURem(t64, b.getInt64(32));
  llvm::Value *g = b.CreateLShr(lane, 2), *t = b.CreateAnd(lane, 3);
  llvm::Value *lrow = b.CreateAnd(lane, 15),
              *lhalf = b.CreateMul(b.CreateLShr(lane, 4), b.getInt64(8));
  std::vector<llvm::AllocaInst *> acc;
  for (unsigned i = 0; i < 4 * n8; ++i)
    acc.push_back(entry_alloca(f32, "mma.acc"));
  auto at = [&](llvm::Value *base, const Swizzle &s, llvm::Value *row, llvm::Value *col) {
    return scratch_ptr(b.CreateAdd(swizzled_offset(b, s, row, col), base), 1);
  };
  for_range(warp, b.getInt64(units), b.getInt64(T / 32), [&](llvm::Value *u) {
    llvm::Value *r0 = b.CreateMul(b.CreateUDiv(u, b.getInt64(n_units)), b.getInt64(16));
    llvm::Value *n0 = b.CreateMul(b.CreateURem(u, b.getInt64(n_units)), b.getInt64(nb));
    for (llvm::AllocaInst *x : acc)
      b.CreateStore(llvm::ConstantFP::get(f32, 0.0), x);
    for_range(b.getInt64(0), b.getInt64(K), b.getInt64(16), [&](llvm::Value *k0) {
      // A [r0 .. r0+16) x [k0 .. k0+16): lane l gives row r0 + (l & 15), col k0 + (l >> 4) * 8.
      std::vector<llvm::Value *> fa = m.ldmatrix(
          b, at(a_base, sa, b.CreateAdd(r0, lrow), b.CreateAdd(k0, lhalf)), 4, false, line);
      // B [k0 .. k0+16) x [n0 .. n0+nb), row-major: transposed 8x8 loads.
      llvm::Value *bcol = nb == 16 ? b.CreateAdd(n0, lhalf) : n0;
      std::vector<llvm::Value *> fb =
          m.ldmatrix(b, at(b_base, sb, b.CreateAdd(k0, lrow), bcol), 2 * n8, true, line);
      for (unsigned j = 0; j < n8; ++j) {
        std::vector<llvm::Value *> cc;
        for (unsigned i = 0; i < 4; ++i)
          cc.push_back(b.CreateLoad(f32, acc[4 * j + i]));
        std::vector<llvm::Value *> d =
            m.mma_m16n8k16(b, bf16, fa, {fb[2 * j], fb[2 * j + 1]}, cc, line);
        for (unsigned i = 0; i < 4; ++i)
          b.CreateStore(d[i], acc[4 * j + i]);
      }
    });
    // 3a. The C fragment to the f32 result area: registers (0, 1) and (2, 3)
    // are adjacent columns, one 8-byte store each.
    auto *v2 = llvm::FixedVectorType::get(f32, 2);
    for (unsigned j = 0; j < n8; ++j)
      for (unsigned i = 0; i < 4; i += 2) {
        llvm::Value *row = b.CreateAdd(r0, b.CreateAdd(g, b.getInt64(8 * (i >> 1))));
        llvm::Value *col =
            b.CreateAdd(n0, b.CreateAdd(b.CreateMul(t, b.getInt64(2)), b.getInt64(8 * j)));
        llvm::Value *e = b.CreateAdd(b.CreateMul(row, b.getInt64(cs)), col);
        llvm::Value *pair = llvm::PoisonValue::get(v2);
        pair = b.CreateInsertElement(pair, b.CreateLoad(f32, acc[4 * j + i]), uint64_t(0));
        pair = b.CreateInsertElement(pair, b.CreateLoad(f32, acc[4 * j + i + 1]), uint64_t(1));
        scratch_store(pair, b.CreateAdd(b.CreateMul(e, b.getInt64(4)), b.getInt64(c_base)), 1);
      }
  });
  m.barrier(b);

  // 3b. Every thread reads its own elements.
  TileVal r;
  r.elem = ElemType::F32;
  r.shape = {M, N};
  for (unsigned k = 0; k < regs_for(r.numel()); ++k) {
    llvm::AllocaInst *tmp = entry_alloca(f32, "mma.out");
    b.CreateStore(llvm::ConstantFP::get(f32, 0.0), tmp);
    auto read = [&, k] {
      llvm::Value *e = elem_index(k);
      e = b.CreateAdd(b.CreateMul(b.CreateUDiv(e, b.getInt64(N)), b.getInt64(cs)),
                      b.CreateURem(e, b.getInt64(N)));
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

} // namespace etl
