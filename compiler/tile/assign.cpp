//===- tile/assign.cpp - The layout pass ----------------------------------===//
//
// assign_layouts (tile/passes.h), TILE-IR.md (c):
//
//  1. anchors: a load gets a coalesced blocked layout with `vec` elements
//     per thread on its contiguous dim (tile/memory.cpp), then lanes, then
//     warps (or a use's layout, when that saves a re-layout through scratch
//     at the same width and sector efficiency: load_choice); `dot` an FMA
//     result layout and, for an a whose rows fit in registers, the
//     operand layout that holds them (b, and a larger a, go through
//     shared memory in any layout), or for a tensor-core dot
//     (tile/mma.cpp) the mma accumulator layout, and the A layout for an a
//     loaded outside the loop that holds the dot; a store keeps its
//     value's layout (a value that can take any, such as a splat, takes the
//     coalesced one; one whose lanes hold copies moves to it when that needs
//     fewer warp-level requests, a transposed one when that touches fewer
//     sectors per byte: fewer_stores), and so does an atomic,
//     whose old values come back in its values' layout;
//  2. forward propagation (an `if`'s results: their initial values'
//     layouts, which the yielded values take): elementwise ops keep their anchored operand's
//     layout (an mma accumulator's first; in a body with tensor-core dots
//     an elementwise op of splats and aranges takes its use's), reductions give slice(parent,
//     axis), transpose permutes, a reshape between shapes that pack
//     coordinates as their row-major index keeps the bases (any other
//     moves data through scratch and takes its uses' layout);
//  3. hints flow backwards into values that can take any layout for free
//     (splat, arange, expand, broadcast, a reshape that moves data, a
//     loop's iter_arg whose initial
//     value is such a value): the first use that disagrees sets the hint
//     and the walk is redone until no hint changes;
//  4. the last walk rewrites: where a use still disagrees, a splat or
//     arange is cloned in the wanted layout, anything else gets a
//     convert_layout whose path (registers, shuffles or scratch) comes from
//     the two maps.
//
//===----------------------------------------------------------------------===//
#include "tile/passes.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace etl {
namespace {

class Assigner {
public:
  Assigner(TileFunc &f, unsigned warps) : f_(f), warps_(warps) {}

  void run() {
    for (int round = 0; round < 16; ++round) {
      changed_ = false;
      walk(false);
      if (!changed_)
        break;
    }
    walk(true);
    finish(f_.body);
  }

private:
  TileFunc &f_;
  unsigned warps_;
  std::map<int, Layout> hint_;
  std::vector<std::optional<Layout>> lay_;
  std::map<int, TileOpKind> def_; ///< what defines each value (not iter_args)
  std::map<int, TOp> remat_;      ///< splat/arange ops, to clone
  /// What the layout pass needs of a load to let it take a use's layout.
  struct LoadFacts {
    int fast_dim = -1;
    unsigned vec = 1, align_vec = 1;
    bool gather = false;
  };
  std::map<int, LoadFacts> loads_;
  /// Hints set by a use whose own layout was a default guess (a broadcast
  /// or expand without a hint): a firm requirement replaces them.
  std::set<int> weak_;
  bool rewrite_ = false, changed_ = false;
  /// Results of reshapes that move data (through scratch, in any layout).
  std::set<int> moved_;
  /// Iter_args of the loops entered so far (an inner loop's init may be one).
  std::set<int> outer_args_;
  /// Per enclosing loop being walked: the values its body defines.
  std::vector<std::set<int>> loop_defs_;
  /// The operands of each elementwise op's result; whether the body has a
  /// tensor-core dot (tile/mma.cpp).
  std::map<int, std::vector<int>> ew_;
  bool mma_ = false;
  using Cache = std::vector<std::pair<std::pair<int, Layout>, int>>;

