//===- sema/hazards.cpp - Memory order inside one task --------------------===//
//
// What this owns: the hazard analysis described in sema/hazards.h. The
// accesses of the body come from sema/access.h; a walk in evaluation order
// keeps the accesses that no barrier separates from the current one and
// marks the current one when one of them may conflict with it.
//
//===----------------------------------------------------------------------===//
#include "sema/hazards.h"
#include "sema/access.h"

#include <map>

namespace etl {

namespace {

std::string renamed(const std::string &v) { return v + "'"; }

/// An access no barrier separates from the current point. Loops
/// a->loops[cross..] may have other values in that instance than now;
/// `earlier` says it ran in an earlier iteration of loops[cross] (which
/// encloses the current point).
struct Pending {
  const Access *a;
  size_t cross;
  bool earlier;
};

class Analysis {
public:
  Analysis(const std::vector<StmtPtr> &body, const Facts &f) {
    std::vector<std::pair<const Stmt *, std::vector<size_t>>> bodies;
    accesses_ = collect_accesses(body, &bodies);
    for (size_t i = 0; i < accesses_.size(); ++i)
      by_node_[accesses_[i].node] = i;
    for (auto &[stmt, idx] : bodies)
      for (size_t i : idx)
        loop_body_[stmt].push_back(&accesses_[i]);
    facts_.push_back(f);
  }

  void walk(const std::vector<StmtPtr> &body) {
    for (const StmtPtr &s : body) {
      walk_expr(s->value.get());
      if (s->kind == StmtKind::If) {
        // Either branch may run (the same one in every thread): each starts
        // from what is pending before the `if`, and after it anything pending
        // at the end of either branch is.
        std::vector<Pending> before = pending_;
        branch(*s, false);
        std::vector<Pending> after_then = std::move(pending_);
        pending_ = std::move(before);
        branch(*s, true);
        pending_.insert(pending_.end(), after_then.begin(), after_then.end());
        continue;
      }
      if (s->kind != StmtKind::For)
        continue;
      walk_expr(s->lo.get());
      walk_expr(s->hi.get());
      walk_expr(s->step.get());
      const std::vector<const Access *> &inner = loop_body_[s.get()];
      size_t depth = loops_;
      std::vector<Pending> before = pending_;
      // Any access of the body may have run in an earlier iteration.
      for (const Access *a : inner)
        pending_.push_back(Pending{a, depth, true});
      Facts f = facts_.back();
      if (!inner.empty()) {
        const AccessLoop &l = inner[0]->loops[depth];
        f.add_bounds(l.var, l.lo, l.hi ? std::optional<Sym>(*l.hi - 1) : std::nullopt);
      }
      facts_.push_back(f);
      ++loops_;
      walk(s->body);
      --loops_;
      facts_.pop_back();
      // After the loop: what was pending before (the loop may not run) and
      // any access of the body, from some iteration.
      pending_ = before;
      for (const Access *a : inner)
        pending_.push_back(Pending{a, depth, false});
    }
  }

private:
  std::vector<Access> accesses_;
  std::map<const Expr *, size_t> by_node_;
  std::map<const Stmt *, std::vector<const Access *>> loop_body_;
  size_t loops_ = 0; ///< loops around the current point
  std::vector<Facts> facts_;
  std::vector<Pending> pending_;

  /// `e` as seen from the pending instance `p`: its crossed loop variables renamed.
  static Sym in_instance(const Pending &p, Sym e) {
    for (size_t i = p.cross; i < p.a->loops.size(); ++i)
      e = e.substitute(p.a->loops[i].var, Sym::symbol(renamed(p.a->loops[i].var)));
    return e;
  }

