//===- sema/check_tunables.cpp - Tunable consts: candidates, default, where ===//
//
// What this owns: the checks of `const TK = 64 in [16, 32, 64] where ...;`
// after every const is folded: each candidate is a constant of the
// default's type (an integer, or a float literal), the default is one of
// the candidates, a value pinned by -D or --variant outside them is a
// warning, and every `where` constraint is an integer condition over consts
// (ast/tunables.h) that holds at the values this compilation uses.
//
//===----------------------------------------------------------------------===//
#include "ast/tunables.h"
#include "sema/checker.h"

#include <algorithm>

namespace etl::sema {

namespace {

std::string candidate_list(const ConstDecl &c) {
  std::string r;
  if (c.is_float)
    for (double v : c.float_candidates)
      r += (r.empty() ? "" : ", ") + format_float_const(v);
  else
    for (int64_t v : c.folded_candidates)
      r += (r.empty() ? "" : ", ") + std::to_string(v);
  return r;
}

} // namespace

void Checker::check_tunables() {
  for (ConstDecl &c : prog_.consts) {
    if (!c.tunable())
      continue;
    const Expr &def = c.default_value ? *c.default_value : *c.value;
    bool ok = true;
    c.folded_candidates.clear();
    c.float_candidates.clear();
    for (ExprPtr &e : c.candidates) {
      std::optional<double> f = float_literal_value(*e);
      if (f.has_value() != c.is_float) {
        diag_.error(DiagId::TunableCandidateType, e->range,
                    {c.name, f ? "a float" : "an integer", c.is_float ? "a float" : "an integer"});
        ok = false;
      } else if (f) {
        c.float_candidates.push_back(*f);
      } else if (std::optional<Sym> v = check_index(*e, IndexCtx::Const)) {
        if (auto k = v->as_constant())
          c.folded_candidates.push_back(*k);
        else
          ok = false;
      } else {
        ok = false;
      }
    }
    if (c.is_float) {
      if (auto f = float_literal_value(def))
        c.float_default = *f;
    } else if (c.default_value) {
      std::optional<Sym> v = check_index(*c.default_value, IndexCtx::Const);
      if (auto k = v ? v->as_constant() : std::nullopt)
        c.folded_default = *k;
      else
        ok = false;
    } else {
      c.folded_default = c.folded;
    }
    if (!ok)
      continue;
    auto among = [&](int64_t i, double f) {
      return c.is_float ? std::count(c.float_candidates.begin(), c.float_candidates.end(), f) > 0
                        : std::count(c.folded_candidates.begin(), c.folded_candidates.end(),
                                     i) > 0;
    };
    auto text = [&](int64_t i, double f) {
      return c.is_float ? format_float_const(f) : std::to_string(i);
    };
    if (!among(c.folded_default, c.float_default))
      diag_.error(DiagId::TunableDefaultNotCandidate, def.range,
                  {c.name, text(c.folded_default, c.float_default), candidate_list(c)});
    else if (c.default_value && !among(c.folded, c.float_folded))
      diag_.warning(DiagId::TunablePinnedOffList, c.value->range,
                    {c.name, text(c.folded, c.float_folded), candidate_list(c)});
  }
  // The constraints, at the values in use (after -D and --variant).
  ConstLookup value = [&](const std::string &name) -> std::optional<int64_t> {
    for (const ConstDecl &k : prog_.consts)
      if (k.name == name && !k.is_float)
        return k.folded;
    return std::nullopt;
  };
  for (const ConstDecl &c : prog_.consts)
    for (const ExprPtr &w : c.where) {
      std::string why;
      const Expr *at = nullptr;
      std::optional<int64_t> v = eval_constraint(*w, value, why, at);
      if (!v) {
        diag_.error(DiagId::TunableBadConstraint, at ? at->range : w->range, {c.name, why});
        continue;
      }
      if (*v)
        continue;
      std::string values;
      for (const std::string &n : constraint_names(*w))
        values += (values.empty() ? "" : ", ") + n + " = " + std::to_string(*value(n));
      diag_.error(DiagId::TunableConstraintFalse, w->range, {c.name, values});
    }
}

} // namespace etl::sema
