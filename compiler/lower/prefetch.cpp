//===- lower/prefetch.cpp - Loads issued before a task's waits ------------===//
//
// What this owns: the weight prefetch of the Event Tensor paper, inferred.
// A task that waits on events may issue, BEFORE its waits, the loads that do
// not depend on them, so a decode task streams its weight tile while the
// activations it waits for are still being produced. A load qualifies when
//   (a) its tensor is written by no task of the kernel (no store, no atomic:
//       written_tensors) -- a kernel input or weight, or a buffer only the
//       runtime fills (`= zeros`) -- so no task's store can race with it;
//   (b) every index, slice bound and keyword argument (pad) is a function of
//       the task's domain variables, constants, dims and scalar parameters:
//       no loop variable, no local, no element read of tensor data;
//   (c) it is a top-level `load` op of the tile IR without mask or gather
//       (a cast and the rest of its statement stay after the waits); ops
//       between hoisted ones may be anything;
//   (d) the task has waits, is not `schedule dynamic` (pushed once ready),
//       and no hazard barrier precedes the load (sema/hazards.h). In a
//       kernel with dynamic groups a static task's wait runs dynamic items:
//       the loads are issued again after each (lower_kernel.cpp's
//       prefetch_reissue), so their registers never live across an item
//       (decode_layer's o_sum tile spilled 16 bytes on sm_90 when they did);
//   (e) the hoisted tiles together hold at most kPrefetchRegs registers per
//       thread (the layout's register count), in program order
//       until the budget is spent, so the registers live across the wait do
//       not push the body into spills.
// lower_kernel.cpp emits the chosen ops right after the domain decode and
// before the waits, and the body skips them.
//
// Loops (loop_prefetch): in a `for`, the top-level loads
// of never-written tensors whose slices name only task variables, dims and
// the loop variables in scope are software-pipelined: tile_for
// (lower_tile_control.cpp) issues iteration lo's before the loop (if it
// runs) and, at the top of iteration k, those of k + step (if it runs)
// before k's compute, carried into the next iteration in phis; at most
// kPipelineRegs registers per thread of them per loop (two copies live);
// not the operands of tensor-core dots, which are staged in shared memory.
// Both are off with ETL_PREFETCH=0.
//
// Rings (ring_prefetch): a K loop that tile/pipeline.cpp turned into a
// cp.async ring starts with a prologue at the body's top level (smem.alloc,
// then per stage s < S - 1 the copies of iteration lo + s step and a
// commit). Its copies of tensors no task writes, sliced by task variables
// and dims only, are issued before the waits, each stage committed as its
// own group, so the weights stream while the activations are not ready;
// the body's commits stay (now of the rest, or empty). Why the loop's
// `async.wait S - 2` still covers stage k at iteration k: a wait_group N
// completes every group but the N newest, and the hoisted groups are older
// than the body's, so the newest N are the same groups as before. The
// rings lie past every other shared buffer (tile/smem.cpp), so nothing the
// body does before the loop touches their bytes. In a kernel with dynamic
// groups the wait may run a dynamic item, whose shared memory overlaps the
// rings: every thread waits for its copies and the CTA meets at a barrier
// before the item, and the copies are issued again after it
// (lower_dynamic.cpp, emit_static_wait_loop). Off in kernels with dynamic
// groups unless ETL_RING_PREFETCH=all (lower_kernel.cpp's emit_prefetch
// says why).
//
//===----------------------------------------------------------------------===//
#include "lower/plan.h"

#include "tile/passes.h"

#include <algorithm>