  /// Does every element of `a` stay with the thread that touched it in `p`?
  static bool same_mapping(const Pending &p, const Access &a) {
    const Access &s = *p.a;
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
  bool disjoint(const Pending &p, const Access &a) const {
    const Access &s = *p.a;
    if (s.box.size() != a.box.size())
      return false;
    Facts f = facts_.back();
    for (size_t i = p.cross; i < s.loops.size(); ++i) {
      const AccessLoop &l = s.loops[i];
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

  bool conflicts(const Pending &p, const Access &a) const {
    const Access &s = *p.a;
    if (s.tensor != a.tensor || (!s.write && !a.write))
      return false;
    if (s.write && a.write && s.rank0 && a.rank0)
      return false; // both by thread 0
    if (s.atomic && a.atomic && s.node->builtin == a.node->builtin && !s.node->type.is_tile() &&
        !a.node->type.is_tile())
      return false; // the same atomic op, results unused: the order does not matter
    return !same_mapping(p, a) && !disjoint(p, a);
  }

  void access(const Expr &e) {
    auto it = by_node_.find(&e);
    if (it == by_node_.end())
      return;
    const Access &a = accesses_[it->second];
    for (const Pending &p : pending_)
      if (conflicts(p, a)) {
        // The task's AST is ours to annotate (mark_task_hazards takes it
        // non-const); the access list only holds const views of it.
        const_cast<Expr &>(e).barrier_before = true;
        pending_.clear();
        break;
      }
    pending_.push_back(Pending{&a, a.loops.size(), false});
  }

  /// One branch of `if` statement `s`, knowing its condition (or, for the
  /// else branch, its negation).
  void branch(const Stmt &s, bool is_else) {
    Facts f = facts_.back();
    add_condition_facts(f, *s.value, is_else);
    facts_.push_back(f);
    walk(is_else ? s.else_body : s.body);
    facts_.pop_back();
  }

  void walk_expr(const Expr *e) {
    if (e)
      for_each_access_node(*e, [&](const Expr &x) { access(x); });
  }
};

} // namespace

void add_condition_facts(Facts &f, const Expr &c, bool negated) {
  if (c.kind == ExprKind::Unary && c.un_op == UnOp::Not) {
    add_condition_facts(f, *c.args[0], !negated);
    return;
  }
  if (c.kind != ExprKind::Binary)
    return;
  // a && b holds: both do; !(a || b) holds: neither does.
  if ((c.bin_op == BinOp::And && !negated) || (c.bin_op == BinOp::Or && negated)) {
    add_condition_facts(f, *c.args[0], negated);
    add_condition_facts(f, *c.args[1], negated);
    return;
  }
  const Expr &l = *c.args[0], &r = *c.args[1];
  if (!l.sym || !r.sym || l.reads_data || r.reads_data)
    return;
  const Sym &a = *l.sym, &b = *r.sym;
  BinOp op = c.bin_op;
  if (negated) {
    static const std::map<BinOp, BinOp> opposite = {{BinOp::Lt, BinOp::Ge}, {BinOp::Le, BinOp::Gt},
                                                    {BinOp::Gt, BinOp::Le}, {BinOp::Ge, BinOp::Lt},
                                                    {BinOp::Ne, BinOp::Eq}, {BinOp::Eq, BinOp::Ne}};
    auto it = opposite.find(op);
    if (it == opposite.end())
      return;
    op = it->second;
  }
  add_comparison_fact(f, op, a, b);
}

void add_comparison_fact(Facts &f, BinOp op, const Sym &a, const Sym &b) {
  switch (op) {
  case BinOp::Eq:
    f.add_le(a, b);
    f.add_le(b, a);
    break;
  case BinOp::Le:
    f.add_le(a, b);
    break;
  case BinOp::Lt:
    f.add_le(a + 1, b);
    break;
  case BinOp::Ge:
    f.add_le(b, a);
    break;
  case BinOp::Gt:
    f.add_le(b + 1, a);
    break;
  default: // a != b bounds nothing
    break;
  }
}

void mark_task_hazards(TaskDecl &task, const Facts &facts) {
  Analysis(task.body, facts).walk(task.body);
}

} // namespace etl
