//===- shape/symbolic.cpp - Symbolic dimension expressions -----------------===//
//
// What this owns: the implementation of shape/symbolic.h.
//  * Sym's normal form: a map from monomials (sorted atom^k lists) to
//    non-zero int64 coefficients, the empty monomial holding the constant;
//    arithmetic, floordiv/mod/cdiv/min/max normalisation, the canonical
//    order, printing, symbols(), linear_coeff, substitute and eval.
//  * The Facts prover: divisibility by "content" (a number every binding's
//    value is known to be a multiple of), bounds by interval arithmetic over
//    atoms, and prove_ge by subtracting known non-negative facts
//    (bounds, `a <= b`) before the interval check.
//
// Overflow policy: int64 overflow while normalising (constant folding or
// coefficient arithmetic) yields the distinguished *overflow* Sym. It prints
// as "<overflow>", as_constant() and eval() return nullopt, every operation on
// it yields it again, it equals only itself, and the prover proves nothing
// about it. A constant divisor <= 0 (the caller's error) leaves the
// operation as an opaque atom whose eval() is nullopt.
//
//===----------------------------------------------------------------------===//
#include "shape/symbolic.h"

#include <algorithm>
#include <numeric>

namespace etl {

enum class AtomKind : uint8_t { Symbol, CDiv, FloorDiv, Mod, Min, Max };

/// One factor of a monomial: a symbol or an opaque operation on normal forms.
struct Atom {
  AtomKind kind = AtomKind::Symbol;
  std::string name; ///< Symbol only.
  Sym lhs, rhs;     ///< Operations only.
};

/// Factors sorted by the canonical atom order, each with an exponent >= 1.
using Monomial = std::vector<std::pair<Atom, int64_t>>;

static int cmpSym(const Sym &a, const Sym &b);

/// Canonical atom order: symbols first (by name), then operations by kind
/// and operands.
static int cmpAtom(const Atom &a, const Atom &b) {
  if (a.kind != b.kind)
    return a.kind < b.kind ? -1 : 1;
  if (a.kind == AtomKind::Symbol)
    return a.name.compare(b.name);
  if (int c = cmpSym(a.lhs, b.lhs))
    return c;
  return cmpSym(a.rhs, b.rhs);
}

/// Total degree of a monomial (exponents are capped, so this cannot overflow).
static int64_t degree(const Monomial &m) {
  int64_t d = 0;
  for (const auto &f : m)
    d += f.second;
  return d;
}

/// Monomial order, which is also the printing order: higher degree first,
/// then lexicographic by atoms (higher power first); the constant is last.
static int cmpMono(const Monomial &a, const Monomial &b) {
  int64_t da = degree(a), db = degree(b);
  if (da != db)
    return da > db ? -1 : 1;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (int c = cmpAtom(a[i].first, b[i].first))
      return c;
    if (a[i].second != b[i].second)
      return a[i].second > b[i].second ? -1 : 1;
  }
  return a.size() == b.size() ? 0 : (a.size() < b.size() ? -1 : 1);
}

struct MonoLess {
  bool operator()(const Monomial &a, const Monomial &b) const { return cmpMono(a, b) < 0; }
};
using Poly = std::map<Monomial, int64_t, MonoLess>;

struct SymNode {
  Poly terms;            ///< Non-zero coefficients; empty monomial = constant.
  bool overflow = false; ///< The distinguished overflow value (terms empty).
};

/// Builds Syms from polynomials (Sym's node constructor is private).
struct SymBuilder {
  static Sym make(Poly p, bool overflow = false) {
    return Sym(std::shared_ptr<const SymNode>(new SymNode{std::move(p), overflow}));
  }
  static Sym overflow() {
    static const Sym o = make({}, true);
    return o;
  }
  static Sym atom(Atom a) { return make(Poly{{Monomial{{std::move(a), 1}}, 1}}); }
};

static const Poly &terms(const Sym &s) { return s.node()->terms; }
static bool isOverflow(const Sym &s) { return s.node()->overflow; }

//===-- int64 helpers -----------------------------------------------------===//

