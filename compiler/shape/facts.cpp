//===- shape/facts.cpp - The prover over `where` facts --------------------===//
//
// What this owns: the Facts half of shape/symbolic.h: divisibility by
// "content" (a number every binding's value is known to be a multiple of),
// bounds by interval arithmetic over atoms, and prove_ge by subtracting known
// non-negative facts (bounds, `a <= b`) before the interval check. Answers
// are sound but incomplete; nothing is proved about the overflow Sym.
//
//===----------------------------------------------------------------------===//
#include "shape/normal_form.h"

#include <climits>
#include <numeric>

namespace etl {

//===-- Facts: interval arithmetic ----------------------------------------===//

__extension__ typedef __int128 I128;
/// Finite interval ends stay within [-kLim, kLim] so products fit in I128;
/// +-kInf stand for the infinities.
static constexpr I128 kLim = static_cast<I128>(1) << 62;
static constexpr I128 kInf = static_cast<I128>(1) << 100;

struct Range {
  I128 lo = -kInf, hi = kInf;
};

static bool is_inf(I128 x) { return x >= kInf || x <= -kInf; }

/// Soundly widens ends beyond kLim: lo > kLim becomes kLim, lo < -kLim
/// becomes -inf, and symmetrically for hi.
static Range norm(Range r) {
  r.lo = r.lo < -kLim ? -kInf : std::min(r.lo, kLim);
  r.hi = r.hi > kLim ? kInf : std::max(r.hi, -kLim);
  return r;
}
/// Product of interval ends (0 * inf = 0, as for closed intervals).
static I128 mul_end(I128 x, I128 y) {
  if (x == 0 || y == 0)
    return 0;
  if (is_inf(x) || is_inf(y))
    return (x < 0) != (y < 0) ? -kInf : kInf;
  return x * y;
}
static I128 add_end(I128 x, I128 y) { return is_inf(x) ? x : is_inf(y) ? y : x + y; }
static Range add_range(Range a, Range b) {
  return norm({add_end(a.lo, b.lo), add_end(a.hi, b.hi)});
}
static Range mul_range(Range a, Range b) {
  I128 c[4] = {mul_end(a.lo, b.lo), mul_end(a.lo, b.hi), mul_end(a.hi, b.lo), mul_end(a.hi, b.hi)};
  return norm({*std::min_element(c, c + 4), *std::max_element(c, c + 4)});
}
/// Floor (or ceiling) division of an interval end by c > 0.
static I128 div_end(I128 x, I128 c, bool ceil = false) {
  if (is_inf(x) || x % c == 0)
    return is_inf(x) ? x : x / c;
  return x / c + (ceil ? (x > 0) : -(x < 0));
}

//===-- Facts: the prover -------------------------------------------------===//

/// lcm saturating to a valid divisor on overflow; 0 means "known zero".
static uint64_t lcm_div(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0)
    return 0;
  uint64_t r;
  return __builtin_mul_overflow(a / std::gcd(a, b), b, &r) ? std::max(a, b) : r;
}
/// Product saturating to a valid divisor on overflow; 0 means "known zero".
static uint64_t mul_div(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::max(a, b) : r;
}

/// (coefficient of m in e) / b when exact and e has the term m.
static std::optional<int64_t> exact_ratio(const Sym &e, const Monomial &m, int64_t b) {
  auto it = terms(e).find(m);
  if (it == terms(e).end() || (b == -1 && it->second == INT64_MIN) || it->second % b != 0)
    return std::nullopt;
  return it->second / b;
}

/// Read-only view of a Facts' members with the reasoning procedures.
struct Prover {
  const std::vector<std::pair<Sym, int64_t>> &divs;
  std::vector<std::pair<Sym, Sym>> les; ///< `a <= b` facts, symbol bounds first

  Prover(const std::vector<std::pair<Sym, int64_t>> &d,
         const std::map<std::string, std::pair<std::optional<Sym>, std::optional<Sym>>> &bounds,
         const std::vector<std::pair<Sym, Sym>> &le)
      : divs(d) {
    for (const auto &[name, b] : bounds) {
      if (b.first)
        les.emplace_back(*b.first, Sym::symbol(name));
      if (b.second)
        les.emplace_back(Sym::symbol(name), *b.second);
    }
    les.insert(les.end(), le.begin(), le.end());
  }