  const TValue &val(int v) const { return f_.values[size_t(v)]; }
  bool tile(int v) const { return val(v).is_tile(); }
  Layout dflt(const std::vector<int64_t> &shape) const { return default_layout(shape, 1, warps_); }
  const Layout &L(int v) {
    if (!lay_[size_t(v)])
      lay_[size_t(v)] = hint_.count(v) ? hint_.at(v) : dflt(val(v).shape);
    return *lay_[size_t(v)];
  }
  bool adaptable(int v) const {
    auto it = def_.find(v);
    if (it == def_.end())
      return false;
    TileOpKind k = it->second;
    if (k == TileOpKind::Splat || k == TileOpKind::Arange || k == TileOpKind::Expand ||
        k == TileOpKind::Broadcast || moved_.count(v))
      return true;
    // In a body with tensor-core dots, an elementwise op of such values
    // (a causal mask from aranges) follows its uses too, so that it meets
    // the accumulator layout without a conversion.
    auto ew = ew_.find(v);
    if (!mma_ || ew == ew_.end())
      return false;
    bool any = false;
    for (int o : ew->second) {
      if (!tile(o))
        continue;
      if (!adaptable(o))
        return false;
      any = true;
    }
    return any;
  }
  int new_value(int like, const Layout &l) {
    TValue t = val(like);
    t.layout = -1;
    f_.values.push_back(t);
    lay_.push_back(l);
    return int(f_.values.size()) - 1;
  }

  void walk(bool rewrite) {
    rewrite_ = rewrite;
    lay_.assign(f_.values.size(), std::nullopt);
    def_.clear();
    index(f_.body);
    Cache cache;
    std::vector<TOp> out = ops(f_.body, cache);
    if (rewrite)
      f_.body = std::move(out);
  }

  void index(const std::vector<TOp> &body) {
    for (const TOp &op : body) {
      for (int r : op.results)
        def_[r] = op.kind;
      if (op_family(op.kind) == OpFamily::Elementwise && !op.results.empty())
        ew_[op.results[0]] = op.operands;
      mma_ = mma_ || mma_dot(f_, op);
      if (op.kind == TileOpKind::Splat || op.kind == TileOpKind::Arange)
        remat_[op.results[0]] = op;
      if (op.kind == TileOpKind::Load && !op.results.empty()) {
        LoadFacts lf{op.mem.fast_dim, std::max(1u, op.mem.vec), std::max(1u, op.mem.align_vec),
                     false};
        for (const SlicePart &p : op.parts)
          lf.gather = lf.gather || p.kind == SlicePart::Gather;
        loads_[op.results[0]] = lf;
      }
      index(op.body);
    }
  }

  /// `v` in layout `want` for a use: the value itself, a hint for next
  /// round, or (rewriting) a clone or a convert_layout appended to `out`.
  int require(int v, const Layout &want, std::vector<TOp> &out, Cache &cache, SourceRange loc,
              bool firm = true) {
    if (!tile(v))
      return v;
    if (!lay_[size_t(v)] && !def_.count(v)) { // an iter_arg not constrained yet
      lay_[size_t(v)] = want;
      return v;
    }
    if (L(v) == want)
      return v;
    if (adaptable(v) && (!hint_.count(v) || (firm && weak_.count(v)))) {
      hint_[v] = want;
      if (firm)
        weak_.erase(v);
      else
        weak_.insert(v);
      changed_ = true;
    } else if (firm && !hint_.count(v)) {
      if (std::optional<Layout> l = load_choice(v, want)) {
        hint_[v] = *l;
        changed_ = true;
      }
    }
    if (!rewrite_)
      return v;
    for (const auto &c : cache)
      if (c.first.first == v && c.first.second == want)
        return c.second;
    int nv = new_value(v, want);
    TOp op;
    if (remat_.count(v)) {
      op = remat_.at(v);
    } else {
      op.kind = TileOpKind::Convert;
      op.operands = {v};
      op.path = convert_path(L(v), want);
    }
    op.loc = loc;
    op.results = {nv};
    out.push_back(op);
    cache.push_back({{v, want}, nv});
    return nv;
  }

  std::vector<TOp> ops(std::vector<TOp> &body, Cache cache) {
    std::vector<TOp> out;
    for (TOp &op : body)
      one(op, out, cache);
    return out;
  }

