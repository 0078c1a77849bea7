// A stack of layers (schedule/schedule.h): layer l's `mix` notifies
// X[l + 1, i], which layer l + 1's `norm` waits on, so the groups norm ->
// scale -> mix -> norm form a cycle along which the first task index only
// grows. Every group is static; the runtime deals the block layer by layer
// (plan_queue.c). The results match a sequential reference with two sim
// workers and with one (one CTA runs its queue in order: dealt group by
// group, layer 1's norm would wait forever on layer 0's mix behind it).
// Races inside the stack: a task-level miss the compiler sees is an error
// (schedule/coverage.h); one through data is the sim race check's.
#include "compile_run.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace etl {
using testing::compile_and_run;
using testing::RunOptions;

namespace {

// NEIGHBOUR: the tile norm reads beside its own; WAITS: what norm waits on.
std::string stack(const std::string &neighbour, const std::string &waits) {
  std::string s = R"(
const T = 32;
kernel stack<L: dim, N: dim>(x0: tensor<f32>[N], w: tensor<f32>[L, N], off: tensor<i32>[1],
                             y: tensor<f32>[N]) where N % T == 0 {
  buffer x: tensor<f32>[L + 1, N];
  buffer h: tensor<f32>[L, N];
  buffer s: tensor<f32>[L, N];
  event X[L + 1, N / T];
  event H[L, N / T];
  event S[L, N / T];
  task first[i in 0 .. N / T] notifies X[0, i] {
    store(x[0, i * T .. +T], load(x0[i * T .. +T]));
  }
  task mix[l in 0 .. L, i in 0 .. N / T] waits S[l, i] notifies X[l + 1, i] {
    store(x[l + 1, i * T .. +T], load(s[l, i * T .. +T]) - load(x[l, i * T .. +T]));
  }
  task norm[l in 0 .. L, i in 0 .. N / T] waits WAITS notifies H[l, i] {
    store(h[l, i * T .. +T], load(x[l, i * T .. +T]) + load(x[l, NEIGHBOUR * T .. +T]));
  }
  task scale[l in 0 .. L, i in 0 .. N / T] waits H[l, i] notifies S[l, i] {
    store(s[l, i * T .. +T], load(h[l, i * T .. +T]) * load(w[l, i * T .. +T]));
  }
  task last[i in 0 .. N / T] waits X[L, i] {
    store(y[i * T .. +T], load(x[L, i * T .. +T]));
  }
}
)";
  s.replace(s.find("NEIGHBOUR"), 9, neighbour);
  s.replace(s.find("WAITS"), 5, waits);
  return s;
}

const char *kNext = "((i + 1) % (N / T))";
const char *kWaits = "X[l, i], X[l, (i + 1) % (N / T)]";

struct Run {
  std::string msg;
  std::vector<float> y, want;
};

Run run(const std::string &src, const char *stem, RunOptions opts = {}) {
  const int64_t L = 4, T = 32, NT = 5, N = NT * T;
  std::vector<float> x0(static_cast<size_t>(N)), w(static_cast<size_t>(L * N)),
      y(static_cast<size_t>(N), -1.f);
  for (int64_t k = 0; k < N; ++k)
    x0[size_t(k)] = float(k % 7) - 3.f;
  for (int64_t k = 0; k < L * N; ++k)
    w[size_t(k)] = k % 3 == 0 ? 0.5f : k % 3 == 1 ? -1.f : 1.f;
  std::vector<int32_t> off = {1};
  Run r;
  r.msg = compile_and_run(src, stem, {{"L", L}, {"N", N}},
                          {{"x0", x0.data(), ETL_F32, {N}},
                           {"w", w.data(), ETL_F32, {L, N}},
                           {"off", off.data(), ETL_I32, {1}},
                           {"y", y.data(), ETL_F32, {N}}},
                          opts);
  r.y = y;
  // The sequential reference: one layer after another (exact: small
  // multiples of 1/16).
  std::vector<float> x = x0;
  for (int64_t l = 0; l < L; ++l) {
    std::vector<float> next(static_cast<size_t>(N));
    for (int64_t k = 0; k < N; ++k) {
      int64_t i = k / T, nb = ((i + 1) % NT) * T + k % T;
      float h = x[size_t(k)] + x[size_t(nb)];
      next[size_t(k)] = h * w[size_t(l * N + k)] - x[size_t(k)];
    }
    x = next;
  }
  r.want = x;
  return r;
}

} // namespace

TEST_CASE("layered stack: static groups dealt layer by layer match the sequential reference") {
  for (unsigned workers : {2u, 1u}) {
    CAPTURE(workers);
    RunOptions o;
    o.sim_workers = workers;
    Run r = run(stack(kNext, kWaits), workers == 1 ? "layers_one" : "layers_two", o);
    REQUIRE(r.msg == "");
    CHECK(r.y == r.want);
  }
  // The race check finds nothing unordered.
  RunOptions o;
  o.race_check = true;
  Run r = run(stack(kNext, kWaits), "layers_race_ok", o);
  CHECK(r.msg == "");
  CHECK(r.y == r.want);
}

TEST_CASE("layered stack: a wait missing inside the stack is a compile-time error") {
  // norm waits on its own tile only but reads the next one, which the
  // previous layer's mix (or first) writes.
  Run r = run(stack(kNext, "X[l, i]"), "layers_miss");
  INFO(r.msg);
  CHECK(r.msg.find("compile failed") != std::string::npos);
  CHECK(r.msg.find("error:") != std::string::npos);
  CHECK(r.msg.find("'norm' reads 'x'") != std::string::npos);
  CHECK(r.msg.find("X[l, i + 1]") != std::string::npos);
}

TEST_CASE("layered stack: a miss through data is the sim race check's") {
  // The neighbour's index reads `off` (1 at run time): the compiler cannot
  // enumerate it, the sim sees norm read what no chain of events ordered.
  RunOptions o;
  o.race_check = true;
  Run r = run(stack("((i + off[0]) % (N / T))", "X[l, i]"), "layers_race", o);
  INFO(r.msg);
  CHECK(r.msg.find("ETL_ERROR_RACE") != std::string::npos);
  CHECK(r.msg.find("of 'x'") != std::string::npos);
  CHECK(r.msg.find(" before norm[") != std::string::npos);
}

} // namespace etl