  static constexpr int kRangeDepth = 4;  ///< nesting of symbol bounds followed
  static constexpr int kSearchDepth = 2; ///< facts subtracted in prove_ge

  /// The divisor recorded facts give for exactly the monomial m (1 if none).
  /// A fact coeff*m % d == 0 gives m % (d / gcd(d, coeff)) == 0.
  uint64_t fact_div(const Monomial &m) const {
    uint64_t r = 1;
    for (const auto &[f, d] : divs) {
      const Poly &p = terms(f);
      if (p.size() == 1 && !is_overflow(f) && cmp_mono(p.begin()->first, m) == 0) {
        uint64_t ud = static_cast<uint64_t>(d);
        r = lcm_div(r, ud / std::gcd(ud, uabs(p.begin()->second)));
      }
    }
    return r;
  }

  /// A number that divides the atom's value for every binding (0: always 0).
  uint64_t atom_div(const Atom &a) const {
    if (a.kind == AtomKind::Symbol)
      return fact_div(Monomial{{a, 1}});
    uint64_t ca = content(a.lhs), cb = content(a.rhs);
    auto c = a.rhs.as_constant();
    switch (a.kind) {
    case AtomKind::Min:
    case AtomKind::Max:
      return std::gcd(ca, cb);
    case AtomKind::Mod: // a - b*q
      if (c && *c > 0 && ca % static_cast<uint64_t>(*c) == 0)
        return 0;
      return std::max<uint64_t>(std::gcd(ca, cb), 1);
    default: // floordiv / cdiv, exact when c divides the dividend
      if (c && *c > 0 && ca % static_cast<uint64_t>(*c) == 0)
        return ca / static_cast<uint64_t>(*c);
      return 1;
    }
  }

  uint64_t mono_div(const Monomial &m) const {
    uint64_t r = 1;
    for (const auto &[atom, e] : m) {
      uint64_t d = atom_div(atom);
      for (int64_t k = 0; k < e && r != 0 && d != 1; ++k)
        r = mul_div(r, d);
    }
    return lcm_div(r, fact_div(m));
  }

  /// The gcd of the terms' known divisors: e is always a multiple of it
  /// (0: e is always 0).
  uint64_t content(const Sym &e) const {
    uint64_t g = 0;
    for (const auto &[m, c] : terms(e))
      g = std::gcd(g, m.empty() ? uabs(c) : mul_div(uabs(c), mono_div(m)));
    return g;
  }

  bool divisible(const Sym &e, uint64_t c) const {
    if (is_overflow(e))
      return false;
    if (content(e) % c == 0)
      return true;
    // e == t*f + r with a fact f % d == 0, c | d, and r divisible by c.
    for (const auto &[f, d] : divs) {
      if (static_cast<uint64_t>(d) % c != 0 || is_overflow(f))
        continue;
      for (const auto &[m, fc] : terms(f)) {
        auto t = m.empty() ? std::nullopt : exact_ratio(e, m, fc);
        Sym r = t ? e - Sym(*t) * f : SymBuilder::overflow();
        if (!is_overflow(r) && content(r) % c == 0)
          return true;
      }
    }
    return false;
  }

  Range range(const Sym &e, int depth) const {
    Range sum{0, 0};
    if (is_overflow(e))
      return Range{};
    for (const auto &[m, c] : terms(e)) {
      Range t = norm({c, c});
      for (const auto &[atom, k] : m) {
        Range a = atom_range(atom, depth), p = k > 64 ? Range{} : a;
        for (int64_t i = 1; i < k && k <= 64; ++i)
          p = mul_range(p, a);
        if (k % 2 == 0)
          p.lo = std::max<I128>(p.lo, 0);
        t = mul_range(t, p);
      }
      sum = add_range(sum, t);
    }
    return sum;
  }

  static bool is_symbol(const Sym &s, const std::string &name) {
    const Atom *a = sole_atom(s);
    return a && a->kind == AtomKind::Symbol && a->name == name;
  }

