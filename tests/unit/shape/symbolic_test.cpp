// Unit tests for shape/symbolic: normal form, printing, facts and the prover.
#include "shape/symbolic.h"

#include <doctest/doctest.h>

#include <climits>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>

using etl::Facts;
using etl::Sym;

namespace {
const Sym M = Sym::symbol("M"), N = Sym::symbol("N"), I = Sym::symbol("I"), i = Sym::symbol("i"),
          x = Sym::symbol("x");

/// An environment from a fixed map (missing names are unbound).
std::function<std::optional<int64_t>(const std::string &)> env(std::map<std::string, int64_t> m) {
  return [m](const std::string &n) -> std::optional<int64_t> {
    auto it = m.find(n);
    if (it == m.end())
      return std::nullopt;
    return it->second;
  };
}

/// Facts where M and N are dims (>= 1).
Facts dims() {
  Facts f;
  f.add_bounds("M", Sym(1), std::nullopt);
  f.add_bounds("N", Sym(1), std::nullopt);
  return f;
}
} // namespace

TEST_CASE("symbolic: polynomial normal form") {
  CHECK(2 * I - I == I);
  CHECK((M + 1) * 2 == 2 * M + 2);
  CHECK(M * N == N * M);
  CHECK((M + N) * (M - N) == M * M - N * N);
  CHECK(x - x == Sym(0));
  CHECK((x - x).as_constant() == 0);
  CHECK(Sym() == Sym(0));
  CHECK(-(-M) == M);
  CHECK((M + 3) - 3 == M);
  CHECK(M != N);
  CHECK((M < N) != (N < M));
  CHECK_FALSE(M < M);
  CHECK(Sym(6) * Sym(7) == Sym(42));
  CHECK_FALSE(M.is_constant());
}

TEST_CASE("symbolic: division, mod, min, max normalisation") {
  CHECK(Sym::cdiv(N, 128) == Sym::cdiv(N, 128));
  CHECK(Sym::cdiv(N, 128) != Sym::cdiv(N, 64));
  CHECK(Sym::floordiv(4 * M + 8, 4) == M + 2);
  CHECK(Sym::floordiv(M, 1) == M);
  CHECK(Sym::mod(M, 1) == Sym(0));
  CHECK(Sym::mod(4 * M, 4) == Sym(0));
  CHECK(Sym::mod(4 * M + 6, 4) == Sym(2));
  CHECK(Sym::floordiv(7, 2) == Sym(3));
  CHECK(Sym::floordiv(-7, 2) == Sym(-4));
  CHECK(Sym::mod(-7, 2) == Sym(1));
  CHECK(Sym::cdiv(7, 2) == Sym(4));
  CHECK(Sym::cdiv(-7, 2) == Sym(-3));
  CHECK(Sym::cdiv(8 * M + 16, 8) == M + 2);
  CHECK(Sym::cdiv(M, 1) == M);
  // Divisible parts are taken out of the atom.
  CHECK(Sym::floordiv(4 * M + N, 4) == M + Sym::floordiv(N, 4));
  CHECK(Sym::floordiv(2 * M, 4) == Sym::floordiv(M, 2));
  CHECK(Sym::mod(M + 5, 4) == Sym::mod(M + 1, 4));
  CHECK(Sym::min(M, M) == M);
  CHECK(Sym::max(M, M) == M);
  CHECK(Sym::min(3, 5) == Sym(3));
  CHECK(Sym::max(3, 5) == Sym(5));
  CHECK(Sym::min(M + 1, M) == M);
  CHECK(Sym::max(M + 1, M) == M + 1);
  CHECK(Sym::min(M, N) == Sym::min(N, M));
  CHECK(Sym::max(M, N) != Sym::min(M, N));
  CHECK_FALSE(Sym::floordiv(M, N).is_constant());
}