  /// Is v a transpose's result, or an elementwise op's in the layout of
  /// such an operand?
  bool transposed(int v, int depth = 0) {
    auto d = def_.find(v);
    if (d == def_.end() || depth > 16)
      return false;
    if (d->second == TileOpKind::Transpose)
      return true;
    auto ew = ew_.find(v);
    if (ew == ew_.end())
      return false;
    for (int o : ew->second)
      if (tile(o) && val(o).shape == val(v).shape && L(o) == L(v) && transposed(o, depth + 1))
        return true;
    return false;
  }

  /// A load takes the layout a use wants instead of its anchor when the
  /// anchor would need a re-layout through shared memory and `want` moves
  /// vectors at least as wide (up to what alignment allows) with the same
  /// sector efficiency: a broadcast operand (gemv's x) is then loaded
  /// straight into every warp that needs it, without scratch and barriers.
  /// Failing that, the coalesced layout of `want`'s vector width when a
  /// shuffle inside each warp turns it into `want` (8 floats per thread
  /// read as two 16-byte halves would touch every sector twice). When the
  /// anchor reaches `want` by shuffles alone, only a wider vector counts.
  std::optional<Layout> load_choice(int v, const Layout &want) {
    auto it = loads_.find(v);
    if (it == loads_.end() || it->second.gather || it->second.fast_dim < 0 || want.rank() == 0)
      return std::nullopt;
    const LoadFacts &lf = it->second;
    unsigned bits = elem_bits(val(v).elem);
    if (bits < 8 || want.shape != val(v).shape)
      return std::nullopt;
    const Layout &anchor = L(v);
    unsigned fast = unsigned(lf.fast_dim), bytes = bits / 8;
    unsigned wv = std::min(want.contiguous_regs(fast), lf.align_vec);
    // Registers or shuffles: no scratch to save; still worth it when `want`
    // moves wider vectors (a small tile read 4 elements a lane by a quarter
    // of the lanes instead of 1 by all: decode_attention's q).
    if (wv < lf.vec || (wv == lf.vec && shuffle_plan(anchor, want)))
      return std::nullopt;
    double base = access_efficiency(anchor, lf.vec, fast, bytes) - 1e-9;
    if (access_efficiency(want, wv, fast, bytes) >= base)
      return want;
    std::vector<unsigned> order{fast};
    for (unsigned d = want.rank(); d-- > 0;)
      if (d != fast)
        order.push_back(d);
    Layout c = blocked_layout(want.shape, wv, order, warps_);
    if (c.contiguous_regs(fast) >= wv && access_efficiency(c, wv, fast, bytes) >= base &&
        shuffle_plan(c, want))
      return c;
    return std::nullopt;
  }

  /// Lanes holding copies (a reduction's result: one writer per warp)
  /// store one element per request; when the coalesced layout `anchor`
  /// needs fewer requests, the value goes there first (one re-layout
  /// through scratch, then the lanes of one warp store together).
  /// A transpose's result (or a map of one in its layout), whose lanes
  /// run along the tensor's rows, moves when its stores would touch more
  /// sectors per byte than the coalesced layout's: one re-layout through
  /// scratch, then rows stored whole.
  bool fewer_stores(const Layout &l, const Layout &anchor, const MemFacts &mem, int v) {
    if (l == anchor)
      return false;
    unsigned lv = mem.fast_dim < 0 ? 1
                                   : std::min(std::max(mem.vec, mem.align_vec),
                                              l.contiguous_regs(unsigned(mem.fast_dim)));
    if (std::count(l.lane.begin(), l.lane.end(), 0u) == 0) {
      if (mem.fast_dim < 0 || !transposed(v))
        return false;
      unsigned fast = unsigned(mem.fast_dim), bytes = std::max(1u, elem_bits(val(v).elem) / 8);
      return access_efficiency(l, lv, fast, bytes) <
             access_efficiency(anchor, mem.vec, fast, bytes) - 1e-9;
    }
    return store_requests(anchor, mem.vec) < store_requests(l, lv);
  }