  Range atom_range(const Atom &a, int depth) const {
    if (a.kind == AtomKind::Symbol) {
      Range r;
      for (const auto &[lo, hi] : les) {
        if (depth > 0 && is_symbol(hi, a.name))
          r.lo = std::max(r.lo, range(lo, depth - 1).lo);
        if (depth > 0 && is_symbol(lo, a.name))
          r.hi = std::min(r.hi, range(hi, depth - 1).hi);
      }
      uint64_t d = atom_div(a); // round inwards to multiples of d
      if (d == 0)
        return Range{0, 0};
      if (d > 1) {
        I128 di = static_cast<I128>(d);
        if (!is_inf(r.lo))
          r.lo = div_end(r.lo, di, true) * di;
        if (!is_inf(r.hi))
          r.hi = div_end(r.hi, di) * di;
      }
      return norm(r);
    }
    Range x = range(a.lhs, depth), y = range(a.rhs, depth);
    switch (a.kind) {
    case AtomKind::Min:
      return {std::min(x.lo, y.lo), std::min(x.hi, y.hi)};
    case AtomKind::Max:
      return {std::max(x.lo, y.lo), std::max(x.hi, y.hi)};
    case AtomKind::Mod: {
      if (y.lo < 1)
        return Range{};
      Range r{0, is_inf(y.hi) ? kInf : y.hi - 1};
      if (x.lo >= 0)
        r.hi = std::min(r.hi, x.hi);
      if (x.lo >= 0 && x.hi < y.lo) // mod is the identity
        r.lo = x.lo;
      return r;
    }
    default: { // floordiv / cdiv, monotone in the dividend for a divisor > 0
      if (y.lo < 1)
        return Range{};
      bool fl = a.kind == AtomKind::FloorDiv;
      if (y.lo == y.hi)
        return Range{div_end(x.lo, y.lo, !fl), div_end(x.hi, y.lo, !fl)};
      if (x.lo >= 0) // dividend >= 0, divisor in [y.lo, y.hi]
        return Range{0, div_end(x.hi, y.lo, !fl)};
      return Range{};
    }
    }
  }

  /// Every fact as an expression known to be >= 0.
  std::vector<Sym> nonneg_facts() const {
    std::vector<Sym> out;
    for (const auto &[lo, hi] : les)
      out.push_back(canon(hi - lo)); // one spelling of each value, as the goal
    return out;
  }

  /// The prover's canonical form: cdiv(x, c) by a constant is rewritten as
  /// floordiv(x + c - 1, c), so that both spellings of one value (which the
  /// normal form keeps apart for readable messages) cancel.
  static Sym canon(const Sym &e) {
    if (is_overflow(e))
      return e;
    Sym out;
    for (const auto &[m, c] : terms(e)) {
      Sym t(c);
      for (const auto &[atom, k] : m) {
        Sym v = Sym::symbol(atom.name);
        if (atom.kind != AtomKind::Symbol) {
          Sym l = canon(atom.lhs), r = canon(atom.rhs);
          auto rc = r.as_constant();
          v = atom.kind == AtomKind::CDiv && rc && *rc > 0 ? Sym::floordiv(l + Sym(*rc - 1), r)
                                                           : apply_op(atom.kind, l, r);
        }
        t = t * power(v, k);
      }
      out = out + t;
    }
    return out;
  }

