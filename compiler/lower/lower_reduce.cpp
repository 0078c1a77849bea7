//===- lower/lower_reduce.cpp - Reductions and scans with warp shuffles ---===//
//
// What this owns: every reduction and scan of a tile: sum/max/min along an
// axis and the full sum, argmax/argmin, cumsum.
//
// The fast path works on the bits of the linear element index e = tid + k*T
// (the register layout of lower/lowerer.h, with T a power of two >= 32): bits
// [0, 5) are the lane, [5, log2 T) the warp, the rest the register k. When
// the elements after the reduced axis number a power of two (inner) and the
// axis extent n is a power of two too (or the axis is outermost), the axis
// coordinate is the bit range [lo, hi) of e, lo = log2 inner, and:
//   1. each thread folds its registers that differ only in axis bits;
//   2. lanes that differ only in axis bits combine with `shfl.sync.bfly`
//      (one butterfly step per bit, every lane busy);
//   3. one lane per group writes its partial to shared memory at
//      q * NOUT + o (q: the axis bits in the warp number, o: the output
//      element), so a warp's writes and reads hit distinct banks;
//   4. after a barrier, the owner of output element o (lowerer.h's layout)
//      combines its Q partials; a rank-0 result is read by every thread
//      (a broadcast). A closing barrier frees the scratch area.
// Elements past the end of the tile take the identity. argmax/argmin carry
// (value, index) pairs through the same steps; their combine is symmetric
// and keeps the serial rule: the first extremum wins ties, a NaN is skipped
// unless it is element 0 (then the answer is 0). cumsum scans the lanes with
// `shfl.sync.up` (Hillis-Steele), then adds the totals of the earlier
// segments of its row (earlier warps, earlier registers) through shared
// memory; its result keeps the operand's layout. A last axis of another
// extent is walked by segments of lanes (FastReduce::run_rows) and reduced
// with butterflies; other shapes take the serial fallbacks at the end of
// this file (spill, then one thread per output element walks the axis).
//
//===----------------------------------------------------------------------===//
#include "lower/lowerer.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

namespace etl {

namespace {

bool pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

/// ceil(log2 x) for x >= 1.
int log2_ceil(int64_t x) {
  int r = 0;
  while ((int64_t(1) << r) < x)
    ++r;
  return r;
}

/// Where a reduced axis sits in the bits of e (see the file comment).
struct AxisBits {
  int lo = 0, hi = 0; ///< the axis coordinate is bits [lo, hi) of e
  int tbits = 5;      ///< log2 T: bits [5, tbits) are the warp
  int64_t nout = 1;   ///< elements of the result (outer * inner)
  int64_t inner = 1;  ///< elements after the axis
  int64_t n = 1;      ///< the axis extent
  int lane_lo() const { return std::min(lo, 5); }
  int lane_hi() const { return std::min(hi, 5); }
  int warp_lo() const { return std::max(lo, 5); }
  int warp_hi() const { return std::min(hi, tbits); }
  int warp_axis_bits() const { return std::max(0, warp_hi() - warp_lo()); }
};

std::optional<AxisBits> axis_bits(const std::vector<int64_t> &shape, int axis, unsigned T) {
  if (T < 32 || !pow2(T))
    return std::nullopt;
  AxisBits a;
  int64_t outer = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (int(d) < axis)
      outer *= shape[d];
    else if (int(d) > axis)
      a.inner *= shape[d];
  }
  a.n = shape[size_t(axis)];
  if (!pow2(a.inner) || a.n < 1 || (!pow2(a.n) && outer != 1))
    return std::nullopt;
  a.lo = log2_ceil(a.inner);
  a.hi = a.lo + log2_ceil(a.n);
  a.tbits = log2_ceil(T);
  a.nout = outer * a.inner;
  return a;
}

/// A partial result: one value, or (value, index) for argmax/argmin.
using Part = std::vector<llvm::Value *>;

/// The shared steps of the fast reductions over one combine rule.
struct FastReduce {
  Lowerer &L;
  Builder &b;
  const AxisBits &ab;
  std::function<Part(const Part &, const Part &)> combine;
  Part identity;
  std::vector<unsigned> bytes; ///< scratch bytes per component