/// Floor division of constants; b > 0.
static int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
/// Ceiling division of constants; b > 0.
static int64_t ceilDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a > 0) ? q + 1 : q;
}
/// Floor modulo of constants (result in [0, b)); b > 0.
static int64_t floorMod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r < 0 ? r + b : r;
}
/// The value of operation `kind` on constants; nullopt for a divisor <= 0.
static std::optional<int64_t> foldOp(AtomKind kind, int64_t l, int64_t r) {
  if (kind == AtomKind::Min || kind == AtomKind::Max)
    return kind == AtomKind::Min ? std::min(l, r) : std::max(l, r);
  if (r <= 0)
    return std::nullopt;
  return kind == AtomKind::FloorDiv ? floorDiv(l, r)
         : kind == AtomKind::CDiv   ? ceilDiv(l, r)
                                    : floorMod(l, r);
}
/// |c| without overflow.
static uint64_t uabs(int64_t c) {
  return c < 0 ? 0 - static_cast<uint64_t>(c) : static_cast<uint64_t>(c);
}

//===-- Sym: construction and arithmetic ----------------------------------===//

static constexpr int64_t kMaxExponent = 1 << 16;

/// Adds c*m (or subtracts it, without negating c) into p; false on overflow.
static bool addTerm(Poly &p, const Monomial &m, int64_t c, bool subtract = false) {
  auto it = p.find(m);
  int64_t base = it == p.end() ? 0 : it->second, s;
  if (subtract ? __builtin_sub_overflow(base, c, &s) : __builtin_add_overflow(base, c, &s))
    return false;
  if (it != p.end())
    p.erase(it);
  if (s != 0)
    p.emplace(m, s);
  return true;
}

/// Product of two monomials (merge of sorted factor lists); false when an
/// exponent would exceed kMaxExponent.
static bool mulMono(const Monomial &a, const Monomial &b, Monomial &out) {
  out.clear();
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    int c = i == a.size() ? 1 : j == b.size() ? -1 : cmpAtom(a[i].first, b[j].first);
    if (c < 0) {
      out.push_back(a[i++]);
    } else if (c > 0) {
      out.push_back(b[j++]);
    } else {
      int64_t e = a[i].second + b[j].second;
      if (e > kMaxExponent)
        return false;
      out.emplace_back(a[i].first, e);
      ++i, ++j;
    }
  }
  return true;
}

/// a + sign*b with sign = +1 or -1.
static Sym addSub(const Sym &a, const Sym &b, int sign) {
  if (isOverflow(a) || isOverflow(b))
    return SymBuilder::overflow();
  Poly p = terms(a);
  for (const auto &[m, c] : terms(b))
    if (!addTerm(p, m, c, sign < 0))
      return SymBuilder::overflow();
  return SymBuilder::make(std::move(p));
}

Sym::Sym() {
  static const std::shared_ptr<const SymNode> zero = std::make_shared<SymNode>();
  node_ = zero;
}

Sym::Sym(int64_t c) {
  Poly p;
  if (c != 0)
    p.emplace(Monomial{}, c);
  node_ = SymBuilder::make(std::move(p)).node_;
}

Sym Sym::symbol(const std::string &name) {
  return SymBuilder::atom(Atom{AtomKind::Symbol, name, {}, {}});
}

Sym operator+(const Sym &a, const Sym &b) { return addSub(a, b, 1); }
Sym operator-(const Sym &a, const Sym &b) { return addSub(a, b, -1); }
Sym Sym::operator-() const { return addSub(Sym(), *this, -1); }

Sym operator*(const Sym &a, const Sym &b) {
  if (isOverflow(a) || isOverflow(b))
    return SymBuilder::overflow();
  Poly p;
  Monomial m;
  for (const auto &[ma, ca] : terms(a))
    for (const auto &[mb, cb] : terms(b)) {
      int64_t c;
      if (__builtin_mul_overflow(ca, cb, &c) || !mulMono(ma, mb, m) || !addTerm(p, m, c))
        return SymBuilder::overflow();
    }
  return SymBuilder::make(std::move(p));
}

/// The opaque atom kind(a, b) as a Sym.
static Sym opAtom(AtomKind kind, const Sym &a, const Sym &b) {
  return SymBuilder::atom(Atom{kind, {}, a, b});
}

