//===- tile/smem.cpp - The shared-memory allocator of a task body ---------===//
//
// plan_shared (tile/passes.h). The ops that stage through shared memory
// (shared_need: a convert_layout the lowering cannot do in registers or by
// shuffles, a reshape that moves data, a reduction with warps along its
// axis, an FMA dot's operands, an atomic whose old values go to copies in
// other warps)
// each write their buffer, meet at a CTA barrier, read it, and then met at
// a second, trailing barrier so the next op could reuse the area from byte
// 0. Here every such op gets a buffer of its own:
//
//   1. positions: the ops of the body in pre-order from 0 (a `for` before
//      its body);
//   2. live range: a buffer is busy from its op to the next barrier every
//      thread passes after its reads. With its trailing barrier that is
//      the op itself. Without it, the range runs on along every path to
//      the next staging op (whose own barrier, after its writes, ends it):
//      a `for` or an `if` met on the way is covered whole (it may run zero
//      times, so its barriers do not count), the end of a loop body goes on
//      at the body's start (the next iteration) and after the loop (the
//      exit), the end of an `if` body after the `if`,
//      and the end of the task body stops it (the task loop's barrier,
//      lower/lower_kernel.cpp and lower_dynamic.cpp). A range that comes
//      back to its own op (a lone staging op in a loop) keeps the barrier;
//   3. offsets: first fit by decreasing size (pack_buffers), alignment 128
//      for the swizzled areas, 16 for the others; buffers whose ranges meet
//      never share a byte;
//   4. barriers: op by op, in body order, the trailing barrier is dropped
//      when the packing with that buffer's longer range still fits in what
//      the body took op by op (its largest buffer), so no CTA needs more
//      shared memory than before.
//
// The lowering (lower/lower_tile_*.cpp) stages each op at its buffer's
// offset and emits the trailing barrier only where `barrier_after` says.
// The scratch a body may take is what the compilation's targets allow
// (target/target.h, TargetInfo::smem_budget, less the header); a body
// whose buffers need more is reported (smem_over_budget), and the back end
// stops with a resource-limit error.
//
//===----------------------------------------------------------------------===//
#include "tile/passes.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace etl {

namespace {

int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/// Where each op sits: its position, the body that holds it and its index
/// there, and the innermost enclosing region, a `for` or an `if` (index
/// into Sites::loops).
struct Sites {
  struct Site {
    const std::vector<TOp> *body;
    size_t idx;
    int loop;
  };
  struct Loop {
    const TOp *op;
    int pos, end;
    const std::vector<TOp> *parent;
    size_t idx;
    int outer;
    bool repeats; ///< a `for` (its body's end goes on at its start)
  };
  std::map<const TOp *, int> pos;
  std::map<const TOp *, Site> site;
  std::vector<Loop> loops;
  int next = 0;

  void number(const std::vector<TOp> &body, int loop) {
    for (size_t i = 0; i < body.size(); ++i) {
      const TOp &op = body[i];
      pos[&op] = next++;
      site[&op] = {&body, i, loop};
      if (op.kind == TileOpKind::For || op.kind == TileOpKind::If) {
        int l = int(loops.size());
        loops.push_back({&op, pos[&op], 0, &body, i, loop, op.kind == TileOpKind::For});
        number(op.body, l);
        loops[size_t(l)].end = next - 1;
      }
    }
  }

  /// The positions from op `k` of `body` on up to the next staging op
  /// (included: its writes race with the reads before it); true when one
  /// was met, false when the body ended first.
  bool walk(const std::vector<TOp> &body, size_t k, std::vector<std::pair<int, int>> &segs) {
    for (size_t j = k; j < body.size(); ++j) {
      const TOp &op = body[j];
      int p = pos.at(&op);
      if (op.smem >= 0) {
        segs.push_back({p, p});
        return true;
      }
      if (op.kind == TileOpKind::For || op.kind == TileOpKind::If) {
        segs.push_back({p, loops[size_t(site_loop(op))].end});
        continue;
      }
      segs.push_back({p, p});
    }
    return false;
  }

  int site_loop(const TOp &for_op) const {
    for (size_t l = 0; l < loops.size(); ++l)
      if (loops[l].op == &for_op)
        return int(l);
    return -1;
  }

