//===- tile/pipeline.cpp - K loops as cp.async rings, in the IR -----------===//
//
// What this owns: pipeline_loops (tile/passes.h), the pass that turns the
// operand loads of tensor-core dots in a `for` into a ring of S slots in
// shared memory filled by cp.async S - 1 iterations ahead (Triton's
// software pipelining, written as ops of the Async family so that the
// lowering only translates them):
//
//   for k in lo .. hi step s {             %ra = smem.alloc [S, M, K]
//     %a = load A[.. k ..]                 async.copy %ra[0] <- A[.. lo ..] if lo < hi
//     %b = load B[.. k ..]        ==>      async.commit  ... (S - 1 times)
//     %d = dot %a, %b                      for k in lo .. hi step s {
//     ...                                    async.wait S - 2
//   }                                        barrier
//                                            async.copy %ra[slot(k + (S-1) s)] <- A[.. k + (S-1) s ..]
//                                              if k + (S-1) s < hi
//                                            async.commit
//                                            %a = smem.view %ra[slot(k)]
//                                            %d = dot %a, %b ...
//                                          }
//                                          async.wait 0
//
// slot(e) = ((e - lo) / s) mod S. The wait leaves at most S - 2 groups in
// flight, so iteration k's copies have landed for the issuing thread; the
// barrier makes every thread's visible, and proves every warp done with
// iteration k - 1's reads of the slot that k + S - 1's copies refill. A
// copy past hi is not issued but its group is still committed (an empty
// group keeps the counts uniform).
//
// A load qualifies when it stands at the top level of the loop body and
// its value is used only as a tensor-core dot's operand (tile/mma.cpp; b
// through a transpose too): a 2-D slice of f16/bf16 (f32 for a tf32 dot)
// whose rows run contiguously (tile/memory.cpp's facts; a chunk not proven 16-byte
// aligned is tested when copied, and moves element by element if not), with
// no mask, pad or gather, no hazard barrier before it, of a tensor this
// body does not write, its indices naming only the loop variable and what
// is fixed outside the loop. S is the largest of kMaxStages .. 2 whose
// rewritten body plan_shared fits in the budget (tile/smem.cpp places the
// rings past every other buffer); 2 where a dot of the loop reads its a
// from registers.
//
//===----------------------------------------------------------------------===//
#include "tile/passes.h"

#include <optional>
#include <set>

namespace etl {

namespace {

int64_t line_bytes(int64_t n) { return (n + 127) / 128 * 128; }

void collect_writes(const std::vector<TOp> &body, std::set<int> &out) {
  for (const TOp &op : body) {
    if (op_family(op.kind) == OpFamily::Memory && op.kind != TileOpKind::Load)
      out.insert(op.tensor);
    collect_writes(op.body, out);
  }
}

/// Symbols an element read inside `body` binds.
void bound_inside(const std::vector<TOp> &body, std::set<std::string> &out) {
  for (const TOp &op : body) {
    if (op.kind == TileOpKind::Load && !op.attr.empty())
      out.insert(op.attr);
    bound_inside(op.body, out);
  }
}

void users(const std::vector<TOp> &body, int v, std::vector<const TOp *> &out) {
  for (const TOp &op : body) {
    for (int o : op.operands)
      if (o == v)
        out.push_back(&op);
    for (const SlicePart &p : op.parts)
      if (p.kind == SlicePart::Gather && p.gather == v)
        out.push_back(&op);
    users(op.body, v, out);
  }
}

struct Pipeliner {
  TileModule &m;
  TileFunc &f;
  const TargetInfo &target;
  std::set<int> written;
  std::vector<LoopNotPipelined> skipped;

  /// Is every use of `v` an mma dot's operand `which` (0: a, 1: b) that
  /// stages it (not an a in registers), b through a transpose too?
  bool dot_operand_only(int v) {
    std::vector<const TOp *> us;
    users(f.body, v, us);
    if (us.empty())
      return false;
    for (const TOp *u : us) {
      if (u->kind == TileOpKind::Transpose) {
        std::vector<const TOp *> uu;
        users(f.body, u->results[0], uu);
        if (uu.empty())
          return false;
        for (const TOp *d : uu)
          if (!mma_dot(f, *d) || !mma_staging(f, *d).ok || d->operands[0] == u->results[0])
            return false;
        continue;
      }
      if (!mma_dot(f, *u))
        return false;
      const MmaStaging st = mma_staging(f, *u);
      if (!st.ok || (u->operands[0] == v && st.a_regs))
        return false;
    }
    return true;
  }