  /// shfl.sync of one register (i64 as two halves).
  llvm::Value *shfl(llvm::Value *v, ShflMode mode, unsigned lane, unsigned c) {
    if (v->getType()->isIntegerTy(64)) {
      llvm::Value *lo = shfl(b.CreateTrunc(v, L.i32), mode, lane, c);
      llvm::Value *hi = shfl(b.CreateTrunc(b.CreateLShr(v, 32), L.i32), mode, lane, c);
      return b.CreateOr(b.CreateZExt(lo, L.i64), b.CreateShl(b.CreateZExt(hi, L.i64), 32));
    }
    return L.m.shuffle(b, mode, v, b.getInt32(lane), c, 0xFFFFFFFFu, L.cur_line);
  }

  /// Output element of (the group of) element e: e without its axis bits.
  llvm::Value *out_index(llvm::Value *e) {
    llvm::Value *low = b.CreateAnd(e, b.getInt64((int64_t(1) << ab.lo) - 1));
    return b.CreateOr(b.CreateShl(b.CreateLShr(e, uint64_t(ab.hi)), uint64_t(ab.lo)), low);
  }

  /// `p` combined with its butterfly partners over lane bits [lo, hi).
  Part butterflies(Part p, int lo, int hi) {
    for (int bit = lo; bit < hi; ++bit) {
      Part other;
      for (llvm::Value *v : p)
        other.push_back(shfl(v, ShflMode::Bfly, 1u << unsigned(bit), 31));
      p = combine(p, other);
    }
    return p;
  }

  /// Where `writer` holds: component c of `p` to scratch[slot + base[c]].
  void write_partial(llvm::Value *writer, llvm::Value *slot, const Part &p,
                     const std::vector<int64_t> &base) {
    L.if_then(writer, [&] {
      for (size_t c = 0; c < p.size(); ++c)
        L.scratch_store(p[c], b.CreateAdd(slot, b.getInt64(base[c])), bytes[c]);
    });
  }

  /// After the partials are written (barrier): the owner of output element
  /// o combines its Q partials scratch[q * nout + o + base[c]], for each of
  /// the result's `out_regs` registers; a barrier again before scratch is
  /// reused.
  std::vector<Part> combine_partials(unsigned out_regs, bool scalar_out, int64_t nout, int64_t Q,
                                     const std::vector<int64_t> &base) {
    L.m.barrier(b);
    std::vector<Part> out;
    for (unsigned k = 0; k < out_regs; ++k) {
      llvm::Value *o = b.getInt64(0);
      if (!scalar_out) {
        o = L.elem_index(k);
        if (llvm::Value *alive = L.elem_alive(k, nout)) // dead: read a valid slot
          o = b.CreateSelect(alive, o, b.getInt64(0));
      }
      Part acc;
      for (int64_t q = 0; q < Q; ++q) {
        Part x;
        for (size_t c = 0; c < bytes.size(); ++c) {
          llvm::Value *at = b.CreateAdd(o, b.getInt64(q * nout + base[c]));
          x.push_back(L.scratch_load(identity[c]->getType(), at, bytes[c]));
        }
        acc = q == 0 ? x : combine(acc, x);
      }
      out.push_back(acc);
    }
    L.m.barrier(b);
    return out;
  }

