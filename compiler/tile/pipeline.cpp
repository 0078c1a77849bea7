//===- tile/pipeline.cpp - K loops as cp.async rings, in the IR -----------===//
//
// What this owns: pipeline_loops (tile/passes.h), the pass that turns the
// loads of a `for` that read what the body never writes (the operands of
// tensor-core dots, and plain tiles: a GEMV's weight tile and its x slice)
// into rings of S slots in shared memory filled by cp.async S - 1
// iterations ahead (Triton's software pipelining, written as ops of the
// Async family so that the lowering only translates them):
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
// A load with the same slice rules that no dot reads, whose slice moves with
// the loop variable, of a tensor no task of
// the kernel writes (tile/memory.cpp's non_coherent), of rank 1 or 2, its
// rows whole 16-byte chunks of any unpacked element type, is a plain ring
// (smem.alloc {row-major}): its slots hold the tile row-major, unswizzled,
// and smem.view reads the slot into registers in the value's layout (the
// load's, or the layout of the convert_layout that is its one use, through
// a cast: the convert becomes a renaming), so the copies run S - 1 steps
// ahead of the arithmetic and no global load waits inside the loop. The
// values are the loaded ones bit for bit (cp.async copies bytes; the edge
// chunks move element by element, 0 outside, as the load's default pad).
// Only in loops without dots (beside a dot's staging their registers pushed
// rmsnorm_rope's FMA dot loop into spills).
//
// Where a target of the list has TMA (TargetInfo::tma: sm_90a), a plain
// ring whose tile TMA can copy exactly is a TMA ring (kTmaRing): each
// dimension of the tile a range over the same dimension of the tensor
// (rank 1 or 2), rows contiguous and, for rank 2, 16-byte multiples
// (tile/memory.cpp's align_vec proves the row pitch), at most 256 elements
// along each dimension (the tensor map's box), of 1-, 2-, 4- or 8-byte
// elements. Its edges are then the tensor map's out-of-bounds fill, zeros,
// the load's default pad (a plain ring has no mask or pad). The copy names
// its tensor map (TileModule::tma_maps: tensor and box, shared by the
// copies of the same tensor and box), which the runtime encodes at bind
// time into the argument block. ETL_TILE_TMA=1 marks them for any target
// list (the sim executes TMA too: its bit-exactness tests), =0 for none.
//
//===----------------------------------------------------------------------===//
#include "tile/passes.h"

