//===- driver/tunables.cpp - `--emit=tunables` ----------------------------===//
#include "driver/tunables.h"

#include "ast/tunables.h"

#include <sstream>

namespace etl {
namespace {

std::string source_text(const SourceManager &sm, SourceRange r) {
  if (!r.valid() || r.end.offset < r.begin.offset)
    return "?";
  return sm.text(r.begin.file).substr(r.begin.offset, r.end.offset - r.begin.offset);
}

std::string value_text(const ConstDecl &c, int64_t i, double f) {
  return c.is_float ? format_float_const(f) : std::to_string(i);
}

} // namespace

std::optional<std::vector<TunableChoice>> allowed_combinations(const Program &p, uint64_t &total,
                                                              uint64_t limit) {
  std::vector<const ConstDecl *> ts;
  total = 1;
  for (const ConstDecl &c : p.consts)
    if (c.tunable()) {
      ts.push_back(&c);
      uint64_t n = c.is_float ? c.float_candidates.size() : c.folded_candidates.size();
      if (n == 0 || total > limit / n)
        return std::nullopt;
      total *= n;
    }
  std::vector<size_t> pick(ts.size(), 0);
  ConstLookup value = [&](const std::string &name) -> std::optional<int64_t> {
    for (size_t i = 0; i < ts.size(); ++i)
      if (ts[i]->name == name)
        return ts[i]->is_float ? std::nullopt
                               : std::optional<int64_t>(ts[i]->folded_candidates[pick[i]]);
    for (const ConstDecl &k : p.consts)
      if (k.name == name && !k.is_float)
        return k.folded;
    return std::nullopt;
  };
  std::vector<TunableChoice> allowed;
  for (uint64_t n = 0; n < total; ++n) {
    uint64_t rest = n;
    for (size_t i = ts.size(); i-- > 0;) {
      size_t k = ts[i]->is_float ? ts[i]->float_candidates.size() : ts[i]->folded_candidates.size();
      pick[i] = size_t(rest % k);
      rest /= k;
    }
    bool ok = true;
    for (const ConstDecl *c : ts)
      for (const ExprPtr &w : c->where) {
        std::string why;
        const Expr *at = nullptr;
        std::optional<int64_t> v = eval_constraint(*w, value, why, at);
        ok = ok && v && *v;
      }
    if (!ok)
      continue;
    TunableChoice choice;
    for (size_t i = 0; i < ts.size(); ++i)
      choice.emplace_back(ts[i]->name,
                          ts[i]->is_float ? format_float_const(ts[i]->float_candidates[pick[i]])
                                          : std::to_string(ts[i]->folded_candidates[pick[i]]));
    allowed.push_back(std::move(choice));
  }
  return allowed;
}

namespace {
} // namespace

std::string print_tunables(const Program &p, const SourceManager &sm) {
  std::ostringstream out;
  size_t n = 0;
  for (const ConstDecl &c : p.consts) {
    if (!c.tunable())
      continue;
    ++n;
    std::string value = value_text(c, c.folded, c.float_folded);
    std::string def = value_text(c, c.folded_default, c.float_default);
    out << "tunable " << c.name << " = " << value << " @" << c.range.begin.line << ":"
        << c.range.begin.col << "\n";
    out << "  default    " << def << (c.default_value ? "  (pinned to " + value + ")" : "")
        << "\n";
    out << "  candidates";
    for (size_t i = 0; i < c.candidates.size(); ++i)
      out << (i ? ", " : " ")
          << (c.is_float ? format_float_const(c.float_candidates[i])
                         : std::to_string(c.folded_candidates[i]));
    out << "\n";
    for (const ExprPtr &w : c.where)
      out << "  where      " << source_text(sm, w->range) << "\n";
  }
  if (n == 0) {
    out << "no tunable consts (declare one as `const NAME = DEFAULT in [CANDIDATES];`)\n";
    return out.str();
  }
  uint64_t total = 0;
  if (auto allowed = allowed_combinations(p, total, uint64_t(1) << 20))
    out << "combinations: " << allowed->size() << " of " << total
        << " satisfy the constraints (other consts at their values here)\n";
  else
    out << "combinations: more than " << (uint64_t(1) << 20) << ", not counted\n";
  return out.str();
}

} // namespace etl