  Layout load_anchor(const TOp &op, const std::vector<int64_t> &shape) const {
    std::vector<unsigned> order;
    if (op.mem.fast_dim >= 0)
      order.push_back(unsigned(op.mem.fast_dim));
    for (unsigned d = unsigned(shape.size()); d-- > 0;)
      if (int(d) != op.mem.fast_dim)
        order.push_back(d);
    Layout l = blocked_layout(shape, op.mem.vec, order, warps_);
    return l;
  }

  void one(TOp &op, std::vector<TOp> &out, Cache &cache) {
    int r = op.results.empty() ? -1 : op.results[0];
    auto set = [&](const Layout &l) {
      if (r >= 0 && tile(r))
        lay_[size_t(r)] = l;
    };
    auto need = [&](int &v, const Layout &l) { v = require(v, l, out, cache, op.loc); };
    switch (op.kind) {
    case TileOpKind::Load: {
      if (!tile(r))
        break;
      Layout a = hint_.count(r) ? hint_.at(r) : load_anchor(op, val(r).shape);
      set(a);
      need_slice_operands(op, a, need);
      rebuild_operands(op);
      break;
    }
    case TileOpKind::Store: {
      int &v = op.operands[0];
      if (tile(v)) {
        Layout anchor = load_anchor(op, val(v).shape);
        bool move = !adaptable(v) && fewer_stores(L(v), anchor, op.mem, v);
        if (move || (adaptable(v) && !hint_.count(v)))
          need(v, anchor);
        Layout l = move ? anchor : L(v);
        need_slice_operands(op, l, need);
      }
      int keep = op.operands[0];
      rebuild_operands(op);
      op.operands[0] = keep;
      break;
    }
    case TileOpKind::Atomic: {
      // As a store: the values keep their layout unless the coalesced one
      // (one element per thread: memory.cpp gives atomics vec 1) needs
      // fewer warp-level requests; cas's desired value, the gathers and the
      // mask follow, and the old values come back in the same layout
      // (lower/lower_tile_memory.cpp hands each replica its writer's).
      int v = op.operands[0];
      if (tile(v)) {
        Layout anchor = load_anchor(op, val(v).shape);
        bool move = !adaptable(v) && fewer_stores(L(v), anchor, op.mem, v);
        Layout l = move || (adaptable(v) && !hint_.count(v)) ? anchor : L(v);
        for (size_t j = 0; j < value_operands(op); ++j)
          need(op.operands[j], l);
        need_slice_operands(op, l, need);
        set(l);
      }
      rebuild_operands(op);
      break;
    }
    case TileOpKind::Unary:
    case TileOpKind::Binary:
    case TileOpKind::Compare:
    case TileOpKind::Select:
    case TileOpKind::Cast: {
      if (!tile(r))
        break;
      int pick = -1;
      // An accumulator of a tensor-core dot first: its layout is the one
      // its rows' reductions and the next dot's A want (FlashAttention-2).
      for (int v : op.operands)
        if (tile(v) && lay_[size_t(v)] && !adaptable(v) && pick < 0 &&
            lay_[size_t(v)]->kind == LayoutKind::Mma)
          pick = v;
      for (int v : op.operands)
        if (tile(v) && (lay_[size_t(v)] || def_.count(v)) && !adaptable(v) && pick < 0)
          pick = v;
      for (int v : op.operands)
        if (tile(v) && pick < 0 && (lay_[size_t(v)] || def_.count(v)))
          pick = v;
      Layout l = hint_.count(r) ? hint_.at(r) : pick >= 0 ? L(pick) : dflt(val(r).shape);
      for (int &v : op.operands)
        need(v, l);
      set(l);
      break;
    }
    case TileOpKind::Splat:
    case TileOpKind::Arange:
      set(hint_.count(r) ? hint_.at(r) : dflt(val(r).shape));
      break;
    case TileOpKind::Expand: {
      int &a = op.operands[0];
      if (hint_.count(r)) {
        set(hint_.at(r));
        if (tile(a))
          a = require(a, slice_layout(hint_.at(r), unsigned(op.axis)), out, cache, op.loc,
                      !weak_.count(r));
      } else {
        set(tile(a) ? expand_layout(L(a), unsigned(op.axis)) : dflt(val(r).shape));
      }
      break;
    }
    case TileOpKind::Broadcast: {
      Layout l = hint_.count(r) ? hint_.at(r) : dflt(val(r).shape);
      set(l);
      Layout want = l;
      const TValue &a = val(op.operands[0]);
      for (unsigned d = 0; d < a.shape.size(); ++d)
        if (a.shape[d] == 1 && val(r).shape[d] != 1)
          want = squash_layout(want, d);
      // Without a hint of its own the broadcast's layout is a guess: what
      // it asks of its operand can be replaced by a firm requirement.
      op.operands[0] =
          require(op.operands[0], want, out, cache, op.loc, hint_.count(r) && !weak_.count(r));
      break;
    }
    case TileOpKind::Reshape: {
      if (!tile(r))
        break;
      std::optional<Layout> l =
          tile(op.operands[0]) ? reshape_layout(L(op.operands[0]), val(r).shape) : std::nullopt;
      if (l) {
        moved_.erase(r);
        set(*l);
        break;
      }
      // The elements move through scratch (lower/lower_tile_map.cpp), so
      // the result can take the layout its uses want, as a splat can.
      moved_.insert(r);
      set(hint_.count(r) ? hint_.at(r) : dflt(val(r).shape));
      break;
    }
    case TileOpKind::Transpose:
      set(transpose_layout(L(op.operands[0])));
      break;
    case TileOpKind::Reduce:
    case TileOpKind::ArgReduce:
      if (tile(r))
        set(slice_layout(L(op.operands[0]), unsigned(op.axis)));
      break;
    case TileOpKind::Scan:
      set(L(op.operands[0]));
      break;
    case TileOpKind::Dot: {
      if (std::optional<Layout> acc = mma_dot_layout(f_, op, warps_)) {
        // Tensor cores: the result in the m16n8 accumulator layout (warps
        // own row blocks). a stays where it is: in the A layout (a cast of
        // an accumulator of [M, K], the same map) the lowering packs its
        // registers into fragments, else it stages a and b through
        // swizzled shared memory for ldmatrix (lower/lower_tile_mma.cpp).
        set(*acc);
        // An a loaded outside the loop that holds the dot (attention's q)
        // is loaded in the A layout: its fragments stay in registers
        // across the loop instead of being staged every iteration (not a
        // tf32 a, always staged: tile/mma.cpp).
        int a = op.operands[0];
        Layout la = mma_layout(MmaOperand::A, val(a).shape, warps_, mma_col_warps(*acc));
        if (op.attr.empty() && !loop_defs_.empty() && !loop_defs_.back().count(a) &&
            loads_.count(a) && !loads_.at(a).gather && !hint_.count(a)) {
          hint_[a] = la;
          changed_ = true;
        }
        break;
      }
      // FMA: b keeps its producer's layout; the lowering stages it in
      // shared memory and each thread reads, per k, the b columns of its
      // outputs (lower/lower_tile_dot.cpp). A 2-D a whose rows fit in
      // kDotRegsA registers per thread moves into dot_operand_layout (its
      // rows' whole K in registers, usually one shuffle per register, and
      // shared by every dot of it); a larger one is staged like b. b in
      // registers would hold all of K for each column: 128 registers for a
      // 32 x 32 b. The result's layout is the anchor; a loop-carried
      // `acc += dot(..)` takes it, so the accumulator stays in registers.
      Layout c = fma_dot_layout(val(r).shape, warps_);
      set(c);
      if (val(op.operands[0]).shape.size() == 2) {
        Layout la = dot_operand_layout(c, 0, val(op.operands[0]).shape);
        if (la.num_regs() <= kDotRegsA)
          need(op.operands[0], la);
      }
      break;
    }
    case TileOpKind::For:
      loop(op, out, cache);
      return;
    case TileOpKind::If:
      branch(op, out, cache);
      return;
    default:
      break;
    }
    if (rewrite_)
      out.push_back(std::move(op));
  }

