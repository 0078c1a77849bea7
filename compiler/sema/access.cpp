//===- sema/access.cpp - What a task body reads and writes ----------------===//
//
// What this owns: collect_accesses (see sema/access.h).
//
//===----------------------------------------------------------------------===//
#include "sema/access.h"

#include <functional>

namespace etl {

namespace {

AccessBox box_of(const Expr &c) {
  AccessBox b;
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

int tensor_of(const Expr &base) {
  return base.kind == ExprKind::Name && base.ref == NameRef::Tensor ? base.ref_index : -1;
}

bool is_access_call(const Expr &e) {
  return e.kind == ExprKind::Call &&
         (e.builtin == Builtin::Load || e.builtin == Builtin::Store || is_atomic_fn(e.builtin)) &&
         !e.args.empty();
}

Access access_of(const Expr &e, const std::vector<AccessLoop> &loops) {
  Access a;
  a.node = &e;
  a.loops = loops;
  if (e.kind == ExprKind::Index) { // element read: every thread reads one element
    a.tensor = tensor_of(*e.args[0]);
    a.rank0 = true;
    for (size_t i = 1; i < e.args.size(); ++i)
      a.box.push_back(box_of(*e.args[i]));
    return a;
  }
  a.atomic = is_atomic_fn(e.builtin);
  a.write = e.builtin == Builtin::Store || a.atomic;
  const Expr &slice = *e.args[0];
  if (slice.kind == ExprKind::Index) {
    a.tensor = tensor_of(*slice.args[0]);
    a.shape = slice.type.tile_shape;
    for (size_t i = 1; i < slice.args.size(); ++i)
      a.box.push_back(box_of(*slice.args[i]));
  } else {
    a.tensor = tensor_of(slice);
  }
  a.rank0 = a.shape.empty();
  return a;
}

} // namespace

bool has_mask(const Access &a) {
  for (const KwArg &k : a.node->kwargs)
    if (k.name == "mask")
      return true;
  return false;
}

AccessLoop access_loop(const Stmt &s) {
  AccessLoop l;
  l.var = s.name;
  if (s.lo && s.lo->sym && !s.lo->reads_data)
    l.lo = *s.lo->sym;
  if (s.hi && s.hi->sym && !s.hi->reads_data)
    l.hi = *s.hi->sym;
  std::optional<Sym> step = Sym(1);
  if (s.step)
    step = s.step->sym && !s.step->reads_data ? s.step->sym : std::nullopt;
  l.step = step;
  if (l.lo && l.hi && step) {
    l.trips = Sym::cdiv(*l.hi - *l.lo, *step);
    if (auto c = l.trips->as_constant(); c && *c < 0)
      l.trips = Sym(0); // an empty range (hi <= lo) runs zero times
  }
  return l;
}

namespace {

struct Collector {
  std::vector<Access> out;
  std::vector<std::pair<const Stmt *, std::vector<size_t>>> *loop_bodies;
  std::vector<AccessLoop> loops;
  std::vector<size_t> open; ///< indices into *loop_bodies of the loops being walked
  int branches = 0;         ///< `if` branches around the statement being walked

  void expr(const Expr *e) {
    if (!e)
      return;
    for_each_access_node(*e, [&](const Expr &x) {
      Access a = access_of(x, loops);
      if (a.tensor < 0)
        return;
      a.conditional = branches > 0;
      out.push_back(std::move(a));
      if (loop_bodies)
        for (size_t l : open)
          (*loop_bodies)[l].second.push_back(out.size() - 1);
    });
  }

  void stmts(const std::vector<StmtPtr> &body) {
    for (const StmtPtr &s : body) {
      expr(s->value.get());
      if (s->kind == StmtKind::If) { // both branches, in order (taken or not)
        ++branches;
        stmts(s->body);
        stmts(s->else_body);
        --branches;
      }
      if (s->kind != StmtKind::For)
        continue;
      expr(s->lo.get());
      expr(s->hi.get());
      expr(s->step.get());
      loops.push_back(access_loop(*s));
      if (loop_bodies) {
        open.push_back(loop_bodies->size());
        loop_bodies->push_back({s.get(), {}});
      }
      stmts(s->body);
      if (loop_bodies)
        open.pop_back();
      loops.pop_back();
    }
  }
};

} // namespace

void for_each_access_node(const Expr &e, const std::function<void(const Expr &)> &f) {
  bool access = is_access_call(e);
  if (access && e.args[0]->kind == ExprKind::Index) {
    const Expr &slice = *e.args[0];
    for (size_t i = 1; i < slice.args.size(); ++i)
      for_each_access_node(*slice.args[i], f);
  } else if (access) {
    for_each_access_node(*e.args[0], f);
  }
  for (const KwArg &k : e.kwargs)
    if (k.value)
      for_each_access_node(*k.value, f);
  for (size_t i = access ? 1 : 0; i < e.args.size(); ++i)
    if (e.args[i])
      for_each_access_node(*e.args[i], f);
  if (access || (e.kind == ExprKind::Index && e.type.kind == TypeKind::Index))
    f(e);
}

std::vector<Access>
collect_accesses(const std::vector<StmtPtr> &body,
                 std::vector<std::pair<const Stmt *, std::vector<size_t>>> *loop_bodies) {
  Collector c;
  c.loop_bodies = loop_bodies;
  c.stmts(body);
  return std::move(c.out);
}

} // namespace etl