/// floordiv / mod / cdiv of `a` by the constant c > 1. Terms whose
/// coefficients c divides are taken out exactly, the constant is reduced
/// (into [0, c) for floordiv/mod, (-c, 0] for cdiv), and a common factor g
/// of the remaining coefficients and c is cancelled:
///   floordiv(g*x + r, g*c) == floordiv(x + floordiv(r, g), c)
///   mod(g*x + r, g*c)      == g*mod(x + floordiv(r, g), c) + r % g
///   cdiv(g*x + r, g*c)     == cdiv(x + cdiv(r, g), c)
static Sym divByConst(AtomKind kind, const Sym &a, int64_t c) {
  Poly quot, rest;
  int64_t k = 0;
  for (const auto &[m, coef] : terms(a)) {
    if (m.empty())
      k = coef;
    else if (coef % c == 0)
      quot.emplace(m, coef / c);
    else
      rest.emplace(m, coef);
  }
  bool ceil = kind == AtomKind::CDiv;
  int64_t kq = ceil ? ceilDiv(k, c) : floorDiv(k, c);
  int64_t kr = floorMod(k, c);
  if (ceil && kr > 0)
    kr -= c;
  if (rest.empty()) // exact
    return kind == AtomKind::Mod ? Sym(kr) : SymBuilder::make(std::move(quot)) + Sym(kq);
  int64_t g = c;
  for (const auto &[m, coef] : rest)
    g = static_cast<int64_t>(std::gcd(static_cast<uint64_t>(g), uabs(coef)));
  Poly x;
  for (const auto &[m, coef] : rest)
    x.emplace(m, coef / g);
  int64_t shifted = ceil ? ceilDiv(kr, g) : floorDiv(kr, g);
  Sym inner = SymBuilder::make(std::move(x)) + Sym(shifted);
  Sym at = opAtom(kind, inner, Sym(c / g));
  if (kind == AtomKind::Mod)
    return Sym(g) * at + Sym(floorMod(kr, g));
  return SymBuilder::make(std::move(quot)) + Sym(kq) + at;
}

/// Shared entry of floordiv, mod and cdiv.
static Sym division(AtomKind kind, const Sym &a, const Sym &b) {
  if (isOverflow(a) || isOverflow(b))
    return SymBuilder::overflow();
  auto c = b.as_constant();
  if (!c || *c <= 0)
    return opAtom(kind, a, b);
  if (*c == 1)
    return kind == AtomKind::Mod ? Sym(0) : a;
  if (auto ac = a.as_constant())
    return Sym(*foldOp(kind, *ac, *c));
  return divByConst(kind, a, *c);
}

Sym Sym::floordiv(const Sym &a, const Sym &b) { return division(AtomKind::FloorDiv, a, b); }
Sym Sym::mod(const Sym &a, const Sym &b) { return division(AtomKind::Mod, a, b); }
Sym Sym::cdiv(const Sym &a, const Sym &b) { return division(AtomKind::CDiv, a, b); }

/// Shared entry of min and max: folds constants, equal operands and operands
/// differing by a constant; otherwise an atom with ordered operands.
static Sym minMax(bool isMin, const Sym &a, const Sym &b) {
  if (isOverflow(a) || isOverflow(b))
    return SymBuilder::overflow();
  if (a == b)
    return a;
  if (auto d = (a - b).as_constant())
    return (*d <= 0) == isMin ? a : b;
  const Sym &lo = a < b ? a : b, &hi = a < b ? b : a;
  return opAtom(isMin ? AtomKind::Min : AtomKind::Max, lo, hi);
}

Sym Sym::min(const Sym &a, const Sym &b) { return minMax(true, a, b); }
Sym Sym::max(const Sym &a, const Sym &b) { return minMax(false, a, b); }

/// Re-applies the operation of `kind` to normalised operands.
static Sym applyOp(AtomKind kind, const Sym &a, const Sym &b) {
  switch (kind) {
  case AtomKind::Min:
    return Sym::min(a, b);
  case AtomKind::Max:
    return Sym::max(a, b);
  default:
    return division(kind, a, b);
  }
}

//===-- Sym: queries ------------------------------------------------------===//

std::optional<int64_t> Sym::as_constant() const {
  const Poly &p = terms(*this);
  if (node_->overflow)
    return std::nullopt;
  if (p.empty())
    return 0;
  if (p.size() == 1 && p.begin()->first.empty())
    return p.begin()->second;
  return std::nullopt;
}

