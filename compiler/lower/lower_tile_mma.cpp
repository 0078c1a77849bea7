//===- lower/lower_tile_mma.cpp - The tile IR path: tensor-core dot -------===//
//
// What this owns: `dot` of f16 or bf16 tiles, and of f32 tiles with
// `precision = tf32`, on the tile IR path (BodyLowerer::tile_mma_dot) and the
// Async family of ring ops that feed it (BodyLowerer::tile_async,
// tile/pipeline.cpp), for the dots tile/mma.cpp names (mma_dot: M % 16 ==
// K % 16 (tf32: K % 8) == N % 8 == 0, K <= 256 (tf32: 128); layouts over
// the shape padded to powers of two, whose padded row blocks, n8 tiles and
// k steps issue no mma, below). The layout pass gave the result
// mma_layout(Acc, [M, N], warps, col_warps): warp w owns the m16 row
// blocks and n8 column blocks its warp bits select, register bits take
// the rest (columns first), and the mma
// accumulators ARE the value's registers: nothing is written back.
//
//   1. staging (tile/mma.cpp's MmaStaging, at the op's planned buffer): a,
//      unless it is in the A layout, is written [M, K] row-major with
//      lower_mma_smem.cpp's 16-byte-chunk XOR swizzle at byte 0; b [K, N] (or,
//      the operand of dot(a, transpose(x)), as [N, K] rows: x's own
//      k-contiguous rows) after it. Each thread writes its registers, one
//      writer per replica group, runs of up to 8 consecutive columns as one
//      vector store. A b that is a load used only by the dot (through a
//      transpose too: mma_direct_b; a 2-D 16-bit slice, rows contiguous in
//      16-byte aligned runs, no mask, pad or gather) is never loaded into
//      registers: its 16-byte chunks go global -> shared by cp.async
//      (tile_mma_copy; element by element, 0 outside, at a ragged edge or
//      off a 16-byte base), then commit_group and wait_group 0; then a
//      barrier. A ring slot (smem.view of tile/pipeline.cpp's rings,
//      MmaStaging::a_view / b_view) is read where it lies: its copies
//      landed before the barrier at the top of the loop's iteration, so a
//      dot whose operands are all slots or registers stages nothing and
//      has no barrier of its own (tile_async lowers the ring's ops);
//   2. per k16 slice (unrolled): the A fragments of each of the warp's row
//      blocks, by ldmatrix.x4 from the staged a, or packed from registers
//      (A layout register i is PTX's element a_i of the fragment: pairs
//      (2j, 2j + 1) form fragment register j, lower half first, so a
//      cast<bf16>(p) of an accumulator p feeds the next dot without shared
//      memory: FlashAttention-2's P V); the B fragments of each n16 (or n8)
//      column unit by ldmatrix.x4.trans (x2 for n8; plain for [N, K]), as
//      lower_mma.cpp's mma_load_b; one mma.sync per row block and n8 tile,
//      accumulating into the result registers (zero before the first);
//   3. the trailing barrier frees the buffer where tile/smem.cpp's plan keeps
//      it. When the dot's only use is `x + dot(..)` with x already computed
//      in the same layout, the accumulators start from x's registers and
//      the add is done (tile_fused: its result is the dot's registers).
//
// tf32 (mma.sync.m16n8k8 .tf32, Machine::mma_m16n8k8_tf32, per k8 step):
// the f32 operands are staged 32-bit, in 16-byte chunks of 4 XOR-swizzled
// by tile_tf32_ptr (the 16-bit staging's phases, rotated, so that both an
// ldmatrix phase and a B fragment load are conflict-free); step 1's stores
// and copies move 4 floats a chunk; A's fragments (and an [N, K] b's) come
// by ldmatrix (8 x 4 f32 is 8 x 8 b16), a [K, N] b's by two 32-bit loads
// per n8 tile (tile_tf32_load_b: .trans would swap b16 halves). Each
// element staged from registers is rounded by cvt.rna (Machine::to_tf32)
// as it is stored, an operand copied raw (cp.async: a ring slot, a direct
// b) as its fragment registers leave shared memory, so both give the same
// bits. Padding (a shape that is not a power of two) is skipped as for
// 16-bit operands: row blocks, n8 tiles, k8 steps, whole warps, staged
// registers.
//
// Numerics: mma.sync with f32 accumulation in k order (sim: products exact,
// tf32 operands truncated to 19 bits as the hardware reads them, summed in
// k order). A dot whose one use is `x + dot(..)` accumulates onto x (x +
// p0 + p1 ..., not x + (p0 + p1 ...): equal when the sums are exact).
//
//===----------------------------------------------------------------------===//
#include "lower/body_lowerer.h"

#include "target/target.h"

#include "tile/layout.h"
#include "tile/passes.h"

#include <llvm/IR/Constants.h>

#include <algorithm>
#include <optional>
#include <string>

