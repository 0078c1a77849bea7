//===- sema/hazards.cpp - Memory order inside one task --------------------===//
//
// What this owns: the hazard analysis described in sema/hazards.h. One walk
// collects every access site of the body (load, store, element read) with
// its enclosing loops; a second walk in evaluation order keeps the accesses
// that no barrier separates from the current one and marks the current one
// when one of them may conflict with it.
//
//===----------------------------------------------------------------------===//
#include "sema/hazards.h"

#include <map>

namespace etl {

namespace {

/// One dimension of the elements an access touches: [start, start + extent).
struct Box {
  bool known = false;
  Sym start, extent;
};

struct Loop {
  std::string var;
  std::optional<Sym> lo, hi; ///< hi exclusive
};

/// A load, store or element read in the body.
struct Site {
  Expr *node = nullptr;
  int tensor = -1;
  bool write = false;
  /// Rank 0: a load or element read is done by every thread, a store by
  /// thread 0 alone.
  bool rank0 = false;
  std::vector<int64_t> shape; ///< the tile the access moves
  std::vector<Box> box;       ///< per tensor dimension; unknown: gather, data, error
  std::vector<Loop> loops;    ///< enclosing `for`s, outermost first
};

/// An access no barrier separates from the current point. Loops
/// site->loops[cross..] may have other values in that instance than now;
/// `earlier` says it ran in an earlier iteration of loops[cross] (which
/// encloses the current point).
struct Pending {
  const Site *site;
  size_t cross;
  bool earlier;
};

std::string renamed(const std::string &v) { return v + "'"; }

Box box_of(const Expr &c) {
  Box b;
  if (c.type.is_tile() || c.reads_data)
    return b; // a gather or a data-dependent index: any element
  if (c.kind == ExprKind::Range) {
    const Expr &lo = *c.args[0], &hi = *c.args[1];
    if (!lo.sym || !hi.sym || lo.reads_data || hi.reads_data)
      return b;
    b.start = *lo.sym;
    b.extent = c.plus_extent ? *hi.sym : *hi.sym - *lo.sym;
  } else {
    if (!c.sym)
      return b;
    b.start = *c.sym;
    b.extent = Sym(1);
  }
  b.known = true;
  return b;
}

class Analysis {
public:
  explicit Analysis(const Facts &f) { facts_.push_back(f); }

  void run(std::vector<StmtPtr> &body) {
    collect(body);
    walk(body);
  }

private:
  std::map<const Expr *, Site> sites_;
  /// Sites of each `for` statement's body (nested loops included).
  std::map<const Stmt *, std::vector<const Site *>> loop_sites_;
  std::vector<Loop> loops_;
  std::vector<const Stmt *> open_loops_; ///< while collecting
  std::vector<Facts> facts_;
  std::vector<Pending> pending_;

  //===-- Collection -----------------------------------------------------===//

  static int tensor_of(const Expr &base) {
    return base.kind == ExprKind::Name && base.ref == NameRef::Tensor ? base.ref_index : -1;
  }

  /// Calls f(node, is_site) for every sub-expression in evaluation order
  /// (the order of lower/: a slice's gather indices, then keyword arguments,
  /// then the stored value, then the access itself).
  template <typename F> static void visit(Expr &e, F &&f) {
    bool access =
        e.kind == ExprKind::Call && (e.builtin == Builtin::Load || e.builtin == Builtin::Store);
    if (access && !e.args.empty() && e.args[0]->kind == ExprKind::Index) {
      Expr &slice = *e.args[0];
      for (size_t i = 1; i < slice.args.size(); ++i)
        visit(*slice.args[i], f);
    } else if (access && !e.args.empty()) {
      visit(*e.args[0], f);
    }
    for (KwArg &k : e.kwargs)
      if (k.value)
        visit(*k.value, f);
    for (size_t i = access ? 1 : 0; i < e.args.size(); ++i)
      if (e.args[i])
        visit(*e.args[i], f);
    if (access || (e.kind == ExprKind::Index && e.type.kind == TypeKind::Index))
      f(e);
  }

  void add_site(Expr &e) {
    Site s;
    s.node = &e;
    s.loops = loops_;
    if (e.kind == ExprKind::Index) { // element read: every thread reads one element
      s.tensor = tensor_of(*e.args[0]);
      s.rank0 = true;
      for (size_t i = 1; i < e.args.size(); ++i)
        s.box.push_back(box_of(*e.args[i]));
    } else {
      s.write = e.builtin == Builtin::Store;
      const Expr &slice = *e.args[0];
      if (slice.kind == ExprKind::Index) {
        s.tensor = tensor_of(*slice.args[0]);
        s.shape = slice.type.tile_shape;
        for (size_t i = 1; i < slice.args.size(); ++i)
          s.box.push_back(box_of(*slice.args[i]));
      } else {
        s.tensor = tensor_of(slice);
      }
      s.rank0 = s.shape.empty();
    }
    if (s.tensor < 0)
      return;
    const Site *site = &(sites_[&e] = s);
    for (const Stmt *l : open_loops_)
      loop_sites_[l].push_back(site);
  }

  void collect_expr(Expr *e) {
    if (e)
      visit(*e, [&](Expr &x) { add_site(x); });
  }

