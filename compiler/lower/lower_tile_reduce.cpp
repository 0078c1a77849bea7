//===- lower/lower_tile_reduce.cpp - The tile IR path: reductions, scans --===//
//
// What this owns: the Reduction family of the tile IR: reduce (sum, max,
// min), argreduce (argmax, argmin) and scan (cumsum) along one axis. The
// operand's layout says where the axis lives (TILE-IR.md (d)).
//
// reduce and argreduce are one fold over parts: a part is (value) for
// reduce and (value, index) for argreduce, the index being the element's
// axis coordinate and the combine body_lowerer.h's arg_wins (first extremum on
// ties, the NaN rule of the reference), which is commutative, so the order
// of the steps does not change the answer:
//
//   1. registers: each thread combines its registers that differ only in
//      axis coordinates (padded elements take the identity);
//   2. lanes: one `shfl.sync.bfly` step per lane basis along the axis
//      (Machine::shuffle; sim runs it as a warp rendezvous);
//   3. warps: when warp bases lie along the axis, each warp's partial goes
//      to the shared scratch area (one writer per element and warp, warp
//      major, each element at the compact slot of its owner's hardware
//      bits, HwSlot: a request's lanes hit consecutive words), a barrier, every
//      thread combines the partials of its elements (warp by warp in a
//      loop when there are more than 32), a barrier.
//
// The result's layout is slice(operand, axis) (tile/layout.h): its register
// r holds the group of operand registers whose non-axis coordinates match.
// Unsigned elements compare unsigned; a narrow integer's sum or prefix
// wraps to its width at the end (the language's rules).
//
// scan walks the bits of the axis coordinate from the lowest (recursive
// doubling): after bits [0, p) each element holds s, the inclusive prefix
// inside its aligned block of 2^p elements, and t, that block's total.
// Bit p joins each block with its sibling: the upper half adds the lower
// half's total to s, both take the sum as t. Where bit p lives decides the
// exchange: a register bit is free (the sibling is another register of the
// thread), a lane bit is one `shfl.sync.bfly` of t, and a run of warp bits
// is one trip through scratch (block totals, a barrier, each element adds
// the totals of the earlier warps of its run, a barrier). The result keeps
// the operand's layout. Float sums are added in this tree order, not
// serially.
//
//===----------------------------------------------------------------------===//
#include "lower/body_lowerer.h"
#include "tile/passes.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <functional>
#include <map>

