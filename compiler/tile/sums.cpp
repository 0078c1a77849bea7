//===- tile/sums.cpp - A K loop's cross-thread sums, once after the loop --===//
//
// What this owns: hoist_loop_sums (tile/passes.h), after assign_layouts and
// before pipeline_loops. In a `for` whose iter_arg is accumulated by
//
//   %acc' = map.add %acc, (reduce sum %p, axis=A)      (yielded)
//
// where the reduction crosses threads (lanes or warps hold bits of axis A:
// shuffles, and a scratch trip with its barriers, in every step), the loop
// carries %p's partial sums instead, in %p's own layout, and reduces once:
//
//   %z = splat 0 : layout of %p
//   %r = for ... iter_args(%part = %z) { ...; %part' = map.add %part, %p }
//   %acc_out = map.add %acc_init, (reduce sum %r, axis=A)
//
// Each step then adds its products into registers (an FMA per element where
// the product is a multiply) and the shuffles, the scratch and its barriers
// run once per task. Only where %acc and the sum have no other use, %p
// changes from step to step (a loop-invariant sum keeps its place) and
// takes at most kMaxPartialRegs registers per thread (the partials stay live
// across the loop).
//
// Numerics: a float sum is reassociated (each thread's partial runs over k
// first, then across threads), so the result may differ from the per-step
// order in the last bits: both orders are sums of the same products in an
// order the language does not specify (the reduction tree across lanes and
// warps already was the lowering's choice). Integer sums are unchanged.
// ETL_TILE_SUMS=0 (driver) compiles without this pass.
//
//===----------------------------------------------------------------------===//
#include "tile/passes.h"

#include <algorithm>
#include <map>
#include <set>

namespace etl {

namespace {

/// Registers a partial may keep per thread across the loop.
constexpr uint32_t kMaxPartialRegs = 32;

void count_uses(const std::vector<TOp> &body, std::map<int, int> &uses) {
  for (const TOp &op : body) {
    for (int o : op.operands)
      ++uses[o];
    for (const SlicePart &p : op.parts)
      if (p.kind == SlicePart::Gather)
        ++uses[p.gather];
    count_uses(op.body, uses);
  }
}

struct Hoister {
  TileFunc &f;
  std::map<int, int> uses;

  int new_value(const TValue &like) {
    f.values.push_back(like);
    return int(f.values.size() - 1);
  }

  /// Does reducing `v` along `axis` leave the thread (lane or warp bits)?
  bool crosses_threads(int v, int axis) {
    const TValue &x = f.values[size_t(v)];
    if (x.layout < 0 || axis < 0)
      return false;
    const Layout &l = f.layouts[size_t(x.layout)];
    const uint32_t field = ((1u << l.lg[unsigned(axis)]) - 1u) << l.field_offset(unsigned(axis));
    for (const std::vector<uint32_t> *bs : {&l.lane, &l.warp})
      for (uint32_t b : *bs)
        if (b & field)
          return true;
    return false;
  }

  /// The values of `body` (a loop's, variable `var`) that change from one
  /// step to the next: the iter_args, and what reads the loop variable or
  /// such a value (a loop-invariant sum keeps its place: nothing to gain).
  void variant(const std::vector<TOp> &body, const std::string &var, std::set<int> &out) {
    for (const TOp &op : body) {
      bool v = op.kind == TileOpKind::SmemView;
      for (int o : op.operands)
        v = v || out.count(o);
      for (const SlicePart &p : op.parts)
        v = v || (p.kind == SlicePart::Gather && out.count(p.gather)) ||
            (p.at && p.at->symbols().count(var));
      if (op.sym)
        v = v || op.sym->symbols().count(var);
      if (op.kind == TileOpKind::For || op.kind == TileOpKind::If) {
        out.insert(op.block_args.begin(), op.block_args.end());
        variant(op.body, var, out);
        v = true; // (conservatively)
      }
      if (v)
        out.insert(op.results.begin(), op.results.end());
    }
  }