  /// Division written back as the multiplication it undoes: a term
  /// k*y*floordiv(x, y) (y a constant dividing k, or a symbol) is
  /// k*(x - mod(x, y)), and mod(x, c) is 0 when the facts prove c | x. So
  /// `TB * (N / TB) == N` follows from `where N % TB == 0` (TB a constant:
  /// by divisibility; TB a dim: from the fact mod(N, TB) == 0).
  Sym exact(const Sym &e) const {
    if (is_overflow(e))
      return e;
    Sym out;
    for (const auto &[m, k] : terms(e)) {
      Sym t(k);
      Monomial rest = m;
      bool rewritten = false;
      for (size_t f = 0; f < m.size() && !rewritten; ++f) {
        const Atom &a = m[f].first;
        if (a.kind == AtomKind::Mod) {
          auto c = a.rhs.as_constant();
          if (c && *c > 0 && divisible(a.lhs, uint64_t(*c))) { // the term is 0
            t = Sym(0), rewritten = true;
          }
          continue;
        }
        if (a.kind != AtomKind::FloorDiv || m[f].second != 1)
          continue;
        auto c = a.rhs.as_constant();
        Sym whole = a.lhs - Sym::mod(a.lhs, a.rhs); // == y * floordiv(x, y)
        if (c && *c > 0 && k % *c == 0) {
          rest.erase(rest.begin() + long(f));
          t = Sym(k / *c) * exact(whole), rewritten = true;
        } else if (const Atom *y = sole_atom(a.rhs); y && y->kind == AtomKind::Symbol) {
          for (size_t g = 0; g < m.size() && !rewritten; ++g)
            if (g != f && cmp_atom(m[g].first, *y) == 0) {
              rest = m;
              if (--rest[g].second == 0)
                rest.erase(rest.begin() + long(g));
              rest.erase(std::find_if(rest.begin(), rest.end(),
                                      [&](const auto &x) { return cmp_atom(x.first, a) == 0; }));
              t = Sym(k) * whole, rewritten = true;
            }
        }
      }
      if (!rewritten) {
        out = out + SymBuilder::make(Poly{{m, k}});
        continue;
      }
      out = out + t * SymBuilder::make(Poly{{rest, 1}});
    }
    return out;
  }

  /// Weaker goals implied by d >= 0 through monotone atoms of degree one:
  /// with k*a in d, a = floordiv(x, c) (c > 0 constant) is replaced by
  /// floordiv(X, c) for the bound X of x that makes k*a smaller (an upper
  /// bound when k < 0), min(p, q) with k < 0 by p or q, max(p, q) with k > 0
  /// by p or q. Each candidate is <= d, so proving it >= 0 proves d >= 0.
  /// This relates atoms: floordiv(i, 2) <= cdiv(M, 2) - 1 from i <= M - 1.
  std::vector<Sym> monotone_weakenings(const Sym &d) const {
    std::vector<Sym> out;
    for (const auto &[m, k] : terms(d)) {
      if (m.size() != 1 || m[0].second != 1 || m[0].first.kind == AtomKind::Symbol)
        continue;
      const Atom &a = m[0].first;
      Sym rest = d - Sym(k) * SymBuilder::atom(a);
      auto c = a.rhs.as_constant();
      if (a.kind == AtomKind::FloorDiv && c && *c > 0) {
        if (auto x = bound(a.lhs, /*upper=*/k < 0))
          out.push_back(canon(rest + Sym(k) * Sym::floordiv(*x, a.rhs)));
      } else if ((a.kind == AtomKind::Min && k < 0) || (a.kind == AtomKind::Max && k > 0)) {
        out.push_back(canon(rest + Sym(k) * a.lhs));
        out.push_back(canon(rest + Sym(k) * a.rhs));
      } else if (a.kind == AtomKind::Mod && k < 0 && !c) {
        // mod(x, y) <= y - 1 for a divisor y >= 1, and <= x for x >= 0.
        if (range(a.rhs, kRangeDepth).lo >= 1)
          out.push_back(canon(rest + Sym(k) * (a.rhs - 1)));
        if (range(a.lhs, kRangeDepth).lo >= 0)
          out.push_back(canon(rest + Sym(k) * a.lhs));
      }
    }
    // k*floordiv(u, c) - k*floordiv(v, c) with k > 0 and u - v a constant
    // >= 0 is >= 0: drop the pair.
    for (const auto &[mu, ku] : terms(d))
      for (const auto &[mv, kv] : terms(d)) {
        if (ku <= 0 || kv != -ku || mu.size() != 1 || mv.size() != 1 || mu[0].second != 1 ||
            mv[0].second != 1)
          continue;
        const Atom &u = mu[0].first, &v = mv[0].first;
        auto diff = (u.lhs - v.lhs).as_constant();
        if (u.kind == AtomKind::FloorDiv && v.kind == AtomKind::FloorDiv && u.rhs == v.rhs &&
            u.rhs.as_constant() && diff && *diff >= 0)
          out.push_back(d - Sym(ku) * SymBuilder::atom(u) + Sym(ku) * SymBuilder::atom(v));
      }
    return out;
  }