  /// The live range of op `op`'s buffer without its trailing barrier; false
  /// when it reaches the op again (the barrier must stay).
  bool range_without_barrier(const TOp &op, std::vector<std::pair<int, int>> &segs) {
    const int p = pos.at(&op);
    segs = {{p, p}};
    const Site &s = site.at(&op);
    const std::vector<TOp> *body = s.body;
    size_t k = s.idx + 1;
    int loop = s.loop;
    while (!walk(*body, k, segs) && loop >= 0) {
      const Loop &l = loops[size_t(loop)];
      if (l.repeats)
        walk(l.op->body, 0, segs); // the next iteration
      body = l.parent;             // the exit
      k = l.idx + 1;
      loop = l.outer;
    }
    for (size_t i = 1; i < segs.size(); ++i)
      if (segs[i].first <= p && p <= segs[i].second)
        return false;
    std::sort(segs.begin(), segs.end());
    std::vector<std::pair<int, int>> merged;
    for (const auto &sg : segs)
      if (!merged.empty() && sg.first <= merged.back().second + 1)
        merged.back().second = std::max(merged.back().second, sg.second);
      else
        merged.push_back(sg);
    segs = merged;
    return true;
  }
};

std::string op_name(const TOp &op) {
  std::string s = op_spelling(op.kind);
  if (op.kind == TileOpKind::Reduce)
    s += " " + op.attr;
  if (!op.results.empty())
    s += " -> %" + std::to_string(op.results[0]);
  return s;
}

void collect(TileFunc &f, std::vector<TOp> &body, Sites &sites, std::vector<TOp *> &rings) {
  for (TOp &op : body) {
    op.smem = -1;
    if (op.kind == TileOpKind::SmemAlloc) {
      rings.push_back(&op);
      continue;
    }
    int64_t align = 16;
    if (int64_t need = shared_need(f, op, align)) {
      op.smem = int(f.smem.size());
      SmemBuffer b;
      b.pos = sites.pos.at(&op);
      b.what = op_name(op);
      b.loc = op.loc;
      b.bytes = need;
      b.align = align;
      b.live = {{b.pos, b.pos}};
      f.smem.push_back(b);
    }
    if (op.kind == TileOpKind::For || op.kind == TileOpKind::If)
      collect(f, op.body, sites, rings);
  }
}

/// The op of each buffer, by position.
void ops_by_pos(std::vector<TOp> &body, const Sites &s, std::map<int, TOp *> &out) {
  for (TOp &op : body) {
    out[s.pos.at(&op)] = &op;
    ops_by_pos(op.body, s, out);
  }
}

} // namespace