  /// Rewrites loop `body[i]`'s sums; returns the ops added before and after it.
  std::pair<size_t, size_t> loop(std::vector<TOp> &body, size_t i) {
    std::vector<TOp> pre, post;
    TOp &lp = body[i];
    if (lp.body.empty() || lp.body.back().kind != TileOpKind::Yield)
      return {0, 0};
    std::set<int> moves(lp.block_args.begin(), lp.block_args.end());
    variant(lp.body, lp.var, moves);
    for (size_t j = 0; j < lp.block_args.size(); ++j) {
      // Fetched per accumulator: a rewrite below erases an op of the body
      // (moving the yield) and adds values (moving f.values), so no
      // reference into either may outlive one iteration.
      TOp &yield = lp.body.back();
      const int acc = lp.block_args[j];
      const TValue av = f.values[size_t(acc)];
      if (uses[acc] != 1 || !av.is_tile() || av.elem == ElemType::Bool)
        continue;
      // map.add %acc, %s at the body's top level, %s = reduce sum %p.
      size_t at = lp.body.size(), red = lp.body.size();
      for (size_t q = 0; q < lp.body.size(); ++q) {
        const TOp &op = lp.body[q];
        if (op.kind == TileOpKind::Binary && op.attr == "add" && op.operands.size() == 2 &&
            (op.operands[0] == acc) != (op.operands[1] == acc))
          at = q;
      }
      if (at == lp.body.size())
        continue;
      const TOp &add = lp.body[at];
      const int s = add.operands[0] == acc ? add.operands[1] : add.operands[0];
      for (size_t q = 0; q < at; ++q)
        if (lp.body[q].kind == TileOpKind::Reduce && lp.body[q].attr == "sum" &&
            lp.body[q].results.size() == 1 && lp.body[q].results[0] == s)
          red = q;
      if (red == lp.body.size() || uses[s] != 1 || yield.operands[j] != add.results[0] ||
          uses[add.results[0]] != 1)
        continue;
      const TOp &rd = lp.body[red];
      const int p = rd.operands[0];
      const TValue pv = f.values[size_t(p)];
      if (!moves.count(p) || pv.elem != av.elem || pv.layout < 0 || !crosses_threads(p, rd.axis) ||
          f.layouts[size_t(pv.layout)].num_regs() > kMaxPartialRegs)
        continue;
      // Before the loop: zeros in %p's layout.
      TValue scalar;
      scalar.elem = pv.elem;
      const int zero = new_value(scalar);
      TOp c;
      c.kind = TileOpKind::Const;
      c.attr = is_float(pv.elem) ? "0.0" : "0";
      c.results = {zero};
      c.loc = rd.loc;
      pre.push_back(c);
      const int z = new_value(pv);
      TOp sp;
      sp.kind = TileOpKind::Splat;
      sp.operands = {zero};
      sp.results = {z};
      sp.loc = rd.loc;
      pre.push_back(sp);
      // In the loop: the partials take %p, the sum and the add are gone.
      const int part = new_value(pv), next = new_value(pv), out = new_value(pv);
      TOp acc_add;
      acc_add.kind = TileOpKind::Binary;
      acc_add.attr = "add";
      acc_add.operands = {part, p};
      acc_add.results = {next};
      acc_add.loc = add.loc;
      // After it: the sum of the partials onto the initial value, as the
      // loop's old result.
      const int init = lp.operands[j], old_out = lp.results[j];
      const TValue sv = f.values[size_t(s)];
      const int total = new_value(sv);
      TOp sum = rd;
      sum.operands = {out};
      sum.results = {total};
      sum.smem = -1;
      TOp fin = add;
      fin.operands = {init, total};
      fin.results = {old_out};
      post.push_back(sum);
      post.push_back(fin);
      lp.block_args[j] = part;
      lp.operands[j] = z;
      lp.results[j] = out;
      yield.operands[j] = next;
      const size_t lo = std::min(red, at), hi = std::max(red, at);
      lp.body[hi] = acc_add; // where the add stood: after %p
      lp.body.erase(lp.body.begin() + long(lo));
      uses[acc] = 0;
    }
    body.insert(body.begin() + long(i + 1), post.begin(), post.end());
    body.insert(body.begin() + long(i), pre.begin(), pre.end());
    return {pre.size(), post.size()};
  }

  void walk(std::vector<TOp> &body) {
    for (size_t i = 0; i < body.size(); ++i) {
      if (body[i].kind == TileOpKind::If)
        walk(body[i].body);
      if (body[i].kind != TileOpKind::For)
        continue;
      walk(body[i].body);
      auto [pre, post] = loop(body, i);
      i += pre + post;
    }
  }
};

} // namespace

void hoist_loop_sums(TileModule &m) {
  for (TileFunc &f : m.funcs) {
    if (!f.assigned)
      continue;
    Hoister h{f, {}};
    count_uses(f.body, h.uses);
    h.walk(f.body);
  }
}

} // namespace etl