  void collect(std::vector<StmtPtr> &body) {
    for (StmtPtr &s : body) {
      collect_expr(s->value.get());
      if (s->kind != StmtKind::For)
        continue;
      collect_expr(s->lo.get());
      collect_expr(s->hi.get());
      collect_expr(s->step.get());
      loops_.push_back(loop_of(*s));
      open_loops_.push_back(s.get());
      collect(s->body);
      open_loops_.pop_back();
      loops_.pop_back();
    }
  }

  static Loop loop_of(const Stmt &s) {
    Loop l;
    l.var = s.name;
    if (s.lo && s.lo->sym && !s.lo->reads_data)
      l.lo = *s.lo->sym;
    if (s.hi && s.hi->sym && !s.hi->reads_data)
      l.hi = *s.hi->sym;
    return l;
  }

  //===-- Conflicts ------------------------------------------------------===//

  /// `e` as seen from the pending instance `p`: its crossed loop variables renamed.
  static Sym in_instance(const Pending &p, Sym e) {
    for (size_t i = p.cross; i < p.site->loops.size(); ++i)
      e = e.substitute(p.site->loops[i].var, Sym::symbol(renamed(p.site->loops[i].var)));
    return e;
  }

  /// Does every element of `a` stay with the thread that touched it in `p`?
  bool same_mapping(const Pending &p, const Site &a) const {
    const Site &s = *p.site;
    if (s.rank0 || a.rank0 || s.shape != a.shape || s.box.size() != a.box.size() || s.box.empty())
      return false;
    for (size_t d = 0; d < a.box.size(); ++d) {
      if (!s.box[d].known || !a.box[d].known)
        return false;
      if (in_instance(p, s.box[d].start) != a.box[d].start || s.box[d].extent != a.box[d].extent)
        return false;
    }
    return true;
  }

  /// Are the elements of `p` and `a` provably different?
  bool disjoint(const Pending &p, const Site &a) const {
    const Site &s = *p.site;
    if (s.box.size() != a.box.size())
      return false;
    Facts f = facts_.back();
    for (size_t i = p.cross; i < s.loops.size(); ++i) {
      const Loop &l = s.loops[i];
      std::optional<Sym> lo, hi;
      if (l.lo)
        lo = in_instance(p, *l.lo);
      if (l.hi)
        hi = in_instance(p, *l.hi) - 1;
      f.add_bounds(renamed(l.var), lo, hi);
    }
    if (p.earlier && p.cross < s.loops.size()) {
      const std::string &v = s.loops[p.cross].var;
      f.add_le(Sym::symbol(renamed(v)) + 1, Sym::symbol(v));
    }
    for (size_t d = 0; d < a.box.size(); ++d) {
      if (!s.box[d].known || !a.box[d].known)
        continue;
      Sym ps = in_instance(p, s.box[d].start), pe = in_instance(p, s.box[d].extent);
      if (f.prove_ge(a.box[d].start, ps + pe) || f.prove_ge(ps, a.box[d].start + a.box[d].extent))
        return true;
    }
    return false;
  }

  bool conflicts(const Pending &p, const Site &a) const {
    const Site &s = *p.site;
    if (s.tensor != a.tensor || (!s.write && !a.write))
      return false;
    if (s.write && a.write && s.rank0 && a.rank0)
      return false; // both by thread 0
    return !same_mapping(p, a) && !disjoint(p, a);
  }

  //===-- The ordered walk -----------------------------------------------===//

  void access(Expr &e) {
    auto it = sites_.find(&e);
    if (it == sites_.end())
      return;
    const Site &a = it->second;
    for (const Pending &p : pending_)
      if (conflicts(p, a)) {
        e.barrier_before = true;
        pending_.clear();
        break;
      }
    pending_.push_back(Pending{&a, a.loops.size(), false});
  }

  void walk_expr(Expr *e) {
    if (e)
      visit(*e, [&](Expr &x) { access(x); });
  }

  void walk(std::vector<StmtPtr> &body) {
    for (StmtPtr &s : body) {
      walk_expr(s->value.get());
      if (s->kind != StmtKind::For)
        continue;
      walk_expr(s->lo.get());
      walk_expr(s->hi.get());
      walk_expr(s->step.get());
      const std::vector<const Site *> &inner = loop_sites_[s.get()];
      size_t depth = loops_.size();
      std::vector<Pending> before = pending_;
      // Any access of the body may have run in an earlier iteration.
      for (const Site *site : inner)
        pending_.push_back(Pending{site, depth, true});
      Loop l = loop_of(*s);
      Facts f = facts_.back();
      f.add_bounds(l.var, l.lo, l.hi ? std::optional<Sym>(*l.hi - 1) : std::nullopt);
      facts_.push_back(f);
      loops_.push_back(l);
      walk(s->body);
      loops_.pop_back();
      facts_.pop_back();
      // After the loop: what was pending before (the loop may not run) and
      // any access of the body, from some iteration.
      pending_ = before;
      for (const Site *site : inner)
        pending_.push_back(Pending{site, depth, false});
    }
  }
};

} // namespace

void mark_task_hazards(TaskDecl &task, const Facts &facts) { Analysis(facts).run(task.body); }

} // namespace etl