  /// Loads and stores keep gathers and masks both in parts/mask and in
  /// operands (for the verifier's use-before-def check): rebuild the latter.
  static void rebuild_operands(TOp &op) {
    std::vector<int> vals(op.operands.begin(), op.operands.begin() + long(value_operands(op)));
    op.operands = vals;
    for (const SlicePart &p : op.parts)
      if (p.kind == SlicePart::Gather)
        op.operands.push_back(p.gather);
    if (op.mask >= 0)
      op.operands.push_back(op.mask);
    if (op.pad_value >= 0)
      op.operands.push_back(op.pad_value);
  }

  /// A memory op's gather indices (its layout sliced to the gathered dim)
  /// and mask (its layout) follow the access's layout `l` (`need`: the
  /// caller's requirement, which may insert a conversion).
  template <class Need> static void need_slice_operands(TOp &op, const Layout &l, Need &&need) {
    for (SlicePart &p : op.parts)
      if (p.kind == SlicePart::Gather) {
        Layout g = l;
        for (unsigned d = l.rank(); d-- > 0;)
          if (int(d) != p.tile_dim)
            g = slice_layout(g, d);
        need(p.gather, g);
      }
    if (op.mask >= 0)
      need(op.mask, l);
  }

  void loop(TOp &op, std::vector<TOp> &out, Cache &cache) {
    outer_args_.insert(op.block_args.begin(), op.block_args.end());
    for (size_t j = 0; j < op.block_args.size(); ++j) {
      int arg = op.block_args[j], init = op.operands[j];
      if (!tile(arg))
        continue;
      if (hint_.count(arg))
        lay_[size_t(arg)] = hint_.at(arg);
      else if (!adaptable(init))
        lay_[size_t(arg)] = L(init);
    }
    loop_defs_.emplace_back();
    defs(op.body, loop_defs_.back());
    std::vector<TOp> body = ops(op.body, cache);
    loop_defs_.pop_back();
    if (rewrite_) {
      // The yield is the last op; converts for it go right before it.
      TOp y = body.back();
      body.pop_back();
      yield_layouts(op, y, body, cache);
      body.push_back(y);
      op.body = std::move(body);
    } else {
      TOp y = op.body.back();
      std::vector<TOp> scratch;
      yield_layouts(op, y, scratch, cache);
    }
    for (size_t j = 0; j < op.block_args.size(); ++j) {
      int arg = op.block_args[j];
      if (!tile(arg))
        continue;
      need_init(op, j, out, cache);
      lay_[size_t(op.results[j])] = L(arg);
    }
    if (rewrite_)
      out.push_back(std::move(op));
  }