  /// Steps 1-4 for the per-register parts `in` (dead elements already hold
  /// the identity); returns the parts of the result's registers.
  std::vector<Part> run(const std::vector<Part> &in, unsigned out_regs, bool scalar_out) {
    // Each group (the registers whose k differs only in axis bits) is
    // folded, reduced across lanes and written before the next one starts,
    // so only one group's partial is live at a time.
    std::map<unsigned, std::vector<unsigned>> groups;
    for (unsigned k = 0; k < in.size(); ++k) {
      unsigned key = k;
      for (int bit = ab.lo; bit < ab.hi; ++bit)
        if (bit >= ab.tbits && bit - ab.tbits < 32)
          key &= ~(1u << unsigned(bit - ab.tbits));
      groups[key].push_back(k);
    }
    int64_t Q = int64_t(1) << ab.warp_axis_bits();
    std::vector<int64_t> base(bytes.size(), 0);
    int64_t words = 0;
    for (size_t c = 0; c < bytes.size(); ++c) {
      base[c] = words * 4 / bytes[c];
      words += Q * ab.nout * bytes[c] / 4;
    }
    L.note_scratch(words);
    uint64_t lane_mask = 0;
    for (int bit = ab.lane_lo(); bit < ab.lane_hi(); ++bit)
      lane_mask |= uint64_t(1) << unsigned(bit);
    for (const auto &group : groups) {
      // 1. Fold the group's registers, in order.
      Part p = in[group.second[0]];
      for (size_t i = 1; i < group.second.size(); ++i)
        p = combine(p, in[group.second[i]]);
      // 2. Butterflies over the axis bits in the lane number.
      p = butterflies(p, ab.lane_lo(), ab.lane_hi());
      // 3. One writer per group and warp: scratch[q * NOUT + o].
      llvm::Value *e =
          b.CreateAdd(b.CreateZExt(L.tid, L.i64), b.getInt64(int64_t(group.first) * L.T));
      llvm::Value *o = out_index(e);
      llvm::Value *q = b.CreateAnd(b.CreateLShr(e, uint64_t(ab.warp_lo())), b.getInt64(Q - 1));
      llvm::Value *writer =
          b.CreateAnd(b.CreateICmpEQ(b.CreateAnd(L.tid, uint64_t(lane_mask)), b.getInt32(0)),
                      b.CreateICmpULT(o, b.getInt64(ab.nout)));
      llvm::Value *slot = b.CreateAdd(b.CreateMul(q, b.getInt64(ab.nout)), o);
      write_partial(writer, slot, p, base);
    }
    // 4. The owner of output element o combines its Q partials.
    return combine_partials(out_regs, scalar_out, ab.nout, Q, base);
  }

  /// The last axis of `v` when its extent n is not a power of two (and T
  /// is): spill, then segments of S lanes (S = the power of two >= n, at most
  /// 32) walk one row each with stride S, combine with butterflies, and the
  /// segment's first lane writes the row's result after the tile in
  /// scratch; the owners read it back. `with_index`: parts are (value,
  /// axis index).
  std::vector<Part> run_rows(const TileVal &v, unsigned out_regs, bool scalar_out,
                             bool with_index) {
    int64_t n = v.shape.back(), nout = v.numel() / n;
    int sbits = std::min(5, log2_ceil(n));
    int64_t S = int64_t(1) << sbits, G = L.T / S, passes = (nout + G - 1) / G;
    unsigned vbytes = L.scratch_bytes(v.elem);
    L.spill_to_scratch(v);
    std::vector<int64_t> base(bytes.size(), 0);
    int64_t words = (v.numel() * vbytes + 7) / 8 * 2; // the tile, 8-byte aligned
    for (size_t c = 0; c < bytes.size(); ++c) {
      base[c] = words * 4 / bytes[c];
      words += nout * bytes[c] / 4;
    }
    L.note_scratch(words);
    llvm::Value *tid64 = b.CreateZExt(L.tid, L.i64);
    llvm::Value *seg = b.CreateLShr(tid64, uint64_t(sbits));
    llvm::Value *s = b.CreateAnd(tid64, b.getInt64(S - 1));
    llvm::Type *ty = identity[0]->getType();
    for (int64_t pass = 0; pass < passes; ++pass) {
      llvm::Value *g = b.CreateAdd(seg, b.getInt64(pass * G));
      llvm::Value *valid = b.CreateICmpULT(g, b.getInt64(nout));
      std::vector<llvm::AllocaInst *> acc;
      for (llvm::Value *id : identity) {
        acc.push_back(L.entry_alloca(id->getType(), "row.acc"));
        b.CreateStore(id, acc.back());
      }
      L.if_then(valid, [&] {
        llvm::Value *row = b.CreateMul(g, b.getInt64(n));
        L.for_range(s, b.getInt64(n), b.getInt64(S), [&](llvm::Value *j) {
          Part x{L.scratch_load(ty, b.CreateAdd(row, j), vbytes)};
          if (with_index)
            x.push_back(b.CreateTrunc(j, L.i32));
          Part a;
          for (llvm::AllocaInst *slot : acc)
            a.push_back(b.CreateLoad(slot->getAllocatedType(), slot));
          Part r = combine(a, x);
          for (size_t c = 0; c < acc.size(); ++c)
            b.CreateStore(r[c], acc[c]);
        });
      });
      Part p;
      for (llvm::AllocaInst *slot : acc)
        p.push_back(b.CreateLoad(slot->getAllocatedType(), slot));
      p = butterflies(p, 0, sbits);
      llvm::Value *writer = b.CreateAnd(valid, b.CreateICmpEQ(s, b.getInt64(0)));
      write_partial(writer, g, p, base);
    }
    return combine_partials(out_regs, scalar_out, nout, 1, base); // one partial per row
  }
};

/// Whether run_rows takes a reduction of `axis` (the fast path does not).
bool rows_path(const std::vector<int64_t> &shape, int axis, unsigned T) {
  return size_t(axis) + 1 == shape.size() && T >= 32 && pow2(T) && shape.back() > 1;
}

/// The serial fallbacks (any shape): see the end of the file.
TileVal reduce_serial(Lowerer &L, const TileVal &v, int axis, Builtin op, ElemType out_elem,
                      llvm::Value *init,
                      const std::function<llvm::Value *(llvm::Value *, llvm::Value *)> &combine);

} // namespace