TEST_CASE("symbolic: constant overflow yields the overflow value") {
  Sym big(INT64_MAX);
  CHECK_FALSE((big + 1).as_constant().has_value());
  CHECK_FALSE((big * 2).as_constant().has_value());
  CHECK_FALSE((Sym(INT64_MIN) - 1).as_constant().has_value());
  CHECK_FALSE((-Sym(INT64_MIN)).as_constant().has_value());
  CHECK((big + 1).str() == "<overflow>");
  CHECK_FALSE((big * M * 2).eval(env({{"M", 1}})).has_value());
  CHECK((big + 1) + M == big + 1 + N); // overflow absorbs
  CHECK((Sym(INT64_MIN) - Sym(INT64_MIN)).as_constant() == 0);
  CHECK(Sym::floordiv(INT64_MIN, 3).as_constant() == INT64_MIN / 3 - 1);
  CHECK(Sym::cdiv(INT64_MAX, 2).as_constant() == INT64_MAX / 2 + 1);
  CHECK(Sym::mod(INT64_MIN, 3).as_constant() == 1);
  Facts f;
  CHECK_FALSE(f.prove_ge(big + 1, 0));
  CHECK_FALSE(f.divisible(big + 1, 2));
}

TEST_CASE("symbolic: str") {
  CHECK((2 * I + 1).str() == "2*I + 1");
  CHECK((N * M).str() == "M*N");
  CHECK((Sym::cdiv(N, 128) - 1).str() == "cdiv(N, 128) - 1");
  CHECK((3 - M).str() == "-M + 3");
  CHECK(Sym::floordiv(M, 4).str() == "M/4");
  CHECK(Sym::mod(M, 4).str() == "M % 4");
  CHECK(Sym::min(N, M).str() == "min(M, N)");
  CHECK(Sym::max(M, N).str() == "max(M, N)");
  CHECK(Sym(0).str() == "0");
  CHECK(Sym(-5).str() == "-5");
  CHECK((M * M + M).str() == "M*M + M");
  CHECK((M - N).str() == "M - N");
  CHECK((3 * Sym::floordiv(M, 4)).str() == "3*(M/4)");
  CHECK((-Sym::floordiv(M, 4)).str() == "-(M/4)");
  CHECK(Sym::floordiv(M + N, 4).str() == "(M + N)/4");
  CHECK(Sym::floordiv(M, N + 1).str() == "M/(N + 1)");
  CHECK((M + Sym::cdiv(N, 2)).str() == "M + cdiv(N, 2)");
  CHECK((Sym(INT64_MIN) + M).str() == "M - 9223372036854775808");
}

TEST_CASE("symbolic: symbols, linear_coeff, substitute, eval") {
  Sym e = Sym::cdiv(M, 16) + i * N;
  CHECK(e.symbols() == std::set<std::string>{"M", "N", "i"});
  CHECK(e.mentions("M"));
  CHECK_FALSE(e.mentions("K"));
  CHECK((3 * i + M).linear_coeff("i") == Sym(3));
  CHECK((i * M + 2).linear_coeff("i") == M);
  CHECK_FALSE((i * i).linear_coeff("i").has_value());
  CHECK_FALSE(Sym::cdiv(i, 2).linear_coeff("i").has_value());
  CHECK_FALSE((i + Sym::min(i, M)).linear_coeff("i").has_value());
  CHECK((M + 1).linear_coeff("i") == Sym(0));
  CHECK((2 * i + 1).substitute("i", M) == 2 * M + 1);
  CHECK(Sym::cdiv(i, 4).substitute("i", 4 * M) == M);
  CHECK(Sym::min(i, M).substitute("i", M + 1) == M);
  CHECK((i * i).substitute("i", M + 1) == M * M + 2 * M + 1);
  CHECK(e.eval(env({{"M", 33}, {"N", 4}, {"i", 2}})) == 3 + 8);
  CHECK_FALSE(e.eval(env({{"M", 33}})).has_value());
  CHECK_FALSE(Sym::floordiv(M, N).eval(env({{"M", 3}, {"N", 0}})).has_value());
  CHECK_FALSE(Sym::mod(M, N).eval(env({{"M", 3}, {"N", -2}})).has_value());
  CHECK_FALSE(Sym::floordiv(M, 0).eval(env({{"M", 3}})).has_value());
  CHECK(Sym::mod(M, N).eval(env({{"M", -7}, {"N", 2}})) == 1);
  CHECK_FALSE((M * M).eval(env({{"M", INT64_MAX}})).has_value());
  CHECK_FALSE((M + N).eval(env({{"M", INT64_MAX}, {"N", 1}})).has_value());
}