static int cmpSym(const Sym &a, const Sym &b) {
  if (a.node() == b.node())
    return 0;
  if (isOverflow(a) != isOverflow(b))
    return isOverflow(a) ? 1 : -1;
  const Poly &pa = terms(a), &pb = terms(b);
  auto i = pa.begin(), j = pb.begin();
  for (; i != pa.end() && j != pb.end(); ++i, ++j) {
    if (int c = cmpMono(i->first, j->first))
      return c;
    if (i->second != j->second)
      return i->second < j->second ? -1 : 1;
  }
  return pa.size() == pb.size() ? 0 : (pa.size() < pb.size() ? -1 : 1);
}

bool Sym::operator==(const Sym &o) const { return cmpSym(*this, o) == 0; }
bool Sym::operator<(const Sym &o) const { return cmpSym(*this, o) < 0; }

/// The single atom of `s` when s is exactly that atom (coefficient 1).
static const Atom *soleAtom(const Sym &s) {
  const Poly &p = terms(s);
  if (p.size() != 1 || p.begin()->second != 1)
    return nullptr;
  const Monomial &m = p.begin()->first;
  return m.size() == 1 && m[0].second == 1 ? &m[0].first : nullptr;
}

/// `s` printed as an operand of "/" or "%"; `divisor` selects the right side,
/// where another "/" or "%" needs parentheses (they associate to the left).
static std::string operandStr(const Sym &s, bool divisor) {
  auto c = s.as_constant();
  const Atom *a = soleAtom(s);
  bool simple = (c && *c >= 0) ||
                (a && !(divisor && (a->kind == AtomKind::FloorDiv || a->kind == AtomKind::Mod)));
  return simple ? s.str() : "(" + s.str() + ")";
}

static std::string atomStr(const Atom &a) {
  switch (a.kind) {
  case AtomKind::Symbol:
    return a.name;
  case AtomKind::FloorDiv:
    return operandStr(a.lhs, false) + "/" + operandStr(a.rhs, true);
  case AtomKind::Mod:
    return operandStr(a.lhs, false) + " % " + operandStr(a.rhs, true);
  default: // cdiv, min, max
    return std::string(a.kind == AtomKind::CDiv  ? "cdiv("
                       : a.kind == AtomKind::Min ? "min("
                                                 : "max(") +
           a.lhs.str() + ", " + a.rhs.str() + ")";
  }
}

std::string Sym::str() const {
  if (node_->overflow)
    return "<overflow>";
  const Poly &p = terms(*this);
  if (p.empty())
    return "0";
  std::string out;
  bool first = true;
  for (const auto &[m, c] : p) {
    bool neg = c < 0, unit = uabs(c) == 1 && !m.empty();
    std::string body = unit ? "" : std::to_string(uabs(c));
    // A "/" or "%" factor stands bare only as a whole term not under unary minus.
    bool bare = unit && m.size() == 1 && m[0].second == 1 && !(neg && first);
    for (const auto &[atom, e] : m)
      for (int64_t k = 0; k < e; ++k) {
        if (!body.empty())
          body += "*";
        bool div = atom.kind == AtomKind::FloorDiv || atom.kind == AtomKind::Mod;
        body += div && !bare ? "(" + atomStr(atom) + ")" : atomStr(atom);
      }
    if (first)
      out = (neg ? "-" : "") + body;
    else
      out += (neg ? " - " : " + ") + body;
    first = false;
  }
  return out;
}

/// Adds every symbol `s` mentions to `out`.
static void collectSymbols(const Sym &s, std::set<std::string> &out) {
  for (const auto &[m, c] : terms(s))
    for (const auto &[atom, e] : m) {
      if (atom.kind == AtomKind::Symbol) {
        out.insert(atom.name);
      } else {
        collectSymbols(atom.lhs, out);
        collectSymbols(atom.rhs, out);
      }
    }
}

std::set<std::string> Sym::symbols() const {
  std::set<std::string> out;
  collectSymbols(*this, out);
  return out;
}

std::optional<Sym> Sym::linear_coeff(const std::string &name) const {
  if (node_->overflow)
    return std::nullopt;
  Poly coeff;
  for (const auto &[m, c] : terms(*this)) {
    int64_t k = 0;
    Monomial rest;
    for (const auto &[atom, e] : m) {
      if (atom.kind == AtomKind::Symbol && atom.name == name) {
        k = e;
      } else {
        if (atom.kind != AtomKind::Symbol && (atom.lhs.mentions(name) || atom.rhs.mentions(name)))
          return std::nullopt;
        rest.emplace_back(atom, e);
      }
    }
    if (k > 1)
      return std::nullopt;
    if (k == 1)
      coeff.emplace(std::move(rest), c); // distinct m give distinct rest
  }
  return SymBuilder::make(std::move(coeff));
}