  /// The two goals that together prove d >= 0 when d has a term k*max(p, q)
  /// with k < 0 or k*min(p, q) with k > 0 (that term is then the smaller of
  /// k*p and k*q, so d is the smaller of the two goals): clamps such as
  /// `N - 1 - max(j - 1, 0)`. Empty when d has no such term.
  std::vector<std::pair<Sym, Sym>> clamp_splits(const Sym &d) const {
    std::vector<std::pair<Sym, Sym>> out;
    for (const auto &[m, k] : terms(d)) {
      if (m.size() != 1 || m[0].second != 1)
        continue;
      const Atom &a = m[0].first;
      if ((a.kind == AtomKind::Max && k < 0) || (a.kind == AtomKind::Min && k > 0)) {
        Sym rest = d - Sym(k) * SymBuilder::atom(a);
        out.emplace_back(canon(rest + Sym(k) * a.lhs), canon(rest + Sym(k) * a.rhs));
      }
    }
    return out;
  }

  /// d >= 0: its interval lower bound is >= 0, or d - lambda*g >= 0 for a
  /// fact g >= 0 and lambda > 0 matching a shared term's coefficients, or a
  /// monotone weakening of d (above) is >= 0, or both goals of a clamp split
  /// (above) are.
  bool nonneg(const Sym &d, const std::vector<Sym> &facts, int depth) const {
    if (is_overflow(d))
      return false;
    if (range(d, kRangeDepth).lo >= 0)
      return true;
    for (const auto &[p, q] : clamp_splits(d)) // a split does not use up depth
      if (p != d && q != d && nonneg(p, facts, depth) && nonneg(q, facts, depth))
        return true;
    if (depth == 0)
      return false;
    for (const Sym &w : monotone_weakenings(d))
      if (w != d && nonneg(w, facts, depth - 1))
        return true;
    for (const Sym &g : facts) {
      std::vector<int64_t> lambdas;
      for (const auto &[m, gc] : terms(g)) {
        auto lambda = m.empty() ? std::nullopt : exact_ratio(d, m, gc);
        if (lambda && *lambda > 0 &&
            std::find(lambdas.begin(), lambdas.end(), *lambda) == lambdas.end())
          lambdas.push_back(*lambda);
      }
      for (int64_t lambda : lambdas)
        if (nonneg(d - Sym(lambda) * g, facts, depth - 1))
          return true;
    }
    return false;
  }

  /// A recorded symbolic bound of symbol `s` (upper or lower).
  std::optional<Sym> sym_bound(const std::string &s, bool upper) const {
    for (const auto &[lo, hi] : les)
      if (is_symbol(upper ? lo : hi, s))
        return upper ? hi : lo;
    return std::nullopt;
  }

  /// lower_bound / upper_bound: a constant from the interval if finite, else
  /// substitute linear symbols by their bounds (by the sign of the coefficient).
  std::optional<Sym> bound(const Sym &e, bool upper) const {
    if (is_overflow(e))
      return std::nullopt;
    Range r = range(e, kRangeDepth);
    I128 v = upper ? r.hi : r.lo;
    if (!is_inf(v))
      return Sym(static_cast<int64_t>(v));
    Sym cur = e;
    for (int round = 0; round < 3; ++round) {
      bool changed = false;
      for (const std::string &s : cur.symbols()) {
        // cur == lc*s + rest: replace s by its bound in the direction that
        // the sign of lc calls for.
        auto lc = cur.linear_coeff(s);
        Range rc = lc && *lc != Sym(0) ? range(*lc, kRangeDepth) : Range{};
        auto b = rc.lo >= 0 || rc.hi <= 0 ? sym_bound(s, upper == (rc.lo >= 0)) : std::nullopt;
        Sym next = b ? cur.substitute(s, *b) : SymBuilder::overflow();
        if (!is_overflow(next))
          cur = next, changed = true;
      }
      if (!changed)
        break;
    }
    if (cur == e)
      return std::nullopt;
    return cur;
  }
};

void Facts::add_divisible(const Sym &e, int64_t c) {
  if (c > 1 && !is_overflow(e))
    divisible_.emplace_back(e, c);
}