//===-- sum / max / min ---------------------------------------------------===//

TileVal Lowerer::reduce(const TileVal &v, int axis, Builtin op) {
  if (v.scalar())
    return v;
  if (axis < 0)
    axis += int(v.shape.size());
  if (axis < 0 || size_t(axis) >= v.shape.size())
    throw LowerError("reduction axis out of range");
  TileVal r;
  r.elem = op == Builtin::Sum && v.elem == ElemType::Bool ? ElemType::I32 : v.elem; // a count
  r.shape = v.shape;
  r.shape.erase(r.shape.begin() + axis);
  bool fl = is_float(v.elem);
  llvm::Type *ty = reg_type(v.elem);
  llvm::Value *init;
  if (op == Builtin::Sum)
    init = llvm::Constant::getNullValue(ty);
  else if (fl)
    init = llvm::ConstantFP::getInfinity(f32, op == Builtin::Max);
  else {
    unsigned bits = ty->getIntegerBitWidth();
    bool u = is_unsigned(v.elem);
    init = llvm::ConstantInt::get(
        ty, op == Builtin::Max
                ? (u ? llvm::APInt::getMinValue(bits) : llvm::APInt::getSignedMinValue(bits))
                : (u ? llvm::APInt::getMaxValue(bits) : llvm::APInt::getSignedMaxValue(bits)));
  }
  ElemType elem = v.elem;
  auto combine = [this, op, fl, elem](llvm::Value *a, llvm::Value *x) -> llvm::Value * {
    if (op == Builtin::Sum)
      return fl ? b.CreateFAdd(a, x) : b.CreateAdd(a, x);
    if (fl)
      return b.CreateBinaryIntrinsic(
          op == Builtin::Max ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum, a, x);
    return b.CreateSelect(b.CreateICmp(int_predicate(op == Builtin::Max ? llvm::CmpInst::ICMP_SGT
                                                                        : llvm::CmpInst::ICMP_SLT,
                                                     elem),
                                       a, x),
                          a, x);
  };
  if (v.shape[size_t(axis)] == 1 && !r.shape.empty()) { // the linear order is unchanged
    r.regs = v.regs;
    return r;
  }
  std::optional<AxisBits> ab = axis_bits(v.shape, axis, T);
  bool scalar_out = r.shape.empty();
  if (!ab && !rows_path(v.shape, axis, T))
    return reduce_serial(*this, v, axis, op, r.elem, init, combine);
  AxisBits none_bits;
  FastReduce fr{*this, b, ab ? *ab : none_bits, nullptr, {init}, {scratch_bytes(v.elem)}};
  fr.combine = [&](const Part &x, const Part &y) { return Part{combine(x[0], y[0])}; };
  if (!ab) {
    for (const Part &p : fr.run_rows(v, scalar_out ? 1 : regs_for(r.numel()), scalar_out, false))
      r.regs.push_back(p[0]);
    return r;
  }
  std::vector<Part> in;
  for (unsigned k = 0; k < v.regs.size(); ++k) {
    llvm::Value *x = v.regs[k];
    if (llvm::Value *alive = elem_alive(k, v.numel()))
      x = b.CreateSelect(alive, x, init);
    in.push_back({x});
  }
  for (const Part &p : fr.run(in, scalar_out ? 1 : regs_for(r.numel()), scalar_out))
    r.regs.push_back(p[0]);
  return r;
}

//===-- argmax / argmin ---------------------------------------------------===//

