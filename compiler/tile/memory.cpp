//===- tile/memory.cpp - Contiguity, alignment and widths of accesses -----===//
//
// analyse_memory (tile/passes.h): for every load and store, the tile dim
// that is contiguous in memory (a `range` on the tensor's last dim), how
// many elements a thread could move in one access
//
//   vec = min(128 / element bits, contiguity, elements per thread, mask
//             constancy, proven alignment)
//
// and what the prover shows from the kernel's `where` facts, the task
// domain and the enclosing loops: the slice's start offset and every row
// stride divisible by vec (aligned vectors), the last dim divisible by vec
// or the tile inside it (one bounds test per vector), per dim whether the
// tile lies inside the tensor (no per-element test), whether its element
// offsets fit in 31 bits (32-bit index arithmetic), and whether the tensor
// is read-only in the kernel (the non-coherent load path); an atomic gets
// the same facts with one element per access. When alignment
// alone narrows the access, a NarrowAccess remark names the `where` fact
// that would widen it.
//
//===----------------------------------------------------------------------===//
#include "taskgraph/taskgraph.h"
#include "tile/passes.h"

#include <algorithm>
#include <map>
#include <set>

namespace etl {
namespace {

unsigned floor_pow2(int64_t n) {
  unsigned p = 1;
  while (int64_t(p) * 2 <= n)
    p *= 2;
  return p;
}

struct Ctx {
  const KernelDecl &k;
  TileFunc &f;
  std::set<int> written;
  std::map<int, const TOp *> def;
  unsigned threads;
  Diag &diag;
  /// Task and loop variables in scope: var -> its (exclusive) upper bound.
  std::map<std::string, Sym> hi;
};

/// `lo .. +n` with lo == n*v, v < cdiv(dim, n) (or dim / n, the same when
/// n divides dim) and n dividing dim: the tasks (or iterations) tile the dim
/// exactly, so each tile lies inside.
bool tiles_exactly(const Ctx &c, const Facts &facts, const Sym &lo, int64_t n, const Sym &dim) {
  for (const auto &[var, hi] : c.hi)
    if (lo == Sym(n) * Sym::symbol(var) &&
        (hi == Sym::cdiv(dim, Sym(n)) || hi == Sym::floordiv(dim, Sym(n))) &&
        facts.divisible(dim, n))
      return true;
  return false;
}

void index_defs(const std::vector<TOp> &ops, std::map<int, const TOp *> &def) {
  for (const TOp &op : ops) {
    for (int r : op.results)
      def[r] = &op;
    index_defs(op.body, def);
  }
}

/// The slice of `op` on its tensor: strides and the start offset.
struct Geometry {
  std::vector<Sym> shape, stride;
};

Geometry geometry(const TensorDecl &td) {
  Geometry g;
  g.shape = td.shape;
  size_t r = g.shape.size();
  g.stride.assign(r, Sym(1));
  for (size_t d = r; d-- > 1;)
    g.stride[d - 1] = g.stride[d] * g.shape[d];
  return g;
}

/// Can every access of `v` elements be aligned and uniformly in or out of
/// bounds, under `facts`?
bool vector_ok(const TOp &op, const Geometry &g, const Facts &facts, int64_t v, bool fast_in) {
  if (v <= 1)
    return true;
  size_t rank = op.parts.size();
  Sym base(0);
  for (size_t d = 0; d < rank; ++d) {
    const SlicePart &p = op.parts[d];
    bool last = d + 1 == rank;
    if (p.kind != SlicePart::Gather && p.at)
      base = base + *p.at * g.stride[d];
    // Rows other than the contiguous one step by their stride.
    if (!last && (p.kind != SlicePart::Fix || !p.at) && !facts.divisible(g.stride[d], v))
      return false;
  }
  if (!facts.divisible(base, v))
    return false;
  return fast_in || facts.divisible(g.shape[rank - 1], v);
}

void analyse_op(Ctx &c, TOp &op, const Facts &facts) {
  MemFacts &m = op.mem;
  m = MemFacts();
  m.analysed = true;
  if (op.tensor < 0)
    return;
  const TensorDecl &td = c.k.tensors[size_t(op.tensor)];
  Geometry g = geometry(td);
  int v = op.kind == TileOpKind::Load ? op.results[0] : op.operands[0];
  const TValue &tv = c.f.values[size_t(v)];
  unsigned bits = elem_bits(td.type.elem); // 4 for a packed i4/u4
  m.non_coherent =
      op.kind == TileOpKind::Load && !c.written.count(op.tensor) && !c.written.count(-1);
  m.vec_bits = bits;
  Sym numel(1);
  for (const Sym &d : g.shape)
    numel = numel * d;
  m.index32 = facts.prove_ge(Sym(int64_t(1) << 31), numel);
  m.in_bounds.assign(tv.shape.size(), false);
  for (size_t d = 0; d < op.parts.size() && d < g.shape.size(); ++d) {
    const SlicePart &p = op.parts[d];
    if (p.kind == SlicePart::Range && p.at && p.tile_dim >= 0 &&
        size_t(p.tile_dim) < m.in_bounds.size())
      m.in_bounds[size_t(p.tile_dim)] =
          tiles_exactly(c, facts, *p.at, p.n, g.shape[d]) ||
          (facts.prove_ge(*p.at, Sym(0)) && facts.prove_ge(g.shape[d], *p.at + p.n));
  }
  if (op.parts.empty() || !tv.is_tile())
    return;
  const SlicePart &last = op.parts.back();
  if (last.kind != SlicePart::Range || last.tile_dim < 0) {
    m.narrowed_by = last.kind == SlicePart::Gather ? "gathered last dim" : "fixed last dim";
    return;
  }
  m.fast_dim = last.tile_dim;
  m.contiguity = last.n & -last.n;   // the largest power of two dividing it
  if (op.kind == TileOpKind::Atomic) // one element per read-modify-write: vec 1
    return;
  bool fast_in = m.in_bounds[size_t(m.fast_dim)];
  int64_t widest = std::min<int64_t>(
      {128 / bits, m.contiguity, std::max<int64_t>(1, tv.numel() / int64_t(c.threads))});
  widest = floor_pow2(widest);
  // A mask that varies along the contiguous dim splits every vector.
  if (op.mask >= 0) {
    int mv = op.mask;
    bool constant = c.f.values[size_t(mv)].shape[size_t(m.fast_dim)] == 1;
    for (int hop = 0; hop < 4 && !constant && c.def.count(mv); ++hop) {
      const TOp *d = c.def.at(mv);
      if (d->kind != TileOpKind::Broadcast && d->kind != TileOpKind::Cast)
        break;
      mv = d->operands[0];
      const TValue &s = c.f.values[size_t(mv)];
      constant = !s.is_tile() || s.shape[size_t(m.fast_dim)] == 1;
    }
    if (!constant) {
      widest = 1;
      m.narrowed_by = "mask varies along the contiguous dim";
    }
  }
  int64_t align =
      m.narrowed_by.empty() ? floor_pow2(std::min<int64_t>(128 / bits, m.contiguity)) : 1;
  while (align > 1 && !vector_ok(op, g, facts, align, fast_in))
    align /= 2;
  m.align_vec = unsigned(align);
  int64_t vec = std::min(widest, align);
  m.vec = unsigned(vec);
  m.vec_bits = unsigned(vec) * bits;
  if (vec == widest)
    return;
  // Which `where` fact would widen it: one dim divisible by `widest`, or all.
  std::set<std::string> dims;
  for (const Sym &s : g.shape)
    for (const std::string &n : s.symbols())
      dims.insert(n);
  std::vector<std::string> known;
  for (const DimDecl &d : c.k.dims)
    if (dims.count(d.name))
      known.push_back(d.name);
  std::string fact;
  for (const std::string &d : known) {
    Facts more = facts;
    more.add_divisible(Sym::symbol(d), widest);
    if (vector_ok(op, g, more, widest, fast_in)) {
      fact = d + " % " + std::to_string(widest) + " == 0";
      break;
    }
  }
  if (fact.empty() && known.size() > 1) {
    Facts more = facts;
    std::string all;
    for (const std::string &d : known) {
      more.add_divisible(Sym::symbol(d), widest);
      all += (all.empty() ? "" : ", ") + d + " % " + std::to_string(widest) + " == 0";
    }
    if (vector_ok(op, g, more, widest, fast_in))
      fact = all;
  }
  m.narrowed_by = fact.empty() ? "alignment" : "needs `where " + fact + "`";
  if (fact.empty())
    return;
  c.diag.remark(DiagId::NarrowAccess, op.loc,
                {op.kind == TileOpKind::Load ? "load" : "store", td.name,
                 std::to_string(vec * bits),
                 "that its rows start at multiples of " + std::to_string(widest) + " elements",
                 fact, std::to_string(widest * bits)});
}

void analyse_ops(Ctx &c, std::vector<TOp> &ops, const Facts &facts) {
  for (TOp &op : ops) {
    if (op_family(op.kind) == OpFamily::Memory)
      analyse_op(c, op, facts);
    if (op.kind == TileOpKind::For) {
      Facts inner = facts;
      std::map<std::string, Sym> outer = c.hi;
      if (op.lo && op.hi) {
        inner.add_bounds(op.var, *op.lo, *op.hi - 1);
        if (op.lo->as_constant() == 0 && op.step == 1)
          c.hi[op.var] = *op.hi;
      }
      analyse_ops(c, op.body, inner);
      c.hi = outer;
    }
    if (op.kind == TileOpKind::If) // the facts outside hold inside
      analyse_ops(c, op.body, facts);
  }
}

} // namespace

void analyse_memory(TileModule &m, const KernelDecl &k, const TaskGraph &g, Diag &diag) {
  // From the checked AST, not the tile ops: a body the tile IR does not
  // cover (an `if`, an atomic) still writes its tensors.
  const std::set<int> written = written_tensors(k);
  for (TileFunc &f : m.funcs) {
    Ctx c{k, f, written, {}, m.threads, diag, {}};
    index_defs(f.body, c.def);
    Facts facts = k.facts;
    for (const TaskGroup &grp : g.groups)
      if (grp.name == f.name)
        for (size_t i = 0; i < grp.vars.size() && i < grp.lo.size() && i < grp.hi.size(); ++i) {
          facts.add_bounds(grp.vars[i], grp.lo[i], grp.hi[i] - 1);
          if (grp.lo[i].as_constant() == 0)
            c.hi[grp.vars[i]] = grp.hi[i];
        }
    analyse_ops(c, f.body, facts);
  }
}

} // namespace etl