int64_t shared_need(const TileFunc &f, const TOp &op, int64_t &align) {
  align = 16;
  auto layout = [&](int v) -> const Layout * {
    int l = f.values[size_t(v)].layout;
    return l < 0 ? nullptr : &f.layouts[size_t(l)];
  };
  switch (op.kind) {
  case TileOpKind::Convert: { // lower_tile_map.cpp: tile_convert
    const Layout *ld = layout(op.results[0]), *ls = layout(op.operands[0]);
    if (!ld || !ls)
      return 0;
    const TValue &out = f.values[size_t(op.results[0])];
    if (ld->lane == ls->lane && ld->warp == ls->warp) { // a renaming of registers?
      std::set<uint32_t> have;
      for (uint32_t r = 0; r < ls->num_regs(); ++r)
        have.insert(ls->apply(r, 0, 0));
      bool all = true;
      for (uint32_t r = 0; r < ld->num_regs() && all; ++r)
        all = have.count(ld->apply(r, 0, 0)) != 0;
      if (all)
        return 0;
    }
    if (out.elem != ElemType::I64 && shuffle_plan(*ls, *ld)) // 32-bit registers shuffle
      return 0;
    const int64_t bytes = out.elem == ElemType::I64 ? 8 : 4;
    align = 128;
    return round_up(out.numel(), 128 / bytes) * bytes;
  }
  case TileOpKind::Reshape: { // lower_tile_map.cpp: one that is not a renaming moves data
    const TValue &a = f.values[size_t(op.operands[0])], &out = f.values[size_t(op.results[0])];
    const Layout *ld = layout(op.results[0]), *ls = layout(op.operands[0]);
    if (!a.is_tile() || !out.is_tile() || !ld || !ls)
      return 0;
    std::optional<Layout> l = reshape_layout(*ls, out.shape);
    if (l && *l == *ld)
      return 0;
    const int64_t bytes = out.elem == ElemType::I64 ? 8 : 4;
    align = 128;
    return round_up(out.numel(), 128 / bytes) * bytes;
  }
  case TileOpKind::Atomic: { // lower_tile_memory.cpp: the old values, from writers to copies
    if (op.results.empty())
      return 0;
    const TValue &out = f.values[size_t(op.results[0])];
    const int64_t bytes = out.elem == ElemType::I64 ? 8 : 4;
    if (!out.is_tile()) // rank 0: thread 0's, for every thread
      return bytes;
    const Layout *l = layout(op.results[0]);
    if (!l || std::count(l->warp.begin(), l->warp.end(), 0u) == 0) // lanes: shuffles
      return 0;
    align = 128;
    return round_up(out.numel(), 128 / bytes) * bytes;
  }
  case TileOpKind::Reduce: // lower_tile_reduce.cpp
  case TileOpKind::ArgReduce:
  case TileOpKind::Scan:
    return reduction_scratch_bytes(f, op);
  case TileOpKind::Dot: { // lower_tile_dot.cpp: a (unless in registers) and b, line-aligned
    if (mma_dot(f, op)) { // lower_tile_mma.cpp: 16-bit (tf32: f32), swizzled (tile/mma.cpp)
      MmaStaging s = mma_staging(f, op);
      align = 128;
      return s.ok ? s.bytes : 0;
    }
    const TValue &av = f.values[size_t(op.operands[0])], &bv = f.values[size_t(op.operands[1])];
    const TValue &rv = f.values[size_t(op.results[0])];
    const Layout *la = layout(op.operands[0]), *lr = layout(op.results[0]);
    if (!fma_dot(f, op) || !la || !lr || rv.shape.size() != av.shape.size())
      return 0; // f32 words, whatever the operands' type (tile/mma.cpp; tf32 too)
    const bool gemv = av.shape.size() == 1;
    const int64_t K = bv.shape[0], line = 32;
    bool a_regs = !gemv && *la == dot_operand_layout(*lr, 0, av.shape) && K <= 64;
    if (a_regs) { // every (row, k) of this thread's outputs is one of its registers
      std::set<uint32_t> have;
      for (uint32_t i = 0; i < la->num_regs(); ++i)
        have.insert(la->apply(i, 0, 0));
      for (uint32_t r = 0; r < lr->num_regs() && a_regs; ++r) {
        uint32_t key = lr->apply(r, 0, 0) >> lr->field_offset(0) & ((1u << lr->lg[0]) - 1u);
        for (int64_t k = 0; k < K && a_regs; ++k)
          a_regs = have.count(la->pack({int64_t(key), k})) != 0;
      }
    }
    align = 128;
    const int64_t a_words = a_regs ? 0 : round_up(av.numel(), line);
    return (a_words + round_up(bv.numel(), line)) * 4;
  }
  default:
    return 0;
  }
}

int64_t reduction_scratch_bytes(const TileFunc &f, const TOp &op) {
  const TValue &a = f.values[size_t(op.operands[0])];
  if (a.layout < 0 || op.axis < 0)
    return 0;
  const Layout &la = f.layouts[size_t(a.layout)];
  const unsigned axis = unsigned(op.axis);
  if (axis >= la.rank())
    return 0;
  const int64_t bytes = a.elem == ElemType::I64 ? 8 : 4; // BodyLowerer::scratch_bytes
  auto words = [](int64_t n, int64_t w) { return (n * w + 3) / 4; };
  if (op.kind == TileOpKind::Scan) {
    std::optional<std::vector<AxisBit>> bits = axis_bits_of(la, axis);
    if (!bits)
      return 0;
    int64_t most = 0;
    for (unsigned p = 0; p < bits->size();) {
      if ((*bits)[p].space != 2) {
        ++p;
        continue;
      }
      unsigned mb = 0;
      while (p + mb < bits->size() && (*bits)[p + mb].space == 2)
        ++mb;
      int64_t slots = int64_t(1) << (mb + scan_slot_bits(la, *bits, p, mb).count());
      most = std::max(most, words(slots, bytes) * 4);
      p += mb;
    }
    return most;
  }
  const uint32_t field = ((1u << la.lg[axis]) - 1u) << la.field_offset(axis);
  unsigned wbits = 0;
  for (uint32_t w : la.warp)
    wbits += (w & field) ? 1 : 0;
  if (!wbits)
    return 0;
  const TValue &out = f.values[size_t(op.results[0])];
  unsigned sbits = 0;
  if (out.is_tile()) {
    if (out.layout < 0)
      return 0;
    sbits = fold_slot_bits(f.layouts[size_t(out.layout)]).count();
  }
  const int64_t slots = int64_t(1) << (wbits + sbits);
  int64_t total = words(slots, bytes);
  if (op.kind == TileOpKind::ArgReduce)
    total += words(slots, 4); // the i32 indices
  return total * 4;
}