void Facts::add_bounds(const std::string &symbol, std::optional<Sym> lo, std::optional<Sym> hi) {
  auto &b = bounds_[symbol];
  // A second bound on the same side is kept as an `a <= b` fact.
  if (lo && b.first)
    add_le(*lo, Sym::symbol(symbol));
  else if (lo)
    b.first = lo;
  if (hi && b.second)
    add_le(Sym::symbol(symbol), *hi);
  else if (hi)
    b.second = hi;
}

void Facts::add_le(const Sym &a, const Sym &b) { le_.emplace_back(a, b); }

void Facts::add_definition(const std::string &symbol, const Sym &value) {
  if (!value.mentions(symbol) && !is_overflow(value))
    defs_.emplace_back(symbol, value);
}

Sym Facts::expand(const Sym &e) const {
  Sym cur = e;
  for (int round = 0; round < 3; ++round) {
    Sym next = cur;
    for (const auto &[name, value] : defs_)
      next = next.substitute(name, value);
    if (next == cur)
      break;
    cur = next;
  }
  return cur;
}

bool Facts::divisible(const Sym &e, int64_t c) const {
  if (c == 0)
    return e == Sym(0);
  Prover p{divisible_, bounds_, le_};
  if (p.divisible(e, uabs(c)))
    return true;
  Sym x = expand(e);
  return x != e && p.divisible(x, uabs(c));
}

bool Facts::prove_ge(const Sym &a, const Sym &b) const {
  Prover p{divisible_, bounds_, le_};
  std::vector<Sym> facts = p.nonneg_facts();
  if (p.nonneg(Prover::canon(a - b), facts, Prover::kSearchDepth))
    return true;
  Sym x = expand(a - b);
  if (x != a - b && p.nonneg(Prover::canon(x), facts, Prover::kSearchDepth))
    return true;
  // Once more with exact division multiplied back (Prover::exact), on the
  // goal and the facts alike.
  Sym e = p.exact(Prover::canon(x));
  if (e == Prover::canon(x))
    return false;
  for (Sym &f : facts)
    f = p.exact(f);
  return p.nonneg(e, facts, Prover::kSearchDepth);
}

std::optional<std::pair<Sym, Sym>> Facts::missing_fact(const Sym &a, const Sym &b,
                                                       const std::set<std::string> &keep) const {
  Prover p{divisible_, bounds_, le_};
  // The goal's worst case over every other symbol: each is replaced by the
  // bound in the direction that makes a - b smallest (linear symbols only).
  Sym cur = a - b;
  for (int round = 0; round < 4; ++round) {
    bool changed = false;
    for (const std::string &s : cur.symbols()) {
      if (keep.count(s))
        continue;
      auto lc = cur.linear_coeff(s);
      if (!lc || *lc == Sym(0))
        return std::nullopt;
      Range rc = p.range(*lc, Prover::kRangeDepth);
      if (rc.lo < 0 && rc.hi > 0)
        return std::nullopt;
      auto bound = p.sym_bound(s, /*upper=*/rc.hi <= 0);
      if (!bound)
        return std::nullopt;
      cur = cur.substitute(s, *bound), changed = true;
    }
    if (!changed)
      break;
  }
  if (is_overflow(cur) || cur.is_constant())
    return std::nullopt;
  for (const std::string &s : cur.symbols())
    if (!keep.count(s))
      return std::nullopt;
  Facts with = *this;
  with.add_le(Sym(0), cur);
  if (!with.prove_ge(a, b))
    return std::nullopt;
  // cur >= 0 as `lhs >= rhs` with positive coefficients on both sides.
  Poly lhs, rhs;
  for (const auto &[m, c] : terms(cur))
    if (c == INT64_MIN)
      return std::nullopt;
  for (const auto &[m, c] : terms(cur))
    (c > 0 ? lhs : rhs).emplace(m, c > 0 ? c : -c);
  return std::make_pair(SymBuilder::make(std::move(lhs)), SymBuilder::make(std::move(rhs)));
}

std::optional<Sym> Facts::lower_bound(const Sym &e) const {
  return Prover{divisible_, bounds_, le_}.bound(e, false);
}

std::optional<Sym> Facts::upper_bound(const Sym &e) const {
  return Prover{divisible_, bounds_, le_}.bound(e, true);
}

} // namespace etl
