//===- lower/lower_tma.cpp - TMA rings: cp.async.bulk.tensor and mbarriers -===//
//
// What this owns: the lowering of tile/pipeline.cpp's TMA rings (kTmaRing)
// on a machine with TMA (Machine::has_tma: sm_90a, and sim): the ring ops of
// tile_async (lower_tile_mma.cpp) take these paths instead of cp.async.
//
//   smem.alloc    thread 0 initialises the ring's S mbarriers (arrival count
//                 1, after its slots), fence.proxy.async (the inits, and
//                 earlier generic stores to the slots, before the async
//                 proxy's writes), then a barrier: every thread sees them;
//   async.copy    if lo < hi, thread 0 arrives on slot s's mbarrier with the
//                 box's bytes as its transaction count and issues the TMA
//                 copy of the box at the slice's start (coordinates innermost
//                 first; the edges are the tensor map's zero fill), which
//                 completes those bytes on the same mbarrier;
//   smem.view     every thread waits for the phase of slot s's mbarrier
//                 whose parity the loop carries (tile_for: it flips each time
//                 the slot counter wraps), then reads the slot (tile_ring_read);
//   async.commit, async.wait N
//                 nothing, when the loop's rings are all TMA rings (no
//                 cp.async was issued: tile_cp_async_copies);
//   async.wait 0  after the loop: a barrier (no thread still polls), and
//                 thread 0 invalidates the mbarriers, whose bytes other
//                 bodies use for other things.
//
// Phases: iteration n of the loop (n = (k - lo) / step) uses slot n mod S in
// its phase n / S, parity (n / S) & 1; the mbarriers are initialised at
// every entry of the loop, so the parity starts at 0. Every copy issued is
// waited for (copy n is issued iff n < the trip count, and iteration n waits
// for it), so the barriers are idle when they are invalidated. The barrier
// at the top of each iteration (the cp.async ring's) still orders every
// warp's reads of slot (n - 1) mod S before thread 0 refills it.
//
//===----------------------------------------------------------------------===//
#include "lower/body_lowerer.h"

namespace etl {

llvm::Value *BodyLowerer::tma_barrier(int ring, llvm::Value *slot) {
  const int64_t at = tile_tma_rings.at(ring).first;
  return scratch_ptr(b.CreateAdd(b.getInt64(uint64_t(at)), b.CreateMul(slot, b.getInt64(8))), 1);
}

void BodyLowerer::tma_ring_init(int ring) {
  if ((int64_t(kSmemScratch) + scratch_floor + tile_rings.at(ring).first) % 128 != 0)
    throw LowerError("tile IR TMA ring not 128-byte aligned in shared memory");
  const int64_t stages = tile_tma_rings.at(ring).second;
  if_then(b.CreateICmpEQ(tid, b.getInt32(0)), [&] {
    for (int64_t s = 0; s < stages; ++s)
      m.mbarrier_init(b, tma_barrier(ring, b.getInt64(uint64_t(s))), 1);
    m.fence_proxy_async(b);
  });
  m.barrier(b);
}

void BodyLowerer::tma_copy(const TOp &op, llvm::Value *slot) {
  const int ring = op.operands.at(0);
  const TValue &v = tf->values[size_t(ring)];
  const int64_t bytes = int64_t(byte_size(v.elem)) * v.numel() / v.shape[0];
  const unsigned map_slot = arg_layout(*plan.kernel).tma_map(unsigned(op.axis));
  const bool was = invariant_args; // the bounds: loaded once before the loop
  invariant_args = true;
  llvm::Value *go = b.CreateICmpSLT(sym_value(*op.lo), sym_value(*op.hi));
  std::vector<llvm::Value *> coords; // innermost first
  for (auto p = op.parts.rbegin(); p != op.parts.rend(); ++p)
    coords.push_back(b.CreateTrunc(sym_value(*p->at), i32));
  invariant_args = was;
  llvm::Value *dst =
      scratch_ptr(b.CreateAdd(b.getInt64(uint64_t(tile_rings.at(ring).first)),
                              b.CreateMul(slot, b.getInt64(uint64_t(tile_rings.at(ring).second)))),
                  1);
  llvm::Value *map = b.CreateGEP(i64, args, b.getInt64(map_slot));
  if_then(b.CreateAnd(go, b.CreateICmpEQ(tid, b.getInt32(0))), [&] {
    llvm::Value *bar = tma_barrier(ring, slot);
    m.mbarrier_arrive_expect_tx(b, bar, b.getInt32(uint32_t(bytes)));
    m.tma_load(b, dst, map, coords, bar);
  });
}

void BodyLowerer::tma_wait(const TOp &view) {
  const std::string s = view.sym->str();
  for (const auto &[var, c] : tile_ring_counters)
    if (s == c.view && c.phase)
      return m.mbarrier_wait(b, tma_barrier(view.operands.at(0), ring_slot_value(*view.sym)),
                             c.phase, view.loc.begin.line);
  throw LowerError("tile IR TMA ring view outside its loop");
}

void BodyLowerer::tma_drain() {
  if (tile_tma_rings.empty())
    return;
  m.barrier(b);
  if_then(b.CreateICmpEQ(tid, b.getInt32(0)), [&] {
    for (const auto &[ring, bars] : tile_tma_rings)
      for (int64_t s = 0; s < bars.second; ++s)
        m.mbarrier_inval(b, tma_barrier(ring, b.getInt64(uint64_t(s))));
  });
  tile_tma_rings.clear();
}

} // namespace etl