/// s^e by repeated squaring.
static Sym power(Sym s, int64_t e) {
  Sym r(1);
  for (; e > 0; e >>= 1, s = s * s)
    if (e & 1)
      r = r * s;
  return r;
}

Sym Sym::substitute(const std::string &name, const Sym &value) const {
  if (!mentions(name))
    return *this;
  Sym out;
  for (const auto &[m, c] : terms(*this)) {
    Sym t(c);
    for (const auto &[atom, e] : m) {
      Sym v = atom.kind == AtomKind::Symbol ? (atom.name == name ? value : Sym::symbol(atom.name))
                                            : applyOp(atom.kind, atom.lhs.substitute(name, value),
                                                      atom.rhs.substitute(name, value));
      t = t * power(v, e);
    }
    out = out + t;
  }
  return out;
}

std::optional<int64_t>
Sym::eval(const std::function<std::optional<int64_t>(const std::string &)> &env) const {
  if (node_->overflow)
    return std::nullopt;
  int64_t sum = 0;
  for (const auto &[m, c] : terms(*this)) {
    int64_t t = c;
    for (const auto &[atom, e] : m) {
      std::optional<int64_t> v;
      if (atom.kind == AtomKind::Symbol) {
        v = env(atom.name);
      } else {
        auto l = atom.lhs.eval(env), r = atom.rhs.eval(env);
        if (!l || !r)
          return std::nullopt;
        v = foldOp(atom.kind, *l, *r);
      }
      if (!v)
        return std::nullopt;
      for (int64_t k = 0; k < e; ++k)
        if (__builtin_mul_overflow(t, *v, &t))
          return std::nullopt;
    }
    if (__builtin_add_overflow(sum, t, &sum))
      return std::nullopt;
  }
  return sum;
}

//===-- Facts: interval arithmetic ----------------------------------------===//

__extension__ typedef __int128 I128;
/// Finite interval ends stay within [-kLim, kLim] so products fit in I128;
/// +-kInf stand for the infinities.
static constexpr I128 kLim = static_cast<I128>(1) << 62;
static constexpr I128 kInf = static_cast<I128>(1) << 100;

struct Range {
  I128 lo = -kInf, hi = kInf;
};

static bool isInf(I128 x) { return x >= kInf || x <= -kInf; }

/// Soundly widens ends beyond kLim: lo > kLim becomes kLim, lo < -kLim
/// becomes -inf, and symmetrically for hi.
static Range norm(Range r) {
  r.lo = r.lo < -kLim ? -kInf : std::min(r.lo, kLim);
  r.hi = r.hi > kLim ? kInf : std::max(r.hi, -kLim);
  return r;
}
/// Product of interval ends (0 * inf = 0, as for closed intervals).
static I128 mulEnd(I128 x, I128 y) {
  if (x == 0 || y == 0)
    return 0;
  if (isInf(x) || isInf(y))
    return (x < 0) != (y < 0) ? -kInf : kInf;
  return x * y;
}
static I128 addEnd(I128 x, I128 y) { return isInf(x) ? x : isInf(y) ? y : x + y; }
static Range addRange(Range a, Range b) { return norm({addEnd(a.lo, b.lo), addEnd(a.hi, b.hi)}); }
static Range mulRange(Range a, Range b) {
  I128 c[4] = {mulEnd(a.lo, b.lo), mulEnd(a.lo, b.hi), mulEnd(a.hi, b.lo), mulEnd(a.hi, b.hi)};
  return norm({*std::min_element(c, c + 4), *std::max_element(c, c + 4)});
}
/// Floor (or ceiling) division of an interval end by c > 0.
static I128 divEnd(I128 x, I128 c, bool ceil = false) {
  if (isInf(x) || x % c == 0)
    return isInf(x) ? x : x / c;
  return x / c + (ceil ? (x > 0) : -(x < 0));
}

//===-- Facts: the prover -------------------------------------------------===//

/// lcm saturating to a valid divisor on overflow; 0 means "known zero".
static uint64_t lcmDiv(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0)
    return 0;
  uint64_t r;
  return __builtin_mul_overflow(a / std::gcd(a, b), b, &r) ? std::max(a, b) : r;
}
/// Product saturating to a valid divisor on overflow; 0 means "known zero".
static uint64_t mulDiv(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::max(a, b) : r;
}