llvm::Value *Lowerer::arg_wins(ElemType t, bool is_max, llvm::Value *pv, llvm::Value *pi,
                               llvm::Value *qv, llvm::Value *qi) {
  bool fl = is_float(t);
  llvm::Value *lower = b.CreateICmpULT(qi, pi);
  llvm::Value *eq = fl ? b.CreateFCmpOEQ(qv, pv) : b.CreateICmpEQ(qv, pv);
  llvm::Value *better =
      fl ? (is_max ? b.CreateFCmpOGT(qv, pv) : b.CreateFCmpOLT(qv, pv))
         : b.CreateICmp(
               int_predicate(is_max ? llvm::CmpInst::ICMP_SGT : llvm::CmpInst::ICMP_SLT, t), qv,
               pv);
  llvm::Value *wins = b.CreateOr(better, b.CreateAnd(eq, lower));
  if (!fl)
    return wins;
  // The serial walk starts at index 0 and no comparison with a NaN succeeds.
  llvm::Value *pn = b.CreateFCmpUNO(pv, pv), *qn = b.CreateFCmpUNO(qv, qv);
  llvm::Value *ps = b.CreateAnd(pn, b.CreateICmpEQ(pi, b.getInt32(0)));
  llvm::Value *qs = b.CreateAnd(qn, b.CreateICmpEQ(qi, b.getInt32(0)));
  wins = b.CreateOr(wins, b.CreateAnd(pn, b.CreateNot(qn)));
  wins = b.CreateOr(wins, b.CreateAnd(b.CreateAnd(pn, qn), lower));
  return b.CreateOr(qs, b.CreateAnd(b.CreateNot(ps), wins));
}

TileVal Lowerer::arg_reduce(const TileVal &v, int axis, bool is_max) {
  TileVal r;
  r.elem = ElemType::I32;
  if (v.scalar()) {
    r.regs = {b.getInt32(0)};
    return r;
  }
  if (axis < 0 || size_t(axis) >= v.shape.size())
    throw LowerError("argmax/argmin axis out of range");
  r.shape = v.shape;
  r.shape.erase(r.shape.begin() + axis);
  if (r.shape.empty())
    r.shape.push_back(1); // as sema types it
  std::optional<AxisBits> ab = axis_bits(v.shape, axis, T);
  if (!ab && !rows_path(v.shape, axis, T))
    return arg_reduce_serial(v, axis, is_max);
  llvm::Type *ty = reg_type(v.elem);
  bool fl = is_float(v.elem);
  llvm::Value *worst;
  if (fl)
    worst = llvm::ConstantFP::getInfinity(f32, is_max);
  else {
    unsigned bits = ty->getIntegerBitWidth();
    bool u = is_unsigned(v.elem);
    worst = llvm::ConstantInt::get(
        ty, is_max ? (u ? llvm::APInt::getMinValue(bits) : llvm::APInt::getSignedMinValue(bits))
                   : (u ? llvm::APInt::getMaxValue(bits) : llvm::APInt::getSignedMaxValue(bits)));
  }
  llvm::Value *none = b.getInt32(INT32_MAX); // the index of a dead element: loses every tie
  auto q_wins = [&, this](const Part &p, const Part &q) {
    return arg_wins(v.elem, is_max, p[0], p[1], q[0], q[1]);
  };
  AxisBits none_bits;
  FastReduce fr{*this, b, ab ? *ab : none_bits, nullptr, {worst, none}, {scratch_bytes(v.elem), 4}};
  fr.combine = [&](const Part &p, const Part &q) {
    llvm::Value *w = q_wins(p, q);
    return Part{b.CreateSelect(w, q[0], p[0]), b.CreateSelect(w, q[1], p[1])};
  };
  if (!ab) {
    for (const Part &p : fr.run_rows(v, regs_for(r.numel()), false, true))
      r.regs.push_back(p[1]);
    return r;
  }
  std::vector<Part> in;
  for (unsigned k = 0; k < v.regs.size(); ++k) {
    llvm::Value *e = elem_index(k);
    llvm::Value *j = b.CreateLShr(e, uint64_t(ab->lo));
    if (ab->hi - ab->lo < 63)
      j = b.CreateAnd(j, b.getInt64((int64_t(1) << (ab->hi - ab->lo)) - 1));
    Part p{v.regs[k], b.CreateTrunc(j, i32)};
    if (llvm::Value *alive = elem_alive(k, v.numel()))
      p = {b.CreateSelect(alive, p[0], worst), b.CreateSelect(alive, p[1], none)};
    in.push_back(p);
  }
  for (const Part &p : fr.run(in, regs_for(r.numel()), false))
    r.regs.push_back(p[1]);
  return r;
}