namespace etl {

namespace {

/// A top-level `load` op of a never-written tensor, without mask, gather or
/// hazard barrier, whose slice names only symbols in `known`; its registers
/// per thread, or 0 when it does not qualify.
int64_t hoistable_op(const TOp &op, const TileFunc &f, const std::set<int> &written,
                     const std::set<std::string> &known) {
  if (op.kind != TileOpKind::Load || op.tensor < 0 || written.count(op.tensor) ||
      written.count(-1) || op.mask >= 0 || !op.operands.empty() || op.barrier_before ||
      op.results.size() != 1)
    return 0;
  for (const SlicePart &p : op.parts) {
    if (p.kind == SlicePart::Gather || !p.at)
      return 0;
    for (const std::string &n : p.at->symbols())
      if (!known.count(n))
        return 0;
  }
  const TValue &v = f.values[size_t(op.results[0])];
  if (!v.is_tile() || v.layout < 0 || size_t(v.layout) >= f.layouts.size())
    return 0;
  return int64_t(f.layouts[size_t(v.layout)].num_regs());
}

/// The loads of `body` hoistable_op accepts, in order, until `budget`
/// registers per thread are spent.
std::vector<const TOp *> hoistable_ops(const std::vector<TOp> &body, const TileFunc &f,
                                       const std::set<int> &written,
                                       const std::set<std::string> &known, int64_t budget) {
  std::vector<const TOp *> out;
  int64_t regs = 0;
  for (const TOp &op : body) {
    int64_t r = hoistable_op(op, f, written, known);
    if (!r)
      continue;
    if (regs + r > budget)
      break;
    regs += r;
    out.push_back(&op);
  }
  return out;
}

} // namespace

std::vector<const TOp *> tile_prefetch(const TileFunc &f, const KernelDecl &k,
                                       const std::set<int> &written) {
  std::set<std::string> known(f.vars.begin(), f.vars.end());
  for (const DimDecl &d : k.dims)
    known.insert(d.name);
  return hoistable_ops(f.body, f, written, known, kPrefetchRegs);
}

RingPrefetch ring_prefetch(const TileFunc &f, const KernelDecl &k, const std::set<int> &written) {
  RingPrefetch out;
  if (written.count(-1))
    return out;
  std::set<std::string> known(f.vars.begin(), f.vars.end());
  for (const DimDecl &d : k.dims)
    known.insert(d.name);
  auto named = [&](const std::optional<Sym> &s) {
    if (!s)
      return false;
    for (const std::string &n : s->symbols())
      if (!known.count(n))
        return false;
    return true;
  };
  std::vector<const TOp *> allocs;
  bool open = false; // a hoisted copy not yet committed
  for (const TOp &op : f.body) {
    if (op.kind == TileOpKind::SmemAlloc) {
      allocs.push_back(&op);
      continue;
    }
    if (op.kind == TileOpKind::AsyncCommit && open) {
      out.ops.push_back(&op);
      ++out.stages;
      open = false;
      continue;
    }
    if (op.kind != TileOpKind::AsyncCopy || op.tensor < 0 || written.count(op.tensor) ||
        op.barrier_before || !named(op.lo) || !named(op.hi) || !named(op.sym))
      continue;
    bool ok = true;
    for (const SlicePart &p : op.parts)
      ok = ok && p.kind != SlicePart::Gather && p.at && named(p.at);
    if (!ok)
      continue;
    for (const TOp *a : allocs) // its ring's alloc, once, before its first copy
      if (!op.operands.empty() && a->results[0] == op.operands[0] &&
          std::find(out.ops.begin(), out.ops.end(), a) == out.ops.end())
        out.ops.push_back(a);
    out.ops.push_back(&op);
    open = true;
  }
  return out;
}

std::vector<const TOp *> loop_prefetch(const TOp &loop, const TileFunc &f, const KernelDecl &k,
                                       const std::set<int> &written,
                                       const std::set<std::string> &outer) {
  std::set<std::string> known(f.vars.begin(), f.vars.end());
  for (const DimDecl &d : k.dims)
    known.insert(d.name);
  known.insert(outer.begin(), outer.end());
  known.insert(loop.var);
  std::vector<const TOp *> ops = hoistable_ops(loop.body, f, written, known, kPipelineRegs);
  // Operands of tensor-core dots (through a transpose too) go to shared
  // memory where they are used: a copy one iteration ahead would hold
  // registers that the accumulators need (FlashAttention-2's loop).
  std::set<int> mma_ops;
  for (const TOp &op : loop.body)
    if (mma_dot(f, op))
      mma_ops.insert(op.operands.begin(), op.operands.end());
  for (const TOp &op : loop.body)
    if (op.kind == TileOpKind::Transpose && mma_ops.count(op.results[0]))
      mma_ops.insert(op.operands[0]);
  std::vector<const TOp *> keep;
  for (const TOp *op : ops)
    if (!mma_ops.count(op->results.empty() ? -1 : op->results[0]))
      keep.push_back(op);
  return keep;
}

} // namespace etl