bool live_overlap(const SmemBuffer &a, const SmemBuffer &b) {
  for (const auto &x : a.live)
    for (const auto &y : b.live)
      if (x.first <= y.second && y.first <= x.second)
        return true;
  return false;
}

int64_t pack_buffers(std::vector<SmemBuffer> &bufs) {
  std::vector<size_t> order(bufs.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return bufs[x].bytes > bufs[y].bytes; });
  std::vector<size_t> placed;
  int64_t total = 0;
  for (size_t i : order) {
    SmemBuffer &b = bufs[i];
    std::vector<std::pair<int64_t, int64_t>> busy; // [begin, end) of the live ones
    for (size_t j : placed)
      if (live_overlap(b, bufs[j]))
        busy.push_back({bufs[j].offset, bufs[j].offset + bufs[j].bytes});
    std::sort(busy.begin(), busy.end());
    int64_t at = 0;
    for (const auto &r : busy) {
      if (at + b.bytes <= r.first)
        break;
      at = std::max(at, round_up(r.second, std::max<int64_t>(b.align, 1)));
    }
    b.offset = at;
    total = std::max(total, at + b.bytes);
    placed.push_back(i);
  }
  return total;
}

bool smem_over_budget(const TileFunc &f) { return f.smem_planned && f.smem_bytes > f.smem_budget; }

void plan_shared(TileModule &m, const TargetInfo &target) {
  const int64_t budget = int64_t(target.smem_budget) - int64_t(kSmemHeaderBytes);
  for (TileFunc &f : m.funcs) {
    f.smem_budget = budget;
    Sites sites;
    f.smem.clear();
    sites.number(f.body, -1);
    std::vector<TOp *> rings;
    collect(f, f.body, sites, rings);
    f.smem_op_by_op = 0;
    for (const SmemBuffer &b : f.smem)
      f.smem_op_by_op = std::max(f.smem_op_by_op, b.bytes);
    std::map<int, TOp *> at;
    ops_by_pos(f.body, sites, at);
    pack_buffers(f.smem);
    for (size_t k = 0; k < f.smem.size(); ++k) {
      std::vector<SmemBuffer> trial = f.smem;
      if (!sites.range_without_barrier(*at.at(trial[k].pos), trial[k].live))
        continue;
      trial[k].barrier_after = false;
      if (pack_buffers(trial) <= f.smem_op_by_op)
        f.smem = std::move(trial);
    }
    f.smem_bytes = pack_buffers(f.smem);
    // Rings (tile/pipeline.cpp) lie past every other buffer, one after
    // another: copies land in them while the loop's other ops stage.
    for (TOp *r : rings) {
      const TValue &v = f.values[size_t(r->results[0])];
      SmemBuffer b;
      b.pos = sites.pos.at(r);
      b.what = op_name(*r);
      b.loc = r->loc;
      b.bytes = v.shape[0] * ring_slot_bytes(v);
      b.align = 128;
      // A TMA ring: its S mbarriers after the slots, and its slots 128-byte
      // aligned in shared memory itself (past the header), as
      // cp.async.bulk.tensor requires of its destination.
      const bool tma = r->attr == kTmaRing;
      if (tma)
        b.bytes += 8 * v.shape[0];
      b.live = {{b.pos, b.pos}};
      b.barrier_after = false;
      b.ring = true;
      b.offset = (f.smem_bytes + 127) / 128 * 128;
      if (tma)
        b.offset = (f.smem_bytes + kSmemHeaderBytes + 127) / 128 * 128 - kSmemHeaderBytes;
      if (f.wgmma && r->attr.empty()) { // a dot's ring: 1024-byte aligned in shared memory,
        // the base a 128-byte swizzle's descriptor needs (tile/mma.cpp wgmma_gap)
        const int64_t h = kSmemHeaderBytes;
        b.align = 1024;
        b.offset = (f.smem_bytes + h + 1023) / 1024 * 1024 - h;
      }
      f.smem_bytes = b.offset + b.bytes;
      r->smem = int(f.smem.size());
      f.smem.push_back(b);
    }
    f.smem_planned = true;
  }
}

} // namespace etl
