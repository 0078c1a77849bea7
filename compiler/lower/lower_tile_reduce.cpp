//===- lower/lower_tile_reduce.cpp - The tile IR path: reductions ---------===//
//
// What this owns: the Reduction family of the tile IR (sum, max, min along
// one axis; argmax/argmin and cumsum are not ported yet). The operand's
// layout says where the axis lives (TILE-IR.md (d)):
//
//   1. registers: each thread combines its registers that differ only in
//      axis coordinates (padded elements take the identity);
//   2. lanes: one `shfl.sync.bfly` step per lane basis along the axis
//      (Machine::shuffle; sim runs it as a warp rendezvous);
//   3. warps: when warp bases lie along the axis, each warp's partial goes
//      to the shared scratch area (one writer per element and warp; warp
//      major, so a request's lanes hit distinct banks), a barrier, every
//      thread combines the partials of its elements (warp by warp in a
//      loop when there are more than 32), a barrier (where tile/smem.cpp's
//      plan keeps it: scratch_release).
//
// The result's layout is slice(operand, axis) (tile/layout.h): its register
// r holds the group of operand registers whose non-axis coordinates match.
//
//===----------------------------------------------------------------------===//
#include "lower/lowerer.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <map>

namespace etl {

void Lowerer::tile_reduce(const TOp &op) {
  if (op.kind != TileOpKind::Reduce)
    throw LowerError(std::string("tile IR op '") + op_spelling(op.kind) + "' is not ported");
  int av = op.operands[0], rv = op.results[0];
  const TValue &a = tf->values[size_t(av)];
  const TValue &out = tf->values[size_t(rv)];
  const Layout &la = layout_of(av);
  unsigned axis = unsigned(op.axis);
  bool fl = is_float(a.elem);
  llvm::Type *ty = reg_type(a.elem);
  bool sum = op.attr == "sum", mx = op.attr == "max";
  llvm::Value *identity;
  if (sum)
    identity = llvm::Constant::getNullValue(ty);
  else if (fl)
    identity = llvm::ConstantFP::getInfinity(f32, mx);
  else {
    unsigned bits = ty->getIntegerBitWidth();
    identity = llvm::ConstantInt::get(ty, mx ? llvm::APInt::getSignedMinValue(bits)
                                             : llvm::APInt::getSignedMaxValue(bits));
  }
  auto combine = [&](llvm::Value *x, llvm::Value *y) -> llvm::Value * {
    if (sum)
      return fl ? b.CreateFAdd(x, y) : b.CreateAdd(x, y);
    if (fl)
      return b.CreateBinaryIntrinsic(mx ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum, x, y);
    return b.CreateSelect(mx ? b.CreateICmpSGT(x, y) : b.CreateICmpSLT(x, y), x, y);
  };
  uint32_t field = ((1u << la.lg[axis]) - 1u) << la.field_offset(axis);

  // 1. In-thread, grouped by the non-axis part of the register coordinate.
  const std::vector<llvm::Value *> &in = tregs[size_t(av)];
  std::map<uint32_t, llvm::Value *> part; // non-axis coordinate -> partial
  std::vector<uint32_t> order;
  for (uint32_t r = 0; r < la.num_regs(); ++r) {
    if (reg_replica(la, r))
      continue;
    llvm::Value *x = in.at(r);
    if (llvm::Value *alive = reg_alive(la, r))
      x = b.CreateSelect(alive, x, identity);
    uint32_t key = la.apply(r, 0, 0) & ~field;
    auto it = part.find(key);
    if (it == part.end()) {
      part.emplace(key, x);
      order.push_back(key);
    } else {
      it->second = combine(it->second, x);
    }
  }
  // 2. Butterflies over the lane bases along the axis.
  unsigned line = op.loc.begin.line;
  for (size_t k = 0; k < la.lane.size(); ++k)
    if (la.lane[k] & field)
      for (uint32_t key : order) {
        llvm::Value *&x = part[key];
        x = combine(x, m.shuffle(b, ShflMode::Bfly, x, b.getInt32(1u << k), 31, 0xFFFFFFFFu, line));
      }
  // The result register of each group.
  std::vector<bool> none(la.rank(), false);
  std::vector<llvm::Value *> res;
  const Layout *lo = out.is_tile() ? &layout_of(rv) : nullptr;
  auto out_key = [&](uint32_t key) -> uint32_t {
    if (!lo)
      return 0;
    std::vector<int64_t> c = la.unpack(key);
    c.erase(c.begin() + axis);
    return lo->pack(c);
  };
  std::map<uint32_t, llvm::Value *> by_out;
  for (uint32_t key : order)
    by_out.emplace(out_key(key), part[key]);
  unsigned nout = lo ? lo->num_regs() : 1;
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
  if (wbits) {
    for (size_t k = 0; k < la.lane.size(); ++k)
      if ((la.lane[k] & field) || !la.lane[k])
        lane_axis |= 1u << k;
    unsigned bytes = scratch_bytes(out.elem);
    int64_t nelem = out.is_tile() ? out.numel() : 1;
    int64_t W = int64_t(1) << wbits;
    note_scratch(nelem * W * bytes / 4);
    // This warp's index among the warps along the axis.
    llvm::Value *warp = b.CreateLShr(tid, b.getInt32(kLaneBits));
    llvm::Value *wi = b.getInt64(0);
    unsigned j = 0;
    for (size_t k = 0; k < la.warp.size(); ++k)
      if (wmask >> k & 1u) {
        llvm::Value *bit = b.CreateAnd(b.CreateLShr(warp, b.getInt32(uint32_t(k))), b.getInt32(1));
        wi = b.CreateOr(wi, b.CreateShl(b.CreateZExt(bit, i64), b.getInt64(j++)));
      }
    llvm::Value *writer =
        b.CreateICmpEQ(b.CreateAnd(tid, b.getInt32(lane_axis | zero_hw)), b.getInt32(0));
    auto lin_of = [&](uint32_t r) -> llvm::Value * {
      if (!lo)
        return b.getInt64(0);
      std::vector<llvm::Value *> c = reg_coords(*lo, r);
      llvm::Value *lin = b.getInt64(0);
      for (size_t d = 0; d < c.size(); ++d)
        lin = b.CreateAdd(b.CreateMul(lin, b.getInt64(uint64_t(out.shape[d]))), c[d]);
      if (llvm::Value *alive = reg_alive(*lo, r))
        lin = b.CreateSelect(alive, lin, b.getInt64(0));
      return lin;
    };
    for (uint32_t r = 0; r < nout; ++r) {
      if (lo && reg_replica(*lo, r))
        continue;
      // Warp-major ([W][nelem]): the lanes of one request write (and
      // later read) consecutive words, so they fall in distinct banks.
      llvm::Value *at = b.CreateAdd(b.CreateMul(wi, b.getInt64(uint64_t(nelem))), lin_of(r));
      llvm::Value *ok = writer;
      if (lo)
        if (llvm::Value *alive = reg_alive(*lo, r))
          ok = b.CreateAnd(ok, alive);
      llvm::Value *x = res[r];
      if_then(ok, [&] { scratch_store(x, at, bytes); });
    }
    m.barrier(b);
    // Many partials (W x nout over 32) are read warp by warp in a loop: a
    // straight-line read lets the scheduler hoist every load and keep them
    // all live (64 registers for 8 outputs of 8 warps: decode_layer's
    // chunk spilled). Fewer stay straight-line.
    if (W * int64_t(nout) <= 32) {
      for (uint32_t r = 0; r < nout; ++r) {
        llvm::Value *lin = lin_of(r);
        llvm::Value *acc = nullptr;
        for (int64_t q = 0; q < W; ++q) {
          llvm::Value *x =
              scratch_load(ty, b.CreateAdd(lin, b.getInt64(uint64_t(q * nelem))), bytes);
          acc = acc ? combine(acc, x) : x;
        }
        res[r] = acc;
      }
    } else {
      std::vector<llvm::Value *> lins;
      std::vector<llvm::AllocaInst *> accs;
      for (uint32_t r = 0; r < nout; ++r) {
        lins.push_back(lin_of(r));
        accs.push_back(entry_alloca(ty, "wacc"));
        b.CreateStore(scratch_load(ty, lins.back(), bytes), accs.back());
      }
      for_range(b.getInt64(1), b.getInt64(uint64_t(W)), b.getInt64(1), [&](llvm::Value *q) {
        llvm::Value *off = b.CreateMul(q, b.getInt64(uint64_t(nelem)));
        for (uint32_t r = 0; r < nout; ++r) {
          llvm::Value *x = scratch_load(ty, b.CreateAdd(lins[r], off), bytes);
          b.CreateStore(combine(b.CreateLoad(ty, accs[r]), x), accs[r]);
        }
      });
      for (uint32_t r = 0; r < nout; ++r)
        res[r] = b.CreateLoad(ty, accs[r]);
    }
    scratch_release();
  }
  tregs[size_t(rv)] = res;
}

} // namespace etl