#include <algorithm>
#include <functional>
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

  /// How a load of the loop body goes into a ring: not at all, as a
  /// tensor-core dot's operand (swizzled as the dot's staging, read by
  /// ldmatrix where it lies), or as a plain tile (row-major slots, read
  /// into the load's own registers: any other use).
  enum class Ring { None, Mma, Plain };

  /// Does any use of `v` (through a transpose too) read it as a tensor-core dot's operand?
  bool some_dot_use(int v) {
    std::vector<const TOp *> us;
    users(f.body, v, us);
    for (const TOp *u : us)
      if (mma_dot(f, *u) || (u->kind == TileOpKind::Transpose && some_dot_use(u->results[0])))
        return true;
    return false;
  }

  /// Can TMA copy `load`'s tile exactly (the file comment's rules)?
  bool tma_copyable(const TOp &load) {
    const TValue &v = f.values[size_t(load.results[0])];
    const unsigned eb = byte_size(v.elem);
    if (load.tensor < 0 || is_packed(v.elem) || v.elem == ElemType::Bool ||
        (eb != 1 && eb != 2 && eb != 4 && eb != 8) || load.parts.size() != v.shape.size())
      return false;
    for (size_t d = 0; d < load.parts.size(); ++d) {
      const SlicePart &p = load.parts[d];
      if (p.kind != SlicePart::Range || p.tile_dim != int(d) || p.n != v.shape[d] || p.n > 256)
        return false;
    }
    return v.shape.size() == 1 || load.mem.align_vec >= 16 / eb;
  }

  Ring qualifies(const TOp &op, const std::set<std::string> &inner, const std::string &var) {
    if (op.kind != TileOpKind::Load || op.tensor < 0 || written.count(op.tensor) || op.mask >= 0 ||
        !op.pad.empty() || op.pad_value >= 0 || !op.attr.empty() || !op.operands.empty() ||
        op.barrier_before || op.results.size() != 1)
      return Ring::None;
    bool varies = false; // with the loop variable (else the same tile every step)
    for (const SlicePart &p : op.parts) {
      if (p.kind == SlicePart::Gather || !p.at)
        return Ring::None;
      for (const std::string &n : p.at->symbols()) {
        if (inner.count(n))
          return Ring::None;
        varies = varies || n == var;
      }
    }
    const TValue &v = f.values[size_t(op.results[0])];
    if (v.shape.empty() || v.shape.size() > 2 || op.mem.fast_dim != int(v.shape.size()) - 1)
      return Ring::None;
    // 16-byte chunks of a row: 8 f16/bf16, or 4 f32 (dot_operand_only:
    // only a tf32 dot takes f32 operands on tensor cores).
    if (v.shape.size() == 2 && v.shape[1] % 8 == 0 &&
        (v.elem == ElemType::F16 || v.elem == ElemType::BF16 || v.elem == ElemType::F32) &&
        dot_operand_only(op.results[0]))
      return Ring::Mma;
    // Any other use: a tensor no task of the kernel writes (weights, not
    // buffers other tasks fill), rows of whole 16-byte chunks of whole
    // bytes, a layout to read the slot back in.
    if (!varies || !op.mem.non_coherent || some_dot_use(op.results[0]) || v.layout < 0 ||
        is_packed(v.elem) || v.elem == ElemType::Bool ||
        (v.shape.back() * byte_size(v.elem)) % 16 != 0)
      return Ring::None;
    return Ring::Plain;
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
    std::vector<bool> plain;
    for (size_t j = 0; j < lp.body.size(); ++j)
      if (Ring r = qualifies(lp.body[j], inner, lp.var); r != Ring::None) {
        ring.push_back(j);
        plain.push_back(r == Ring::Plain);
      }
    bool dots = false;
    for (const TOp &op : lp.body)
      dots = dots || (mma_dot(f, op) && mma_staging(f, op).ok);
    // Plain rings only in loops without dots: beside a dot's staging their
    // registers pushed rmsnorm_rope's FMA dot loop into spills, and a
    // tensor-core loop's own ring already hides its operands' latency.
    if (has_dot(lp.body))
      for (size_t q = ring.size(); q-- > 0;)
        if (plain[q]) {
          ring.erase(ring.begin() + long(q));
          plain.erase(plain.begin() + long(q));
        }
    if (std::find(plain.begin(), plain.end(), false) == plain.end() && dots)
      skipped.push_back({lp.loc, lp.var,
                         "no operand of its dots is a load the ring can copy (a 2-D slice of a "
                         "tensor the task does not write, rows contiguous, no mask, pad or "
                         "gather, indexed by the loop variable and what is fixed outside it)"});
    if (ring.empty())
      return std::nullopt;
    // A loop whose dot reads its a from registers (FlashAttention's P V)
    // keeps two stages: a third pushed prefill_attention's attn into spills.
    // Else the most stages whose rings fit beside what the rewritten body
    // still stages (planned on a copy); when none does, the dots' rings alone.
    const std::vector<TOp> saved = body;
    const std::vector<TValue> values = f.values; // read_as_used retags layouts
    const std::vector<TmaMap> maps = m.tma_maps;
    const int64_t most = a_in_registers(lp) ? 2 : kMaxStages;
    for (bool all : {true, false}) {
      std::vector<size_t> r;
      std::vector<bool> pl;
      for (size_t q = 0; q < ring.size(); ++q)
        if (all || !plain[q])
          r.push_back(ring[q]), pl.push_back(plain[q]);
      if (r.empty() || (!all && r.size() == ring.size()))
        continue;
      for (int64_t stages = most; stages >= 2; --stages) {
        const size_t pre = rewrite(body, i, r, pl, stages);
        TileModule one{m.kernel, m.threads, {f}, {}};
        plan_shared(one, target);
        if (!smem_over_budget(one.funcs[0]))
          return pre;
        body = saved;
        f.values = values;
        m.tma_maps = maps;
      }
    }
    if (dots)
      skipped.push_back({body[i].loc, body[i].var,
                         "two stages of its operand tiles do not fit the shared-memory budget (" +
                             std::to_string(target.smem_budget) +
                             " bytes a CTA) beside what the body stages"});
    return std::nullopt;
  }

  static bool has_dot(const std::vector<TOp> &body) {
    for (const TOp &op : body)
      if (op.kind == TileOpKind::Dot || has_dot(op.body))
        return true;
    return false;
  }

  /// The one use of `v`, or null.
  const TOp *only_use(int v) {
    std::vector<const TOp *> us;
    users(f.body, v, us);
    return us.size() == 1 ? us[0] : nullptr;
  }

  /// A plain slot `v` read only by a convert_layout (through a cast too)
  /// is read in the layout that convert makes: shared memory takes any
  /// layout, and the convert becomes a renaming of registers (no scratch,
  /// no barrier; x of a GEMV, read as its broadcast wants it).
  void read_as_used(int v) {
    const TOp *u = only_use(v);
    const TOp *cast = u && u->kind == TileOpKind::Cast ? u : nullptr;
    if (cast)
      u = only_use(cast->results[0]);
    if (!u || u->kind != TileOpKind::Convert)
      return;
    const int want = f.values[size_t(u->results[0])].layout;
    f.values[size_t(v)].layout = want;
    if (cast)
      f.values[size_t(cast->results[0])].layout = want;
    // The convert is gone: its uses read its operand.
    const int from = u->results[0], to = u->operands[0];
    std::function<void(std::vector<TOp> &)> drop = [&](std::vector<TOp> &body) {
      for (size_t j = 0; j < body.size();) {
        TOp &op = body[j];
        if (op.kind == TileOpKind::Convert && op.results[0] == from) {
          body.erase(body.begin() + long(j));
          continue;
        }
        for (int &o : op.operands)
          if (o == from)
            o = to;
        for (SlicePart &p : op.parts)
          if (p.kind == SlicePart::Gather && p.gather == from)
            p.gather = to;
        drop(op.body);
        ++j;
      }
    };
    drop(f.body);
  }

  /// The wgmma dots of loop `lp` (tile/mma.cpp wgmma_gap: its operands are
  /// ring slots now): `wgmma.fence` before each, `wgmma.commit` after it,
  /// and `%w = wgmma.wait 0 %acc` after the registers it accumulates into
  /// (the dot's, or those of `acc + dot` with acc an iter_arg of the loop
  /// in its layout, which the lowering fuses: the wgmma accumulates onto
  /// acc), whose later uses read %w. The results exist only after the
  /// wait; it leaves no group in flight because the next iteration's
  /// copies, after its barrier, refill the slot this dot reads (slot(k +
  /// S - 1) at k + 1 is slot(k)), so the wgmma must be done before that
  /// barrier, and nothing in the rest of the iteration could overlap it.
  void place_wgmma(TOp &lp) {
    std::vector<TOp> &body = lp.body;
    for (size_t j = 0; j < body.size(); ++j) {
      if (body[j].kind != TileOpKind::Dot || !wgmma_gap(f, body[j]).empty())
        continue;
      const int d = body[j].results[0];
      int v = d;
      size_t after = j;
      if (const TOp *u = only_use(d);
          u && u->kind == TileOpKind::Binary && u->attr == "add" && u->operands.size() == 2) {
        const int x = u->operands[0] == d ? u->operands[1] : u->operands[0];
        const bool iter = std::find(lp.block_args.begin(), lp.block_args.end(), x) !=
                          lp.block_args.end();
        for (size_t k = j + 1; iter && k < body.size(); ++k)
          if (&body[k] == u && f.values[size_t(x)].layout == f.values[size_t(d)].layout &&
              f.values[size_t(x)].elem == ElemType::F32)
            after = k, v = u->results[0];
      }
      const SourceRange loc = body[j].loc;
      TOp fence = simple(TileOpKind::WgmmaFence);
      fence.loc = loc;
      body.insert(body.begin() + long(j), fence);
      ++j, ++after; // the dot, and the registers' op
      TOp commit = simple(TileOpKind::WgmmaCommit);
      commit.loc = loc;
      body.insert(body.begin() + long(j + 1), commit);
      ++after; // past the commit (the dot's own registers: the commit)
      const int w = int(f.values.size());
      f.values.push_back(f.values[size_t(v)]);
      TOp wait = simple(TileOpKind::WgmmaWait, 0);
      wait.operands = {v};
      wait.results = {w};
      wait.loc = loc;
      body.insert(body.begin() + long(after + 1), wait);
      std::function<void(std::vector<TOp> &, size_t)> rename = [&](std::vector<TOp> &ops,
                                                                   size_t from) {
        for (size_t k = from; k < ops.size(); ++k) {
          for (int &o : ops[k].operands)
            if (o == v)
              o = w;
          rename(ops[k].body, 0);
        }
      };
      rename(body, after + 2);
      j = after + 1;
    }
  }

  /// The rewrite of the file comment, for loop `body[i]`, its loads at
  /// `ring` and `stages` slots; returns how many ops went before the loop.
  size_t rewrite(std::vector<TOp> &body, size_t i, const std::vector<size_t> &ring,
                 const std::vector<bool> &plain, int64_t stages) {
    TOp &lp = body[i];
    const Sym lo = *lp.lo, var = Sym::symbol(lp.var);
    auto slot = [&](const Sym &e) { return ring_slot(lp, e, stages); };
    std::vector<TOp> pre, top;
    std::vector<int> bufs;
    for (size_t j : ring) {
      const TOp &ld = lp.body[j];
      const TValue &v = f.values[size_t(ld.results[0])];
      TValue bv;
      bv.elem = v.elem;
      bv.shape = v.shape;
      bv.shape.insert(bv.shape.begin(), stages);
      bv.shared = true;
      const int buf = int(f.values.size());
      f.values.push_back(bv);
      bufs.push_back(buf);
      TOp a = simple(TileOpKind::SmemAlloc);
      a.results = {buf};
      if (plain[bufs.size() - 1])
        a.attr = target.tma && tma_copyable(ld) ? kTmaRing : kRowMajorRing;
      a.loc = ld.loc;
      pre.push_back(a);
    }
    // A TMA ring's copies name its tensor map.
    std::vector<int> maps;
    for (size_t r = 0; r < ring.size(); ++r) {
      maps.push_back(-1);
      if (pre[r].attr != kTmaRing)
        continue;
      const TOp &ld = lp.body[ring[r]];
      const TmaMap want{ld.tensor, f.values[size_t(ld.results[0])].shape};
      auto it = std::find(m.tma_maps.begin(), m.tma_maps.end(), want);
      maps.back() = int(it - m.tma_maps.begin());
      if (it == m.tma_maps.end())
        m.tma_maps.push_back(want);
    }
    auto copy = [&](size_t r, const Sym &at, const Sym &slot) {
      TOp c = copy_of(lp.body[ring[r]], bufs[r], lp, at, slot);
      if (maps[r] >= 0)
        c.attr = kTmaRing, c.axis = maps[r];
      return c;
    };
    for (int64_t s = 0; s + 1 < stages; ++s) {
      for (size_t r = 0; r < ring.size(); ++r)
        pre.push_back(copy(r, lo + Sym(s * lp.step), Sym(s)));
      pre.push_back(simple(TileOpKind::AsyncCommit));
    }
    top.push_back(simple(TileOpKind::AsyncWait, int(stages - 2)));
    top.push_back(simple(TileOpKind::Barrier));
    const Sym ahead = var + Sym((stages - 1) * lp.step);
    for (size_t r = 0; r < ring.size(); ++r)
      top.push_back(copy(r, ahead, slot(ahead)));
    top.push_back(simple(TileOpKind::AsyncCommit));
    std::vector<int> view_results;
    for (size_t r = 0; r < ring.size(); ++r) {
      TOp &ld = lp.body[ring[r]];
      view_results.push_back(ld.results[0]);
      TOp v = simple(TileOpKind::SmemView);
      v.operands = {bufs[r]};
      v.results = ld.results;
      v.loc = ld.loc;
      v.sym = slot(var);
      ld = v;
    }
    for (size_t r = 0; r < ring.size(); ++r) // (may drop ops of the body: after the views)
      if (plain[r])
        read_as_used(view_results[r]);
    place_wgmma(lp);
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

Sym ring_slot(const TOp &loop, const Sym &e, int64_t stages) {
  return Sym::mod(Sym::floordiv(e - *loop.lo, Sym(loop.step)), Sym(stages));
}

int64_t ring_slot_bytes(const TValue &v) {
  return line_bytes(int64_t(byte_size(v.elem)) *
                    (v.shape.size() >= 2 ? v.numel() / v.shape[0] : 0));
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
