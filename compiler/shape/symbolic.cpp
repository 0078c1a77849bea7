//===- shape/symbolic.cpp - Symbolic dimension expressions -----------------===//
//
// What this owns: Sym's normal form (shape/normal_form.h): arithmetic,
// floordiv/mod/cdiv/min/max normalisation, the canonical order, printing,
// symbols(), linear_coeff, substitute and eval. The prover is facts.cpp.
//
// Overflow policy: int64 overflow while normalising (constant folding or
// coefficient arithmetic) yields the distinguished *overflow* Sym. It prints
// as "<overflow>", as_constant() and eval() return nullopt, every operation on
// it yields it again, it equals only itself, and the prover proves nothing
// about it. A constant divisor <= 0 (the caller's error) leaves the
// operation as an opaque atom whose eval() is nullopt.
//
#include "shape/normal_form.h"

#include <numeric>

namespace etl {

//===-- Sym: construction and arithmetic ----------------------------------===//

static constexpr int64_t kMaxExponent = 1 << 16;

/// Adds c*m (or subtracts it, without negating c) into p; false on overflow.
static bool add_term(Poly &p, const Monomial &m, int64_t c, bool subtract = false) {
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
static bool mul_mono(const Monomial &a, const Monomial &b, Monomial &out) {
  out.clear();
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    int c = i == a.size() ? 1 : j == b.size() ? -1 : cmp_atom(a[i].first, b[j].first);
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
static Sym add_sub(const Sym &a, const Sym &b, int sign) {
  if (is_overflow(a) || is_overflow(b))
    return SymBuilder::overflow();
  Poly p = terms(a);
  for (const auto &[m, c] : terms(b))
    if (!add_term(p, m, c, sign < 0))
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

Sym operator+(const Sym &a, const Sym &b) { return add_sub(a, b, 1); }
Sym operator-(const Sym &a, const Sym &b) { return add_sub(a, b, -1); }
Sym Sym::operator-() const { return add_sub(Sym(), *this, -1); }

Sym operator*(const Sym &a, const Sym &b) {
  if (is_overflow(a) || is_overflow(b))
    return SymBuilder::overflow();
  Poly p;
  Monomial m;
  for (const auto &[ma, ca] : terms(a))
    for (const auto &[mb, cb] : terms(b)) {
      int64_t c;
      if (__builtin_mul_overflow(ca, cb, &c) || !mul_mono(ma, mb, m) || !add_term(p, m, c))
        return SymBuilder::overflow();
    }
  return SymBuilder::make(std::move(p));
}

/// The opaque atom kind(a, b) as a Sym.
static Sym op_atom(AtomKind kind, const Sym &a, const Sym &b) {
  return SymBuilder::atom(Atom{kind, {}, a, b});
}

/// floordiv / mod / cdiv of `a` by the constant c > 1. Terms whose
/// coefficients c divides are taken out exactly, the constant is reduced
/// (into [0, c) for floordiv/mod, (-c, 0] for cdiv), and a common factor g
/// of the remaining coefficients and c is cancelled:
///   floordiv(g*x + r, g*c) == floordiv(x + floordiv(r, g), c)
///   mod(g*x + r, g*c)      == g*mod(x + floordiv(r, g), c) + r % g
///   cdiv(g*x + r, g*c)     == cdiv(x + cdiv(r, g), c)
static Sym div_by_const(AtomKind kind, const Sym &a, int64_t c) {
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
  int64_t kq = ceil ? ceil_div(k, c) : floor_div(k, c);
  int64_t kr = floor_mod(k, c);
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
  int64_t shifted = ceil ? ceil_div(kr, g) : floor_div(kr, g);
  Sym inner = SymBuilder::make(std::move(x)) + Sym(shifted);
  Sym at = op_atom(kind, inner, Sym(c / g));
  if (kind == AtomKind::Mod)
    return Sym(g) * at + Sym(floor_mod(kr, g));
  return SymBuilder::make(std::move(quot)) + Sym(kq) + at;
}

/// Shared entry of floordiv, mod and cdiv.
Sym division(AtomKind kind, const Sym &a, const Sym &b) {
  if (is_overflow(a) || is_overflow(b))
    return SymBuilder::overflow();
  auto c = b.as_constant();
  if (!c || *c <= 0)
    return op_atom(kind, a, b);
  if (*c == 1)
    return kind == AtomKind::Mod ? Sym(0) : a;
  if (auto ac = a.as_constant())
    return Sym(*fold_op(kind, *ac, *c));
  return div_by_const(kind, a, *c);
}

Sym Sym::floordiv(const Sym &a, const Sym &b) { return division(AtomKind::FloorDiv, a, b); }
Sym Sym::mod(const Sym &a, const Sym &b) { return division(AtomKind::Mod, a, b); }
Sym Sym::cdiv(const Sym &a, const Sym &b) { return division(AtomKind::CDiv, a, b); }

/// Shared entry of min and max: folds constants, equal operands and operands
/// differing by a constant; otherwise an atom with ordered operands.
static Sym min_max(bool is_min, const Sym &a, const Sym &b) {
  if (is_overflow(a) || is_overflow(b))
    return SymBuilder::overflow();
  if (a == b)
    return a;
  if (auto d = (a - b).as_constant())
    return (*d <= 0) == is_min ? a : b;
  const Sym &lo = a < b ? a : b, &hi = a < b ? b : a;
  return op_atom(is_min ? AtomKind::Min : AtomKind::Max, lo, hi);
}

Sym Sym::min(const Sym &a, const Sym &b) { return min_max(true, a, b); }
Sym Sym::max(const Sym &a, const Sym &b) { return min_max(false, a, b); }

/// Re-applies the operation of `kind` to normalised operands.
Sym apply_op(AtomKind kind, const Sym &a, const Sym &b) {
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

int cmp_sym(const Sym &a, const Sym &b) {
  if (a.node() == b.node())
    return 0;
  if (is_overflow(a) != is_overflow(b))
    return is_overflow(a) ? 1 : -1;
  const Poly &pa = terms(a), &pb = terms(b);
  auto i = pa.begin(), j = pb.begin();
  for (; i != pa.end() && j != pb.end(); ++i, ++j) {
    if (int c = cmp_mono(i->first, j->first))
      return c;
    if (i->second != j->second)
      return i->second < j->second ? -1 : 1;
  }
  return pa.size() == pb.size() ? 0 : (pa.size() < pb.size() ? -1 : 1);
}

bool Sym::operator==(const Sym &o) const { return cmp_sym(*this, o) == 0; }
bool Sym::operator<(const Sym &o) const { return cmp_sym(*this, o) < 0; }

/// The single atom of `s` when s is exactly that atom (coefficient 1).
const Atom *sole_atom(const Sym &s) {
  const Poly &p = terms(s);
  if (p.size() != 1 || p.begin()->second != 1)
    return nullptr;
  const Monomial &m = p.begin()->first;
  return m.size() == 1 && m[0].second == 1 ? &m[0].first : nullptr;
}

/// `s` printed as an operand of "/" or "%"; `divisor` selects the right side,
/// where another "/" or "%" needs parentheses (they associate to the left).
static std::string operand_str(const Sym &s, bool divisor) {
  auto c = s.as_constant();
  const Atom *a = sole_atom(s);
  bool simple = (c && *c >= 0) ||
                (a && !(divisor && (a->kind == AtomKind::FloorDiv || a->kind == AtomKind::Mod)));
  return simple ? s.str() : "(" + s.str() + ")";
}

static std::string atom_str(const Atom &a) {
  switch (a.kind) {
  case AtomKind::Symbol:
    return a.name;
  case AtomKind::FloorDiv:
    return operand_str(a.lhs, false) + "/" + operand_str(a.rhs, true);
  case AtomKind::Mod:
    return operand_str(a.lhs, false) + " % " + operand_str(a.rhs, true);
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
        body += div && !bare ? "(" + atom_str(atom) + ")" : atom_str(atom);
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
static void collect_symbols(const Sym &s, std::set<std::string> &out) {
  for (const auto &[m, c] : terms(s))
    for (const auto &[atom, e] : m) {
      if (atom.kind == AtomKind::Symbol) {
        out.insert(atom.name);
      } else {
        collect_symbols(atom.lhs, out);
        collect_symbols(atom.rhs, out);
      }
    }
}

std::set<std::string> Sym::symbols() const {
  std::set<std::string> out;
  collect_symbols(*this, out);
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
Sym power(Sym s, int64_t e) {
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
                                            : apply_op(atom.kind, atom.lhs.substitute(name, value),
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
        v = fold_op(atom.kind, *l, *r);
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

void *Sym::emit(const EmitOps &ops) const {
  if (node_->overflow)
    return nullptr;
  static const char *names[] = {"", "cdiv", "floordiv", "mod", "min", "max"};
  void *sum = nullptr;
  for (const auto &[m, c] : terms(*this)) {
    void *t = m.empty() || c != 1 ? ops.constant(c) : nullptr;
    for (const auto &[atom, e] : m) {
      void *v = nullptr;
      if (atom.kind == AtomKind::Symbol) {
        v = ops.symbol(atom.name);
      } else {
        void *l = atom.lhs.emit(ops), *r = atom.rhs.emit(ops);
        if (!l || !r)
          return nullptr;
        v = ops.binary(names[int(atom.kind)], l, r);
      }
      if (!v)
        return nullptr;
      for (int64_t k = 0; k < e; ++k)
        t = t ? ops.binary("mul", t, v) : v;
    }
    sum = sum ? ops.binary("add", sum, t) : t;
  }
  return sum ? sum : ops.constant(0);
}

} // namespace etl