//===-- cumsum ------------------------------------------------------------===//

TileVal Lowerer::cumsum(const TileVal &v, int axis) {
  if (v.scalar())
    return v;
  if (axis < 0 || size_t(axis) >= v.shape.size())
    throw LowerError("cumsum axis out of range");
  std::optional<AxisBits> ab = axis_bits(v.shape, axis, T);
  if (!ab)
    return cumsum_serial(v, axis);
  TileVal r;
  r.elem = v.elem;
  r.shape = v.shape;
  llvm::Type *ty = reg_type(v.elem);
  bool fl = is_float(v.elem);
  auto add = [&](llvm::Value *x, llvm::Value *y) {
    return fl ? b.CreateFAdd(x, y) : b.CreateAdd(x, y);
  };
  llvm::Value *zero = llvm::Constant::getNullValue(ty);
  FastReduce fr{*this, b, *ab, nullptr, {zero}, {scratch_bytes(v.elem)}};
  llvm::Value *lane = b.CreateAnd(b.CreateZExt(tid, i64), b.getInt64(31));
  int llo = ab->lane_lo(), lhi = ab->lane_hi();
  llvm::Value *jl =
      b.CreateAnd(b.CreateLShr(lane, uint64_t(llo)), b.getInt64((int64_t(1) << (lhi - llo)) - 1));
  // Lanes: inclusive Hillis-Steele scan over the axis bits of the lane.
  std::vector<llvm::Value *> x;
  for (unsigned k = 0; k < v.regs.size(); ++k) {
    llvm::Value *xk = v.regs[k];
    if (llvm::Value *alive = elem_alive(k, v.numel()))
      xk = b.CreateSelect(alive, xk, zero);
    for (int bit = llo; bit < lhi; ++bit) {
      llvm::Value *y = fr.shfl(xk, ShflMode::Up, 1u << unsigned(bit), 0);
      llvm::Value *take = b.CreateICmpUGE(jl, b.getInt64(int64_t(1) << (bit - llo)));
      xk = b.CreateSelect(take, add(xk, y), xk);
    }
    x.push_back(xk);
  }
  // Warps and registers: add the totals of the earlier segments of the row.
  // Segment (kp, q): the axis bits kp in the register number and q in the
  // warp number; its total, written by the lane at its end, goes to
  // scratch[(kp * Q + q) * NOUT + o].
  int klo = std::max(ab->lo, ab->tbits), kshift = klo - ab->tbits;
  int64_t KR = ab->hi > ab->tbits ? int64_t(1) << (ab->hi - klo) : 1;
  int64_t Q = int64_t(1) << ab->warp_axis_bits();
  if (Q > 1 || KR > 1) {
    unsigned bytes = scratch_bytes(v.elem);
    note_scratch(KR * Q * ab->nout * bytes / 4);
    uint64_t last = 0; // the lane holding its segment's total
    for (int bit = llo; bit < lhi; ++bit)
      last |= uint64_t(1) << unsigned(bit);
    auto kp_of = [&](unsigned k) { return int64_t(k >> kshift) & (KR - 1); };
    std::vector<llvm::Value *> q(x.size()), o(x.size());
    for (unsigned k = 0; k < x.size(); ++k) {
      llvm::Value *e = elem_index(k);
      o[k] = fr.out_index(e);
      if (llvm::Value *alive = elem_alive(k, v.numel()))
        o[k] = b.CreateSelect(alive, o[k], b.getInt64(0));
      q[k] = b.CreateAnd(b.CreateLShr(e, uint64_t(ab->warp_lo())), b.getInt64(Q - 1));
      llvm::Value *writer = b.CreateICmpEQ(b.CreateAnd(lane, last), b.getInt64(int64_t(last)));
      if (llvm::Value *alive = elem_alive(k, v.numel()))
        writer = b.CreateAnd(writer, alive);
      llvm::Value *seg = b.CreateAdd(b.CreateMul(b.getInt64(kp_of(k)), b.getInt64(Q)), q[k]);
      llvm::Value *slot = b.CreateAdd(b.CreateMul(seg, b.getInt64(ab->nout)), o[k]);
      llvm::Value *val = x[k];
      if_then(writer, [&] { scratch_store(val, slot, bytes); });
    }
    m.barrier(b);
    // Per row of registers (k without its axis bits), in axis order: the
    // whole segments of earlier kp, then the earlier warps of this kp.
    for (unsigned k0 = 0; k0 < x.size(); ++k0) {
      if (kp_of(k0) != 0)
        continue;
      llvm::Value *running = zero;
      for (int64_t kp = 0; kp < KR; ++kp) {
        unsigned k = k0 | unsigned(kp << kshift);
        if (k >= x.size())
          break;
        llvm::Value *before = zero, *full = zero;
        for (int64_t qq = 0; qq < Q; ++qq) {
          llvm::Value *at = b.CreateAdd(o[k], b.getInt64((kp * Q + qq) * ab->nout));
          llvm::Value *t = scratch_load(ty, at, bytes);
          if (qq + 1 < Q)
            before = b.CreateSelect(b.CreateICmpULT(b.getInt64(qq), q[k]), add(before, t), before);
          full = add(full, t);
        }
        x[k] = add(x[k], add(running, before));
        if (kp + 1 < KR)
          running = add(running, full);
      }
    }
    m.barrier(b);
  }
  for (llvm::Value *xk : x) {
    if (v.elem == ElemType::F16)
      xk = b.CreateFPExt(b.CreateFPTrunc(xk, b.getHalfTy()), f32);
    r.regs.push_back(xk);
  }
  return r;
}

