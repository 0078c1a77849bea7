//===- shape/normal_form.h - Sym's representation, private to shape/ ------===//
//
// What this owns: the representation behind shape/symbolic.h's Sym, shared
// by the two files that implement it: symbolic.cpp (the normal form:
// construction, arithmetic, printing, substitution) and facts.cpp (the
// prover). A Sym is a map from monomials (sorted atom^k lists) to non-zero
// int64 coefficients, the empty monomial holding the constant. Nothing
// outside compiler/shape/ includes this header.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "shape/symbolic.h"

#include <algorithm>
#include <map>
#include <optional>

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

int cmp_sym(const Sym &a, const Sym &b);

/// Canonical atom order: symbols first (by name), then operations by kind
/// and operands.
inline int cmp_atom(const Atom &a, const Atom &b) {
  if (a.kind != b.kind)
    return a.kind < b.kind ? -1 : 1;
  if (a.kind == AtomKind::Symbol)
    return a.name.compare(b.name);
  if (int c = cmp_sym(a.lhs, b.lhs))
    return c;
  return cmp_sym(a.rhs, b.rhs);
}

/// Total degree of a monomial (exponents are capped, so this cannot overflow).
inline int64_t degree(const Monomial &m) {
  int64_t d = 0;
  for (const auto &f : m)
    d += f.second;
  return d;
}

/// Monomial order, which is also the printing order: higher degree first,
/// then lexicographic by atoms (higher power first); the constant is last.
inline int cmp_mono(const Monomial &a, const Monomial &b) {
  int64_t da = degree(a), db = degree(b);
  if (da != db)
    return da > db ? -1 : 1;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (int c = cmp_atom(a[i].first, b[i].first))
      return c;
    if (a[i].second != b[i].second)
      return a[i].second > b[i].second ? -1 : 1;
  }
  return a.size() == b.size() ? 0 : (a.size() < b.size() ? -1 : 1);
}

struct MonoLess {
  bool operator()(const Monomial &a, const Monomial &b) const { return cmp_mono(a, b) < 0; }
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

inline const Poly &terms(const Sym &s) { return s.node()->terms; }
inline bool is_overflow(const Sym &s) { return s.node()->overflow; }

//===-- int64 helpers -----------------------------------------------------===//

/// Floor division of constants; b > 0.
inline int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
/// Ceiling division of constants; b > 0.
inline int64_t ceil_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a > 0) ? q + 1 : q;
}
/// Floor modulo of constants (result in [0, b)); b > 0.
inline int64_t floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r < 0 ? r + b : r;
}
/// The value of operation `kind` on constants; nullopt for a divisor <= 0.
inline std::optional<int64_t> fold_op(AtomKind kind, int64_t l, int64_t r) {
  if (kind == AtomKind::Min || kind == AtomKind::Max)
    return kind == AtomKind::Min ? std::min(l, r) : std::max(l, r);
  if (r <= 0)
    return std::nullopt;
  return kind == AtomKind::FloorDiv ? floor_div(l, r)
         : kind == AtomKind::CDiv   ? ceil_div(l, r)
                                    : floor_mod(l, r);
}
/// |c| without overflow.
inline uint64_t uabs(int64_t c) {
  return c < 0 ? 0 - static_cast<uint64_t>(c) : static_cast<uint64_t>(c);
}

//===-- Normal-form operations facts.cpp also uses (symbolic.cpp) ---------===//

/// The normal form of `kind` applied to a and b (floordiv, mod, cdiv: by
/// division(); min, max: folded or an atom).
Sym apply_op(AtomKind kind, const Sym &a, const Sym &b);
/// floordiv/mod/cdiv of a by b, normalised.
Sym division(AtomKind kind, const Sym &a, const Sym &b);
/// s^e for e >= 0.
Sym power(Sym s, int64_t e);
/// The atom if `s` is exactly one atom with coefficient 1 and exponent 1.
const Atom *sole_atom(const Sym &s);

} // namespace etl