TEST_CASE("symbolic: divisibility facts") {
  Facts f;
  CHECK(f.divisible(8 * M, 4));
  CHECK(f.divisible(Sym(12), 4));
  CHECK(f.divisible(Sym(0), 7));
  CHECK(f.divisible(M, 1));
  CHECK_FALSE(f.divisible(M, 4));
  CHECK_FALSE(f.divisible(M + 4, 4));
  f.add_divisible(M, 4);
  CHECK(f.divisible(M, 4));
  CHECK(f.divisible(M, 2));
  CHECK(f.divisible(M + 4, 4));
  CHECK_FALSE(f.divisible(M + 2, 4));
  CHECK(f.divisible(M * N, 4));
  CHECK(f.divisible(Sym::min(M, 8), 4));
  Facts g;
  g.add_divisible(N, 2);
  CHECK(g.divisible(2 * N, 4));
  CHECK_FALSE(g.divisible(N, 4));
  Facts h;
  h.add_divisible(M, 64);
  CHECK(h.divisible(M, 64)); // so floordiv(M, 64) is exact
  CHECK(h.divisible(Sym::floordiv(M, 16), 4));
  CHECK(h.divisible(Sym::mod(M, 64), 1000)); // it is 0
  CHECK(h.divisible(M * M + 64 * N + 128, 64));
  Facts s; // a fact on a sum
  s.add_divisible(M + N, 8);
  CHECK(s.divisible(M + N + 16, 8));
  CHECK(s.divisible(2 * M + 2 * N, 4));
  CHECK_FALSE(s.divisible(M, 8));
  Facts t; // a fact on a product
  t.add_divisible(M * N, 6);
  CHECK(t.divisible(5 * M * N, 3));
}

TEST_CASE("symbolic: prove_ge and bounds") {
  Facts f = dims();
  CHECK(f.prove_ge(M, 1));
  CHECK(f.prove_gt(M, 0));
  CHECK(f.prove_ge(M * N, 1));
  CHECK(f.prove_ge(M * N + M, 2));
  CHECK(f.prove_ge(Sym::cdiv(M, 16), 1));
  CHECK(f.prove_ge(Sym::floordiv(M, 16), 0));
  CHECK_FALSE(f.prove_ge(Sym::floordiv(M, 16), 1));
  CHECK(f.prove_ge(M, M));
  CHECK_FALSE(f.prove_ge(M, N));
  CHECK_FALSE(f.prove_ge(M, 2));
  CHECK(f.prove_ge(Sym::mod(x, 4), 0));
  CHECK(f.prove_ge(3, Sym::mod(x, 4)));
  CHECK_FALSE(f.prove_ge(2, Sym::mod(x, 4)));
  CHECK(f.prove_ge(Sym::min(M, N), 1));
  CHECK(f.prove_ge(Sym::max(M, x), 1));
  CHECK_FALSE(f.prove_ge(x, 0));

  Facts g = dims(); // task index i in [0, cdiv(M, 16) - 1]
  g.add_bounds("i", Sym(0), Sym::cdiv(M, 16) - 1);
  CHECK(g.prove_ge(Sym::cdiv(M, 16) - 1, i));
  CHECK(g.prove_ge(Sym::cdiv(M, 16), i + 1));
  CHECK(g.prove_ge(i, 0));
  CHECK_FALSE(g.prove_ge(Sym::cdiv(M, 16) - 2, i));
  CHECK(g.lower_bound(i) == Sym(0));
  CHECK(g.upper_bound(i) == Sym::cdiv(M, 16) - 1);
  CHECK(g.upper_bound(16 * i + 15) == 16 * Sym::cdiv(M, 16) - 1);
  CHECK(g.lower_bound(M + i) == Sym(1));
  CHECK_FALSE(g.upper_bound(M).has_value());

  Facts h = dims(); // i <= M - 1 as a general fact
  h.add_le(i, M - 1);
  CHECK(h.prove_ge(M, i + 1));
  CHECK_FALSE(h.prove_ge(M, i + 2));

  Facts k = dims();
  CHECK_FALSE(k.prove_ge(M, N));
  k.add_le(N, M);
  CHECK(k.prove_ge(M, N));
  CHECK(k.prove_ge(2 * M, N + 1));
  CHECK_FALSE(k.prove_ge(N, M));

  Facts r = dims(); // relations between atoms: i in [0, M - 1]
  r.add_bounds("i", Sym(0), M - 1);
  CHECK(r.prove_ge(Sym::cdiv(M, 2) - 1, Sym::floordiv(i, 2)));
  CHECK(r.prove_ge(Sym::floordiv(M - 1, 2), Sym::floordiv(i, 2)));
  CHECK(r.prove_ge(Sym::cdiv(M, 16), Sym::floordiv(i, 16) + 1));
  CHECK_FALSE(r.prove_ge(Sym::cdiv(M, 2) - 2, Sym::floordiv(i, 2)));
  CHECK(r.prove_ge(M - 1, Sym::min(i, N)));
  CHECK_FALSE(r.prove_ge(N - 1, Sym::min(i, N)));
  CHECK(r.prove_ge(Sym::max(i, N), N));
  CHECK(r.prove_ge(Sym::cdiv(M, 4), Sym::floordiv(i + 3, 4)));

  Facts q = dims(); // definitions: N == 2 * M, M % 16 == 0
  q.add_divisible(M, 16);
  CHECK_FALSE(q.divisible(N, 32));
  q.add_definition("N", 2 * M);
  CHECK(q.divisible(N, 32));
  CHECK_FALSE(q.divisible(N, 64));
  CHECK(q.prove_ge(N, M + 1));
  CHECK(q.prove_ge(Sym::floordiv(N, 32) - 1, Sym::floordiv(M, 16) - 1));
  q.add_definition("M", M + 1); // mentions itself: ignored
  CHECK_FALSE(q.prove_ge(M, M + 1));

  Facts d = dims(); // divisibility tightens bounds
  d.add_divisible(M, 64);
  CHECK(d.prove_ge(M, 64));
  CHECK(d.prove_ge(Sym::floordiv(M, 64), 1));
}

