//===- sema/check_stmts.cpp - Statements ------------------------------------===//
//
// What this owns: the statements of a task body: let/var, assignment, for, if
// and expression statements.
//
//===----------------------------------------------------------------------===//
#include "sema/checker.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

namespace etl::sema {

void Checker::check_stmt(Stmt &s) {
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
    if (b->ref == NameRef::Scalar) {
      diag_.error(DiagId::AssignToScalarParam, s.name_range, {s.name});
      diag_.note(DiagId::NoteDeclaredHere, b->decl, {s.name});
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
  case StmtKind::If: {
    // The whole CTA runs a task, so a branch must be taken by all its
    // threads: only scalars and indices (never tiles) are uniform.
    Type c = check_value(*s.value);
    if (c.kind == TypeKind::Tile) {
      diag_.error(DiagId::IfConditionNotUniform, s.value->range, {describe(c)});
      diag_.note(DiagId::NoteIfUseSelect, s.value->range);
    } else if (c.kind != TypeKind::Unknown &&
               (c.kind != TypeKind::Scalar || c.elem != ElemType::Bool)) {
      diag_.error(DiagId::ExpectedBool, s.value->range, {describe(c)});
    }
    for (std::vector<StmtPtr> *branch : {&s.body, &s.else_body}) {
      scopes_.emplace_back();
      for (auto &b : *branch)
        check_stmt(*b);
      scopes_.pop_back();
    }
    return;
  }
  case StmtKind::ExprStmt: {
    Expr &e = *s.value;
    if (e.kind == ExprKind::Call && (e.name == "store" || is_atomic_fn(find_builtin(e.name)))) {
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

} // namespace etl::sema
