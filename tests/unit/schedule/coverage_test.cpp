// Waits at the granularity of the data (schedule/coverage.h): what the
// task-level check accepts (clamped neighbour waits, chains through another
// group, `*`, many-to-one index maps, split-K joins) and what it finds
// (a neighbour missing from the waits, directly or along a chain, a write
// after a read), and that every example's front half stays free of
// warnings (split-K joins, dynamic groups, chains: the real programs). The golden tests under
// tests/diag/ (fail_wait_*, warn_wait_*) hold the full wording.
#include "../front_harness.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace etl {
namespace {

using Outcome = testing::FrontResult;

Outcome front(const std::string &src) { return testing::run_front(src, "coverage.etl"); }

/// A one-dimensional stencil over tiles of T: `consume` reads a row on each
/// side of its tile and waits on WAITS.
std::string stencil(const std::string &waits) {
  return R"(
const T = 16;
kernel stencil<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N]) {
  buffer a: tensor<f32>[N];
  event E[cdiv(N, T)];
  task produce[i in 0 .. cdiv(N, T)] notifies E[i] {
    store(a[i * T .. +T], load(x[i * T .. +T]) * 2.0);
  }
  task consume[j in 0 .. cdiv(N, T)] waits )" +
         waits + R"( {
    let l = load(a[j * T - 1 .. +T]);
    let r = load(a[j * T + 1 .. +T]);
    store(y[j * T .. +T], l + r);
  }
}
)";
}

} // namespace

TEST_CASE("a stencil waiting on its tile and both neighbours (clamped) compiles clean") {
  Outcome o = front(stencil("E[max(j - 1, 0)], E[j], E[min(j + 1, cdiv(N, T) - 1)]"));
  INFO(o.text);
  CHECK(o.ok);
  CHECK(o.errors == 0);
  CHECK(o.warnings == 0);
}

TEST_CASE("a stencil waiting on every tile (`*`) compiles clean") {
  Outcome o = front(stencil("E[*]"));
  INFO(o.text);
  CHECK(o.ok);
  CHECK(o.warnings == 0);
}

TEST_CASE("a stencil missing one neighbour is an error naming that wait") {
  Outcome o = front(stencil("E[max(j - 1, 0)], E[j]"));
  INFO(o.text);
  CHECK_FALSE(o.ok);
  CHECK(o.errors == 1);
  CHECK(o.text.find("'consume' reads 'a' where 'produce' writes it") != std::string::npos);
  CHECK(o.text.find("consume[0] reads a[16], which produce[1] writes") != std::string::npos);
  CHECK(o.text.find("`E[j + 1]`") != std::string::npos);
  CHECK(o.text.find("`E[j - 1]`") == std::string::npos);
}

TEST_CASE("a `where` lower bound scales the binding up rather than skipping the check") {
  std::string src = stencil("E[j]");
  src.replace(src.find(") {\n  buffer"), 3, ") where N >= 1000 {");
  Outcome o = front(src);
  INFO(o.text);
  CHECK_FALSE(o.ok);
  CHECK(o.text.find("with N = 1024:") != std::string::npos);
}

TEST_CASE("a chain through another group orders what it covers, and only that") {
  // `mid` task j waits on produce's tiles j - 1 .. j + 1; consume task j
  // waits only on mid task j, yet may read produce's neighbours: ordered.
  std::string src = R"(
const T = 16;
kernel chain<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N], z: tensor<f32>[N]) {
  buffer a: tensor<f32>[N];
  event E[cdiv(N, T)];
  event M[cdiv(N, T)];
  task produce[i in 0 .. cdiv(N, T)] notifies E[i] {
    store(a[i * T .. +T], load(x[i * T .. +T]));
  }
  task mid[j in 0 .. cdiv(N, T)] waits MIDWAITS notifies M[j] {
    store(z[j * T .. +T], load(a[j * T .. +T]));
  }
  task consume[j in 0 .. cdiv(N, T)] waits M[j] {
    store(y[j * T .. +T], load(a[j * T - 1 .. +T]) + load(a[j * T + 1 .. +T]));
  }
}
)";
  std::string good = src, bad = src;
  good.replace(good.find("MIDWAITS"), 8, "E[max(j - 1, 0)], E[j], E[min(j + 1, cdiv(N, T) - 1)]");
  bad.replace(bad.find("MIDWAITS"), 8, "E[j]");
  Outcome o = front(good);
  INFO(o.text);
  CHECK(o.ok);
  CHECK(o.warnings == 0);
  o = front(bad);
  CHECK_FALSE(o.ok);
  CHECK(o.text.find("'consume' reads 'a' where 'produce' writes it") != std::string::npos);
  CHECK(o.text.find("consume[1] waits only on M[1]") != std::string::npos);
}

TEST_CASE("many tasks notifying one element are all waited for") {
  // p[2j] and p[2j + 1] both notify E[j]; q[j] reads both tasks' rows.
  Outcome o = front(R"(
kernel pairs<M: dim>(x: tensor<f32>[M], y: tensor<f32>[M], z: tensor<f32>[M]) {
  event E[cdiv(M, 2)];
  task p[i in 0 .. M] notifies E[i / 2] {
    store(y[i .. +1], load(x[i .. +1]) * 2.0);
  }
  task q[j in 0 .. cdiv(M, 2)] waits E[j] {
    store(z[2 * j .. +2], load(y[2 * j .. +2]) + 1.0);
  }
}
)");
  INFO(o.text);
  CHECK(o.ok);
  CHECK(o.warnings == 0);
}

TEST_CASE("what reads data is left to the sim's race check") {
  // The wait index reads a tensor: which tasks it orders is known only at
  // run time, so no report either way.
  Outcome o = front(R"(
const T = 16;
kernel k<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N], w: tensor<i32>[1]) {
  buffer a: tensor<f32>[N];
  event E[cdiv(N, T)];
  task produce[i in 0 .. cdiv(N, T)] notifies E[i] {
    store(a[i * T .. +T], load(x[i * T .. +T]));
  }
  task consume[j in 0 .. cdiv(N, T)] waits E[w[0]] {
    store(y[j * T .. +T], load(a[j * T .. +T]));
  }
}
)");
  INFO(o.text);
  CHECK(o.errors == 0);
  CHECK(o.text.find("does not wait for every task") == std::string::npos);
}

TEST_CASE("every example passes the front half with no error and no warning") {
  namespace fs = std::filesystem;
  int seen = 0;
  for (const auto &dir : fs::directory_iterator(fs::path(ETL_SOURCE_DIR) / "examples")) {
    if (!dir.is_directory())
      continue;
    for (const auto &f : fs::directory_iterator(dir.path())) {
      if (f.path().extension() != ".etl")
        continue;
      std::ifstream in(f.path());
      std::stringstream text;
      text << in.rdbuf();
      Outcome o = testing::run_front(text.str(), f.path().filename().string());
      INFO(f.path().string() << ":\n" << o.text);
      CHECK(o.ok);
      CHECK(o.errors == 0);
      CHECK(o.warnings == 0);
      ++seen;
    }
  }
  CHECK(seen >= 16);
}

} // namespace etl
