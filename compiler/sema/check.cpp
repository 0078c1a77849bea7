//===- sema/check.cpp - Names, types and symbolic shapes ------------------===//
//
// What this owns: the checks described in sema/check.h. The checker walks
// each kernel once, top to bottom:
//
//   consts  -> folded to int64 (they size tiles, so they must be constant)
//   dims    -> symbols, each >= 1
//   where   -> facts for the prover (divisibility, bounds); every clause is
//              also checked by the runtime at bind time
//   tensors, events -> symbolic shapes (exact: no remainder-dropping `/`)
//   tasks   -> domains, event indices proven in range, then the body:
//              tiles have static shapes, element-wise operands broadcast,
//              stores match their slices.
//
// Every expression gets a Type; index expressions also get their Sym. An
// error types the expression Unknown, and Unknown operands produce no further
// errors, so one mistake is reported once and the next task is still checked.
//
//===----------------------------------------------------------------------===//
#include "sema/check.h"
#include "sema/hazards.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <utility>

namespace etl {
namespace {

//===-- Small helpers ----------------------------------------------------===//

std::string shape_str(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::string shape_str(const std::vector<Sym> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + s[i].str();
  return r + "]";
}

/// How a type reads in a message: "a tile<f32>[16, 128]", "an index".
std::string describe(const Type &t) {
  switch (t.kind) {
  case TypeKind::Index:
    return "an integer index";
  case TypeKind::Scalar:
    return std::string("a scalar ") + spelling(t.elem);
  case TypeKind::Tile:
    return std::string("a tile<") + spelling(t.elem) + ">" + shape_str(t.tile_shape);
  case TypeKind::Tensor:
    return std::string("a tensor<") + spelling(t.elem) + ">" + shape_str(t.tensor_shape);
  case TypeKind::Slice:
    return "a tensor slice";
  case TypeKind::Unknown:
    break;
  }
  return "an expression";
}

/// Levenshtein distance, for "did you mean".
size_t edit_distance(const std::string &a, const std::string &b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest(const std::string &name, const std::vector<std::string> &candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(1, std::min<size_t>(2, name.size() / 3 + 1)) + 1;
  for (const auto &c : candidates) {
    size_t d = edit_distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

Type index_type(Sym s) {
  (void)s;
  Type t;
  t.kind = TypeKind::Index;
  return t;
}

Type scalar_type(ElemType e) {
  Type t;
  t.kind = TypeKind::Scalar;
  t.elem = e;
  return t;
}

Type tile_type(ElemType e, std::vector<int64_t> shape) {
  Type t;
  t.kind = TypeKind::Tile;
  t.elem = e;
  t.tile_shape = std::move(shape);
  return t;
}

/// Numpy broadcasting of two static shapes; nullopt if incompatible.
std::optional<std::vector<int64_t>> broadcast(const std::vector<int64_t> &a,
                                              const std::vector<int64_t> &b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> r(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      return std::nullopt;
    r[i] = x == 1 ? y : x;
  }
  return r;
}

//===-- The checker ------------------------------------------------------===//

/// What a name in scope refers to.
struct Binding {
  NameRef ref;
  int index;
  SourceRange decl;
};

/// Where an index expression is being used; decides which names it may use.
enum class IndexCtx {
  Const,  ///< a `const`: literals and other consts
  Shape,  ///< tensor/event shapes and `where`: dims and consts
  Range,  ///< a task's domain bounds: dims and consts
  Domain, ///< event indices in waits/notifies: also the task's indices
  Body    ///< a task body: everything in scope
};

class Checker {
public:
  Checker(Program &p, Diag &d) : prog_(p), diag_(d) {}

  void run() {
    check_consts();
    for (auto &k : prog_.kernels)
      check_kernel(k);
  }

private:
  Program &prog_;
  Diag &diag_;
  /// The next Index expression checked is the slice argument of load/store
  /// (set by check_call, consumed by check_expr).
  bool slice_arg_ = false;
  /// The call standing alone as an expression statement: the one place a
  /// statement-only builtin (store) may appear.
  const Expr *stmt_call_ = nullptr;

  // Scopes: a stack of maps; the bottom holds consts (and kernel names).
  std::vector<std::map<std::string, Binding>> scopes_;
  KernelDecl *kernel_ = nullptr;
  TaskDecl *task_ = nullptr;
  Facts facts_;
  /// Task indices whose range had an error, and events whose shape had one:
  /// proofs about them are skipped so one mistake is reported once.
  std::set<std::string> poisoned_vars_;
  std::vector<bool> event_ok_;

  //===-- Scopes ---------------------------------------------------------===//

  const Binding *lookup(const std::string &name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end())
        return &f->second;
    }
    return nullptr;
  }

  /// Declares `name`; reports a redefinition (with a note) if it is taken.
  bool declare(const std::string &name, SourceRange r, NameRef ref, int index) {
    if (const Binding *prev = lookup(name)) {
      diag_.error(DiagId::Redefinition, r, {name});
      if (prev->decl.valid())
        diag_.note(DiagId::NoteDeclaredHere, prev->decl, {name});
      return false;
    }
    scopes_.back()[name] = Binding{ref, index, r};
    return true;
  }

  std::vector<std::string> visible_names() const {
    std::vector<std::string> r;
    for (const auto &s : scopes_)
      for (const auto &kv : s)
        r.push_back(kv.first);
    r.push_back("inf");
    return r;
  }

  void undefined(const std::string &name, SourceRange r, const std::vector<std::string> &candidates,
                 DiagId id) {
    diag_.error(id, r, {name});
    std::string best = closest(name, candidates);
    if (!best.empty())
      diag_.note(DiagId::NoteDidYouMean, r, {best});
  }

  //===-- Constants ------------------------------------------------------===//

  void check_consts() {
    scopes_.emplace_back();
    for (size_t i = 0; i < prog_.consts.size(); ++i) {
      ConstDecl &c = prog_.consts[i];
      if (auto f = float_literal_value(*c.value)) {
        c.is_float = true;
        c.float_folded = *f;
        check_expr(*c.value, IndexCtx::Body);
        declare(c.name, c.name_range, NameRef::Const, int(i));
        continue;
      }
      std::optional<Sym> v = check_index(*c.value, IndexCtx::Const);
      if (v) {
        if (auto k = v->as_constant())
          c.folded = *k;
        else
          internal_error("const '" + c.name + "' did not fold");
      }
      declare(c.name, c.name_range, NameRef::Const, int(i));
    }
  }

  //===-- Kernels --------------------------------------------------------===//

  void check_kernel(KernelDecl &k) {
    kernel_ = &k;
    facts_ = Facts();
    scopes_.resize(1);
    scopes_.emplace_back();
    for (size_t i = 0; i < k.dims.size(); ++i) {
      declare(k.dims[i].name, k.dims[i].range, NameRef::Dim, int(i));
      facts_.add_bounds(k.dims[i].name, Sym(1), std::nullopt);
    }
    for (auto &w : k.where)
      check_where(*w);
    for (size_t i = 0; i < k.tensors.size(); ++i) {
      TensorDecl &t = k.tensors[i];
      t.shape.clear();
      for (auto &e : t.type.shape)
        t.shape.push_back(check_extent(*e, IndexCtx::Shape, "the extent").value_or(Sym(1)));
      if (t.type.elem == ElemType::Bool)
        diag_.error(DiagId::BoolTensor, t.type.elem_range, {t.name});
      declare(t.name, t.name_range, NameRef::Tensor, int(i));
    }
    event_ok_.assign(k.events.size(), true);
    for (size_t i = 0; i < k.events.size(); ++i) {
      EventDecl &ev = k.events[i];
      ev.sym_shape.clear();
      for (auto &e : ev.shape) {
        std::optional<Sym> ext = check_extent(*e, IndexCtx::Shape, "the extent");
        event_ok_[i] = event_ok_[i] && ext.has_value();
        ev.sym_shape.push_back(ext.value_or(Sym(1)));
      }
      // Events live in their own namespace (they appear only in clauses), but
      // a clash with another name would be confusing: report it.
      declare(ev.name, ev.name_range, NameRef::Unresolved, int(i));
    }
    for (auto &t : k.tasks) {
      // Task names are checked for clashes among themselves only.
      check_task(t);
    }
    std::map<std::string, const TaskDecl *> task_names;
    for (auto &t : k.tasks) {
      auto [it, fresh] = task_names.emplace(t.name, &t);
      if (!fresh) {
        diag_.error(DiagId::Redefinition, t.name_range, {t.name});
        diag_.note(DiagId::NoteDeclaredHere, it->second->name_range, {t.name});
      }
    }
    kernel_ = nullptr;
  }

  /// `where` clauses: every one must be a comparison of dim expressions (the
  /// runtime evaluates it); the ones the prover understands become facts.
  void check_where(Expr &w) {
    if (w.kind == ExprKind::Binary && (w.bin_op == BinOp::And)) {
      check_where(*w.args[0]);
      check_where(*w.args[1]);
      return;
    }
    static const std::set<BinOp> cmp = {BinOp::Eq, BinOp::Ne, BinOp::Lt,
                                        BinOp::Le, BinOp::Gt, BinOp::Ge};
    if (w.kind != ExprKind::Binary || !cmp.count(w.bin_op)) {
      diag_.error(DiagId::UnsupportedWhere, w.range);
      return;
    }
    std::optional<Sym> a = check_index(*w.args[0], IndexCtx::Shape);
    std::optional<Sym> b = check_index(*w.args[1], IndexCtx::Shape);
    if (!a || !b)
      return;
    w.type = index_type(*a);
    switch (w.bin_op) {
    case BinOp::Eq: {
      // `X % c == 0` is divisibility.
      Expr &l = *w.args[0];
      if (b->as_constant() == 0 && l.kind == ExprKind::Binary && l.bin_op == BinOp::Mod &&
          l.args[0]->sym && l.args[1]->sym) {
        if (auto c = l.args[1]->sym->as_constant(); c && *c > 0)
          facts_.add_divisible(*l.args[0]->sym, *c);
      }
      facts_.add_le(*a, *b);
      facts_.add_le(*b, *a);
      // `N == 2 * M`: a definition of the dim N, substituted when the
      // other facts do not settle a question.
      if (w.args[0]->kind == ExprKind::Name && w.args[0]->ref == NameRef::Dim)
        facts_.add_definition(w.args[0]->name, *b);
      else if (w.args[1]->kind == ExprKind::Name && w.args[1]->ref == NameRef::Dim)
        facts_.add_definition(w.args[1]->name, *a);
      break;
    }
    case BinOp::Le:
      facts_.add_le(*a, *b);
      break;
    case BinOp::Lt:
      facts_.add_le(*a + 1, *b);
      break;
    case BinOp::Ge:
      facts_.add_le(*b, *a);
      break;
    case BinOp::Gt:
      facts_.add_le(*b + 1, *a);
      break;
    default:
      break;
    }
  }

  /// An index expression used as an extent (shape, domain bound): it must be
  /// exact and, for shapes, positive.
  std::optional<Sym> check_extent(Expr &e, IndexCtx ctx, const char *what) {
    std::optional<Sym> s = check_index(e, ctx);
    if (!s)
      return std::nullopt;
    if (report_inexact(e))
      return std::nullopt;
    if (!facts_.prove_ge(*s, Sym(1))) {
      diag_.error(DiagId::NonPositiveExtent, e.range, {what, s->str()});
      return std::nullopt;
    }
    return s;
  }

  /// Reports the first division in `e` that may drop a remainder.
  bool report_inexact(const Expr &e) {
    if (e.kind == ExprKind::Binary && e.bin_op == BinOp::Div && e.args[0]->sym && e.args[1]->sym) {
      auto c = e.args[1]->sym->as_constant();
      if (c && *c > 0 && !facts_.divisible(*e.args[0]->sym, *c)) {
        diag_.error(DiagId::InexactDivision, e.range,
                    {e.args[0]->sym->str(), std::to_string(*c), e.sym ? e.sym->str() : ""});
        return true;
      }
    }
    for (const auto &a : e.args)
      if (a && report_inexact(*a))
        return true;
    return false;
  }

  //===-- Tasks ----------------------------------------------------------===//

  void check_task(TaskDecl &t) {
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
      if (lo && hi && !facts_.prove_ge(*hi - *lo, Sym(1)))
        diag_.error(DiagId::NonPositiveExtent, join(d.lo->range, d.hi->range),
                    {"the task range", (*hi - *lo).str()});
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

  void check_event_ref(EventRef &r) {
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
      if (!facts_.prove_ge(*s, Sym(0)) || !facts_.prove_ge(ext - 1, *s))
        diag_.error(DiagId::EventIndexRange, r.indices[i]->range,
                    {s->str(), r.event, ext.str(), task_->name});
    }
  }

  /// `t[i, j]` in an event index: one element of an integer tensor (every
  /// component a scalar index). Its value is an opaque symbol named after
  /// the read; reads_data marks it (and, through mark_reads_data, whatever
  /// is computed from it).
  Type check_element_read(Expr &e, IndexCtx ctx) {
    Type base = check_expr(*e.args[0], ctx);
    if (base.kind == TypeKind::Unknown)
      return set(e, Type());
    if (base.kind != TypeKind::Tensor || !is_integer(base.elem)) {
      diag_.error(DiagId::ExpectedIndex, e.range,
                  {base.kind == TypeKind::Tensor ? "an element of a non-integer tensor (load it)"
                                                 : describe(base)});
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
    return set(e, index_type(*e.sym));
  }

  static bool has_range_component(const Expr &e) {
    for (size_t k = 1; k < e.args.size(); ++k)
      if (e.args[k]->kind == ExprKind::Range)
        return true;
    return false;
  }

  static bool has_element_read(const Expr &e) {
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
  void check_data_bound(TaskDecl &t, size_t i) {
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
      std::optional<Sym> dv = check_index(*h.args[size_t(dd)], IndexCtx::Domain);
      if (dv)
        mark_reads_data(*h.args[size_t(dd)]);
      if (st && dv && lo) {
        d.data_bound = h.args[size_t(dd)].get();
        d.static_bound = h.args[size_t(1 - dd)].get();
        t.data_var = int(i);
        h.sym = st; // the largest extent's bound
        h.reads_data = true;
        h.type = index_type(*st);
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
  void check_data_bound_edges(const TaskDecl &t, const std::vector<EventRef> &refs,
                              const char *verb) {
    for (const EventRef &r : refs)
      for (const ExprPtr &ix : r.indices) {
        if (!ix || !ix->sym)
          continue;
        for (size_t v = size_t(t.data_var); v < t.domain.size(); ++v)
          if (ix->sym->mentions(t.domain[v].name)) {
            diag_.error(
                DiagId::DataBoundEdge, ix->range,
                {t.name, verb, r.event, t.domain[v].name, t.domain[size_t(t.data_var)].name});
            break;
          }
      }
  }

  /// Sets reads_data on every node computed from an element read.
  static bool mark_reads_data(Expr &e) {
    bool any = e.reads_data;
    for (auto &a : e.args)
      if (a)
        any |= mark_reads_data(*a);
    e.reads_data = any;
    return any;
  }

  //===-- Statements -----------------------------------------------------===//

  void check_stmt(Stmt &s) {
    switch (s.kind) {
    case StmtKind::Let:
    case StmtKind::Var: {
      Type t = check_value(*s.value);
      // An index may be bound by `let` (immutable, so it keeps its symbolic
      // value); a `var` holds a tile or a scalar.
      bool index_let = t.kind == TypeKind::Index && s.kind == StmtKind::Let && s.value->sym;
      if (t.kind != TypeKind::Unknown && t.kind != TypeKind::Tile && t.kind != TypeKind::Scalar &&
          !index_let) {
        diag_.error(DiagId::LocalNotTile, s.value->range, {s.name, describe(t)});
        t.kind = TypeKind::Unknown;
      }
      s.local_index = int(task_->locals.size());
      task_->locals.push_back(LocalVar{s.name, s.kind == StmtKind::Var, t, std::nullopt, false});
      if (index_let) {
        task_->locals.back().sym = s.value->sym;
        task_->locals.back().reads_data = mark_reads_data(*s.value);
      }
      declare(s.name, s.name_range, NameRef::Local, s.local_index);
      return;
    }
    case StmtKind::Assign: {
      Type rhs = check_value(*s.value);
      const Binding *b = lookup(s.name);
      if (!b) {
        undefined(s.name, s.name_range, visible_names(), DiagId::UndefinedName);
        return;
      }
      if (b->ref != NameRef::Local) {
        diag_.error(DiagId::AssignToNonLocal, s.name_range, {s.name});
        return;
      }
      LocalVar &lv = task_->locals[b->index];
      s.local_index = b->index;
      if (!lv.is_var) {
        diag_.error(DiagId::AssignToLet, s.name_range, {s.name});
        diag_.note(DiagId::NoteDeclaredHere, b->decl, {s.name});
        return;
      }
      if (rhs.kind == TypeKind::Unknown || lv.type.kind == TypeKind::Unknown)
        return;
      Type result = rhs;
      if (s.compound) {
        Type lhs = lv.type;
        if (!adopt_float_literal(rhs, *s.value, lhs, s.value->range))
          return;
        auto r = arith(lhs, rhs, s.assign_op, s.value->range);
        if (!r)
          return;
        result = *r;
      } else if (rhs.kind == TypeKind::Index || rhs.kind == TypeKind::Scalar) {
        // A scalar assigned to a tile variable broadcasts.
        if (lv.type.is_tile() && is_float(lv.type.elem))
          result = lv.type;
      }
      if (result.kind != lv.type.kind || result.elem != lv.type.elem ||
          result.tile_shape != lv.type.tile_shape)
        diag_.error(DiagId::AssignTypeMismatch, s.value->range,
                    {describe(result), s.name, describe(lv.type)});
      return;
    }
    case StmtKind::For: {
      check_index(*s.lo, IndexCtx::Body);
      check_index(*s.hi, IndexCtx::Body);
      if (s.step) {
        std::optional<Sym> st = check_index(*s.step, IndexCtx::Body);
        auto c = st ? st->as_constant() : std::nullopt;
        if (st && (!c || *c <= 0))
          diag_.error(DiagId::StepNotPositive, s.step->range, {st->str()});
      }
      s.local_index = task_->num_loops++;
      Facts saved = facts_;
      scopes_.emplace_back();
      declare(s.name, s.name_range, NameRef::LoopVar, s.local_index);
      if (s.lo->sym && s.hi->sym)
        facts_.add_bounds(s.name, *s.lo->sym, *s.hi->sym - 1);
      for (auto &b : s.body)
        check_stmt(*b);
      scopes_.pop_back();
      facts_ = saved;
      return;
    }
    case StmtKind::ExprStmt: {
      Expr &e = *s.value;
      if (e.kind == ExprKind::Call && e.name == "store") {
        stmt_call_ = &e;
        check_value(e);
        return;
      }
      check_value(e);
      diag_.error(DiagId::UnusedExpression, e.range);
      return;
    }
    }
  }

  //===-- Index expressions ----------------------------------------------===//

  /// Checks an integer index expression; returns its Sym, or nullopt after
  /// reporting an error (or if an operand already had one).
  std::optional<Sym> check_index(Expr &e, IndexCtx ctx) {
    Type t = check_expr(e, ctx);
    if (t.kind == TypeKind::Unknown)
      return std::nullopt;
    if (t.kind != TypeKind::Index || !e.sym) {
      diag_.error(DiagId::ExpectedIndex, e.range, {describe(t)});
      e.type = Type();
      return std::nullopt;
    }
    return e.sym;
  }

  /// A value in a task body (tile, scalar, or index).
  Type check_value(Expr &e) { return check_expr(e, IndexCtx::Body); }

  /// Records `t` as the type of `e`; a tile with more than kMaxTileElems
  /// elements is reported here, at the expression that makes it.
  Type set(Expr &e, Type t) {
    if (t.kind == TypeKind::Tile) {
      int64_t n = 1;
      bool overflow = false;
      for (int64_t d : t.tile_shape)
        overflow = overflow || __builtin_mul_overflow(n, d, &n);
      if (overflow || n > kMaxTileElems) {
        diag_.error(DiagId::TileTooLarge, e.range,
                    {shape_str(t.tile_shape), overflow ? "more than 2^63" : std::to_string(n),
                     std::to_string(kMaxTileElems)});
        t = Type();
      }
    }
    e.type = t;
    return t;
  }

  Type check_expr(Expr &e, IndexCtx ctx) {
    switch (e.kind) {
    case ExprKind::IntLit:
      e.sym = Sym(e.int_value);
      return set(e, index_type(*e.sym));
    case ExprKind::FloatLit:
      return set(e, scalar_type(ElemType::F32));
    case ExprKind::Name:
      return check_name(e, ctx);
    case ExprKind::Unary:
      return check_unary(e, ctx);
    case ExprKind::Binary:
      return check_binary(e, ctx);
    case ExprKind::Call:
      return check_call(e, ctx);
    case ExprKind::Index:
      if (ctx == IndexCtx::Domain)
        return check_element_read(e, ctx);
      if (ctx != IndexCtx::Body) {
        diag_.error(DiagId::ExpectedIndex, e.range, {"a tensor slice"});
        return set(e, Type());
      }
      // In a body, `t[i, j]` outside load/store (no range component) reads
      // one element: `pos < kv_len[b]`, `x[offset[e] + m * TM .. +TM]`.
      if (!std::exchange(slice_arg_, false) && !has_range_component(e))
        return check_element_read(e, ctx);
      return check_slice(e);
    case ExprKind::Range: // the grammar allows ranges only inside slices
      internal_error("range outside a slice");
    }
    return set(e, Type());
  }

  Type check_name(Expr &e, IndexCtx ctx) {
    const Binding *b = lookup(e.name);
    if (!b) {
      if (e.name == "inf") {
        e.ref = NameRef::Builtin;
        return set(e, scalar_type(ElemType::F32));
      }
      undefined(e.name, e.range, visible_names(), DiagId::UndefinedName);
      return set(e, Type());
    }
    e.ref = b->ref;
    e.ref_index = b->index;
    auto only_dims = [&]() {
      const char *where = ctx == IndexCtx::Const   ? "a constant"
                          : ctx == IndexCtx::Range ? "a task range"
                                                   : "a shape";
      diag_.error(DiagId::ShapeUsesNonDim, e.range, {e.name, where});
      return set(e, Type());
    };
    switch (b->ref) {
    case NameRef::Const:
      if (prog_.consts[b->index].is_float) // a scalar, like the literal it names
        return set(e, scalar_type(ElemType::F32));
      e.sym = Sym(prog_.consts[b->index].folded);
      return set(e, index_type(*e.sym));
    case NameRef::Dim:
      if (ctx == IndexCtx::Const)
        return only_dims();
      e.sym = Sym::symbol(e.name);
      return set(e, index_type(*e.sym));
    case NameRef::TaskIndex:
    case NameRef::LoopVar:
      if (ctx == IndexCtx::Shape || ctx == IndexCtx::Const || ctx == IndexCtx::Range)
        return only_dims();
      e.sym = Sym::symbol(e.name);
      return set(e, index_type(*e.sym));
    case NameRef::Tensor: {
      Type t;
      t.kind = TypeKind::Tensor;
      t.elem = kernel_->tensors[b->index].type.elem;
      t.tensor_shape = kernel_->tensors[b->index].shape;
      return set(e, t);
    }
    case NameRef::Local: {
      const LocalVar &lv = task_->locals[b->index];
      if (lv.type.kind == TypeKind::Index) {
        e.sym = lv.sym;
        e.reads_data = lv.reads_data;
      }
      return set(e, lv.type);
    }
    case NameRef::Unresolved: // an event used as a value
      diag_.error(DiagId::ExpectedIndex, e.range, {"an event"});
      return set(e, Type());
    case NameRef::Builtin:
      break;
    }
    return set(e, Type());
  }

  Type check_unary(Expr &e, IndexCtx ctx) {
    Type t = check_expr(*e.args[0], ctx);
    if (t.kind == TypeKind::Unknown)
      return set(e, t);
    if (e.un_op == UnOp::Neg) {
      if (t.kind == TypeKind::Index) {
        e.sym = -*e.args[0]->sym;
        return set(e, t);
      }
      if ((t.kind == TypeKind::Scalar || t.kind == TypeKind::Tile) && t.elem != ElemType::Bool)
        return set(e, t);
    }
    if (e.un_op == UnOp::Not && t.kind != TypeKind::Index) {
      if ((t.kind == TypeKind::Scalar || t.kind == TypeKind::Tile) && t.elem == ElemType::Bool)
        return set(e, t);
      diag_.error(DiagId::ExpectedBool, e.args[0]->range, {describe(t)});
      return set(e, Type());
    }
    diag_.error(DiagId::TileOpUnsupported, e.range, {spelling(e.un_op), describe(t)});
    return set(e, Type());
  }

  Type check_binary(Expr &e, IndexCtx ctx) {
    Type a = check_expr(*e.args[0], ctx);
    Type b = check_expr(*e.args[1], ctx);
    if (a.kind == TypeKind::Unknown || b.kind == TypeKind::Unknown)
      return set(e, Type());
    if (a.kind == TypeKind::Index && b.kind == TypeKind::Index) {
      const Sym &x = *e.args[0]->sym, &y = *e.args[1]->sym;
      switch (e.bin_op) {
      case BinOp::Add:
        e.sym = x + y;
        break;
      case BinOp::Sub:
        e.sym = x - y;
        break;
      case BinOp::Mul:
        e.sym = x * y;
        break;
      case BinOp::Div:
      case BinOp::Mod:
        if (auto c = y.as_constant(); c && *c <= 0) {
          diag_.error(DiagId::DivisionByZero, e.range, {e.args[1]->sym->str()});
          return set(e, Type());
        }
        e.sym = e.bin_op == BinOp::Div ? Sym::floordiv(x, y) : Sym::mod(x, y);
        break;
      default:
        // In a task body, comparing two indices gives a bool scalar.
        if (ctx == IndexCtx::Body && is_comparison(e.bin_op))
          return set(e, scalar_type(ElemType::Bool));
        diag_.error(DiagId::TileOpUnsupported, e.range,
                    {spelling(e.bin_op), "index expressions outside `where`"});
        return set(e, Type());
      }
      return set(e, index_type(*e.sym));
    }
    if (is_comparison(e.bin_op) || e.bin_op == BinOp::And || e.bin_op == BinOp::Or) {
      auto r = logic(a, b, e);
      return set(e, r ? *r : Type());
    }
    if (!adopt_float_literal(a, *e.args[0], b, e.range) ||
        !adopt_float_literal(b, *e.args[1], a, e.range))
      return set(e, Type());
    auto r = arith(a, b, e.bin_op, e.range);
    return set(e, r ? *r : Type());
  }

  static bool is_comparison(BinOp op) {
    return op == BinOp::Eq || op == BinOp::Ne || op == BinOp::Lt || op == BinOp::Le ||
           op == BinOp::Gt || op == BinOp::Ge;
  }

  /// Comparisons (numeric operands, broadcast, bool result) and `&&`/`||`
  /// (bool operands) of tiles and scalars.
  std::optional<Type> logic(Type a, Type b, Expr &e) {
    for (const Type *t : {&a, &b})
      if (t->kind == TypeKind::Tensor || t->kind == TypeKind::Slice) {
        diag_.error(DiagId::TileOpUnsupported, e.range,
                    {spelling(e.bin_op), describe(*t) + "; load(...) it into a tile first"});
        return std::nullopt;
      }
    if (!is_comparison(e.bin_op)) {
      for (size_t i = 0; i < 2; ++i) {
        const Type &t = i ? b : a;
        if (t.kind == TypeKind::Index || t.elem != ElemType::Bool) {
          diag_.error(DiagId::ExpectedBool, e.args[i]->range, {describe(t)});
          return std::nullopt;
        }
      }
    }
    adopt_literal(a, *e.args[0], b);
    adopt_literal(b, *e.args[1], a);
    auto r = unify(a, b, e.range);
    if (!r)
      return std::nullopt;
    r->elem = ElemType::Bool;
    return r;
  }

  /// The common type of two element-wise operands: an index adopts the other
  /// operand's element type, element types must match, shapes broadcast.
  std::optional<Type> unify(Type a, Type b, SourceRange r) {
    if (a.kind == TypeKind::Index && b.kind == TypeKind::Index)
      return scalar_type(ElemType::I32);
    if (a.kind == TypeKind::Index)
      a = scalar_type(b.elem);
    if (b.kind == TypeKind::Index)
      b = scalar_type(a.elem);
    if (a.elem != b.elem) {
      diag_.error(DiagId::ElemTypeMismatch, r, {spelling(a.elem), spelling(b.elem)});
      return std::nullopt;
    }
    if (a.kind == TypeKind::Scalar && b.kind == TypeKind::Scalar)
      return a;
    if (a.kind == TypeKind::Scalar)
      return b;
    if (b.kind == TypeKind::Scalar)
      return a;
    auto shape = broadcast(a.tile_shape, b.tile_shape);
    if (!shape) {
      diag_.error(DiagId::BroadcastMismatch, r, {shape_str(a.tile_shape), shape_str(b.tile_shape)});
      return std::nullopt;
    }
    return tile_type(a.elem, *shape);
  }

  /// `1.5`, `-2.0`, `inf`, `-inf`, or the name of a float `const`.
  bool is_float_literal(const Expr &e) const {
    if (e.kind == ExprKind::Unary && e.un_op == UnOp::Neg)
      return is_float_literal(*e.args[0]);
    if (e.kind == ExprKind::Name && e.ref == NameRef::Const)
      return prog_.consts[size_t(e.ref_index)].is_float;
    return e.kind == ExprKind::FloatLit || (e.kind == ExprKind::Name && e.ref == NameRef::Builtin);
  }

  /// The value of a float constant's initialiser: a float literal, possibly
  /// negated (checked before names are resolved, so `inf` is spelled out).
  static std::optional<double> float_literal_value(const Expr &e) {
    if (e.kind == ExprKind::Unary && e.un_op == UnOp::Neg) {
      auto v = float_literal_value(*e.args[0]);
      return v ? std::optional<double>(-*v) : std::nullopt;
    }
    if (e.kind == ExprKind::FloatLit)
      return e.float_value;
    return std::nullopt;
  }

  /// Typing rule for float literals: one combined with a float tile or scalar
  /// takes its element type (`h * 0.5` stays f16); one combined with an
  /// integer tile or scalar is an error. `lit` is the literal's type.
  bool adopt_float_literal(Type &lit, const Expr &lit_expr, const Type &other, SourceRange r) {
    if (!is_float_literal(lit_expr) ||
        (other.kind != TypeKind::Tile && other.kind != TypeKind::Scalar))
      return true;
    if (!is_float(other.elem)) {
      diag_.error(DiagId::FloatLiteralWithInt, r, {describe(other)});
      return false;
    }
    lit.elem = other.elem;
    return true;
  }

  /// Element-wise arithmetic of tiles and scalars. Integer indices and
  /// literals mixed with float values take the float's type.
  std::optional<Type> arith(Type a, Type b, BinOp op, SourceRange r) {
    static const std::set<BinOp> ok = {BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Mod};
    for (const Type *t : {&a, &b})
      if (t->kind == TypeKind::Tensor || t->kind == TypeKind::Slice) {
        diag_.error(DiagId::TileOpUnsupported, r,
                    {spelling(op), describe(*t) + "; load(...) it into a tile first"});
        return std::nullopt;
      }
    if (!ok.count(op)) {
      diag_.error(DiagId::TileOpUnsupported, r, {spelling(op), "tiles"});
      return std::nullopt;
    }
    for (const Type *t : {&a, &b})
      if (t->kind != TypeKind::Index && t->elem == ElemType::Bool) {
        diag_.error(DiagId::TileOpUnsupported, r,
                    {spelling(op), describe(*t) + "; convert it with cast<i32>(...)"});
        return std::nullopt;
      }
    auto t = unify(a, b, r);
    if (t && op == BinOp::Mod && !is_integer(t->elem)) {
      diag_.error(DiagId::TileOpUnsupported, r, {spelling(op), describe(*t) + " (only integers)"});
      return std::nullopt;
    }
    return t;
  }

  //===-- Slices ---------------------------------------------------------===//

  /// A slice's components: scalar indices, ranges `lo .. hi` / `lo .. +n`
  /// (constant extent), and gather indices (1-D i32/i64 tiles). Gather
  /// components are zipped into one tile dim at the first one's position,
  /// so they must have the same length. The slice's type records the tile
  /// shape; a component that is a gather index keeps its tile type, which is
  /// how lowering tells it from a scalar index.
  Type check_slice(Expr &e) {
    Expr &base = *e.args[0];
    Type bt = check_expr(base, IndexCtx::Body);
    if (bt.kind == TypeKind::Unknown)
      return set(e, Type());
    if (bt.kind != TypeKind::Tensor) {
      diag_.error(DiagId::NotATensor, base.range, {base.name});
      return set(e, Type());
    }
    size_t rank = bt.tensor_shape.size();
    size_t ncomp = e.args.size() - 1;
    bool ok = true;
    std::vector<int64_t> shape;
    const Expr *first_gather = nullptr;
    for (size_t i = 1; i < e.args.size(); ++i) {
      Expr &c = *e.args[i];
      if (c.kind != ExprKind::Range) {
        Type ct = check_expr(c, IndexCtx::Body);
        if (ct.kind == TypeKind::Unknown) {
          ok = false;
        } else if (ct.kind == TypeKind::Tile) {
          if (!check_gather(base.name, c, first_gather, shape))
            ok = false;
        } else if (ct.kind != TypeKind::Index || !c.sym) {
          diag_.error(DiagId::ExpectedIndex, c.range, {describe(ct)});
          c.type = Type();
          ok = false;
        }
        continue;
      }
      std::optional<Sym> lo = check_index(*c.args[0], IndexCtx::Body);
      std::optional<Sym> hi = check_index(*c.args[1], IndexCtx::Body);
      if (!lo || !hi) {
        ok = false;
        continue;
      }
      Sym ext = c.plus_extent ? *hi : *hi - *lo;
      auto n = ext.as_constant();
      if (!n || *n <= 0) {
        diag_.error(DiagId::SliceExtentNotConstant, c.range, {ext.str()});
        ok = false;
        continue;
      }
      c.type = index_type(ext);
      shape.push_back(*n);
    }
    if (ncomp != rank) {
      diag_.error(DiagId::SliceArity, e.range,
                  {base.name, std::to_string(rank), std::to_string(ncomp)});
      return set(e, Type());
    }
    if (!ok)
      return set(e, Type());
    // No range component: one element, moved as a rank-0 tile.
    Type t;
    t.kind = TypeKind::Slice;
    t.elem = bt.elem;
    t.tile_shape = shape;
    return set(e, t);
  }

  /// A gather component `c` (already typed as a tile) of a slice of `tensor`:
  /// a 1-D integer tile; the first one adds a tile dim to `shape`, later ones
  /// must match its length.
  bool check_gather(const std::string &tensor, Expr &c, const Expr *&first,
                    std::vector<int64_t> &shape) {
    const Type &ct = c.type;
    if (!is_integer(ct.elem)) {
      diag_.error(DiagId::GatherIndexNotInteger, c.range, {tensor, describe(ct)});
      return false;
    }
    if (ct.tile_shape.size() != 1) {
      diag_.error(DiagId::GatherIndexNot1D, c.range, {tensor, describe(ct)});
      return false;
    }
    if (!first) {
      first = &c;
      shape.push_back(ct.tile_shape[0]);
      return true;
    }
    if (first->type.tile_shape[0] != ct.tile_shape[0]) {
      diag_.error(
          DiagId::GatherLengthMismatch, c.range,
          {tensor, std::to_string(first->type.tile_shape[0]), std::to_string(ct.tile_shape[0])});
      return false;
    }
    return true;
  }

  /// Where a slice's tile dims come from, for a note: the gather index that
  /// sizes dim `d`, or null.
  static const Expr *gather_of_dim(const Expr &slice, size_t d) {
    size_t dim = 0;
    bool gathered = false;
    for (size_t i = 1; i < slice.args.size(); ++i) {
      const Expr &c = *slice.args[i];
      bool g = c.kind != ExprKind::Range && c.type.is_tile();
      if (g && gathered)
        continue; // zipped into the first gather's dim
      if (c.kind != ExprKind::Range && !g)
        continue; // a scalar index
      if (dim == d)
        return g ? &c : nullptr;
      gathered |= g;
      ++dim;
    }
    return nullptr;
  }

  /// `mask = m` of a load/store: an integer (or bool) tile or scalar whose
  /// shape broadcasts to the slice's shape.
  bool check_mask(Expr &call, const std::vector<int64_t> &slice_shape) {
    const KwArg *m = kwarg(call, "mask");
    if (!m)
      return true;
    Type t = check_value(*m->value);
    if (t.kind == TypeKind::Unknown)
      return false;
    // ElemType::Bool (once it exists) is a mask type too.
    if ((t.kind != TypeKind::Tile && t.kind != TypeKind::Scalar) || !is_mask_elem(t.elem)) {
      diag_.error(DiagId::MaskNotInteger, m->value->range, {describe(t)});
      return false;
    }
    auto b = broadcast(t.tile_shape, slice_shape);
    if (!b || *b != slice_shape) {
      diag_.error(DiagId::MaskShapeMismatch, m->value->range,
                  {shape_str(t.tile_shape), shape_str(slice_shape)});
      return false;
    }
    return true;
  }

  /// Element types a mask may have: non-zero integers are on.
  static bool is_mask_elem(ElemType t) { return is_integer(t) || t == ElemType::Bool; }

  //===-- Calls ----------------------------------------------------------===//

  /// Checks that `e` has exactly `n` positional args and only `kws` keywords.
  bool arity(Expr &e, size_t n, const std::string &what,
             std::initializer_list<const char *> kws = {}) {
    for (const KwArg &k : e.kwargs) {
      bool known = false;
      for (const char *allowed : kws)
        known |= k.name == allowed;
      if (!known) {
        diag_.error(DiagId::UnknownKeyword, k.name_range, {e.name, k.name});
        return false;
      }
    }
    if (e.args.size() != n) {
      diag_.error(DiagId::WrongArgCount, e.range, {e.name, what, std::to_string(e.args.size())});
      return false;
    }
    return true;
  }

  const KwArg *kwarg(const Expr &e, const std::string &name) {
    for (const KwArg &k : e.kwargs)
      if (k.name == name)
        return &k;
    return nullptr;
  }

  /// A static tile shape from `zeros<f32>[TM, TN]`.
  std::optional<std::vector<int64_t>> static_shape(Expr &call) {
    std::vector<int64_t> shape;
    bool ok = true;
    for (auto &s : call.shape_args) {
      std::optional<Sym> v = check_index(*s, IndexCtx::Body);
      auto c = v ? v->as_constant() : std::nullopt;
      if (v && (!c || *c <= 0)) {
        diag_.error(DiagId::TileDimNotConstant, s->range, {v->str()});
        ok = false;
      } else if (!v) {
        ok = false;
      } else {
        shape.push_back(*c);
      }
    }
    if (!ok)
      return std::nullopt;
    return shape;
  }

  /// `axis = k` of a reduction or expand; k must be in [0, limit).
  std::optional<int64_t> axis_arg(Expr &e, size_t limit, size_t rank) {
    const KwArg *a = kwarg(e, "axis");
    if (!a) {
      diag_.error(DiagId::MissingKeyword, e.callee_range, {e.name, "axis"});
      return std::nullopt;
    }
    std::optional<Sym> v = check_index(*a->value, IndexCtx::Body);
    auto c = v ? v->as_constant() : std::nullopt;
    if (!v)
      return std::nullopt;
    if (!c || *c < 0 || size_t(*c) >= limit) {
      diag_.error(DiagId::AxisOutOfRange, a->value->range, {v->str(), std::to_string(rank)});
      return std::nullopt;
    }
    return *c;
  }

  Type check_call(Expr &e, IndexCtx ctx) {
    const std::string &f = e.name;
    // Index functions work everywhere.
    if (f == "cdiv" || ((f == "min" || f == "max") && e.kwargs.empty())) {
      if (!arity(e, 2, "2 arguments"))
        return set(e, Type());
      Type a = check_expr(*e.args[0], ctx), b = check_expr(*e.args[1], ctx);
      if (a.kind == TypeKind::Unknown || b.kind == TypeKind::Unknown)
        return set(e, Type());
      if (a.kind == TypeKind::Index && b.kind == TypeKind::Index) {
        const Sym &x = *e.args[0]->sym, &y = *e.args[1]->sym;
        if (f == "cdiv") {
          if (auto c = y.as_constant(); c && *c <= 0) {
            diag_.error(DiagId::DivisionByZero, e.range, {y.str()});
            return set(e, Type());
          }
          e.sym = Sym::cdiv(x, y);
        } else {
          e.sym = f == "min" ? Sym::min(x, y) : Sym::max(x, y);
        }
        return set(e, index_type(*e.sym));
      }
      if (f == "cdiv") {
        diag_.error(DiagId::ExpectedIndex, e.range, {describe(a.kind == TypeKind::Index ? b : a)});
        return set(e, Type());
      }
      // Element-wise min/max of tiles.
      if (ctx != IndexCtx::Body)
        return not_in_shape(e);
      if (!adopt_float_literal(a, *e.args[0], b, e.range) ||
          !adopt_float_literal(b, *e.args[1], a, e.range))
        return set(e, Type());
      auto r = arith(a, b, BinOp::Add, e.range);
      return set(e, r ? *r : Type());
    }
    if (ctx != IndexCtx::Body) {
      if (!is_builtin(f)) {
        undefined(f, e.callee_range, builtin_names(), DiagId::UnknownFunction);
        return set(e, Type());
      }
      return not_in_shape(e);
    }
    if (f == "load") {
      if (!arity(e, 1, "1 argument (a tensor slice)", {"pad", "mask"}))
        return set(e, Type());
      slice_arg_ = true;
      Type s = check_value(*e.args[0]);
      if (s.kind == TypeKind::Unknown)
        return set(e, Type());
      if (s.kind != TypeKind::Slice) {
        diag_.error(DiagId::ExpectedIndex, e.args[0]->range, {describe(s)});
        return set(e, Type());
      }
      if (const KwArg *pad = kwarg(e, "pad")) {
        Type p = check_value(*pad->value);
        if (p.kind != TypeKind::Unknown && p.kind != TypeKind::Scalar &&
            p.kind != TypeKind::Index) {
          diag_.error(DiagId::ExpectedIndex, pad->value->range, {describe(p)});
          return set(e, Type());
        }
      }
      if (!check_mask(e, s.tile_shape))
        return set(e, Type());
      return set(e, tile_type(s.elem, s.tile_shape));
    }
    if (f == "store") {
      if (std::exchange(stmt_call_, nullptr) != &e) {
        diag_.error(DiagId::StatementAsValue, e.range, {f});
        return set(e, Type());
      }
      if (!arity(e, 2, "2 arguments (a tensor slice and a tile)", {"mask"}))
        return set(e, Type());
      slice_arg_ = true;
      Type s = check_value(*e.args[0]);
      Type v = check_value(*e.args[1]);
      if (s.kind == TypeKind::Unknown || v.kind == TypeKind::Unknown)
        return set(e, Type());
      if (s.kind != TypeKind::Slice) {
        diag_.error(DiagId::ExpectedIndex, e.args[0]->range, {describe(s)});
        return set(e, Type());
      }
      if (v.kind != TypeKind::Tile) {
        diag_.error(DiagId::ExpectedTile, e.args[1]->range, {describe(v)});
        return set(e, Type());
      }
      if (!check_mask(e, s.tile_shape))
        return set(e, Type());
      // One element (a [1] or [1, 1] tile, e.g. a reduction) stores to a
      // rank-0 slice.
      bool one = s.tile_shape.empty() && std::all_of(v.tile_shape.begin(), v.tile_shape.end(),
                                                     [](int64_t n) { return n == 1; });
      if (v.tile_shape != s.tile_shape && !one) {
        diag_.error(DiagId::StoreShapeMismatch, e.args[1]->range,
                    {shape_str(v.tile_shape), shape_str(s.tile_shape)});
        for (size_t d = 0; d < s.tile_shape.size(); ++d)
          if (const Expr *g = gather_of_dim(*e.args[0], d))
            diag_.note(DiagId::NoteGatheredDim, g->range,
                       {std::to_string(d), std::to_string(s.tile_shape[d])});
      } else if (v.elem != s.elem)
        diag_.error(DiagId::StoreElemMismatch, e.args[1]->range,
                    {spelling(v.elem), e.args[0]->args[0]->name, spelling(s.elem)});
      return set(e, Type());
    }
    if (f == "zeros" || f == "full") {
      bool full = f == "full";
      if (!arity(e, full ? 1 : 0, full ? "1 argument (the value)" : "no arguments"))
        return set(e, Type());
      auto shape = static_shape(e);
      if (full) {
        Type v = check_value(*e.args[0]);
        if (v.kind != TypeKind::Unknown && v.kind != TypeKind::Scalar &&
            v.kind != TypeKind::Index) {
          diag_.error(DiagId::ExpectedIndex, e.args[0]->range, {describe(v)});
          return set(e, Type());
        }
      }
      if (!shape)
        return set(e, Type());
      return set(e, tile_type(e.type_arg.value_or(ElemType::F32), *shape));
    }
    if (f == "cast") {
      if (!arity(e, 1, "1 argument"))
        return set(e, Type());
      Type v = check_value(*e.args[0]);
      ElemType to = e.type_arg.value_or(ElemType::F32);
      if (v.kind == TypeKind::Unknown)
        return set(e, v);
      if (v.kind == TypeKind::Tile)
        return set(e, tile_type(to, v.tile_shape));
      if (v.kind == TypeKind::Scalar || v.kind == TypeKind::Index)
        return set(e, scalar_type(to));
      diag_.error(DiagId::ExpectedTile, e.args[0]->range, {describe(v)});
      return set(e, Type());
    }
    if (f == "exp" || f == "log" || f == "sqrt" || f == "rsqrt" || f == "abs") {
      if (!arity(e, 1, "1 argument"))
        return set(e, Type());
      Type v = check_value(*e.args[0]);
      if (v.kind == TypeKind::Unknown)
        return set(e, v);
      if ((v.kind != TypeKind::Tile && v.kind != TypeKind::Scalar) ||
          (!is_float(v.elem) && f != "abs")) {
        diag_.error(DiagId::TileOpUnsupported, e.range, {f, describe(v)});
        return set(e, Type());
      }
      return set(e, v);
    }
    if (f == "sum" || f == "max" || f == "min" || f == "expand") {
      if (!arity(e, 1, "1 tile argument", {"axis"}))
        return set(e, Type());
      Type v = check_value(*e.args[0]);
      if (v.kind == TypeKind::Unknown)
        return set(e, v);
      if (v.kind != TypeKind::Tile) {
        diag_.error(DiagId::ExpectedTile, e.args[0]->range, {describe(v)});
        return set(e, Type());
      }
      size_t rank = v.tile_shape.size();
      bool expand = f == "expand";
      auto axis = axis_arg(e, expand ? rank + 1 : rank, rank);
      if (!axis)
        return set(e, Type());
      std::vector<int64_t> shape = v.tile_shape;
      if (expand) {
        shape.insert(shape.begin() + *axis, 1);
      } else {
        shape.erase(shape.begin() + *axis);
        if (shape.empty())
          shape.push_back(1);
      }
      // The sum of a bool tile counts its true elements.
      bool count = f == "sum" && v.elem == ElemType::Bool;
      return set(e, tile_type(count ? ElemType::I32 : v.elem, shape));
    }
    if (auto t = check_compute_call(e))
      return set(e, *t);
    undefined(f, e.callee_range, builtin_names(), DiagId::UnknownFunction);
    for (auto &a : e.args)
      check_value(*a);
    return set(e, Type());
  }

  //===-- Compute builtins: select, arange, cumsum, dot, transpose, argmax --===//

  /// A tile operand of a compute builtin; reports anything else.
  std::optional<Type> tile_arg(Expr &arg) {
    Type v = check_value(arg);
    if (v.kind == TypeKind::Unknown)
      return std::nullopt;
    if (v.kind != TypeKind::Tile) {
      diag_.error(DiagId::ExpectedTile, arg.range, {describe(v)});
      return std::nullopt;
    }
    return v;
  }

  /// A literal (`1.5`, `-inf`) that may take the element type of the other operand.
  static bool is_literal(const Expr &e) {
    if (e.kind == ExprKind::Unary && e.un_op == UnOp::Neg)
      return is_literal(*e.args[0]);
    return e.kind == ExprKind::FloatLit || e.kind == ExprKind::IntLit ||
           (e.kind == ExprKind::Name && e.ref == NameRef::Builtin);
  }

  /// A float literal operand takes the other operand's float type
  /// (`select(m, h, 0.0)` or `h > 0.0` with h an f16 tile).
  static void adopt_literal(Type &t, const Expr &e, const Type &other) {
    if (t.kind == TypeKind::Scalar && is_literal(e) && other.kind != TypeKind::Index &&
        other.kind != TypeKind::Unknown && is_float(t.elem) && is_float(other.elem))
      t.elem = other.elem;
  }

  /// Checks the compute builtins; nullopt if `e` is none of them. An error
  /// yields an Unknown type.
  std::optional<Type> check_compute_call(Expr &e) {
    const std::string &f = e.name;
    if (f == "select") {
      if (!arity(e, 3, "3 arguments (a bool condition and two values)"))
        return Type();
      Type c = check_value(*e.args[0]);
      Type x = check_value(*e.args[1]), y = check_value(*e.args[2]);
      if (c.kind == TypeKind::Unknown || x.kind == TypeKind::Unknown || y.kind == TypeKind::Unknown)
        return Type();
      if ((c.kind != TypeKind::Tile && c.kind != TypeKind::Scalar) || c.elem != ElemType::Bool) {
        diag_.error(DiagId::ExpectedBool, e.args[0]->range, {describe(c)});
        return Type();
      }
      for (size_t i = 1; i < 3; ++i) {
        Type &t = i == 1 ? x : y;
        if (t.kind != TypeKind::Tile && t.kind != TypeKind::Scalar && t.kind != TypeKind::Index) {
          diag_.error(DiagId::ExpectedTile, e.args[i]->range, {describe(t)});
          return Type();
        }
      }
      adopt_literal(x, *e.args[1], y);
      adopt_literal(y, *e.args[2], x);
      auto v = unify(x, y, e.range);
      if (!v)
        return Type();
      Type cv = c;
      cv.elem = v->elem;
      auto r = unify(cv, *v, e.range);
      return r ? *r : Type();
    }
    if (f == "arange") {
      if (!arity(e, 0, "no arguments"))
        return Type();
      ElemType t = e.type_arg.value_or(ElemType::I32);
      if (e.shape_args.size() != 1) {
        diag_.error(DiagId::WrongArgCount, e.range,
                    {"arange", "1 extent (`arange<i32>[N]`)", std::to_string(e.shape_args.size())});
        return Type();
      }
      auto shape = static_shape(e);
      if (!shape)
        return Type();
      if (t == ElemType::Bool) {
        diag_.error(DiagId::TileOpUnsupported, e.range, {"arange", "bool tiles"});
        return Type();
      }
      return tile_type(t, *shape);
    }
    if (f == "cumsum" || f == "argmax" || f == "argmin") {
      if (!arity(e, 1, "1 tile argument", {"axis"}))
        return Type();
      auto v = tile_arg(*e.args[0]);
      if (!v)
        return Type();
      size_t rank = v->tile_shape.size();
      auto axis = axis_arg(e, rank, rank);
      if (!axis)
        return Type();
      if (f == "cumsum") {
        if (v->elem == ElemType::Bool) {
          diag_.error(DiagId::TileOpUnsupported, e.range,
                      {f, describe(*v) + "; convert it with cast<i32>(...)"});
          return Type();
        }
        return *v;
      }
      std::vector<int64_t> shape = v->tile_shape;
      shape.erase(shape.begin() + *axis);
      if (shape.empty())
        shape.push_back(1);
      return tile_type(ElemType::I32, shape);
    }
    if (f == "transpose") {
      if (!arity(e, 1, "1 tile argument"))
        return Type();
      auto v = tile_arg(*e.args[0]);
      if (!v)
        return Type();
      if (v->tile_shape.size() != 2) {
        diag_.error(DiagId::TransposeRank, e.args[0]->range, {describe(*v)});
        return Type();
      }
      return tile_type(v->elem, {v->tile_shape[1], v->tile_shape[0]});
    }
    if (f == "reshape") { // reshape(t, d0, d1, ...): same elements, row-major
      if (e.args.size() < 2 || !e.kwargs.empty()) {
        diag_.error(DiagId::WrongArgCount, e.range,
                    {"reshape", "a tile and the new extents", std::to_string(e.args.size())});
        return Type();
      }
      auto v = tile_arg(*e.args[0]);
      std::vector<int64_t> shape;
      int64_t n = 1, have = 1;
      for (size_t i = 1; i < e.args.size(); ++i) {
        auto d = check_index(*e.args[i], IndexCtx::Const);
        if (!d)
          return Type();
        auto c = d->as_constant();
        if (!c || *c <= 0) {
          diag_.error(DiagId::NonPositiveExtent, e.args[i]->range, {"extent", d->str()});
          return Type();
        }
        shape.push_back(*c);
        n *= *c;
      }
      if (!v)
        return Type();
      for (int64_t d : v->tile_shape)
        have *= d;
      if (n != have) {
        diag_.error(DiagId::ReshapeMismatch, e.range,
                    {describe(*v), std::to_string(have), shape_str(shape), std::to_string(n)});
        return Type();
      }
      return tile_type(v->elem, shape);
    }
    if (f == "dot") {
      if (!arity(e, 2, "2 tile arguments"))
        return Type();
      auto a = tile_arg(*e.args[0]);
      auto c = tile_arg(*e.args[1]);
      if (!a || !c)
        return Type();
      for (const Type *t : {&*a, &*c})
        if (!is_float(t->elem)) {
          diag_.error(DiagId::TileOpUnsupported, e.range,
                      {"dot", describe(*t) + "; convert it with cast<f32>(...)"});
          return Type();
        }
      const auto &as = a->tile_shape, &cs = c->tile_shape;
      if (as.empty() || as.size() > 2 || cs.size() != 2) {
        diag_.error(DiagId::DotRank, e.range, {describe(*a), describe(*c)});
        return Type();
      }
      if (as.back() != cs[0]) {
        diag_.error(
            DiagId::DotInnerMismatch, e.range,
            {shape_str(as), std::to_string(as.back()), shape_str(cs), std::to_string(cs[0])});
        return Type();
      }
      int64_t bytes = 0;
      for (const auto *s : {&as, &cs}) {
        int64_t n = 1;
        for (int64_t d : *s)
          n *= d;
        bytes += n * 4;
      }
      if (bytes > kDotScratchLimit) {
        diag_.error(DiagId::DotTooLarge, e.range,
                    {shape_str(as), shape_str(cs), std::to_string(bytes),
                     std::to_string(kDotScratchLimit)});
        return Type();
      }
      std::vector<int64_t> shape = {cs[1]};
      if (as.size() == 2)
        shape.insert(shape.begin(), as[0]);
      return tile_type(ElemType::F32, shape);
    }
    return std::nullopt;
  }

  /// Static shared memory is 48 KiB; the first 32 bytes are the lowering's
  /// header (lower/lowerer.h, kSmemScratch). dot spills both operands after
  /// them, 4 bytes per element.
  static constexpr int64_t kDotScratchLimit = 48 * 1024 - 32;
  /// The most elements a tile may have: 65536, the register file of one SM
  /// (64K 32-bit registers on sm_80 .. sm_90). A tile lives in the registers
  /// of its CTA's threads (lower/lowerer.h), so a larger one cannot be held by
  /// any CTA; it would only spill, and the back end unrolls code per register
  /// (a 2^20-element tile took it over 30 s).
  static constexpr int64_t kMaxTileElems = 65536;

  Type not_in_shape(Expr &e) {
    diag_.error(DiagId::ExpectedIndex, e.range, {"a call to '" + e.name + "'"});
    return set(e, Type());
  }

  friend const std::vector<std::string> &etl::builtin_function_names();
  static const std::vector<std::string> &builtin_names() {
    static const std::vector<std::string> names = {
        "load",   "store",  "zeros", "full",      "cast",   "exp",    "log",    "sqrt",
        "rsqrt",  "abs",    "sum",   "max",       "min",    "expand", "cdiv",   "select",
        "arange", "cumsum", "dot",   "transpose", "argmax", "argmin", "reshape"};
    return names;
  }
  static bool is_builtin(const std::string &f) {
    const auto &n = builtin_names();
    return std::find(n.begin(), n.end(), f) != n.end();
  }
};

} // namespace

const std::vector<std::string> &builtin_function_names() { return Checker::builtin_names(); }

std::string closest_name(const std::string &name, const std::vector<std::string> &candidates) {
  return closest(name, candidates);
}

bool check_program(Program &p, Diag &diag) {
  unsigned before = diag.error_count();
  Checker(p, diag).run();
  return diag.error_count() == before;
}

} // namespace etl
