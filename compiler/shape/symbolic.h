//===- shape/symbolic.h - Symbolic dimension expressions -------------------===//
//
// What this owns: the normal form of integer expressions over symbolic
// dimensions (`M`, `N`), task indices and loop variables, and the small
// prover that sema uses to check shapes, extents and index ranges.
//
// A Sym is an immutable value in normal form: a sum of terms
//   coeff * atom1^k1 * atom2^k2 ...    (coeff a non-zero int64)
// plus a constant, where an atom is a symbol or an opaque operation that
// cannot be distributed: floordiv(e, c), mod(e, c), cdiv(e, d), min(a, b),
// max(a, b). Atoms' operands are themselves normal forms and atoms are
// ordered canonically, so equal expressions compare equal:
//   2*I - I == I,   (M + 1) * 2 == 2*M + 2,   cdiv(N, 128) == cdiv(N, 128).
// Division by a constant that divides every coefficient is exact and is
// distributed ((4*M + 8) / 4 == M + 2); otherwise it stays an atom.
//
// Facts record what `where` clauses and the language guarantee (every `dim`
// is >= 1, every task index lies in its range) and answer the questions sema
// asks: is this expression divisible by c, is a >= b for every binding.
// Answers are sound but incomplete: "false" means "could not prove".
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace etl {

struct SymNode; // the normal form; defined in symbolic.cpp

class Sym {
public:
  /// The constant 0.
  Sym();
  Sym(int64_t c); // NOLINT: implicit on purpose, `x + 1` reads well
  static Sym constant(int64_t c) { return Sym(c); }
  static Sym symbol(const std::string &name);

  friend Sym operator+(const Sym &a, const Sym &b);
  friend Sym operator-(const Sym &a, const Sym &b);
  friend Sym operator*(const Sym &a, const Sym &b);
  Sym operator-() const;
  /// Floor division and modulo (divisor must be > 0 at run time; a constant
  /// divisor <= 0 is the caller's error to report before calling these).
  static Sym floordiv(const Sym &a, const Sym &b);
  static Sym mod(const Sym &a, const Sym &b);
  /// Ceiling division cdiv(a, b) = floordiv(a + b - 1, b) for b > 0.
  static Sym cdiv(const Sym &a, const Sym &b);
  static Sym min(const Sym &a, const Sym &b);
  static Sym max(const Sym &a, const Sym &b);

  std::optional<int64_t> as_constant() const;
  bool is_constant() const { return as_constant().has_value(); }
  /// Structural equality of normal forms.
  bool operator==(const Sym &o) const;
  bool operator!=(const Sym &o) const { return !(*this == o); }
  /// A total order on normal forms (for use as map keys).
  bool operator<(const Sym &o) const;

  /// User syntax, deterministic: "2*I + 1", "cdiv(N, 128) - 1", "M*N".
  std::string str() const;
  /// Every symbol name the expression mentions, atoms' operands included.
  std::set<std::string> symbols() const;
  bool mentions(const std::string &name) const { return symbols().count(name) != 0; }

  /// If the expression is a polynomial of degree <= 1 in `name` with `name`
  /// not appearing inside any atom, returns the coefficient of `name` (which
  /// may be symbolic, or 0 if absent); nullopt otherwise.
  std::optional<Sym> linear_coeff(const std::string &name) const;
  /// Replaces every occurrence of symbol `name` (inside atoms too).
  Sym substitute(const std::string &name, const Sym &value) const;
  /// Evaluates with a value for each symbol; nullopt when a symbol is unbound,
  /// on division by a non-positive value, or on int64 overflow.
  std::optional<int64_t>
  eval(const std::function<std::optional<int64_t>(const std::string &)> &env) const;

  /// Code generation: rebuilds the expression through `ops` (a sum of
  /// coefficient * product of atoms; `binary` gets "add", "mul", "floordiv",
  /// "mod", "cdiv", "min" or "max"). Null for the overflow value.
  struct EmitOps {
    std::function<void *(int64_t)> constant;
    std::function<void *(const std::string &)> symbol;
    std::function<void *(const char *, void *, void *)> binary;
  };
  void *emit(const EmitOps &ops) const;

  const std::shared_ptr<const SymNode> &node() const { return node_; }

private:
  explicit Sym(std::shared_ptr<const SymNode> n) : node_(std::move(n)) {}
  std::shared_ptr<const SymNode> node_;
  friend struct SymBuilder;
};

/// What is known about the symbols, from `where` clauses and the language.
class Facts {
public:
  /// `e % c == 0` (c > 0).
  void add_divisible(const Sym &e, int64_t c);
  /// `lo <= symbol <= hi`; either bound may be absent. Dims get lo = 1.
  void add_bounds(const std::string &symbol, std::optional<Sym> lo, std::optional<Sym> hi);
  /// `a <= b` as a general fact (from `where a <= b`).
  void add_le(const Sym &a, const Sym &b);
  /// `symbol == value` (from `where N == 2 * M`; value must not mention
  /// symbol): questions the other facts cannot answer are retried with
  /// symbol replaced by value.
  void add_definition(const std::string &symbol, const Sym &value);

  /// Is `e` divisible by `c` for every binding satisfying the facts?
  bool divisible(const Sym &e, int64_t c) const;
  /// Is a >= b for every binding satisfying the facts?
  bool prove_ge(const Sym &a, const Sym &b) const;
  bool prove_gt(const Sym &a, const Sym &b) const { return prove_ge(a, b + 1); }
  /// When a >= b cannot be proved: a fact `lhs >= rhs` (the pair) over the
  /// symbols in `keep` only (a kernel's dims) that would prove it, found by
  /// replacing every other symbol by its bound; nullopt when there is none
  /// (e.g. a - b < 0 for every binding) or it does not settle the goal.
  std::optional<std::pair<Sym, Sym>> missing_fact(const Sym &a, const Sym &b,
                                                  const std::set<std::string> &keep) const;
  /// A lower bound of `e` the facts imply, if one can be found.
  std::optional<Sym> lower_bound(const Sym &e) const;
  /// An upper bound of `e` the facts imply, if one can be found.
  std::optional<Sym> upper_bound(const Sym &e) const;

private:
  std::vector<std::pair<Sym, int64_t>> divisible_;
  std::map<std::string, std::pair<std::optional<Sym>, std::optional<Sym>>> bounds_;
  std::vector<std::pair<Sym, Sym>> le_;
  std::vector<std::pair<std::string, Sym>> defs_;
  /// e with every definition substituted (a few rounds, for chains).
  Sym expand(const Sym &e) const;
};

} // namespace etl