  /// An `if`: its body sees the outer values as they are; each result
  /// takes its initial value's layout (the yielded one's when the initial
  /// value can take any), and the yielded and initial values move there
  /// (converts for the yield at the end of the body, for the initial
  /// value before the `if`).
  void branch(TOp &op, std::vector<TOp> &out, Cache &cache) {
    std::vector<TOp> body = ops(op.body, cache);
    TOp y = rewrite_ ? body.back() : op.body.back();
    if (rewrite_)
      body.pop_back();
    Cache inner = cache; // converts inside the body stay there
    for (size_t j = 0; j < op.results.size(); ++j) {
      int r = op.results[j];
      if (!tile(r))
        continue;
      int &init = op.operands[j + 1];
      int &v = y.operands[j];
      Layout l = !adaptable(init) || hint_.count(init) ? L(init) : L(v);
      v = require(v, l, body, inner, y.loc);
      init = require(init, l, out, cache, op.loc);
      lay_[size_t(r)] = l;
    }
    if (rewrite_) {
      body.push_back(y);
      op.body = std::move(body);
      out.push_back(std::move(op));
    }
  }

  static void defs(const std::vector<TOp> &body, std::set<int> &out) {
    for (const TOp &op : body) {
      out.insert(op.results.begin(), op.results.end());
      out.insert(op.block_args.begin(), op.block_args.end());
      defs(op.body, out);
    }
  }