  bool qualifies(const TOp &op, const std::set<std::string> &inner) {
    if (op.kind != TileOpKind::Load || op.tensor < 0 || written.count(op.tensor) ||
        op.mask >= 0 || !op.pad.empty() || op.pad_value >= 0 || !op.attr.empty() || !op.operands.empty() ||
        op.barrier_before || op.results.size() != 1)
      return false;
    for (const SlicePart &p : op.parts) {
      if (p.kind == SlicePart::Gather || !p.at)
        return false;
      for (const std::string &n : p.at->symbols())
        if (inner.count(n))
          return false;
    }
    const TValue &v = f.values[size_t(op.results[0])];
    // 16-byte chunks of a row: 8 f16/bf16, or 4 f32 (dot_operand_only:
    // only a tf32 dot takes f32 operands on tensor cores).
    if (v.shape.size() != 2 || v.shape[1] % 8 != 0 ||
        (v.elem != ElemType::F16 && v.elem != ElemType::BF16 && v.elem != ElemType::F32) ||
        op.mem.fast_dim != 1)
      return false;
    return dot_operand_only(op.results[0]);
  }

  TOp copy_of(const TOp &load, int buf, const TOp &loop, const Sym &at, const Sym &slot) {
    TOp c;
    c.kind = TileOpKind::AsyncCopy;
    c.operands = {buf};
    c.loc = load.loc;
    c.tensor = load.tensor;
    c.tensor_name = load.tensor_name;
    c.parts = load.parts;
    for (SlicePart &p : c.parts)
      if (p.at)
        p.at = p.at->substitute(loop.var, at);
    c.mem = load.mem;
    c.lo = at;
    c.hi = loop.hi;
    c.sym = slot;
    return c;
  }

  static TOp simple(TileOpKind k, int axis = -1) {
    TOp o;
    o.kind = k;
    o.axis = axis;
    return o;
  }

  bool a_in_registers(const TOp &loop) {
    for (const TOp &op : loop.body)
      if (mma_dot(f, op) && mma_staging(f, op).a_regs)
        return true;
    return false;
  }

  /// Rewrites `body[i]` (a `for`) when it has ring loads; returns how many
  /// ops went before it (the loop is then followed by its final wait), or
  /// nullopt when it stays as it is.
  std::optional<size_t> loop(std::vector<TOp> &body, size_t i) {
    const TOp &lp = body[i];
    if (lp.step <= 0 || !lp.lo || !lp.hi)
      return std::nullopt;
    std::set<std::string> inner;
    bound_inside(lp.body, inner);
    std::vector<size_t> ring;
    for (size_t j = 0; j < lp.body.size(); ++j)
      if (qualifies(lp.body[j], inner))
        ring.push_back(j);
    bool dots = false;
    for (const TOp &op : lp.body)
      dots = dots || (mma_dot(f, op) && mma_staging(f, op).ok);
    if (ring.empty()) {
      if (dots)
        skipped.push_back({lp.loc, lp.var,
                           "no operand of its dots is a load the ring can copy (a 2-D slice of a "
                           "tensor the task does not write, rows contiguous, no mask, pad or "
                           "gather, indexed by the loop variable and what is fixed outside it)"});
      return std::nullopt;
    }
    // A loop whose dot reads its a from registers (FlashAttention's P V)
    // keeps two stages: a third pushed prefill_attention's attn into spills.
    // Else the most stages whose rings fit beside what the rewritten body
    // still stages (planned on a copy).
    const std::vector<TOp> saved = body;
    const size_t values = f.values.size();
    for (int64_t stages = a_in_registers(lp) ? 2 : kMaxStages; stages >= 2; --stages) {
      const size_t pre = rewrite(body, i, ring, stages);
      TileModule one{m.kernel, m.threads, {f}};
      plan_shared(one, target);
      if (!smem_over_budget(one.funcs[0]))
        return pre;
      body = saved;
      f.values.resize(values);
    }
    skipped.push_back({body[i].loc, body[i].var,
                       "two stages of its operand tiles do not fit the shared-memory budget (" +
                           std::to_string(target.smem_budget) +
                           " bytes a CTA) beside what the body stages"});
    return std::nullopt;
  }