//===-- Serial fallbacks --------------------------------------------------===//
//
// Any shape: spill the operand to scratch, then the owner of each output
// element walks the axis in order.

namespace {

/// Row-major strides of `shape`.
std::vector<int64_t> strides_of(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    s[d - 1] = s[d] * shape[d];
  return s;
}

TileVal reduce_serial(Lowerer &L, const TileVal &v, int axis, Builtin op, ElemType out_elem,
                      llvm::Value *init,
                      const std::function<llvm::Value *(llvm::Value *, llvm::Value *)> &combine) {
  Builder &b = L.b;
  TileVal r;
  r.elem = out_elem;
  r.shape = v.shape;
  r.shape.erase(r.shape.begin() + axis);
  (void)op;
  llvm::Type *ty = L.reg_type(v.elem);
  L.spill_to_scratch(v);
  // Strides of the source; output element o reads src[o with axis := j].
  std::vector<int64_t> stride = strides_of(v.shape);
  unsigned nregs = r.shape.empty() ? 1 : L.regs_for(r.numel());
  for (unsigned k = 0; k < nregs; ++k) {
    llvm::AllocaInst *acc = L.entry_alloca(ty, "acc");
    b.CreateStore(init, acc);
    llvm::Value *alive = r.shape.empty() ? nullptr : L.elem_alive(k, r.numel());
    auto body = [&, k] {
      llvm::Value *base = b.getInt64(0);
      if (!r.shape.empty()) {
        std::vector<llvm::Value *> c = L.coords(L.elem_index(k), r.shape);
        for (size_t d = 0, o = 0; d < v.shape.size(); ++d) {
          if (int(d) == axis)
            continue;
          base = b.CreateAdd(base, b.CreateMul(c[o++], b.getInt64(stride[d])));
        }
      }
      L.for_range(
          b.getInt64(0), b.getInt64(v.shape[size_t(axis)]), b.getInt64(1), [&](llvm::Value *j) {
            llvm::Value *lin = b.CreateAdd(base, b.CreateMul(j, b.getInt64(stride[size_t(axis)])));
            llvm::Value *x = L.scratch_load(ty, lin, L.scratch_bytes(v.elem));
            b.CreateStore(combine(b.CreateLoad(ty, acc), x), acc);
          });
    };
    if (alive)
      L.if_then(alive, body);
    else
      body();
    r.regs.push_back(b.CreateLoad(ty, acc));
  }
  L.m.barrier(b);
  return r;
}

} // namespace

