//===- sema/check_decls.cpp - Kernels, consts, dims, `where` and shapes -----===//
//
// What this owns: the checker's scopes, `const` folding, a kernel's dims, `where`
// facts, tensor and event shapes, and extents.
//
//===----------------------------------------------------------------------===//
#include "sema/checker.h"
#include "sema/hazards.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

namespace etl::sema {

void Checker::run() {
  check_consts();
  for (auto &k : prog_.kernels)
    check_kernel(k);
}

const Binding *Checker::lookup(const std::string &name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->find(name);
    if (f != it->end())
      return &f->second;
  }
  return nullptr;
}

/// Declares `name`; reports a redefinition (with a note) if it is taken.
bool Checker::declare(const std::string &name, SourceRange r, NameRef ref, int index) {
  if (const Binding *prev = lookup(name)) {
    diag_.error(DiagId::Redefinition, r, {name});
    if (prev->decl.valid())
      diag_.note(DiagId::NoteDeclaredHere, prev->decl, {name});
    return false;
  }
  scopes_.back()[name] = Binding{ref, index, r};
  return true;
}

std::vector<std::string> Checker::visible_names() const {
  std::vector<std::string> r;
  for (const auto &s : scopes_)
    for (const auto &kv : s)
      r.push_back(kv.first);
  r.push_back("inf");
  return r;
}

void Checker::undefined(const std::string &name, SourceRange r,
                        const std::vector<std::string> &candidates, DiagId id) {
  diag_.error(id, r, {name});
  std::string best = closest_name(name, candidates);
  if (!best.empty())
    diag_.note(DiagId::NoteDidYouMean, r, {best});
}

void Checker::check_consts() {
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
  check_tunables();
}

void Checker::check_kernel(KernelDecl &k) {
  kernel_ = &k;
  facts_ = Facts();
  scopes_.resize(1);
  scopes_.emplace_back();
  for (size_t i = 0; i < k.dims.size(); ++i) {
    declare(k.dims[i].name, k.dims[i].range, NameRef::Dim, int(i));
    facts_.add_bounds(k.dims[i].name, Sym(1), std::nullopt);
  }
  for (size_t i = 0; i < k.scalars.size(); ++i) {
    ScalarDecl &sc = k.scalars[i];
    if (sc.elem == ElemType::Bool)
      diag_.error(DiagId::ScalarParamBool, sc.elem_range, {sc.name});
    else if (sc.elem == ElemType::F8E4M3 || sc.elem == ElemType::F8E5M2)
      diag_.error(DiagId::ScalarParamFp8, sc.elem_range, {sc.name, spelling(sc.elem)});
    else if (is_packed(sc.elem))
      diag_.error(DiagId::PackedNotTensor, sc.elem_range,
                  {spelling(sc.elem), spelling(loaded_elem(sc.elem))});
    declare(sc.name, sc.name_range, NameRef::Scalar, int(i));
  }
  in_where_ = true;
  for (auto &w : k.where)
    check_where(*w);
  in_where_ = false;
  k.facts = facts_;
  for (size_t i = 0; i < k.tensors.size(); ++i) {
    TensorDecl &t = k.tensors[i];
    t.shape.clear();
    for (auto &e : t.type.shape)
      t.shape.push_back(check_extent(*e, IndexCtx::Shape, "the extent").value_or(Sym(1)));
    if (t.type.elem == ElemType::Bool)
      diag_.error(DiagId::BoolTensor, t.type.elem_range, {t.name});
    // Packed rows start on a byte: then a row-major [.., K] tensor is the
    // common packed layout (K/2 bytes per row) and its byte size is exact.
    if (is_packed(t.type.elem) && !t.shape.empty() && !facts_.divisible(t.shape.back(), 2))
      diag_.error(DiagId::PackedOddRow, t.type.shape.back()->range,
                  {t.name, spelling(t.type.elem), t.shape.back().str()});
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
void Checker::check_where(Expr &w) {
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
  w.type = index_type();
  switch (w.bin_op) {
  case BinOp::Eq: {
    // `X % c == 0` is divisibility.
    Expr &l = *w.args[0];
    if (b->as_constant() == 0 && l.kind == ExprKind::Binary && l.bin_op == BinOp::Mod &&
        l.args[0]->sym && l.args[1]->sym) {
      if (auto c = l.args[1]->sym->as_constant(); c && *c > 0)
        facts_.add_divisible(*l.args[0]->sym, *c);
    }
    add_comparison_fact(facts_, BinOp::Eq, *a, *b);
    // `N == 2 * M`: a definition of the dim N, substituted when the
    // other facts do not settle a question.
    if (w.args[0]->kind == ExprKind::Name && w.args[0]->ref == NameRef::Dim)
      facts_.add_definition(w.args[0]->name, *b);
    else if (w.args[1]->kind == ExprKind::Name && w.args[1]->ref == NameRef::Dim)
      facts_.add_definition(w.args[1]->name, *a);
    break;
  }
  default:
    add_comparison_fact(facts_, w.bin_op, *a, *b);
    break;
  }
}

void Checker::note_missing_where(const Sym &a, const Sym &b) {
  if (!kernel_)
    return;
  std::set<std::string> dims;
  for (const DimDecl &d : kernel_->dims)
    dims.insert(d.name);
  auto fact = facts_.missing_fact(a, b, dims);
  if (!fact)
    return;
  const auto &[lhs, rhs] = *fact;
  std::string clause =
      lhs.is_constant() ? rhs.str() + " <= " + lhs.str() : lhs.str() + " >= " + rhs.str();
  diag_.note(DiagId::NoteAddWhere, kernel_->name_range, {clause, kernel_->name});
}

/// An index expression used as an extent (shape, domain bound): it must be
/// exact and, for shapes, positive.
std::optional<Sym> Checker::check_extent(Expr &e, IndexCtx ctx, const char *what) {
  std::optional<Sym> s = check_index(e, ctx);
  if (!s)
    return std::nullopt;
  if (report_inexact(e))
    return std::nullopt;
  if (!facts_.prove_ge(*s, Sym(1))) {
    diag_.error(DiagId::NonPositiveExtent, e.range, {what, s->str()});
    note_missing_where(*s, Sym(1));
    return std::nullopt;
  }
  return s;
}

/// Reports the first division in `e` that may drop a remainder.
bool Checker::report_inexact(const Expr &e) {
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

} // namespace etl::sema