  /// The rewrite of the file comment, for loop `body[i]`, its loads at
  /// `ring` and `stages` slots; returns how many ops went before the loop.
  size_t rewrite(std::vector<TOp> &body, size_t i, const std::vector<size_t> &ring,
                 int64_t stages) {
    TOp &lp = body[i];
    const Sym lo = *lp.lo, step(lp.step), var = Sym::symbol(lp.var);
    auto slot = [&](const Sym &e) { return Sym::mod(Sym::floordiv(e - lo, step), Sym(stages)); };
    std::vector<TOp> pre, top;
    std::vector<int> bufs;
    for (size_t j : ring) {
      const TOp &ld = lp.body[j];
      const TValue &v = f.values[size_t(ld.results[0])];
      TValue bv;
      bv.elem = v.elem;
      bv.shape = {stages, v.shape[0], v.shape[1]};
      bv.shared = true;
      const int buf = int(f.values.size());
      f.values.push_back(bv);
      bufs.push_back(buf);
      TOp a = simple(TileOpKind::SmemAlloc);
      a.results = {buf};
      a.loc = ld.loc;
      pre.push_back(a);
    }
    for (int64_t s = 0; s + 1 < stages; ++s) {
      for (size_t r = 0; r < ring.size(); ++r)
        pre.push_back(copy_of(lp.body[ring[r]], bufs[r], lp, lo + Sym(s * lp.step), Sym(s)));
      pre.push_back(simple(TileOpKind::AsyncCommit));
    }
    top.push_back(simple(TileOpKind::AsyncWait, int(stages - 2)));
    top.push_back(simple(TileOpKind::Barrier));
    const Sym ahead = var + Sym((stages - 1) * lp.step);
    for (size_t r = 0; r < ring.size(); ++r)
      top.push_back(copy_of(lp.body[ring[r]], bufs[r], lp, ahead, slot(ahead)));
    top.push_back(simple(TileOpKind::AsyncCommit));
    for (size_t r = 0; r < ring.size(); ++r) {
      TOp &ld = lp.body[ring[r]];
      TOp v = simple(TileOpKind::SmemView);
      v.operands = {bufs[r]};
      v.results = ld.results;
      v.loc = ld.loc;
      v.sym = slot(var);
      ld = v;
    }
    lp.body.insert(lp.body.begin(), top.begin(), top.end());
    body.insert(body.begin() + long(i + 1), simple(TileOpKind::AsyncWait, 0));
    body.insert(body.begin() + long(i), pre.begin(), pre.end());
    return pre.size();
  }

  void walk(std::vector<TOp> &body) {
    for (size_t i = 0; i < body.size(); ++i) {
      if (body[i].kind != TileOpKind::For)
        continue;
      walk(body[i].body); // inner loops first
      if (std::optional<size_t> pre = loop(body, i))
        i += *pre + 1; // the loop's final wait
    }
  }
};

} // namespace

int64_t ring_slot_bytes(const TValue &v) {
  const int64_t eb = v.elem == ElemType::F32 ? 4 : 2; // a tf32 dot's f32 operand
  return line_bytes(eb * (v.shape.size() == 3 ? v.shape[1] * v.shape[2] : 0));
}

std::vector<LoopNotPipelined> pipeline_loops(TileModule &m, const TargetInfo &target) {
  std::vector<LoopNotPipelined> skipped;
  for (TileFunc &f : m.funcs) {
    Pipeliner p{m, f, target, {}, {}};
    collect_writes(f.body, p.written);
    p.walk(f.body);
    skipped.insert(skipped.end(), p.skipped.begin(), p.skipped.end());
  }
  return skipped;
}

} // namespace etl