TileVal Lowerer::cumsum_serial(const TileVal &v, int axis) {
  TileVal r;
  r.elem = v.elem;
  r.shape = v.shape;
  llvm::Type *ty = reg_type(v.elem);
  bool fl = is_float(v.elem);
  std::vector<int64_t> stride = strides_of(v.shape);
  int64_t st = stride[size_t(axis)];
  spill_to_scratch(v);
  for (unsigned k = 0; k < v.regs.size(); ++k) {
    llvm::AllocaInst *acc = entry_alloca(ty, "scan");
    b.CreateStore(llvm::Constant::getNullValue(ty), acc);
    auto body = [&, k] {
      llvm::Value *e = elem_index(k);
      llvm::Value *ca = coords(e, v.shape)[size_t(axis)];
      // Element e sums e - j*st for j = 0 .. ca.
      llvm::Value *base = b.CreateSub(e, b.CreateMul(ca, b.getInt64(st)));
      for_range(b.getInt64(0), b.CreateAdd(ca, b.getInt64(1)), b.getInt64(1), [&](llvm::Value *j) {
        llvm::Value *x = scratch_load(ty, b.CreateAdd(base, b.CreateMul(j, b.getInt64(st))));
        llvm::Value *s = b.CreateLoad(ty, acc);
        b.CreateStore(fl ? b.CreateFAdd(s, x) : b.CreateAdd(s, x), acc);
      });
    };
    if (llvm::Value *alive = elem_alive(k, v.numel()))
      if_then(alive, body);
    else
      body();
    llvm::Value *x = b.CreateLoad(ty, acc);
    if (v.elem == ElemType::F16)
      x = b.CreateFPExt(b.CreateFPTrunc(x, b.getHalfTy()), f32);
    r.regs.push_back(x);
  }
  m.barrier(b);
  return r;
}

TileVal Lowerer::arg_reduce_serial(const TileVal &v, int axis, bool is_max) {
  TileVal r;
  r.elem = ElemType::I32;
  r.shape = v.shape;
  r.shape.erase(r.shape.begin() + axis);
  if (r.shape.empty())
    r.shape.push_back(1); // as sema types it
  llvm::Type *ty = reg_type(v.elem);
  bool fl = is_float(v.elem);
  std::vector<int64_t> stride = strides_of(v.shape);
  int64_t st = stride[size_t(axis)];
  std::vector<int64_t> rest = v.shape; // the source shape without `axis`
  rest.erase(rest.begin() + axis);
  spill_to_scratch(v);
  for (unsigned k = 0; k < regs_for(r.numel()); ++k) {
    llvm::AllocaInst *best = entry_alloca(ty, "best");
    llvm::AllocaInst *at = entry_alloca(i64, "best.at");
    b.CreateStore(llvm::Constant::getNullValue(ty), best);
    b.CreateStore(b.getInt64(0), at);
    auto body = [&, k] {
      llvm::Value *base = b.getInt64(0);
      if (!rest.empty()) {
        std::vector<llvm::Value *> c = coords(elem_index(k), rest);
        for (size_t d = 0, o = 0; d < v.shape.size(); ++d)
          if (int(d) != axis)
            base = b.CreateAdd(base, b.CreateMul(c[o++], b.getInt64(stride[d])));
      }
      b.CreateStore(scratch_load(ty, base), best);
      for_range(
          b.getInt64(1), b.getInt64(v.shape[size_t(axis)]), b.getInt64(1), [&](llvm::Value *j) {
            llvm::Value *x = scratch_load(ty, b.CreateAdd(base, b.CreateMul(j, b.getInt64(st))));
            llvm::Value *cur = b.CreateLoad(ty, best);
            // Strict comparison: the first extremum wins ties.
            llvm::Value *better = fl ? (is_max ? b.CreateFCmpOGT(x, cur) : b.CreateFCmpOLT(x, cur))
                                     : b.CreateICmp(int_predicate(is_max ? llvm::CmpInst::ICMP_SGT
                                                                         : llvm::CmpInst::ICMP_SLT,
                                                                  v.elem),
                                                    x, cur);
            b.CreateStore(b.CreateSelect(better, x, cur), best);
            b.CreateStore(b.CreateSelect(better, j, b.CreateLoad(i64, at)), at);
          });
    };
    if (llvm::Value *alive = elem_alive(k, r.numel()))
      if_then(alive, body);
    else
      body();
    r.regs.push_back(b.CreateTrunc(b.CreateLoad(i64, at), i32));
  }
  m.barrier(b);
  return r;
}

} // namespace etl