TEST_CASE("symbolic: clamped and ring indices (issue 15 item 7)") {
  const Sym j = Sym::symbol("j");
  Facts f = dims(); // task j in 0 .. N, event extent N
  f.add_bounds("j", Sym(0), N - 1);
  for (const Sym &idx : {Sym::max(j - 1, 0), Sym::min(j + 1, N - 1), Sym::mod(j + 1, N),
                         Sym::max(Sym::min(j + 1, N - 1), 0), Sym::mod(j + N - 1, N)}) {
    INFO(idx.str());
    CHECK(f.prove_ge(idx, 0));
    CHECK(f.prove_ge(N - 1, idx));
  }
  // Still sound: these can leave 0 .. N - 1.
  CHECK_FALSE(f.prove_ge(N - 1, Sym::max(j + 1, 0)));
  CHECK_FALSE(f.prove_ge(Sym::min(j - 1, N - 1), 0));
  CHECK_FALSE(f.prove_ge(N - 2, Sym::mod(j + 1, N)));
  CHECK_FALSE(f.prove_ge(N - 1, Sym::max(j - 1, N)));
  // With `where N >= 4` (the facts a user adds) too.
  Facts g = f;
  g.add_le(Sym(4), N);
  CHECK(g.prove_ge(N - 1, Sym::min(j + 2, N - 1)));
  CHECK(g.prove_ge(N - 1, Sym::mod(j + 3, N)));
}

TEST_CASE("symbolic: exact division multiplied back") {
  const Sym TB = Sym::symbol("TB");
  Facts f = dims();
  // A constant tile: 64 * (N / 64) == N needs `where N % 64 == 0`.
  CHECK(f.prove_ge(N, 64 * Sym::floordiv(N, 64)));
  CHECK_FALSE(f.prove_ge(64 * Sym::floordiv(N, 64), N));
  f.add_divisible(N, 64);
  CHECK(f.prove_ge(64 * Sym::floordiv(N, 64), N));
  CHECK(f.prove_ge(128 * Sym::floordiv(N, 64), 2 * N));
  CHECK_FALSE(f.prove_ge(64 * Sym::floordiv(N, 64), N + 1));
  // A tile that is a dim: `where N % TB == 0` is the fact mod(N, TB) == 0.
  Facts g = dims();
  g.add_bounds("TB", Sym(1), std::nullopt);
  CHECK_FALSE(g.prove_ge(TB * Sym::floordiv(N, TB), N));
  g.add_le(Sym::mod(N, TB), 0);
  g.add_le(0, Sym::mod(N, TB));
  CHECK(g.prove_ge(TB * Sym::floordiv(N, TB), N));
  CHECK(g.prove_ge(N, TB * Sym::floordiv(N, TB)));
}