/// (coefficient of m in e) / b when exact and e has the term m.
static std::optional<int64_t> exactRatio(const Sym &e, const Monomial &m, int64_t b) {
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
  uint64_t factDiv(const Monomial &m) const {
    uint64_t r = 1;
    for (const auto &[f, d] : divs) {
      const Poly &p = terms(f);
      if (p.size() == 1 && !isOverflow(f) && cmpMono(p.begin()->first, m) == 0) {
        uint64_t ud = static_cast<uint64_t>(d);
        r = lcmDiv(r, ud / std::gcd(ud, uabs(p.begin()->second)));
      }
    }
    return r;
  }

  /// A number that divides the atom's value for every binding (0: always 0).
  uint64_t atomDiv(const Atom &a) const {
    if (a.kind == AtomKind::Symbol)
      return factDiv(Monomial{{a, 1}});
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

  uint64_t monoDiv(const Monomial &m) const {
    uint64_t r = 1;
    for (const auto &[atom, e] : m) {
      uint64_t d = atomDiv(atom);
      for (int64_t k = 0; k < e && r != 0 && d != 1; ++k)
        r = mulDiv(r, d);
    }
    return lcmDiv(r, factDiv(m));
  }

  /// The gcd of the terms' known divisors: e is always a multiple of it
  /// (0: e is always 0).
  uint64_t content(const Sym &e) const {
    uint64_t g = 0;
    for (const auto &[m, c] : terms(e))
      g = std::gcd(g, m.empty() ? uabs(c) : mulDiv(uabs(c), monoDiv(m)));
    return g;
  }

  bool divisible(const Sym &e, uint64_t c) const {
    if (isOverflow(e))
      return false;
    if (content(e) % c == 0)
      return true;
    // e == t*f + r with a fact f % d == 0, c | d, and r divisible by c.
    for (const auto &[f, d] : divs) {
      if (static_cast<uint64_t>(d) % c != 0 || isOverflow(f))
        continue;
      for (const auto &[m, fc] : terms(f)) {
        auto t = m.empty() ? std::nullopt : exactRatio(e, m, fc);
        Sym r = t ? e - Sym(*t) * f : SymBuilder::overflow();
        if (!isOverflow(r) && content(r) % c == 0)
          return true;
      }
    }
    return false;
  }

  Range range(const Sym &e, int depth) const {
    Range sum{0, 0};
    if (isOverflow(e))
      return Range{};
    for (const auto &[m, c] : terms(e)) {
      Range t = norm({c, c});
      for (const auto &[atom, k] : m) {
        Range a = atomRange(atom, depth), p = k > 64 ? Range{} : a;
        for (int64_t i = 1; i < k && k <= 64; ++i)
          p = mulRange(p, a);
        if (k % 2 == 0)
          p.lo = std::max<I128>(p.lo, 0);
        t = mulRange(t, p);
      }
      sum = addRange(sum, t);
    }
    return sum;
  }

  static bool isSymbol(const Sym &s, const std::string &name) {
    const Atom *a = soleAtom(s);
    return a && a->kind == AtomKind::Symbol && a->name == name;
  }

  Range atomRange(const Atom &a, int depth) const {
    if (a.kind == AtomKind::Symbol) {
      Range r;
      for (const auto &[lo, hi] : les) {
        if (depth > 0 && isSymbol(hi, a.name))
          r.lo = std::max(r.lo, range(lo, depth - 1).lo);
        if (depth > 0 && isSymbol(lo, a.name))
          r.hi = std::min(r.hi, range(hi, depth - 1).hi);
      }
      uint64_t d = atomDiv(a); // round inwards to multiples of d
      if (d == 0)
        return Range{0, 0};
      if (d > 1) {
        I128 di = static_cast<I128>(d);
        if (!isInf(r.lo))
          r.lo = divEnd(r.lo, di, true) * di;
        if (!isInf(r.hi))
          r.hi = divEnd(r.hi, di) * di;
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
      Range r{0, isInf(y.hi) ? kInf : y.hi - 1};
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
        return Range{divEnd(x.lo, y.lo, !fl), divEnd(x.hi, y.lo, !fl)};
      if (x.lo >= 0) // dividend >= 0, divisor in [y.lo, y.hi]
        return Range{0, divEnd(x.hi, y.lo, !fl)};
      return Range{};
    }
    }
  }

  /// Every fact as an expression known to be >= 0.
  std::vector<Sym> nonnegFacts() const {
    std::vector<Sym> out;
    for (const auto &[lo, hi] : les)
      out.push_back(canon(hi - lo)); // one spelling of each value, as the goal
    return out;
  }

  /// The prover's canonical form: cdiv(x, c) by a constant is rewritten as
  /// floordiv(x + c - 1, c), so that both spellings of one value (which the
  /// normal form keeps apart for readable messages) cancel.
  static Sym canon(const Sym &e) {
    if (isOverflow(e))
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
                                                           : applyOp(atom.kind, l, r);
        }
        t = t * power(v, k);
      }
      out = out + t;
    }
    return out;
  }

  /// Weaker goals implied by d >= 0 through monotone atoms of degree one:
  /// with k*a in d, a = floordiv(x, c) (c > 0 constant) is replaced by
  /// floordiv(X, c) for the bound X of x that makes k*a smaller (an upper
  /// bound when k < 0), min(p, q) with k < 0 by p or q, max(p, q) with k > 0
  /// by p or q. Each candidate is <= d, so proving it >= 0 proves d >= 0.
  /// This relates atoms: floordiv(i, 2) <= cdiv(M, 2) - 1 from i <= M - 1.
  std::vector<Sym> monotoneWeakenings(const Sym &d) const {
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

  /// d >= 0: its interval lower bound is >= 0, or d - lambda*g >= 0 for a
  /// fact g >= 0 and lambda > 0 matching a shared term's coefficients, or a
  /// monotone weakening of d (above) is >= 0.
  bool nonneg(const Sym &d, const std::vector<Sym> &facts, int depth) const {
    if (isOverflow(d))
      return false;
    if (range(d, kRangeDepth).lo >= 0)
      return true;
    if (depth == 0)
      return false;
    for (const Sym &w : monotoneWeakenings(d))
      if (w != d && nonneg(w, facts, depth - 1))
        return true;
    for (const Sym &g : facts) {
      std::vector<int64_t> lambdas;
      for (const auto &[m, gc] : terms(g)) {
        auto lambda = m.empty() ? std::nullopt : exactRatio(d, m, gc);
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
  std::optional<Sym> symBound(const std::string &s, bool upper) const {
    for (const auto &[lo, hi] : les)
      if (isSymbol(upper ? lo : hi, s))
        return upper ? hi : lo;
    return std::nullopt;
  }

  /// lower_bound / upper_bound: a constant from the interval if finite, else
  /// substitute linear symbols by their bounds (by the sign of the coefficient).
  std::optional<Sym> bound(const Sym &e, bool upper) const {
    if (isOverflow(e))
      return std::nullopt;
    Range r = range(e, kRangeDepth);
    I128 v = upper ? r.hi : r.lo;
    if (!isInf(v))
      return Sym(static_cast<int64_t>(v));
    Sym cur = e;
    for (int round = 0; round < 3; ++round) {
      bool changed = false;
      for (const std::string &s : cur.symbols()) {
        // cur == lc*s + rest: replace s by its bound in the direction that
        // the sign of lc calls for.
        auto lc = cur.linear_coeff(s);
        Range rc = lc && *lc != Sym(0) ? range(*lc, kRangeDepth) : Range{};
        auto b = rc.lo >= 0 || rc.hi <= 0 ? symBound(s, upper == (rc.lo >= 0)) : std::nullopt;
        Sym next = b ? cur.substitute(s, *b) : SymBuilder::overflow();
        if (!isOverflow(next))
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
  if (c > 1 && !isOverflow(e))
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
  if (!value.mentions(symbol) && !isOverflow(value))
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
  if (p.nonneg(Prover::canon(a - b), p.nonnegFacts(), Prover::kSearchDepth))
    return true;
  Sym x = expand(a - b);
  return x != a - b && p.nonneg(Prover::canon(x), p.nonnegFacts(), Prover::kSearchDepth);
}

std::optional<Sym> Facts::lower_bound(const Sym &e) const {
  return Prover{divisible_, bounds_, le_}.bound(e, false);
}

std::optional<Sym> Facts::upper_bound(const Sym &e) const {
  return Prover{divisible_, bounds_, le_}.bound(e, true);
}

} // namespace etl
