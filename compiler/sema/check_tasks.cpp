//===- sema/check_tasks.cpp - Tasks and events ------------------------------===//
//
// What this owns: a task's domain, its waits and notifies (event indices proven
// in range), element reads of tensor data in event indices and ranges, and the
// rules for data-dependent ranges.
//
//===----------------------------------------------------------------------===//
#include "sema/checker.h"
#include "sema/hazards.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

namespace etl::sema {

void Checker::check_task(TaskDecl &t) {
  task_ = &t;
  t.locals.clear();
  t.num_loops = 0;
  Facts saved = facts_;
  poisoned_vars_.clear();
  scopes_.emplace_back();
  t.data_var = -1;
  for (size_t i = 0; i < t.domain.size(); ++i) {
    TaskIndexDecl &d = t.domain[i];
    if (has_element_read(*d.hi)) {
      check_data_bound(t, i);
      continue;
    }
    std::optional<Sym> lo = check_index(*d.lo, IndexCtx::Range);
    std::optional<Sym> hi = check_index(*d.hi, IndexCtx::Range);
    if (lo && report_inexact(*d.lo))
      lo.reset();
    if (hi && report_inexact(*d.hi))
      hi.reset();
    if (lo && hi && !facts_.prove_ge(*hi - *lo, Sym(1))) {
      diag_.error(DiagId::NonPositiveExtent, join(d.lo->range, d.hi->range),
                  {"the task range", (*hi - *lo).str()});
      note_missing_where(*hi - *lo, Sym(1));
    }
    declare(d.name, d.name_range, NameRef::TaskIndex, int(i));
    if (!lo || !hi)
      poisoned_vars_.insert(d.name);
    facts_.add_bounds(d.name, lo, hi ? std::optional<Sym>(*hi - 1) : std::nullopt);
  }
  for (auto &r : t.waits)
    check_event_ref(r);
  for (auto &r : t.notifies)
    check_event_ref(r);
  if (t.data_var >= 0) {
    check_data_bound_edges(t, t.waits, "waits on");
    check_data_bound_edges(t, t.notifies, "notifies");
    if (t.schedule == ScheduleKind::Static)
      diag_.error(DiagId::DataBoundStatic, t.schedule_range, {t.name});
  }
  scopes_.emplace_back();
  unsigned errors_before_body = diag_.error_count();
  for (auto &s : t.body)
    check_stmt(*s);
  scopes_.pop_back();
  // The hazard analysis reads checked accesses (a store has its slice and
  // its value); after an error in the body nothing is lowered anyway.
  if (diag_.error_count() == errors_before_body)
    mark_task_hazards(t, facts_);
  scopes_.pop_back();
  facts_ = saved;
  task_ = nullptr;
}

void Checker::check_event_ref(EventRef &r) {
  int idx = -1;
  for (size_t i = 0; i < kernel_->events.size(); ++i)
    if (kernel_->events[i].name == r.event)
      idx = int(i);
  if (idx < 0) {
    const Binding *b = lookup(r.event);
    if (b) {
      diag_.error(DiagId::NotAnEvent, r.event_range, {r.event});
      diag_.note(DiagId::NoteDeclaredHere, b->decl, {r.event});
    } else {
      std::vector<std::string> names;
      for (auto &e : kernel_->events)
        names.push_back(e.name);
      undefined(r.event, r.event_range, names, DiagId::UndefinedName);
    }
    return;
  }
  r.event_index = idx;
  const EventDecl &ev = kernel_->events[idx];
  if (r.indices.size() != ev.shape.size()) {
    diag_.error(DiagId::EventArity, r.range,
                {r.event, std::to_string(ev.shape.size()), std::to_string(r.indices.size())});
    return;
  }
  for (size_t i = 0; i < r.indices.size(); ++i) {
    if (!r.indices[i])
      continue; // `*`
    std::optional<Sym> s = check_index(*r.indices[i], IndexCtx::Domain);
    if (s && mark_reads_data(*r.indices[i]))
      continue; // checked on the device when the task evaluates it
    if (!s || !event_ok_[idx])
      continue;
    bool poisoned = false;
    for (const std::string &v : s->symbols())
      poisoned |= poisoned_vars_.count(v) != 0;
    if (poisoned)
      continue;
    const Sym &ext = ev.sym_shape[i];
    bool low = facts_.prove_ge(*s, Sym(0));
    if (!low || !facts_.prove_ge(ext - 1, *s)) {
      diag_.error(DiagId::EventIndexRange, r.indices[i]->range,
                  {s->str(), r.event, ext.str(), task_->name});
      if (low)
        note_missing_where(ext - 1, *s);
      else
        note_missing_where(*s, Sym(0));
    }
  }
}

/// `t[i, j]` in an event index: one element of an integer tensor (every
/// component a scalar index). Its value is an opaque symbol named after
/// the read; reads_data marks it (and, through mark_reads_data, whatever
/// is computed from it).
Type Checker::check_element_read(Expr &e, IndexCtx ctx) {
  Type base = check_expr(*e.args[0], ctx);
  if (base.kind == TypeKind::Unknown)
    return set(e, Type());
  if (base.kind != TypeKind::Tensor || (base.elem != ElemType::I32 && base.elem != ElemType::I64)) {
    diag_.error(DiagId::ExpectedIndex, e.range,
                {base.kind != TypeKind::Tensor ? describe(base)
                 : is_integer(base.elem) ? "an element of a " + std::string(spelling(base.elem)) +
                                               " tensor (only i32 and i64 tensors index; load it)"
                                         : "an element of a non-integer tensor (load it)"});
    return set(e, Type());
  }
  const TensorDecl &td = kernel_->tensors[size_t(e.args[0]->ref_index)];
  size_t n = e.args.size() - 1;
  if (n != td.type.shape.size()) {
    diag_.error(DiagId::SliceArity, e.range,
                {td.name, std::to_string(td.type.shape.size()), std::to_string(n)});
    return set(e, Type());
  }
  std::string text = td.name + "[";
  for (size_t k = 1; k < e.args.size(); ++k) {
    Expr &c = *e.args[k];
    if (c.kind == ExprKind::Range) {
      diag_.error(DiagId::ExpectedIndex, c.range, {"a range"});
      return set(e, Type());
    }
    std::optional<Sym> s = check_index(c, ctx);
    if (!s)
      return set(e, Type());
    text += (k > 1 ? ", " : "") + s->str();
  }
  e.reads_data = true;
  e.sym = Sym::symbol(text + "]");
  return set(e, index_type());
}

bool Checker::has_range_component(const Expr &e) {
  for (size_t k = 1; k < e.args.size(); ++k)
    if (e.args[k]->kind == ExprKind::Range)
      return true;
  return false;
}

bool Checker::has_element_read(const Expr &e) {
  if (e.kind == ExprKind::Index)
    return true;
  for (const auto &a : e.args)
    if (a && has_element_read(*a))
      return true;
  return false;
}

/// Domain variable `i` of `t` whose upper bound reads tensor data: it must
/// be `min(<reads data>, <bound without data>)` (either order), the only
/// such variable; the data part may use the variables before it.
void Checker::check_data_bound(TaskDecl &t, size_t i) {
  TaskIndexDecl &d = t.domain[i];
  std::optional<Sym> lo = check_index(*d.lo, IndexCtx::Range);
  Expr &h = *d.hi;
  bool is_min = h.kind == ExprKind::Call && h.name == "min" && h.args.size() == 2 &&
                h.kwargs.empty() && !h.type_arg && h.shape_args.empty();
  int dd = -1;
  if (is_min) {
    bool a = has_element_read(*h.args[0]), b = has_element_read(*h.args[1]);
    dd = a && !b ? 0 : b && !a ? 1 : -1;
  }
  if (dd < 0) {
    diag_.error(DiagId::DataBoundRule, h.range,
                {d.name, "write it as min(<reads data>, <bound without data>), so the largest "
                         "number of tasks is known at bind time"});
  } else if (t.data_var >= 0) {
    diag_.error(DiagId::DataBoundRule, h.range,
                {d.name, "only one task variable's range may read data (here also '" +
                             t.domain[size_t(t.data_var)].name + "')"});
    dd = -1;
  }
  std::optional<Sym> st;
  if (dd >= 0) {
    st = check_index(*h.args[size_t(1 - dd)], IndexCtx::Range);
    in_data_range_ = true;
    std::optional<Sym> dv = check_index(*h.args[size_t(dd)], IndexCtx::Domain);
    in_data_range_ = false;
    if (dv)
      mark_reads_data(*h.args[size_t(dd)]);
    if (st && dv && lo) {
      d.data_bound = h.args[size_t(dd)].get();
      d.static_bound = h.args[size_t(1 - dd)].get();
      t.data_var = int(i);
      h.sym = st; // the largest extent's bound
      h.reads_data = true;
      h.type = index_type();
    }
  }
  declare(d.name, d.name_range, NameRef::TaskIndex, int(i));
  if (!lo || !st || t.data_var != int(i))
    poisoned_vars_.insert(d.name);
  facts_.add_bounds(d.name, lo, st ? std::optional<Sym>(*st - 1) : std::nullopt);
}

/// Waits and notifies of a group with a data-dependent range may use only
/// the variables before it (its tasks are pushed when the range is known,
/// with their waits already done and their notifications counted).
void Checker::check_data_bound_edges(const TaskDecl &t, const std::vector<EventRef> &refs,
                                     const char *verb) {
  for (const EventRef &r : refs)
    for (const ExprPtr &ix : r.indices) {
      if (!ix || !ix->sym)
        continue;
      for (size_t v = size_t(t.data_var); v < t.domain.size(); ++v)
        if (ix->sym->mentions(t.domain[v].name)) {
          diag_.error(DiagId::DataBoundEdge, ix->range,
                      {t.name, verb, r.event, t.domain[v].name, t.domain[size_t(t.data_var)].name});
          break;
        }
    }
}

/// Sets reads_data on every node computed from an element read.
bool Checker::mark_reads_data(Expr &e) {
  bool any = e.reads_data;
  for (auto &a : e.args)
    if (a)
      any |= mark_reads_data(*a);
  e.reads_data = any;
  return any;
}

} // namespace etl::sema