  void yield_layouts(TOp &op, TOp &y, std::vector<TOp> &body, Cache &cache) {
    for (size_t j = 0; j < op.block_args.size(); ++j) {
      int arg = op.block_args[j];
      int &v = y.operands[j];
      if (!tile(arg))
        continue;
      if (!lay_[size_t(arg)])
        lay_[size_t(arg)] = L(v);
      if (L(v) != L(arg) && adaptable(op.operands[j]) && !hint_.count(arg)) {
        hint_[arg] = L(v);
        changed_ = true;
      } else if (L(v) != L(arg) && !hint_.count(op.operands[j]) &&
                 outer_args_.count(op.operands[j])) {
        // An inner loop's accumulator starts from an outer one's: the
        // outer loop takes the layout the inner body yields (a K loop
        // nested in a loop over heads keeps the mma accumulator layout).
        hint_[op.operands[j]] = L(v);
        changed_ = true;
      }
      v = require(v, L(arg), body, cache, y.loc);
    }
  }

  void need_init(TOp &op, size_t j, std::vector<TOp> &out, Cache &cache) {
    op.operands[j] = require(op.operands[j], L(op.block_args[j]), out, cache, op.loc);
  }

  /// Records the layouts in the values and the function's table, and the
  /// widths stores get from their value's layout.
  void finish(std::vector<TOp> &body) {
    for (TOp &op : body) {
      for (int v : op.results)
        record(v);
      for (int v : op.block_args)
        record(v);
      if ((op.kind == TileOpKind::Load || op.kind == TileOpKind::Store) && op.mem.fast_dim >= 0) {
        int v = op.kind == TileOpKind::Load ? op.results[0] : op.operands[0];
        if (tile(v) && (op.kind == TileOpKind::Store || hint_.count(v))) {
          // A load in a use's layout, or a store of a value that holds
          // more per thread than the coalesced anchor (a reduction's
          // result): as wide as it holds and alignment allows.
          unsigned c = std::min(L(v).contiguous_regs(unsigned(op.mem.fast_dim)),
                                std::max(1u, op.mem.align_vec));
          if (c > op.mem.vec) {
            op.mem.vec_bits = op.mem.vec_bits / std::max(1u, op.mem.vec) * c;
            op.mem.vec = c;
            op.mem.narrowed_by.clear();
          }
        }
        if (tile(v)) {
          unsigned c = L(v).contiguous_regs(unsigned(op.mem.fast_dim));
          if (c < op.mem.vec) {
            op.mem.vec_bits = op.mem.vec_bits / op.mem.vec * c;
            op.mem.vec = c;
            if (op.mem.narrowed_by.empty())
              op.mem.narrowed_by = "value's layout";
          }
        }
      }
      finish(op.body);
    }
  }

  void record(int v) {
    if (!tile(v))
      return;
    const Layout &l = L(v);
    for (size_t i = 0; i < f_.layouts.size(); ++i)
      if (f_.layouts[i] == l) {
        f_.values[size_t(v)].layout = int(i);
        return;
      }
    f_.layouts.push_back(l);
    f_.values[size_t(v)].layout = int(f_.layouts.size()) - 1;
  }
};

bool analysed(const std::vector<TOp> &ops) {
  for (const TOp &op : ops) {
    if ((op.kind == TileOpKind::Load || op.kind == TileOpKind::Store) && !op.mem.analysed)
      return false;
    if (!analysed(op.body))
      return false;
  }
  return true;
}

} // namespace

void assign_layouts(TileModule &m, const KernelDecl &k, const TaskGraph &g, Diag &diag) {
  bool all = true;
  for (const TileFunc &f : m.funcs)
    all = all && analysed(f.body);
  if (!all)
    analyse_memory(m, k, g, diag);
  for (TileFunc &f : m.funcs) {
    Assigner(f, tile_warps(m.threads)).run();
    f.assigned = true;
  }
}

} // namespace etl
