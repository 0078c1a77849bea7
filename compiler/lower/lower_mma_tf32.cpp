//===- lower/lower_mma_tf32.cpp - f32 `dot` on tensor cores as tf32 -------===//
//
// What this owns: `dot(a, b, precision = tf32)` of two f32 tiles
// (Lowerer::dot_tf32 and dot_tf32_async, picked in lower_tile.cpp; sema
// checks the keyword), and the tf32 pieces of lower_mma.cpp's pipelined K
// loop. A dot [M, K] x [K, N] with M % 16 == 0, N % 8 == 0, K % 8 == 0 runs
// as mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 with f32
// accumulation (Machine::mma_m16n8k8_tf32; sim: the warp rendezvous of
// runtime/src/sim_warp.c, ETL_MMA_TF32: the top 19 bits of each operand, as
// the hardware reads them, products exact, summed in f32 in k order, so a
// sim result equals an f32 k-order sum of tf32-rounded products bit for bit
// when the operands were rounded, and differs when one was not):
//
//   1. staging: from registers (dot_tf32), every thread rounds its
//      elements of both operands with cvt.rna.tf32.f32 (Machine::to_tf32:
//      10 mantissa bits, nearest, ties away from zero) and writes the 32-bit
//      patterns row-major into the scratch area; from global (dot_tf32_async,
//      both operands plain loads: Lowerer::chunk_load of f32), cp.async
//      copies 16-byte chunks (4 floats) raw into the same layout
//      (stage_chunks with this file's placement; element by element with 0
//      outside at ragged edges or where a chunk is not 16-byte aligned),
//      commit, wait_group 0; then a barrier. A's fragments are read by
//      ldmatrix.x4, whose 8 x 8 b16 matrices are 8 x 4 f32 ones: matrix i
//      (rows 8 (i & 1) .., cols 4 (i >> 1) .. of the m16 x k8 block; lane l
//      gives row l & 15, col 4 (l >> 4)) gives lane l the word l % 4 of its
//      row l / 4 in register i, PTX's A fragment; B's [K, N] rows cannot
//      use .trans (it swaps 16-bit halves), so B's are plain 32-bit shared
//      loads. Raw f32 is rounded after either load by cvt.rna (the same
//      bits as the register path). The layout keeps each ldmatrix phase's
//      8 rows (16 bytes each) in distinct 16-byte bank groups and each
//      warp-wide B load on 32 banks: (row t, col g). Rows of a multiple of
//      32 floats are XOR-swizzled in 16-byte chunks (A: chunk ^ row % 8; B:
//      chunk ^ 2 (row % 4)), which also keeps the staging stores (32
//      consecutive elements of a row per warp) conflict-free; other rows
//      are padded instead, A's to K + 4 floats (a stride = 4 mod 8: g *
//      stride covers the 8 multiples of 4 mod 32), B's to N or N + 8 (= 8
//      mod 16: t * stride covers 0, 8, 16, 24), where a warp's staging store
//      that crosses a row may take two wavefronts (a one-off cost next to
//      the repeated fragment loads). Either way a 16-byte chunk of 4 floats
//      from a column % 4 == 0 stays contiguous and aligned: cp.async's unit;
//   2. warp tiles as dot_mma's: m16 x n16 units (n8 when N % 16 != 0), warp
//      w runs units w, w + W, ...; per k8 one A ldmatrix.x4 (PTX's A
//      fragment: row g + 8(i & 1), col t + 4(i >> 1)) and per n8 two B loads (k = t +
//      4j, n = g), one mma per n8, the accumulators in registers over K
//      (tf32_accumulate: a warp block of wm x wn units loads its wm A and wn
//      B fragment sets once per k8, the warp tile of
//      lower_mma_warptile.cpp; 1 x 1 for one unit);
//   3. the write-back of lower_mma.cpp (Lowerer::mma_store_frags and
//      mma_read_result), the same C fragment layout: 8-byte pair stores to
//      an f32 [M, N] area with rows of mma_result_stride(N) floats, a
//      barrier, every thread reads its elements.
//
// A `for` loop whose body is `acc += dot(load(..), load(..), precision =
// tf32)` is lower_mma.cpp's lower_pipelined_for: its cp.async ring with
// stages of this layout (tf32_stage_bytes, tf32_stage_chunks), raw operands
// rounded at the fragment loads (tf32_accumulate_sets / _unit), the
// accumulators in registers across the loop, one write-back after it; so
// does lower_mma_pipeline.cpp's general loop when all its dots are tf32
// (tf32_area_bytes / tf32_place / tf32_stage_regs: an operand's area in the
// A or B layout by its role, register operands rounded as they are staged).
//
// Shared memory: 4 (M Ka + K Nb) bytes of operands (the strides above),
// then 4 M mma_result_stride(N) bytes of result. A tf32 dot that is one
// row, of another shape, or too large keeps the exact f32 FMA path of
// lower_compute.cpp and says why in a remark (DiagId::DotFmaPath).
//
//===----------------------------------------------------------------------===//
#include "lower/lowerer.h"