namespace etl {

const TOp *BodyLowerer::mma_direct_b(const TOp &dot) {
  auto one_use = [&](int v, const TOp *by) {
    auto it = tile_users.find(v);
    return it != tile_users.end() && it->second.size() == 1 && it->second[0] == by;
  };
  int v = dot.operands.at(1);
  const TOp *d = defining_op(tf->body, v), *tr = nullptr;
  if (!d || !one_use(v, &dot))
    return nullptr;
  if (d->kind == TileOpKind::Transpose) {
    tr = d;
    v = d->operands.at(0);
    d = defining_op(tf->body, v);
    if (!d || !one_use(v, tr))
      return nullptr;
  }
  const TValue &lv = tf->values[size_t(v)];
  bool gather = false;
  for (const SlicePart &p : d->parts)
    gather = gather || p.kind == SlicePart::Gather;
  // A 2-D slice of 16-bit elements (f32 for a tf32 dot), rows contiguous
  // in memory in runs of 16 bytes at 16-byte aligned offsets
  // (tile/memory.cpp's facts), no mask or pad, not issued before the waits.
  const bool tf32 = dot.attr == "tf32";
  const unsigned per = tf32 ? 4 : 8; // elements per 16-byte chunk
  if (d->kind != TileOpKind::Load || gather || d->mask >= 0 || !d->pad.empty() ||
      lv.shape.size() != 2 || lv.shape[1] % 8 != 0 ||
      (tf32 ? lv.elem != ElemType::F32 : lv.elem != ElemType::F16 && lv.elem != ElemType::BF16) ||
      d->mem.fast_dim != 1 || d->mem.align_vec < per || d->barrier_before || hoisted_ops.count(d))
    return nullptr;
  tile_direct.insert(d);
  if (tr)
    tile_direct.insert(tr);
  return d;
}

BodyLowerer::CopyChunk BodyLowerer::copy_first_chunk(const TOp &load,
                                                     const std::vector<int64_t> &tile_shape,
                                                     ElemType elem, llvm::Value **aligned) {
  const bool rank1 = tile_shape.size() == 1;
  const int64_t per = 16 / int64_t(byte_size(elem)), cpr = tile_shape.back() / per;
  llvm::Value *t64 = b.CreateZExt(tid, i64);
  llvm::Value *row0 = b.CreateUDiv(t64, b.getInt64(uint64_t(cpr)));
  llvm::Value *col =
      b.CreateMul(b.CreateURem(t64, b.getInt64(uint64_t(cpr))), b.getInt64(uint64_t(per)));
  const std::vector<llvm::Value *> at =
      rank1 ? std::vector<llvm::Value *>{col} : std::vector<llvm::Value *>{row0, col};
  return {row0, col, tile_elem_addr(load, at, unsigned(per), aligned).first};
}

void BodyLowerer::tile_mma_copy(const TOp &load, const std::vector<int64_t> &tile_shape,
                                llvm::Value *base, ElemType elem, bool row_major) {
  // 16-byte chunks (8 16-bit or 4 f32 elements of a row) spread over the
  // threads: cp.async where the chunk lies inside the tensor and starts
  // 16-byte aligned (the tensor's base, and the chunk itself unless
  // tile/memory.cpp proved its rows aligned), else element by element (0
  // outside), as the load would read them; rows land in the staging layout
  // at the same (row, col) (f32: tile_tf32_ptr's swizzle).
  // The tensor's pointer and extents: loaded once before the loop around.
  struct Invariant {
    bool &flag, was;
    ~Invariant() { flag = was; }
  } invariant{invariant_args, invariant_args};
  invariant_args = true;
  // A rank-1 tile (a plain ring's) is one row: its coordinates name the column only.
  const bool rank1 = tile_shape.size() == 1;
  const std::vector<int64_t> shape = rank1 ? std::vector<int64_t>{1, tile_shape[0]} : tile_shape;
  auto at = [&](llvm::Value *row, llvm::Value *col) {
    return rank1 ? std::vector<llvm::Value *>{col} : std::vector<llvm::Value *>{row, col};
  };
  const unsigned eb = byte_size(elem), per = 16 / eb;
  const int64_t cols = shape[1], cpr = cols / per, chunks = shape[0] * cpr;
  const bool nc = load.mem.non_coherent;
  llvm::Type *ety = b.getIntNTy(8 * eb);
  auto dst_of = [&](llvm::Value *row, llvm::Value *col) {
    if (row_major)
      return scratch_ptr(
          b.CreateAdd(base,
                      b.CreateMul(b.CreateAdd(b.CreateMul(row, b.getInt64(uint64_t(cols))), col),
                                  b.getInt64(eb))),
          1);
    return eb == 4 ? tile_tf32_ptr(cols, base, row, col)
                   : mma_a_ptr(shape[0], cols, base, row, col);
  };
  // The interior path: where the whole tile lies inside the tensor with
  // its base and rows 16-byte aligned (one uniform test per tile) and a
  // thread's chunks share a column (T a multiple of the chunks per row),
  // thread t's chunk i is row t / cpr + i * T / cpr: one cp.async per chunk
  // at a constant byte step from the first, no test per chunk (but `t <
  // chunks - i T` on a last, partial round).
  llvm::Value *edge = nullptr;
  std::vector<llvm::Value *> stride;
  llvm::Value *inside = nullptr;
  // (Rows not proven 16-byte aligned, and a rank-1 tile's one row: their
  // start and pitch are tested below.)
  if (T % cpr == 0) {
    inside = tile_inside(load, tile_shape, stride);
    if (rank1) // one row: chunks <= T, no step between a thread's chunks
      stride.at(0) = chunks <= int64_t(T) ? b.getInt64(0) : nullptr;
    if (!stride.at(0)) // a row dim that is no tensor dim: not this path
      inside = nullptr, stride.clear();
  }
  if (!stride.empty()) {
    llvm::Value *t64 = b.CreateZExt(tid, i64);
    llvm::Value *aligned = nullptr;
    const CopyChunk first = copy_first_chunk(load, tile_shape, elem, &aligned);
    llvm::Value *row0 = first.row, *col = first.col, *p0 = first.src;
    // A pipelined loop's copy: its pointer bumped per step, and where the
    // steps inside are known before the loop, one test of its variable.
    auto bump = tile_copy_ptrs.find(&load);
    if (bump != tile_copy_ptrs.end())
      p0 = bump->second.ptr;
    if (load.mem.align_vec < per) { // the rows' start and pitch: 16-byte aligned?
      llvm::Value *bits = b.CreatePtrToInt(p0, i64);
      if (!rank1)
        bits = b.CreateOr(bits, stride[0]);
      aligned = b.CreateAnd(aligned, b.CreateICmpEQ(b.CreateAnd(bits, 15), b.getInt64(0)));
    }
    inside = inside ? b.CreateAnd(inside, aligned) : aligned;
    if (bump != tile_copy_ptrs.end() && bump->second.until)
      inside = b.CreateICmpSLT(tile_loop_vars.at(bump->second.var), bump->second.until);
    const int64_t rows_per = T / cpr; // rows between a thread's chunks
    llvm::Value *step = b.CreateMul(stride[0], b.getInt64(uint64_t(rows_per)));
    // Chunk i's place in the staging: chunk 0's plus a constant where that
    // holds for every thread (rows a multiple of the swizzle's period apart),
    // so that one address is computed per copy, not one per chunk.
    auto place = [&](int64_t row, int64_t c) {
      SmemInt a;
      return row_major ? (row * cols + c) * int64_t(eb)
                       : smem_place(a, eb == 4 ? mma_staging_layout(cols, 4) : staging16(shape[0], cols),
                                    row, c); // (dst_of's layouts)
    };
    auto offset_of = [&](int64_t i) -> std::optional<int64_t> {
      std::optional<int64_t> d;
      for (int64_t t = 0; t < std::min(int64_t(T), chunks - i * T); ++t) {
        const int64_t r = t / cpr, c = t % cpr * per;
        const int64_t x = place(r + i * rows_per, c) - place(r, c);
        if (d && *d != x)
          return std::nullopt;
        d = x;
      }
      return d;
    };
    if_then(inside, [&] {
      llvm::Value *src = p0, *dst0 = nullptr;
      for (int64_t i = 0; i * T < chunks; ++i) {
        if (i)
          src = b.CreateGEP(b.getInt8Ty(), src, step);
        llvm::Value *row = b.CreateAdd(row0, b.getInt64(uint64_t(i * rows_per)));
        const std::optional<int64_t> d = i ? offset_of(i) : std::nullopt;
        llvm::Value *dst = d ? b.CreateGEP(b.getInt8Ty(), dst0, b.getInt64(uint64_t(*d)))
                             : dst_of(row, col);
        if (!i)
          dst0 = dst;
        llvm::Value *from = src;
        if ((i + 1) * T <= chunks)
          m.async_copy(b, dst, from, 16);
        else
          if_then(b.CreateICmpULT(t64, b.getInt64(uint64_t(chunks - i * T))),
                  [&] { m.async_copy(b, dst, from, 16); });
      }
    });
    edge = b.CreateNot(inside);
  }
  auto per_chunk = [&] {
    for_range(
        b.CreateZExt(tid, i64), b.getInt64(uint64_t(chunks)), b.getInt64(T), [&](llvm::Value *q) {
          llvm::Value *row = b.CreateUDiv(q, b.getInt64(uint64_t(cpr)));
          llvm::Value *col =
              b.CreateMul(b.CreateURem(q, b.getInt64(uint64_t(cpr))), b.getInt64(per));
          llvm::Value *aligned = nullptr;
          auto [p0, ok0] = tile_elem_addr(load, at(row, col), per, &aligned);
          auto [p7, ok7] =
              tile_elem_addr(load, at(row, b.CreateAdd(col, b.getInt64(per - 1))), per, nullptr);
          (void)p7;
          llvm::Value *src = p0;
          llvm::Value *fast = aligned;
          if (load.mem.align_vec < per) // rows not proven to start 16-byte aligned: test the chunk
            fast = b.CreateAnd(
                fast, b.CreateICmpEQ(b.CreateAnd(b.CreatePtrToInt(p0, i64), 15), b.getInt64(0)));
          for (llvm::Value *ok : {ok0, ok7})
            if (ok)
              fast = b.CreateAnd(fast, ok);
          llvm::Value *dst = dst_of(row, col);
          if_then(fast, [&] { m.async_copy(b, dst, src, 16); });
          if_then(b.CreateNot(fast), [&] {
            // Element by element (0 outside the tensor), gathered into one
            // 16-byte store at the chunk's place: as conflict-free as a copy.
            llvm::AllocaInst *tmp = entry_alloca(llvm::FixedVectorType::get(ety, per), "tmma.edge");
            b.CreateStore(llvm::Constant::getNullValue(tmp->getAllocatedType()), tmp);
            for (unsigned j = 0; j < per; ++j) {
              auto [pj, in] =
                  tile_elem_addr(load, at(row, b.CreateAdd(col, b.getInt64(j))), 1, nullptr);
              llvm::Value *pp = pj;
              auto rd = [&] {
                llvm::Value *x = nc ? m.global_load_nc(b, ety, pp) : m.global_load(b, ety, pp);
                llvm::Value *at = b.CreateGEP(ety, tmp, b.getInt64(j));
                b.CreateStore(x, at);
              };
              if (in)
                if_then(in, rd);
              else
                rd();
            }
            m.shared_access(b, dst, 16, true);
            b.CreateAlignedStore(b.CreateLoad(tmp->getAllocatedType(), tmp), dst, llvm::Align(16));
          });
        });
  };
  if (edge)
    if_then(edge, per_chunk);
  else
    per_chunk();
}

llvm::Value *BodyLowerer::mma_half_bits(llvm::Value *v, bool bf16) {
  if (bf16) // the register holds a bf16 value exactly: its top 16 bits
    return b.CreateTrunc(b.CreateLShr(b.CreateBitCast(v, i32), 16), b.getInt16Ty());
  return b.CreateBitCast(b.CreateFPTrunc(v, b.getHalfTy()), b.getInt16Ty());
}

void BodyLowerer::tile_mma_stage(int v, bool nk, int64_t base, ElemType elem) {
  const Layout &l = layout_of(v);
  const std::vector<int64_t> &shape = tf->values[size_t(v)].shape;
  const unsigned sd = nk ? 0 : 1; // the value dim that runs along a staged row
  const int64_t cols = shape[sd];
  const bool bf16 = elem == ElemType::BF16, tf32 = elem == ElemType::F32;
  // tf32: each element rounded (cvt.rna) to 32 bits, at tile_tf32_ptr's place.
  const unsigned eb = tf32 ? 4 : 2;
  llvm::Type *ety = tf32 ? i32 : b.getInt16Ty();
  auto bits = [&](llvm::Value *x) { return tf32 ? m.to_tf32(b, x) : mma_half_bits(x, bf16); };
  // Runs of w registers that are consecutive columns of a staged row, where
  // no lane or warp basis touches the low bits: one store of w elements
  // (16 bytes at most).
  const unsigned w = l.aligned_vector_regs(sd, 16 / eb);
  llvm::Type *vty = w == 1 ? ety : llvm::FixedVectorType::get(ety, w);
  auto write = [&] {
    for (uint32_t r = 0; r < l.num_regs(); r += w) {
      if (reg_replica(l, r))
        continue;
      std::vector<llvm::Value *> c = reg_coords(l, r);
      llvm::Value *x = nullptr;
      if (w == 1)
        x = bits(tregs[size_t(v)].at(r));
      else {
        x = llvm::PoisonValue::get(vty);
        for (unsigned j = 0; j < w; ++j)
          x = b.CreateInsertElement(x, bits(tregs[size_t(v)].at(r + j)), uint64_t(j));
      }
      auto put = [&] {
        llvm::Value *p = tf32 ? tile_tf32_ptr(cols, b.getInt64(uint64_t(base)), c[1 - sd], c[sd])
                              : mma_a_ptr(shape[1 - sd], cols, b.getInt64(uint64_t(base)),
                                          c[1 - sd], c[sd]);
        m.shared_access(b, p, eb * w, true);
        b.CreateAlignedStore(x, p, llvm::Align(eb * w));
      };
      // A padded element (a shape that is not a power of two) has no place:
      // a run of w <= 8 columns is all inside or all padding (dims % 8 == 0).
      if (llvm::Value *alive = reg_alive(l, r))
        if_then(alive, put);
      else
        put();
    }
  };
  if (llvm::Value *writer = replica_writer(l))
    if_then(writer, write);
  else
    write();
}

void BodyLowerer::tile_mma_dot(const TOp &op) {
  if (tf->wgmma && wgmma_gap(*tf, op).empty())
    return tile_wgmma_dot(op);
  const MmaStaging st = mma_staging(*tf, op);
  if (!st.ok)
    throw LowerError("tile IR dot on tensor cores without the accumulator layout");
  const int ia = op.operands.at(0), ib = op.operands.at(1), ir = op.results.at(0);
  const TValue &av = tf->values[size_t(ia)], &bv = tf->values[size_t(ib)];
  const Layout &lr = layout_of(ir);
  const bool bf16 = av.elem == ElemType::BF16, tf32 = st.tf32;
  const int64_t M = av.shape[0], K = av.shape[1], N = bv.shape[1], ks = mma_k_step(op);
  const unsigned line = op.loc.begin.line;
  // The accumulator layout's register bits: col 1, row 8, the warp's n8
  // tiles (the columns its warp bits leave), then the row blocks left to
  // registers (tile/layout.cpp mma_layout).
  const unsigned cw = mma_col_warps(lr);
  const unsigned nbits = ceil_log2(N / 8) - ceil_log2(cw), kbits = ceil_log2(K / ks);
  const unsigned rbits = unsigned(lr.reg.size()) - 2 - nbits;
  const int64_t blocks = int64_t(1) << rbits, wn = int64_t(8) << nbits;

  // 1. Staging.
  if (st.bytes)
    note_scratch(st.bytes / 4);
  const TOp *direct = st.b_view ? nullptr : mma_direct_b(op);
  if (!direct && tregs[size_t(ib)].empty()) // a transpose tile_direct skipped
    if (const TOp *tr = defining_op(tf->body, ib))
      if (tr->kind == TileOpKind::Transpose)
        tregs[size_t(ib)] = tregs[size_t(tr->operands.at(0))];
  llvm::Value *b_base = b.getInt64(uint64_t(st.b_base)), *a_base = b.getInt64(0);
  // Ring slots (tile/pipeline.cpp): landed before the loop's barrier at the
  // top of this iteration; read where they are.
  auto view = [&](int v) -> llvm::Value * {
    auto it = tile_views.find(v);
    return it == tile_views.end()
               ? nullptr
               : b.CreateSub(it->second.first, b.getInt64(uint64_t(scratch_floor)));
  };
  if (st.a_view)
    a_base = view(ia);
  if (st.b_view)
    b_base = view(ib);
  else if (direct) {
    if (direct->barrier_before)
      m.barrier(b);
    tile_mma_copy(*direct, tf->values[size_t(direct->results[0])].shape, b_base,
                  tf->values[size_t(direct->results[0])].elem);
  }
  if (!st.a_regs && !st.a_view)
    tile_mma_stage(ia, false, 0, av.elem);
  if (!direct && !st.b_view)
    tile_mma_stage(ib, st.b_nk, st.b_base, av.elem);
  else if (direct) {
    m.async_commit(b);
    m.async_wait(b, 0);
  }
  if (st.bytes) // else every operand is a landed ring slot or in registers
    m.barrier(b);

  // First row of each of this warp's row blocks: its warp bits' rows XOR
  // the block's register bits' rows.
  const unsigned roff = lr.field_offset(0);
  const uint32_t rmask = (1u << lr.lg[0]) - 1u;
  llvm::Value *warp = b.CreateZExt(b.CreateLShr(tid, b.getInt32(kLaneBits)), i64);
  const uint32_t cmask = (1u << lr.lg[1]) - 1u;
  llvm::Value *wrow = b.getInt64(0), *wcol = b.getInt64(0);
  for (size_t k = 0; k < lr.warp.size(); ++k) {
    llvm::Value *bit = b.CreateAnd(b.CreateLShr(warp, k), 1);
    if (uint32_t rb = lr.warp[k] >> roff & rmask)
      wrow = b.CreateXor(wrow, b.CreateMul(bit, b.getInt64(rb)));
    if (uint32_t cb = lr.warp[k] & cmask) // the warp's first column
      wcol = b.CreateXor(wcol, b.CreateMul(bit, b.getInt64(cb)));
  }
  // A shape that is not a power of two (the layout covers it padded): a
  // row block or n8 tile whose register bits alone put it past the real
  // rows or columns is padding in every warp and issues nothing (pad_row,
  // and the unit loop below); a warp whose own first row or column is past
  // the edge skips the k steps (a warp-uniform branch, below); any other
  // block that only a warp's bits put there reads row (or column) 0
  // instead, in bounds of the staged operands, into padded accumulators
  // that stores and reductions never take (reg_alive). The k16 (tf32: k8)
  // steps stop at the real K.
  auto clamp = [&](llvm::Value *x, int64_t n, unsigned d) -> llvm::Value * {
    if ((int64_t(1) << lr.lg[d]) == n)
      return x;
    return b.CreateSelect(b.CreateICmpULT(x, b.getInt64(uint64_t(n))), x, b.getInt64(0));
  };
  std::vector<llvm::Value *> row0;
  std::vector<bool> pad_row;
  for (int64_t q = 0; q < blocks; ++q) {
    uint32_t rows = 0;
    for (unsigned k = 0; k < rbits; ++k)
      if (q >> k & 1)
        rows ^= lr.reg[2 + nbits + k] >> roff & rmask;
    row0.push_back(clamp(rows ? b.CreateXor(wrow, b.getInt64(rows)) : wrow, M, 0));
    pad_row.push_back(int64_t(rows) >= M);
  }
  llvm::Value *lane = b.CreateZExt(b.CreateAnd(tid, b.getInt32(31)), i64);
  llvm::Value *lrow = b.CreateAnd(lane, 15),
              *lhalf = b.CreateMul(b.CreateLShr(lane, 4), b.getInt64(8));

  MmaTile t;
  t.bf16 = bf16;
  t.M = M, t.K = K, t.N = N;
  t.nb = wn % 16 == 0 && N % 16 == 0 ? 16 : 8; // n8 units where an n16 one would cross N
  t.n_units = wn / t.nb;                       // this warp's column units, from wcol
  t.n8 = unsigned(t.nb / 8);
  t.b_nk = st.b_nk;

  // `x + dot(a, b)`: the mma accumulates onto x, and the add is this op's
  // result (FlashAttention-2's acc * alpha + P V: no second set of
  // accumulators).
  int x = -1;
  const TOp *add = dot_add_onto(ir, lr, &x);
  std::vector<llvm::Value *> acc(lr.num_regs(), llvm::ConstantFP::get(f32, 0.0));
  if (add)
    acc = tregs[size_t(x)];
  auto acc_at = [&](int64_t q, int64_t tile, unsigned i) -> llvm::Value *& {
    return acc.at(size_t(i | uint32_t(tile) << 2 | uint32_t(q) << (2 + nbits)));
  };
  // tf32 operands copied raw (a ring slot, b by cp.async) are rounded as
  // they leave shared memory, exactly as the staging from registers rounds.
  const bool a_raw = tf32 && st.a_view, b_raw = tf32 && (st.b_view || direct);
  auto round = [&](std::vector<llvm::Value *> v, bool raw) { // the A fragments
    for (llvm::Value *&x : v)
      if (raw)
        x = m.to_tf32(b, b.CreateBitCast(x, f32));
    return v;
  };
  // A warp whose first row or column a warp bit puts past the edge holds
  // padding only: a warp-uniform branch skips its fragments and mmas.
  auto inside = [&](llvm::Value *first, int64_t n, unsigned d) -> llvm::Value * {
    if ((int64_t(1) << lr.lg[d]) == n || llvm::isa<llvm::Constant>(first))
      return nullptr;
    return b.CreateICmpULT(first, b.getInt64(uint64_t(n)));
  };
  llvm::Value *in_r = inside(wrow, M, 0), *in_c = inside(wcol, N, 1);
  llvm::Value *work = in_r && in_c ? b.CreateAnd(in_r, in_c) : in_r ? in_r : in_c;
  const std::vector<llvm::Value *> acc0 = acc;
  llvm::BasicBlock *skip_from = nullptr, *joined = nullptr;
  if (work) {
    auto *run = llvm::BasicBlock::Create(ctx, "tmma.warp", fn);
    joined = llvm::BasicBlock::Create(ctx, "tmma.warp.end", fn);
    skip_from = b.GetInsertBlock();
    b.CreateCondBr(work, run, joined);
    b.SetInsertPoint(run);
  }
  for (int64_t kk = 0; kk < K / ks; ++kk) {
    // 2. The A fragments of every row block (tf32: a row of 4 f32 is 8
    // b16, so matrix i of the x4 (rows 8 (i & 1) .., cols 4 (i >> 1) ..)
    // gives lane l word l % 4 of row l / 4, PTX's tf32 A register i).
    std::vector<std::vector<llvm::Value *>> fa;
    for (int64_t q = 0; q < blocks; ++q) {
      if (pad_row[size_t(q)]) {
        fa.emplace_back();
        continue;
      }
      if (!st.a_regs) {
        llvm::Value *r = b.CreateAdd(row0[q], lrow);
        llvm::Value *p =
            tf32 ? tile_tf32_ptr(K, a_base, r,
                                 b.CreateAdd(b.getInt64(uint64_t(8 * kk)), b.CreateLShr(lhalf, 1)))
                 : mma_a_ptr(M, K, a_base, r, b.CreateAdd(b.getInt64(uint64_t(16 * kk)), lhalf));
        fa.push_back(round(m.ldmatrix(b, p, 4, false, line), a_raw));
        continue;
      }
      std::vector<llvm::Value *> frag;
      const uint32_t at = uint32_t(kk) << 3 | uint32_t(q) << (3 + kbits);
      for (uint32_t j = 0; j < 4; ++j) {
        llvm::Value *lo = b.CreateZExt(mma_half_bits(tregs[size_t(ia)].at(at | 2 * j), bf16), i32);
        llvm::Value *hi =
            b.CreateZExt(mma_half_bits(tregs[size_t(ia)].at(at | (2 * j + 1)), bf16), i32);
        frag.push_back(b.CreateOr(lo, b.CreateShl(hi, 16)));
      }
      fa.push_back(frag);
    }
    // The B fragments unit by unit, and the mmas.
    for (int64_t u = 0; u < t.n_units; ++u) {
      if (u * t.nb >= N) // padding in every warp
        break;
      llvm::Value *n0 = clamp(b.CreateAdd(wcol, b.getInt64(uint64_t(u * t.nb))), N, 1);
      std::vector<llvm::Value *> fb =
          tf32 ? tile_tf32_load_b(t, b_base, kk, n0, b_raw, line)
               : mma_load_b(t, b_base, b.getInt64(uint64_t(16 * kk)), n0, lane, line);
      for (unsigned j = 0; j < t.n8; ++j) {
        const int64_t tile = u * int64_t(t.n8) + j;
        for (int64_t q = 0; q < blocks; ++q) {
          if (pad_row[size_t(q)])
            continue;
          std::vector<llvm::Value *> c;
          for (unsigned i = 0; i < 4; ++i)
            c.push_back(acc_at(q, tile, i));
          std::vector<llvm::Value *> d =
              tf32 ? m.mma_m16n8k8_tf32(b, fa[size_t(q)], {fb[2 * j], fb[2 * j + 1]}, c, line)
                   : m.mma_m16n8k16(b, bf16, fa[size_t(q)], {fb[2 * j], fb[2 * j + 1]}, c, line);
          for (unsigned i = 0; i < 4; ++i)
            acc_at(q, tile, i) = d[i];
        }
      }
    }
  }
  if (work) {
    llvm::BasicBlock *ran = b.GetInsertBlock();
    b.CreateBr(joined);
    b.SetInsertPoint(joined);
    for (size_t i = 0; i < acc.size(); ++i)
      if (acc[i] != acc0[i]) {
        llvm::PHINode *p = b.CreatePHI(f32, 2);
        p->addIncoming(acc0[i], skip_from);
        p->addIncoming(acc[i], ran);
        acc[i] = p;
      }
  }
  // 3. Every warp is done reading the buffer (ring slots: the barrier at
  // the top of the loop's next iteration orders their refill).
  if (st.bytes)
    scratch_release();
  tregs[size_t(ir)] = acc;
  if (add) {
    tregs[size_t(add->results[0])] = acc;
    tile_fused.insert(add);
  }
}

const TOp *BodyLowerer::dot_add_onto(int ir, const Layout &lr, int *x) {
  auto use = tile_users.find(ir);
  if (use == tile_users.end() || use->second.size() != 1)
    return nullptr;
  const TOp *u = use->second[0];
  if (u->kind != TileOpKind::Binary || u->attr != "add" || u->operands.size() != 2)
    return nullptr;
  *x = u->operands[0] == ir ? u->operands[1] : u->operands[0];
  const TValue &xv = tf->values[size_t(*x)];
  if (*x != ir && xv.is_tile() && xv.elem == ElemType::F32 &&
      xv.layout == tf->values[size_t(ir)].layout && tregs[size_t(*x)].size() == lr.num_regs())
    return u;
  return nullptr;
}

llvm::Value *BodyLowerer::tile_tf32_ptr(int64_t cols, llvm::Value *base, llvm::Value *row,
                                        llvm::Value *col) {
  // Rows of `cols` f32 in 16-byte chunks of 4, the chunk XORed with the
  // row's phase rotated (tile/smem_layout.cpp's mma_staging_layout says why).
  llvm::Value *off = smem_offset(mma_staging_layout(cols, 4), row, col, /*chunk_first=*/true);
  return scratch_ptr(b.CreateAdd(off, base), 1);
}

std::vector<llvm::Value *> BodyLowerer::tile_tf32_load_b(const MmaTile &t, llvm::Value *b_base,
                                                     int64_t kk, llvm::Value *n0, bool raw,
                                                     unsigned line) {
  // PTX's tf32 B fragment: b_i at k = t + 4i, n = g (t = lane & 3, g =
  // lane >> 2), registers (2j, 2j + 1) for n8 tile j.
  llvm::Value *lane = b.CreateZExt(b.CreateAnd(tid, b.getInt32(31)), i64);
  std::vector<llvm::Value *> fb;
  auto rounded = [&](llvm::Value *x) { return raw ? m.to_tf32(b, b.CreateBitCast(x, f32)) : x; };
  if (t.b_nk) {
    // [N, K] rows: plain ldmatrix, as the A operand's: lane l gives row
    // n0 + (l & 7) (+ 8 (i >> 1) for n16) and col 8 kk + 4 (i & 1) of
    // matrix i = (l >> 3) & 3, whose lane l' word is (n = l' / 4, k = l' % 4).
    llvm::Value *i = b.CreateAnd(b.CreateLShr(lane, 3), 3);
    llvm::Value *row = b.CreateAdd(n0, b.CreateAnd(lane, 7));
    if (t.nb == 16)
      row = b.CreateAdd(row, b.CreateMul(b.CreateLShr(i, 1), b.getInt64(8)));
    llvm::Value *col =
        b.CreateAdd(b.getInt64(uint64_t(8 * kk)), b.CreateMul(b.CreateAnd(i, 1), b.getInt64(4)));
    for (llvm::Value *x :
         m.ldmatrix(b, tile_tf32_ptr(t.K, b_base, row, col), 2 * t.n8, false, line))
      fb.push_back(rounded(x));
    return fb;
  }
  // [K, N] rows: two 32-bit loads per n8 tile (ldmatrix .trans would swap
  // b16 halves); tile_tf32_ptr keeps each on 32 banks.
  llvm::Value *g = b.CreateLShr(lane, 2), *tq = b.CreateAnd(lane, 3);
  for (unsigned j = 0; j < t.n8; ++j)
    for (unsigned i = 0; i < 2; ++i) {
      llvm::Value *row = b.CreateAdd(tq, b.getInt64(uint64_t(8 * kk + 4 * i)));
      llvm::Value *col = b.CreateAdd(b.CreateAdd(n0, g), b.getInt64(8 * j));
      llvm::Value *p = tile_tf32_ptr(t.N, b_base, row, col);
      m.shared_access(b, p, 4, false);
      fb.push_back(rounded(b.CreateAlignedLoad(i32, p, llvm::Align(4))));
    }
  return fb;
}

//===-- The rings of tile/pipeline.cpp ------------------------------------===//

llvm::Value *BodyLowerer::ring_slot_value(const Sym &slot) {
  const std::string s = slot.str();
  for (const auto &[var, c] : tile_ring_counters) {
    if (s == c.view)
      return b.CreateZExt(c.slot, i64);
    if (s == c.ahead) // slot k + (S - 1) step is slot k - 1, wrapped
      return b.CreateZExt(b.CreateSelect(b.CreateICmpEQ(c.slot, b.getInt32(0)),
                                         b.getInt32(uint32_t(c.stages - 1)),
                                         b.CreateSub(c.slot, b.getInt32(1))),
                          i64);
  }
  return sym_value(slot);
}

std::optional<BodyLowerer::RingBump> BodyLowerer::ring_copy_bump(const TOp &copy, const TOp &loop,
                                                                 llvm::Value *lo) {
  if (tile_tma_rings.count(copy.operands.at(0))) // a TMA copy names coordinates, no pointer
    return std::nullopt;
  llvm::Value *by = tile_affine_step(copy, loop.var, loop.step);
  if (!by)
    return std::nullopt;
  const TValue &buf = tf->values.at(size_t(copy.operands.at(0)));
  const std::vector<int64_t> shape(buf.shape.begin() + 1, buf.shape.end());
  TOp wide = copy; // 64-bit offsets: lo's copy may lie past the tensor, where idx32 wraps
  wide.mem.index32 = false;
  llvm::Value *aligned = nullptr;
  llvm::Value *from = copy_first_chunk(wide, shape, buf.elem, &aligned).src;
  // The interior path's alignment (tile_mma_copy) holds at every step
  // when it holds at lo and the step keeps it.
  std::vector<llvm::Value *> stride;
  tile_inside(copy, shape, stride);
  llvm::Value *bits = b.CreateOr(b.CreatePtrToInt(from, i64), by);
  if (shape.size() == 2 && stride.at(0))
    bits = b.CreateOr(bits, stride[0]);
  if (copy.mem.align_vec < 16 / byte_size(buf.elem))
    aligned = b.CreateAnd(aligned, b.CreateICmpEQ(b.CreateAnd(bits, 15), b.getInt64(0)));
  llvm::Value *until = loop.step > 0 ? tile_inside_until(copy, shape, loop.var, loop.step, lo)
                                     : nullptr;
  if (until)
    until = b.CreateSelect(aligned, until, lo);
  return RingBump{&copy, loop.var, from, by, until, nullptr};
}

void BodyLowerer::tile_async(const TOp &op) {
  switch (op.kind) {
  case TileOpKind::SmemAlloc: { // its bytes: tile/smem.cpp placed them past the others
    if (op.smem < 0 || !tf->smem.at(size_t(op.smem)).ring)
      throw LowerError("tile IR smem.alloc without its planned ring");
    const SmemBuffer &buf = tf->smem[size_t(op.smem)];
    const TValue &v = tf->values[size_t(op.results[0])];
    tile_rings[op.results[0]] = {buf.offset, ring_slot_bytes(v)};
    if (row_major_ring(op.attr))
      tile_row_major_rings.insert(op.results[0]);
    if ((buf.offset + buf.bytes) / 4 > max_scratch_elems)
      max_scratch_elems = (buf.offset + buf.bytes) / 4;
    if (op.attr == kTmaRing && m.has_tma()) { // its mbarriers after its slots (lower_tma.cpp)
      tile_tma_rings[op.results[0]] = {buf.offset + v.shape[0] * ring_slot_bytes(v), v.shape[0]};
      tma_ring_init(op.results[0]);
    }
    return;
  }
  case TileOpKind::AsyncCopy: { // iteration lo's slice into its slot, if lo < hi
    const std::pair<int64_t, int64_t> ring = tile_rings.at(op.operands.at(0));
    const int64_t off = ring.first, sb = ring.second; // a lambda captures these below
    const TValue &v = tf->values[size_t(op.operands[0])];
    const std::vector<int64_t> shape(v.shape.begin() + 1, v.shape.end());
    llvm::Value *slot = ring_slot_value(*op.sym);
    if (tile_tma_rings.count(op.operands[0]))
      return tma_copy(op, slot);
    ++tile_cp_async_copies;
    const bool row_major = tile_row_major_rings.count(op.operands[0]) != 0;
    // The loop's bound, as the copy's pointers and extents: loaded once
    // before the loop, not per step.
    const bool was = invariant_args;
    invariant_args = true;
    llvm::Value *in_range = b.CreateICmpSLT(sym_value(*op.lo), sym_value(*op.hi));
    invariant_args = was;
    if_then(in_range, [&] {
      tile_mma_copy(op, shape,
                    b.CreateAdd(b.getInt64(uint64_t(off)), b.CreateMul(slot, b.getInt64(sb))),
                    v.elem, row_major);
    });
    return;
  }
  case TileOpKind::AsyncCommit: // (none issued: a loop of TMA rings only)
    if (tile_cp_async_copies)
      m.async_commit(b);
    return;
  case TileOpKind::AsyncWait:
    if (tile_cp_async_copies)
      m.async_wait(b, unsigned(op.axis));
    if (op.axis == 0) { // after the loop
      tile_cp_async_copies = 0;
      tma_drain();
    }
    return;
  case TileOpKind::Barrier:
    m.barrier(b);
    return;
  case TileOpKind::WgmmaFence:
  case TileOpKind::WgmmaCommit:
  case TileOpKind::WgmmaWait:
    return tile_wgmma_op(op);
  case TileOpKind::SmemView: {
    const auto &[off, sb] = tile_rings.at(op.operands.at(0));
    llvm::Value *at = b.CreateAdd(b.getInt64(uint64_t(off)),
                                  b.CreateMul(ring_slot_value(*op.sym), b.getInt64(sb)));
    if (tile_tma_rings.count(op.operands[0])) // its phase has landed the copy
      tma_wait(op);
    if (tile_row_major_rings.count(op.operands[0])) // a plain tile: into its registers
      tile_ring_read(op, at);
    else // a dot's operand: read by ldmatrix where it lies
      tile_views[op.results[0]] = {at, false};
    return;
  }
  default:
    throw LowerError(std::string("tile IR op '") + op_spelling(op.kind) + "' has no lowering");
  }
}

} // namespace etl