TEST_CASE("symbolic: missing_fact suggests the where clause that settles a goal") {
  const Sym j = Sym::symbol("j");
  const std::set<std::string> keep = {"M", "N"};
  Facts f = dims();
  f.add_bounds("j", Sym(0), Sym(3)); // j in 0 .. 4
  auto m = f.missing_fact(N - 1, j, keep);
  REQUIRE(m);
  CHECK(m->first == N);
  CHECK(m->second == Sym(4));
  Facts g = dims(); // j in 0 .. M, index j of an event of extent N
  g.add_bounds("j", Sym(0), M - 1);
  m = g.missing_fact(N - 1, j, keep);
  REQUIRE(m);
  CHECK(m->first == N);
  CHECK(m->second == M);
  // Nothing over the dims settles j + 1 <= N - 1 for j up to N - 1.
  Facts h = dims();
  h.add_bounds("j", Sym(0), N - 1);
  CHECK_FALSE(h.missing_fact(N - 1, j + 1, keep));
  // Nor a goal over a symbol with no bound.
  CHECK_FALSE(h.missing_fact(N - 1, x, keep));
}

// ---- randomized soundness -------------------------------------------------

namespace {
/// A random expression tree, evaluated naively and built into Syms.
struct Tree {
  enum Op { Sym_, Const, Add, Sub, Mul, FDiv, Mod, CDiv, Min, Max } op;
  std::string name;
  int64_t value = 0;
  std::shared_ptr<Tree> a, b;
};
using TreeP = std::shared_ptr<Tree>;

TreeP randTree(std::mt19937 &rng, int depth) {
  auto t = std::make_shared<Tree>();
  int r = depth == 0 ? static_cast<int>(rng() % 2) : static_cast<int>(rng() % 10);
  static const char *names[] = {"M", "N", "i", "j"};
  t->op = static_cast<Tree::Op>(r);
  if (t->op == Tree::Sym_) {
    t->name = names[rng() % 4];
  } else if (t->op == Tree::Const) {
    t->value = static_cast<int64_t>(rng() % 9) - 3;
  } else {
    t->a = randTree(rng, depth - 1);
    if (t->op == Tree::FDiv || t->op == Tree::Mod || t->op == Tree::CDiv) {
      t->b = std::make_shared<Tree>();
      t->b->op = Tree::Const;
      t->b->value = 1 + static_cast<int64_t>(rng() % 6);
    } else {
      t->b = randTree(rng, depth - 1);
    }
  }
  return t;
}

int64_t fdiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && a < 0); }

int64_t naive(const Tree &t, const std::map<std::string, int64_t> &v) {
  switch (t.op) {
  case Tree::Sym_:
    return v.at(t.name);
  case Tree::Const:
    return t.value;
  default:
    break;
  }
  int64_t a = naive(*t.a, v), b = naive(*t.b, v);
  switch (t.op) {
  case Tree::Add:
    return a + b;
  case Tree::Sub:
    return a - b;
  case Tree::Mul:
    return a * b;
  case Tree::FDiv:
    return fdiv(a, b);
  case Tree::Mod:
    return a - b * fdiv(a, b);
  case Tree::CDiv:
    return -fdiv(-a, b);
  case Tree::Min:
    return std::min(a, b);
  default:
    return std::max(a, b);
  }
}

/// Builds the Sym; `mirror` swaps commutative operands and rewrites a - b.
Sym build(const Tree &t, bool mirror) {
  switch (t.op) {
  case Tree::Sym_:
    return Sym::symbol(t.name);
  case Tree::Const:
    return Sym(t.value);
  default:
    break;
  }
  Sym a = build(*t.a, mirror), b = build(*t.b, mirror);
  switch (t.op) {
  case Tree::Add:
    return mirror ? b + a : a + b;
  case Tree::Sub:
    return mirror ? Sym(-1) * b + a : a - b;
  case Tree::Mul:
    return mirror ? b * a : a * b;
  case Tree::FDiv:
    return Sym::floordiv(a, b);
  case Tree::Mod:
    return Sym::mod(a, b);
  case Tree::CDiv:
    return Sym::cdiv(a, b);
  case Tree::Min:
    return mirror ? Sym::min(b, a) : Sym::min(a, b);
  default:
    return mirror ? Sym::max(b, a) : Sym::max(a, b);
  }
}