#include <llvm/IR/Constants.h>

namespace etl {

namespace {

/// Row strides (f32 elements) of the staged A [M, K] and B [K, N], and the
/// rows of their XOR phase (0: padded rows instead; banner).
int64_t a_stride(int64_t k) { return k % 32 == 0 || k % 8 == 4 ? k : k + 4; }
int64_t b_stride(int64_t n) { return n % 32 == 0 || (n / 8) % 2 == 1 ? n : n + 8; }
unsigned a_xor(int64_t k) { return k % 32 == 0 ? 8 : 0; }
unsigned b_xor(int64_t n) { return n % 32 == 0 ? 4 : 0; }

std::string type_str(const TileVal &v) {
  std::string s = std::string(spelling(v.elem)) + "[";
  for (size_t i = 0; i < v.shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v.shape[i]);
  return s + "]";
}

/// Byte offset (i64) of (row, col) in an area at `base`: rows of `stride`
/// floats, the 16-byte chunk XORed with (row % xor_rows) * (8 / xor_rows)
/// when `xor_rows` (A: 8, B: 4). A chunk (4 floats from a col % 4 == 0)
/// stays 16 contiguous, 16-byte aligned bytes: cp.async's unit.
llvm::Value *offset(Builder &b, llvm::Value *base, int64_t stride, unsigned xor_rows,
                    llvm::Value *row, llvm::Value *col) {
  llvm::Value *off = b.CreateMul(row, b.getInt64(4 * stride));
  llvm::Value *chunk = b.CreateLShr(col, 2);
  if (xor_rows)
    chunk = b.CreateXor(
        chunk, b.CreateMul(b.CreateURem(row, b.getInt64(xor_rows)), b.getInt64(8 / xor_rows)));
  off = b.CreateAdd(off, b.CreateMul(chunk, b.getInt64(16)));
  off = b.CreateAdd(off, b.CreateMul(b.CreateAnd(col, 3), b.getInt64(4)));
  return b.CreateAdd(off, base);
}

bool is_plain_load(const Expr &x) {
  return x.kind == ExprKind::Call && x.builtin == Builtin::Load && x.kwargs.empty();
}

} // namespace

bool dot_wants_tf32(const Expr &call) {
  const KwArg *k = find_kwarg(call, "precision");
  return k && k->value && k->value->kind == ExprKind::Name && k->value->name == "tf32";
}

std::string Lowerer::tf32_eligible(const TileVal &a, const TileVal &c) const {
  return mma_fits(a, c, 8, "tf32 mma", 4, a_stride, b_stride);
}

int64_t Lowerer::tf32_b_offset(const MmaTile &t) const { return 4 * t.M * a_stride(t.K); }

int64_t Lowerer::tf32_stage_bytes(const MmaTile &t) const {
  return tf32_b_offset(t) + 4 * t.K * b_stride(t.N);
}

int64_t Lowerer::tf32_area_bytes(int64_t rows, int64_t cols, bool b_role) const {
  return 4 * rows * (b_role ? b_stride(cols) : a_stride(cols));
}

Lowerer::ChunkPlace Lowerer::tf32_place(int64_t cols, bool b_role) {
  const int64_t stride = b_role ? b_stride(cols) : a_stride(cols);
  const unsigned x = b_role ? b_xor(cols) : a_xor(cols);
  return [this, stride, x](llvm::Value *row, llvm::Value *col) {
    return offset(b, b.getInt64(0), stride, x, row, col);
  };
}

void Lowerer::tf32_stage_regs(const TileVal &v, int64_t cols, bool b_role, llvm::Value *base) {
  const int64_t stride = b_role ? b_stride(cols) : a_stride(cols);
  const unsigned x = b_role ? b_xor(cols) : a_xor(cols);
  for (unsigned k = 0; k < v.regs.size(); ++k) {
    auto write = [&, k] {
      llvm::Value *e = elem_index(k);
      llvm::Value *row = b.CreateUDiv(e, b.getInt64(cols)),
                  *col = b.CreateURem(e, b.getInt64(cols));
      scratch_store(m.to_tf32(b, v.regs[k]), offset(b, base, stride, x, row, col), 1);
    };
    if (llvm::Value *alive = elem_alive(k, v.numel()))
      if_then(alive, write);
    else
      write();
  }
}

void Lowerer::tf32_stage_chunks(const MmaTile &t, const ChunkLoad &la, const ChunkLoad &lb,
                                llvm::Value *base) {
  stage_chunks(la, t.K, base, tf32_place(t.K, false));
  stage_chunks(lb, t.N, b.CreateAdd(base, b.getInt64(tf32_b_offset(t))), tf32_place(t.N, true));
}

void Lowerer::tf32_accumulate(const MmaTile &t, int64_t wm, int64_t wn, llvm::Value *r0,
                              llvm::Value *n0,
                              const std::vector<const std::vector<llvm::AllocaInst *> *> &accs,
                              llvm::Value *a_base, llvm::Value *b_base, bool raw, unsigned line) {
  const int64_t sa = a_stride(t.K), sb = b_stride(t.N);
  const unsigned xa = a_xor(t.K), xb = b_xor(t.N);
  llvm::Value *lane = b.CreateURem(b.CreateZExt(tid, i64), b.getInt64(32));
  llvm::Value *g = b.CreateLShr(lane, 2), *q = b.CreateAnd(lane, 3);
  // One fragment register: tf32 bits as staged, or the raw f32 that
  // cp.async copied, rounded here exactly as the register staging rounds.
  auto frag = [&](llvm::Value *base, int64_t stride, unsigned x, llvm::Value *row,
                  llvm::Value *col) {
    llvm::Value *off = offset(b, base, stride, x, row, col);
    return raw ? m.to_tf32(b, scratch_load(f32, off, 1)) : scratch_load(i32, off, 1);
  };
  // ldmatrix's lane rows for A: lane l gives row l & 15, col 4 (l >> 4).
  llvm::Value *lrow = b.CreateAnd(lane, 15),
              *lcol = b.CreateMul(b.CreateLShr(lane, 4), b.getInt64(4));
  for_range(b.getInt64(0), b.getInt64(t.K), b.getInt64(8), [&](llvm::Value *k0) {
    // A (PTX's fragment: row g + 8 (i & 1), col t + 4 (i >> 1) of each m16
    // row block) by one ldmatrix.x4: a row of 4 f32 is 8 b16, so matrix i
    // (rows 8 (i & 1) .., cols 4 (i >> 1) ..) gives lane l the word l % 4
    // of its row l / 4, register i. B: k = t + 4 i, n = g of each n8 block.
    std::vector<std::vector<llvm::Value *>> fa(static_cast<size_t>(wm)),
        fb(static_cast<size_t>(wn));
    for (int64_t r = 0; r < wm; ++r) {
      llvm::Value *row = b.CreateAdd(r0, b.CreateAdd(lrow, b.getInt64(16 * r)));
      llvm::Value *p = scratch_ptr(offset(b, a_base, sa, xa, row, b.CreateAdd(k0, lcol)), 1);
      for (llvm::Value *v : m.ldmatrix(b, p, 4, false, line))
        fa[size_t(r)].push_back(raw ? m.to_tf32(b, b.CreateBitCast(v, f32)) : v);
    }
    for (int64_t c = 0; c < wn; ++c)
      for (unsigned j = 0; j < t.n8; ++j)
        for (unsigned i = 0; i < 2; ++i) {
          llvm::Value *row = b.CreateAdd(k0, b.CreateAdd(q, b.getInt64(4 * i)));
          llvm::Value *col = b.CreateAdd(n0, b.CreateAdd(g, b.getInt64(c * t.nb + 8 * int64_t(j))));
          fb[size_t(c)].push_back(frag(b_base, sb, xb, row, col));
        }
    for (int64_t r = 0; r < wm; ++r)
      for (int64_t c = 0; c < wn; ++c) {
        const std::vector<llvm::AllocaInst *> &acc = *accs[size_t(r * wn + c)];
        for (unsigned j = 0; j < t.n8; ++j) {
          std::vector<llvm::Value *> cc;
          for (unsigned i = 0; i < 4; ++i)
            cc.push_back(b.CreateLoad(f32, acc[4 * j + i]));
          std::vector<llvm::Value *> d = m.mma_m16n8k8_tf32(
              b, fa[size_t(r)], {fb[size_t(c)][2 * j], fb[size_t(c)][2 * j + 1]}, cc, line);
          for (unsigned i = 0; i < 4; ++i)
            b.CreateStore(d[i], acc[4 * j + i]);
        }
      }
  });
}

void Lowerer::tf32_accumulate_unit(const MmaTile &t, const std::vector<llvm::AllocaInst *> &acc,
                                   llvm::Value *u, llvm::Value *a_base, llvm::Value *b_base,
                                   bool raw, unsigned line) {
  llvm::Value *r0 = b.CreateMul(b.CreateUDiv(u, b.getInt64(t.n_units)), b.getInt64(16));
  llvm::Value *n0 = b.CreateMul(b.CreateURem(u, b.getInt64(t.n_units)), b.getInt64(t.nb));
  tf32_accumulate(t, 1, 1, r0, n0, {&acc}, a_base, b_base, raw, line);
}

void Lowerer::tf32_accumulate_sets(const MmaTile &t, const MmaWarpTile &wt,
                                   const std::vector<std::vector<llvm::AllocaInst *>> &frags,
                                   llvm::Value *a_base, llvm::Value *b_base, unsigned line) {
  if (!wt.on()) {
    mma_for_units(t, int64_t(frags.size()), [&](unsigned i, llvm::Value *u) {
      tf32_accumulate_unit(t, frags[i], u, a_base, b_base, true, line);
    });
    return;
  }
  // The block's first unit gives its first row and column (lower_mma_warptile.cpp).
  llvm::Value *u0 = mma_warp_unit(t, wt, 0);
  llvm::Value *r0 = b.CreateMul(b.CreateUDiv(u0, b.getInt64(t.n_units)), b.getInt64(16));
  llvm::Value *n0 = b.CreateMul(b.CreateURem(u0, b.getInt64(t.n_units)), b.getInt64(t.nb));
  std::vector<const std::vector<llvm::AllocaInst *> *> accs;
  for (const auto &f : frags)
    accs.push_back(&f);
  tf32_accumulate(t, wt.wm, wt.wn, r0, n0, accs, a_base, b_base, true, line);
}

TileVal Lowerer::tf32_units(const MmaTile &t, int64_t c_base, bool raw, unsigned line) {
  llvm::Value *a_base = b.getInt64(0), *b_base = b.getInt64(tf32_b_offset(t));
  mma_for_units(t, 0, [&](unsigned, llvm::Value *u) {
    std::vector<llvm::AllocaInst *> acc = mma_zero_frags(t);
    tf32_accumulate_unit(t, acc, u, a_base, b_base, raw, line);
    mma_store_frags(t, acc, u, c_base);
  });
  return mma_read_result(t, c_base);
}

TileVal Lowerer::dot_tf32(const TileVal &a, const TileVal &c, SourceRange where) {
  if (a.elem != ElemType::F32 || c.elem != ElemType::F32 || a.shape.empty() || a.shape.size() > 2 ||
      c.shape.size() != 2 || a.shape.back() != c.shape[0])
    throw LowerError("dot(precision = tf32) needs f32 [M, K] (or [K]) and [K, N] tiles");
  std::string why = tf32_eligible(a, c);
  if (why != "ok") {
    remarks.push_back({where, {type_str(a), type_str(c), why}});
    return dot(a, c, where); // f32 operands: no second remark there
  }
  const MmaTile t = mma_tile(a, c);
  const int64_t K = t.K, N = t.N;
  const int64_t b_base = tf32_b_offset(t), c_base = tf32_stage_bytes(t);
  note_scratch((c_base + 4 * t.M * mma_result_stride(N)) / 4);

  // 1. Stage both operands as tf32 bit patterns, rows padded or swizzled.
  tf32_stage_regs(a, K, false, b.getInt64(0));
  tf32_stage_regs(c, N, true, b.getInt64(b_base));
  m.barrier(b);
  // 2. and 3. Warp tiles as dot_mma's, its write-back.
  return tf32_units(t, c_base, false, where.begin.line);
}

std::optional<TileVal> Lowerer::dot_tf32_async(const Expr &call) {
  if (call.args.size() != 2)
    return std::nullopt;
  for (const ExprPtr &x : call.args) // cheap checks before chunk_load emits any IR
    if (!is_plain_load(*x) || x->type.elem != ElemType::F32)
      return std::nullopt;
  std::optional<ChunkLoad> la = chunk_load(*call.args[0], 4);
  if (!la)
    return std::nullopt;
  std::optional<ChunkLoad> lb = chunk_load(*call.args[1], 4);
  if (!lb)
    return std::nullopt;
  TileVal a, c;
  a.elem = la->elem, a.shape = la->shape;
  c.elem = lb->elem, c.shape = lb->shape;
  if (a.shape[1] != c.shape[0] || tf32_eligible(a, c) != "ok")
    return std::nullopt; // dot_tf32 says why in its remark
  const MmaTile t = mma_tile(a, c);
  const int64_t c_base = tf32_stage_bytes(t);
  note_scratch((c_base + 4 * t.M * mma_result_stride(t.N)) / 4);
  if (la->barrier_before || lb->barrier_before) // sema/hazards.h, as lower_load
    m.barrier(b);
  tf32_stage_chunks(t, *la, *lb, b.getInt64(0));
  m.async_commit(b);
  m.async_wait(b, 0);
  m.barrier(b);
  return tf32_units(t, c_base, true, call.range.begin.line);
}

} // namespace etl