namespace etl {

namespace {

using Part = std::vector<llvm::Value *>;
using Combine = std::function<Part(const Part &, const Part &)>;

/// The compact scratch index of an element from its owner's hardware bits
/// (tile/layout.h's HwBits): lanes lowest, then warps, then registers.
struct HwSlot {
  HwBits bits; ///< the bits that count
  explicit HwSlot(const HwBits &h) : bits(h) {}
  /// The lane and warp part (i64), once per thread.
  llvm::Value *thread_part(BodyLowerer &L) const {
    Builder &b = L.b;
    llvm::Value *lane = b.CreateAnd(L.tid, b.getInt32(31));
    llvm::Value *warp = b.CreateLShr(L.tid, b.getInt32(kLaneBits));
    llvm::Value *at = b.getInt32(0);
    unsigned pos = 0;
    auto take = [&](llvm::Value *hw, uint32_t mask) {
      for (unsigned k = 0; k < 32; ++k)
        if (mask >> k & 1u) {
          llvm::Value *bit = b.CreateAnd(b.CreateLShr(hw, b.getInt32(k)), b.getInt32(1));
          at = b.CreateOr(at, b.CreateShl(bit, b.getInt32(pos++)));
        }
    };
    take(lane, bits.lanes);
    take(warp, bits.warps);
    return b.CreateZExt(at, L.i64);
  }
  /// The register part of register r (a constant).
  int64_t reg_part(uint32_t r) const {
    unsigned pos = unsigned(__builtin_popcount(bits.lanes) + __builtin_popcount(bits.warps));
    int64_t at = 0;
    for (unsigned k = 0; k < 32; ++k)
      if (bits.regs >> k & 1u)
        at |= int64_t(r >> k & 1u) << pos++;
    return at;
  }
};

/// Steps 1-3 of the file comment for `op` (reduce or argreduce): `in` has
/// one part per operand register (dead elements already the identity);
/// `bytes` is each component's scratch width. One part per result register.
std::vector<Part> fold_axis(BodyLowerer &L, const TOp &op, const std::vector<Part> &in,
                            const std::vector<unsigned> &bytes, const Combine &combine) {
  Builder &b = L.b;
  int av = op.operands[0], rv = op.results[0];
  const Layout &la = L.layout_of(av);
  const TValue &out = L.tf->values[size_t(rv)];
  unsigned axis = unsigned(op.axis);
  uint32_t field = ((1u << la.lg[axis]) - 1u) << la.field_offset(axis);

  // 1. In-thread, grouped by the non-axis part of the register coordinate.
  std::map<uint32_t, Part> part; // non-axis coordinate -> partial
  std::vector<uint32_t> order;
  for (uint32_t r = 0; r < la.num_regs(); ++r) {
    if (BodyLowerer::reg_replica(la, r))
      continue;
    uint32_t key = la.apply(r, 0, 0) & ~field;
    auto it = part.find(key);
    if (it == part.end()) {
      part.emplace(key, in.at(r));
      order.push_back(key);
    } else {
      it->second = combine(it->second, in.at(r));
    }
  }
  // 2. Butterflies over the lane bases along the axis.
  unsigned line = op.loc.begin.line;
  for (size_t k = 0; k < la.lane.size(); ++k)
    if (la.lane[k] & field)
      for (uint32_t key : order) {
        Part &x = part[key], y;
        for (llvm::Value *c : x)
          y.push_back(L.shuffle_reg(ShflMode::Bfly, c, b.getInt32(1u << k), line));
        x = combine(x, y);
      }
  // The result register of each group.
  const Layout *lo = out.is_tile() ? &L.layout_of(rv) : nullptr;
  auto out_key = [&](uint32_t key) -> uint32_t {
    if (!lo)
      return 0;
    std::vector<int64_t> c = la.unpack(key);
    c.erase(c.begin() + axis);
    return lo->pack(c);
  };
  std::map<uint32_t, Part> by_out;
  for (uint32_t key : order)
    by_out.emplace(out_key(key), part[key]);
  unsigned nout = lo ? lo->num_regs() : 1;
  std::vector<Part> res;
  for (uint32_t r = 0; r < nout; ++r) {
    auto it = by_out.find(lo ? lo->apply(r, 0, 0) : 0);
    if (it == by_out.end())
      throw LowerError("tile IR reduce: no partial for a result register");
    res.push_back(it->second);
  }
  // 3. Across warps whose bases lie along the axis: through scratch.
  uint32_t wmask = 0, lane_axis = 0, zero_hw = 0;
  unsigned wbits = 0;
  for (size_t k = 0; k < la.warp.size(); ++k)
    if (la.warp[k] & field) {
      wmask |= 1u << k;
      ++wbits;
    } else if (!la.warp[k]) {
      zero_hw |= 1u << (k + kLaneBits);
    }
  if (!wbits)
    return res;
  for (size_t k = 0; k < la.lane.size(); ++k)
    if ((la.lane[k] & field) || !la.lane[k])
      lane_axis |= 1u << k;
  // Each warp's partials go to [W][S] at the compact slot of the element
  // in the result's layout (HwSlot: the lanes of a request write and read
  // consecutive words).
  HwBits hb = lo ? fold_slot_bits(*lo) : HwBits{};
  HwSlot hs(hb);
  int64_t S = int64_t(1) << hb.count();
  int64_t W = int64_t(1) << wbits;
  // Component c's area starts at word base[c] ([W][S] elements each);
  // tile/smem.cpp's reduction_scratch_bytes sizes the whole.
  std::vector<int64_t> base;
  int64_t words = 0;
  for (unsigned w : bytes) {
    base.push_back(words);
    words += (S * W * w + 3) / 4;
  }
  if (words * 4 != reduction_scratch_bytes(*L.tf, op))
    throw LowerError("tile IR reduce: scratch size differs from reduction_scratch_bytes");
  L.note_scratch(words);
  // This warp's index among the warps along the axis.
  llvm::Value *warp = b.CreateLShr(L.tid, b.getInt32(kLaneBits));
  llvm::Value *wi = b.getInt64(0);
  unsigned j = 0;
  for (size_t k = 0; k < la.warp.size(); ++k)
    if (wmask >> k & 1u) {
      llvm::Value *bit = b.CreateAnd(b.CreateLShr(warp, b.getInt32(uint32_t(k))), b.getInt32(1));
      wi = b.CreateOr(wi, b.CreateShl(b.CreateZExt(bit, L.i64), b.getInt64(j++)));
    }
  llvm::Value *writer =
      b.CreateICmpEQ(b.CreateAnd(L.tid, b.getInt32(lane_axis | zero_hw)), b.getInt32(0));
  llvm::Value *mine = hs.thread_part(L);
  auto slot_of = [&](uint32_t r) { return b.CreateAdd(mine, b.getInt64(hs.reg_part(r))); };
  auto slot = [&](size_t c, llvm::Value *elem) { // element index in units of bytes[c]
    return b.CreateAdd(elem, b.getInt64(base[c] * 4 / bytes[c]));
  };
  for (uint32_t r = 0; r < nout; ++r) {
    if (lo && BodyLowerer::reg_replica(*lo, r))
      continue;
    llvm::Value *at = b.CreateAdd(b.CreateMul(wi, b.getInt64(S)), slot_of(r));
    llvm::Value *ok = writer;
    if (lo)
      if (llvm::Value *alive = L.reg_alive(*lo, r))
        ok = b.CreateAnd(ok, alive);
    const Part &x = res[r];
    L.if_then(ok, [&] {
      for (size_t c = 0; c < x.size(); ++c)
        L.scratch_store(x[c], slot(c, at), bytes[c]);
    });
  }
  L.m.barrier(b);
  std::vector<llvm::Value *> own;
  for (uint32_t r = 0; r < nout; ++r) {
    own.push_back(slot_of(r));
    if (lo)
      if (llvm::Value *alive = L.reg_alive(*lo, r)) // a dead element reads a written word
        own[r] = b.CreateSelect(alive, own[r], b.getInt64(0));
  }
  auto read = [&](uint32_t r, llvm::Value *off) {
    Part x;
    llvm::Value *at = b.CreateAdd(own[r], off);
    for (size_t c = 0; c < res[r].size(); ++c)
      x.push_back(L.scratch_load(res[r][c]->getType(), slot(c, at), bytes[c]));
    return x;
  };
  size_t ncomp = bytes.size();
  if (W * int64_t(nout * ncomp) <= 32) {
    for (uint32_t r = 0; r < nout; ++r) {
      Part acc;
      for (int64_t q = 0; q < W; ++q)
        acc = q ? combine(acc, read(r, b.getInt64(q * S))) : read(r, b.getInt64(0));
      res[r] = acc;
    }
  } else {
    // Many partials are read warp by warp in a loop: straight-line reads
    // let the scheduler hoist every load and keep them all live
    // (decode_layer's chunk: 64 registers for 8 outputs of 8 warps, spilled).
    std::vector<std::vector<llvm::AllocaInst *>> accs(nout);
    for (uint32_t r = 0; r < nout; ++r) {
      Part x = read(r, b.getInt64(0));
      for (llvm::Value *v : x) {
        accs[r].push_back(L.entry_alloca(v->getType(), "wacc"));
        b.CreateStore(v, accs[r].back());
      }
    }
    L.for_range(b.getInt64(1), b.getInt64(W), b.getInt64(1), [&](llvm::Value *q) {
      llvm::Value *off = b.CreateMul(q, b.getInt64(S));
      for (uint32_t r = 0; r < nout; ++r) {
        Part acc;
        for (llvm::AllocaInst *a : accs[r])
          acc.push_back(b.CreateLoad(a->getAllocatedType(), a));
        Part y = combine(acc, read(r, off));
        for (size_t c = 0; c < y.size(); ++c)
          b.CreateStore(y[c], accs[r][c]);
      }
    });
    for (uint32_t r = 0; r < nout; ++r) {
      res[r].clear();
      for (llvm::AllocaInst *a : accs[r])
        res[r].push_back(b.CreateLoad(a->getAllocatedType(), a));
    }
  }
  L.scratch_release(); // where tile/smem.cpp's plan keeps the barrier
  return res;
}

} // namespace

void BodyLowerer::tile_reduce(const TOp &op) {
  if (op.kind == TileOpKind::Scan)
    return tile_scan(op);
  int av = op.operands[0], rv = op.results[0];
  const TValue &a = tf->values[size_t(av)];
  const Layout &la = layout_of(av);
  bool fl = is_float(a.elem);
  llvm::Type *ty = reg_type(a.elem);
  const std::vector<llvm::Value *> &regs = tregs[size_t(av)];
  std::vector<Part> in;
  std::vector<Part> res;
  if (op.kind == TileOpKind::ArgReduce) {
    bool is_max = op.attr == "argmax", u = is_unsigned(a.elem);
    const unsigned w = fl ? 32 : ty->getIntegerBitWidth();
    llvm::Value *worst =
        fl ? llvm::ConstantFP::getInfinity(f32, is_max)
           : llvm::ConstantInt::get(
                 ty, is_max ? (u ? llvm::APInt::getMinValue(w) : llvm::APInt::getSignedMinValue(w))
                            : (u ? llvm::APInt::getMaxValue(w) : llvm::APInt::getSignedMaxValue(w)));
    llvm::Value *none = b.getInt32(INT32_MAX); // a dead element's index: loses every tie
    for (uint32_t r = 0; r < la.num_regs(); ++r) {
      llvm::Value *j = b.CreateTrunc(reg_coords(la, r)[size_t(op.axis)], i32);
      Part p{regs.at(r), j};
      if (llvm::Value *alive = reg_alive(la, r))
        p = {b.CreateSelect(alive, p[0], worst), b.CreateSelect(alive, p[1], none)};
      in.push_back(p);
    }
    res = fold_axis(*this, op, in, {scratch_bytes(a.elem), 4}, [&](const Part &p, const Part &q) {
      llvm::Value *w = arg_wins(a.elem, is_max, p[0], p[1], q[0], q[1]);
      return Part{b.CreateSelect(w, q[0], p[0]), b.CreateSelect(w, q[1], p[1])};
    });
    tregs[size_t(rv)].clear();
    for (const Part &p : res)
      tregs[size_t(rv)].push_back(p[1]);
    return;
  }
  if (op.kind != TileOpKind::Reduce)
    throw LowerError(std::string("tile IR op '") + op_spelling(op.kind) + "' has no lowering");
  bool sum = op.attr == "sum", mx = op.attr == "max";
  llvm::Value *identity;
  if (sum)
    identity = llvm::Constant::getNullValue(ty);
  else if (fl)
    identity = llvm::ConstantFP::getInfinity(f32, mx);
  else { // an unsigned type compares unsigned
    unsigned bits = ty->getIntegerBitWidth();
    bool u = is_unsigned(a.elem);
    identity = llvm::ConstantInt::get(
        ty, mx ? (u ? llvm::APInt::getMinValue(bits) : llvm::APInt::getSignedMinValue(bits))
               : (u ? llvm::APInt::getMaxValue(bits) : llvm::APInt::getSignedMaxValue(bits)));
  }
  auto combine = [&](llvm::Value *x, llvm::Value *y) -> llvm::Value * {
    if (sum)
      return fl ? b.CreateFAdd(x, y) : b.CreateAdd(x, y);
    if (fl)
      return b.CreateBinaryIntrinsic(mx ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum, x, y);
    return b.CreateSelect(
        b.CreateICmp(int_predicate(mx ? llvm::CmpInst::ICMP_SGT : llvm::CmpInst::ICMP_SLT, a.elem),
                     x, y),
        x, y);
  };
  for (uint32_t r = 0; r < la.num_regs(); ++r) {
    llvm::Value *x = regs.at(r);
    if (llvm::Value *alive = reg_alive(la, r))
      x = b.CreateSelect(alive, x, identity);
    in.push_back({x});
  }
  res = fold_axis(*this, op, in, {scratch_bytes(a.elem)},
                  [&](const Part &p, const Part &q) { return Part{combine(p[0], q[0])}; });
  tregs[size_t(rv)].clear();
  const ElemType out = tf->values[size_t(rv)].elem;
  for (const Part &p : res) // a sum of u8 wraps to u8
    tregs[size_t(rv)].push_back(wrap_int(p[0], out));
}

void BodyLowerer::tile_scan(const TOp &op) {
  int av = op.operands[0], rv = op.results[0];
  const TValue &a = tf->values[size_t(av)];
  const Layout &la = layout_of(av);
  if (layout_of(rv) != la)
    throw LowerError("tile IR scan: the result's layout is not the operand's");
  unsigned axis = unsigned(op.axis);
  std::optional<std::vector<AxisBit>> bits = axis_bits_of(la, axis);
  if (!bits)
    throw LowerError("tile IR scan: the axis bits are not single hardware bits");
  bool fl = is_float(a.elem);
  llvm::Type *ty = reg_type(a.elem);
  llvm::Value *zero = llvm::Constant::getNullValue(ty);
  auto add = [&](llvm::Value *x, llvm::Value *y) {
    return fl ? b.CreateFAdd(x, y) : b.CreateAdd(x, y);
  };
  uint32_t nregs = la.num_regs();
  std::vector<llvm::Value *> s, t; // per register: prefix in the block, block total
  for (uint32_t r = 0; r < nregs; ++r) {
    llvm::Value *x = tregs[size_t(av)].at(r);
    if (llvm::Value *alive = reg_alive(la, r))
      x = b.CreateSelect(alive, x, zero);
    s.push_back(x);
    t.push_back(x);
  }
  llvm::Value *lane = b.CreateAnd(tid, b.getInt32(31));
  auto hw_bit = [&](llvm::Value *hw, unsigned k) {
    return b.CreateICmpNE(b.CreateAnd(hw, b.getInt32(1u << k)), b.getInt32(0));
  };
  unsigned line = op.loc.begin.line, n = la.lg[axis];
  unsigned bytes = scratch_bytes(a.elem);
  for (unsigned p = 0; p < n;) {
    const AxisBit &ab = (*bits)[p];
    if (ab.space == 0) { // a register bit: the sibling is register r | 1 << k
      uint32_t m = 1u << ab.index;
      for (uint32_t r = 0; r < nregs; ++r)
        if (!(r & m)) {
          llvm::Value *tot = add(t[r], t[r | m]);
          s[r | m] = add(s[r | m], t[r]);
          t[r] = t[r | m] = tot;
        }
      ++p;
      continue;
    }
    if (ab.space == 1) { // a lane bit: the sibling is lane ^ (1 << k)
      llvm::Value *upper = hw_bit(lane, ab.index);
      for (uint32_t r = 0; r < nregs; ++r) {
        llvm::Value *y = shuffle_reg(ShflMode::Bfly, t[r], b.getInt32(1u << ab.index), line);
        s[r] = b.CreateSelect(upper, add(s[r], y), s[r]);
        // Lower half first, so both siblings hold the same float sum.
        t[r] = b.CreateSelect(upper, add(y, t[r]), add(t[r], y));
      }
      ++p;
      continue;
    }
    // A run of warp bits p .. p+mb-1: block totals through scratch, at
    // q * S + the block's compact slot (HwSlot over the hardware bits that
    // are not replicas, not axis bits below p and not the run's), q being
    // the run's warp bits in axis order.
    unsigned mb = 0;
    while (p + mb < n && (*bits)[p + mb].space == 2)
      ++mb;
    int64_t runs = int64_t(1) << mb;
    uint32_t low[3] = {0, 0, 0}; // per space: the hardware bits of axis bits < p
    for (unsigned i = 0; i < p; ++i)
      low[(*bits)[i].space] |= 1u << (*bits)[i].index;
    HwBits hb = scan_slot_bits(la, *bits, p, mb);
    HwSlot hs(hb);
    int64_t S = int64_t(1) << hb.count();
    if ((runs * S * bytes + 3) / 4 * 4 > reduction_scratch_bytes(*tf, op))
      throw LowerError("tile IR scan: scratch size exceeds reduction_scratch_bytes");
    note_scratch(reduction_scratch_bytes(*tf, op) / 4);
    llvm::Value *mine = hs.thread_part(*this);
    llvm::Value *warp = b.CreateLShr(tid, b.getInt32(kLaneBits));
    llvm::Value *q = b.getInt64(0);
    for (unsigned i = 0; i < mb; ++i) {
      llvm::Value *bit =
          b.CreateAnd(b.CreateLShr(warp, b.getInt32((*bits)[p + i].index)), b.getInt32(1));
      q = b.CreateOr(q, b.CreateShl(b.CreateZExt(bit, i64), b.getInt64(i)));
    }
    // One writer per block: the element whose axis bits below p are 0.
    llvm::Value *ok =
        b.CreateICmpEQ(b.CreateAnd(tid, b.getInt32(low[1] | low[2] << kLaneBits)), b.getInt32(0));
    if (llvm::Value *rw = replica_writer(la))
      ok = b.CreateAnd(ok, rw);
    llvm::Value *at = b.CreateAdd(b.CreateMul(q, b.getInt64(S)), mine);
    for (uint32_t r = 0; r < nregs; ++r) {
      if (reg_replica(la, r) || (r & low[0]))
        continue;
      llvm::Value *x = t[r], *w = b.CreateAdd(at, b.getInt64(hs.reg_part(r)));
      if_then(ok, [&] { scratch_store(x, w, bytes); });
    }
    m.barrier(b);
    for (uint32_t r = 0; r < nregs; ++r) {
      llvm::Value *before = zero, *full = zero;
      for (int64_t qq = 0; qq < runs; ++qq) {
        llvm::Value *tq =
            scratch_load(ty, b.CreateAdd(mine, b.getInt64(qq * S + hs.reg_part(r))), bytes);
        if (qq + 1 < runs)
          before = b.CreateSelect(b.CreateICmpULT(b.getInt64(qq), q), add(before, tq), before);
        full = add(full, tq);
      }
      s[r] = add(s[r], before);
      t[r] = full;
    }
    bool more = false; // another warp run reuses the buffer
    for (unsigned i = p + mb; i < n; ++i)
      more |= (*bits)[i].space == 2;
    if (more)
      m.barrier(b);
    else
      scratch_release();
    p += mb;
  }
  if (a.elem == ElemType::F16) // the result rounds once
    for (llvm::Value *&x : s)
      x = b.CreateFPExt(b.CreateFPTrunc(x, b.getHalfTy()), f32);
  for (llvm::Value *&x : s) // a narrow integer's prefix wraps to its width
    x = wrap_int(x, a.elem);
  tregs[size_t(rv)] = s;
}

} // namespace etl