/// Random values satisfying: M, N >= 1; 0 <= i <= M - 1; j <= N; M % 4 == 0.
std::map<std::string, int64_t> randEnv(std::mt19937 &rng) {
  std::map<std::string, int64_t> v;
  v["M"] = 4 * (1 + static_cast<int64_t>(rng() % 6));
  v["N"] = 1 + static_cast<int64_t>(rng() % 20);
  v["i"] = static_cast<int64_t>(rng() % static_cast<uint64_t>(v["M"]));
  v["j"] = v["N"] - static_cast<int64_t>(rng() % 10);
  return v;
}
} // namespace

TEST_CASE("symbolic: randomized eval, normal form and prover soundness") {
  std::mt19937 rng(12345);
  Facts f = dims();
  f.add_bounds("i", Sym(0), M - 1);
  f.add_le(Sym::symbol("j"), N);
  f.add_divisible(M, 4);
  int proven = 0, bounded = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    TreeP ta = randTree(rng, 3), tb = randTree(rng, 2);
    Sym a = build(*ta, false), b = build(*tb, false);
    REQUIRE(a == build(*ta, true));
    if (iter % 3 == 0) // make some pairs provable
      b = a - static_cast<int64_t>(rng() % 3);
    bool ge = f.prove_ge(a, b);
    proven += ge;
    auto lo = f.lower_bound(a), hi = f.upper_bound(a);
    bounded += lo.has_value() + hi.has_value();
    for (int s = 0; s < 40; ++s) {
      auto v = randEnv(rng);
      auto ea = a.eval(env(v)), eb = b.eval(env(v));
      REQUIRE(ea.has_value());
      REQUIRE(eb.has_value());
      INFO("a = ", a.str(), ", b = ", b.str());
      CHECK(*ea == naive(*ta, v));
      if (iter % 3 != 0)
        CHECK(*eb == naive(*tb, v));
      if (ge)
        CHECK(*ea >= *eb);
      if (f.divisible(a, 4))
        CHECK(*ea % 4 == 0);
      if (lo) {
        auto el = lo->eval(env(v));
        if (el)
          CHECK(*el <= *ea);
      }
      if (hi) {
        auto eh = hi->eval(env(v));
        if (eh)
          CHECK(*eh >= *ea);
      }
    }
  }
  CHECK(proven > 1000);
  CHECK(bounded > 500);
}

TEST_CASE("symbolic: randomized soundness of clamps, rings and exact division by a dim") {
  // Index expressions over a task index j in 0 .. N and dims N, T (with the
  // facts N >= 1, T >= 1, mod(N, T) == 0): every goal `e >= 0` or
  // `N - 1 >= e` the prover accepts must hold for every N, T, j tried.
  std::mt19937 rng(4242);
  const Sym j = Sym::symbol("j"), T = Sym::symbol("T");
  Facts f = dims();
  f.add_bounds("T", Sym(1), std::nullopt);
  f.add_bounds("j", Sym(0), N - 1);
  f.add_le(Sym::mod(N, T), 0);
  f.add_le(0, Sym::mod(N, T));
  std::function<Sym(int)> gen = [&](int depth) -> Sym {
    switch (depth == 0 ? rng() % 4 : rng() % 9) {
    case 0:
      return j;
    case 1:
      return N;
    case 2:
      return T;
    case 3:
      return Sym(static_cast<int64_t>(rng() % 5) - 2);
    case 4:
      return gen(depth - 1) + gen(depth - 1);
    case 5:
      return gen(depth - 1) - gen(depth - 1);
    case 6:
      return rng() % 2 ? Sym::max(gen(depth - 1), gen(depth - 1))
                       : Sym::min(gen(depth - 1), gen(depth - 1));
    case 7:
      return Sym::mod(gen(depth - 1), rng() % 2 ? N : T);
    default:
      return T * Sym::floordiv(gen(depth - 1), T);
    }
  };
  int proven = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    Sym e = gen(3);
    bool lo = f.prove_ge(e, 0), hi = f.prove_ge(N - 1, e);
    proven += lo + hi;
    if (!lo && !hi)
      continue;
    INFO("e = " << e.str());
    for (int64_t t = 1; t <= 4; ++t)
      for (int64_t n = t; n <= 12; n += t) // N % T == 0
        for (int64_t jv = 0; jv < n; ++jv) {
          auto v = e.eval(env({{"N", n}, {"T", t}, {"j", jv}}));
          REQUIRE(v.has_value());
          if (lo)
            CHECK(*v >= 0);
          if (hi)
            CHECK(*v <= n - 1);
        }
  }
  CHECK(proven > 500);
}
