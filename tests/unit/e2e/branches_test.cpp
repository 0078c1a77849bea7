// End-to-end tests of uniform branches (`if` / `else if` / `else` on
// per-task scalar conditions) and `for` ranges that start above 0 (or are
// empty), compiled for sim and checked against C++ references; a branch
// whose body needs a hazard barrier (a store, then a load that gives the
// elements to other threads) runs with the sim's race check.
#include "compile_run.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace etl {
namespace {
using testing::Bind;
using testing::compile_and_run;
using testing::RunOptions;
using testing::ScalarArg;

constexpr int64_t N = 128; // 8 tasks of 16

const char *kBranches = R"(
kernel br<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N], n: i32) where N % 16 == 0 {
  task t[i in 0 .. N / 16] {
    var a = load(x[i * 16 .. +16]);
    if i == 0 {
      a = a * 2.0;
    } else if i < n {
      let b = load(x[(i - 1) * 16 .. +16]);
      a += b;
    } else if i % 2 == 1 && i + 1 < N / 16 {
      a = a * 0.0 - 1.0;
    } else {
      store(y[i * 16 .. +16], a * 3.0);
      a = load(y[i * 16 .. +16]) + 0.5;
    }
    for k in 1 .. 4 {
      a += 10.0 * k;
    }
    for k in i + 1 .. i + 1 {
      a += 1000.0;
    }
    for k in 5 .. 2 {
      a += 1000.0;
    }
    for k in 2 .. i step 3 {
      a += load(x[k * 16 .. +16]);
    }
    store(y[i * 16 .. +16], a);
  }
}
)";

float reference(const std::vector<float> &x, int64_t i, int64_t e, int32_t n) {
  int64_t tasks = N / 16;
  float a = x[size_t(i * 16 + e)];
  if (i == 0)
    a = a * 2.0f;
  else if (i < n)
    a += x[size_t((i - 1) * 16 + e)];
  else if (i % 2 == 1 && i + 1 < tasks)
    a = a * 0.0f - 1.0f;
  else
    a = a * 3.0f + 0.5f;
  for (int64_t k = 1; k < 4; ++k)
    a += 10.0f * float(k);
  for (int64_t k = 2; k < i; k += 3)
    a += x[size_t(k * 16 + e)];
  return a;
}

} // namespace

TEST_CASE("branches: if / else if / else on task indices and a scalar, for from a nonzero start") {
  for (int32_t n : {0, 3, 100}) {
    INFO("n = " << n);
    std::vector<float> x(N), y(N, -7.0f);
    for (int64_t k = 0; k < N; ++k)
      x[size_t(k)] = float(k % 23) * 0.5f - 4.0f;
    std::string err =
        compile_and_run(kBranches, "branches_" + std::to_string(n), {{"N", N}},
                        {{"x", x.data(), ETL_F32, {N}}, {"y", y.data(), ETL_F32, {N}}},
                        RunOptions{}, {ScalarArg{"n", ETL_I32, &n}});
    REQUIRE_MESSAGE(err.empty(), err);
    for (int64_t k = 0; k < N; ++k) {
      INFO("element " << k);
      CHECK(y[size_t(k)] == doctest::Approx(reference(x, k / 16, k % 16, n)));
    }
  }
}

TEST_CASE("branches: a hazard barrier inside a branch, under the sim's race check") {
  // The taken branch stores a tile and reads it back shifted by one element
  // (another thread's element): the barrier before the load is inside the
  // branch, and every thread of the CTA takes the same branch.
  const char *text = R"(
kernel k<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N]) where N % 16 == 0 {
  task t[i in 0 .. N / 16] {
    if i % 2 == 0 {
      store(y[i * 16 .. +16], load(x[i * 16 .. +16]) * 2.0);
      let s = load(y[i * 16 + 1 .. +15]);
      store(y[i * 16 .. +15], s + 1.0);
    } else {
      store(y[i * 16 .. +16], load(x[i * 16 .. +16]));
    }
  }
}
)";
  std::vector<float> x(N), y(N, 0.0f);
  for (int64_t k = 0; k < N; ++k)
    x[size_t(k)] = float(k);
  RunOptions run;
  run.race_check = true;
  std::string err =
      compile_and_run(text, "branches_hazard", {{"N", N}},
                      {{"x", x.data(), ETL_F32, {N}}, {"y", y.data(), ETL_F32, {N}}}, run);
  REQUIRE_MESSAGE(err.empty(), err);
  for (int64_t k = 0; k < N; ++k) {
    INFO("element " << k);
    int64_t i = k / 16, e = k % 16;
    float want = i % 2    ? x[size_t(k)]
                 : e < 15 ? 2.0f * x[size_t(k + 1)] + 1.0f
                          : 2.0f * x[size_t(k)];
    CHECK(y[size_t(k)] == want);
  }
}

TEST_CASE("branches: an if inside a fn is inlined with both branches") {
  const char *text = R"(
fn shifted(t, i, first) {
  var r = t;
  if i == first {
    r = t * 10.0;
  } else if i > first {
    r = t + 1.0;
  } else {
    r = t - 1.0;
  }
  return r;
}

kernel k<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N]) where N % 16 == 0 {
  task t[i in 0 .. N / 16] {
    store(y[i * 16 .. +16], shifted(load(x[i * 16 .. +16]), i, 2));
  }
}
)";
  std::vector<float> x(N), y(N, 0.0f);
  for (int64_t k = 0; k < N; ++k)
    x[size_t(k)] = float(k) * 0.25f;
  std::string err = compile_and_run(text, "branches_fn", {{"N", N}},
                                    {{"x", x.data(), ETL_F32, {N}}, {"y", y.data(), ETL_F32, {N}}});
  REQUIRE_MESSAGE(err.empty(), err);
  for (int64_t k = 0; k < N; ++k) {
    INFO("element " << k);
    int64_t i = k / 16;
    float v = x[size_t(k)];
    CHECK(y[size_t(k)] == (i == 2 ? v * 10.0f : i > 2 ? v + 1.0f : v - 1.0f));
  }
}

} // namespace etl
