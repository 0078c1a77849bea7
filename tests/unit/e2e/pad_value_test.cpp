//===- tests/unit/e2e/pad_value_test.cpp - pad= of a computed scalar ------===//
//
// What this pins: a load's `pad =` that is no constant (a scalar parameter,
// an index expression of the task's variables, an element read of tensor
// data) is a scalar operand of the tile IR's load (TOp::pad_value): every
// element outside the tensor reads it, converted to the loaded type, on
// sim at 1 and 4 warps; elements inside read the tensor. A constant pad
// keeps its text (tile/build.cpp pad_constant).
//
//===----------------------------------------------------------------------===//
#include "compile_run.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

using namespace etl;
using namespace etl::testing;

namespace {

constexpr const char *kSrc = R"(
kernel k<N: dim>(x: tensor<f32>[N], v: tensor<i32>[N], fill: tensor<i32>[4],
                 y: tensor<f32>[64], w: tensor<i32>[64], z: tensor<i32>[64], s: f32) {
  task t[i in 0 .. 4] {
    store(y[i * 16 .. +16], load(x[i * 16 .. +16], pad = s + 0.5));
    store(w[i * 16 .. +16], load(v[i * 16 .. +16], pad = i * 100 - 7));
    store(z[i * 16 .. +16], load(v[i * 16 .. +16], pad = fill[i]));
  }
}
)";

} // namespace

TEST_CASE("pad= of a scalar parameter, an index expression and an element read") {
  const int64_t N = 37; // tasks 2 and 3 run past the end
  std::vector<float> x(static_cast<size_t>(N));
  std::vector<int32_t> v(static_cast<size_t>(N)), fill = {11, -12, 13, -14};
  for (int64_t k = 0; k < N; ++k) {
    x[size_t(k)] = float(k) * 0.25f;
    v[size_t(k)] = int32_t(k * 3 - 50);
  }
  const float s = -2.0f;
  for (unsigned threads : {32u, 128u}) {
    CAPTURE(threads);
    std::vector<float> y(64, 0.0f);
    std::vector<int32_t> w(64, 0), z(64, 0);
    RunOptions ro;
    ro.threads_per_cta = threads;
    std::string err = compile_and_run(kSrc, "pad_value", {{"N", N}},
                                      {{"x", x.data(), ETL_F32, {N}},
                                       {"v", v.data(), ETL_I32, {N}},
                                       {"fill", fill.data(), ETL_I32, {4}},
                                       {"y", y.data(), ETL_F32, {64}},
                                       {"w", w.data(), ETL_I32, {64}},
                                       {"z", z.data(), ETL_I32, {64}}},
                                      ro, {ScalarArg{"s", ETL_F32, &s}});
    REQUIRE_MESSAGE(err.empty(), err);
    int bad_y = 0, bad_w = 0, bad_z = 0;
    for (int64_t k = 0; k < 64; ++k) {
      const int64_t i = k / 16;
      const bool in = k < N;
      bad_y += y[size_t(k)] != (in ? x[size_t(k)] : s + 0.5f);
      bad_w += w[size_t(k)] != (in ? v[size_t(k)] : int32_t(i * 100 - 7));
      bad_z += z[size_t(k)] != (in ? v[size_t(k)] : fill[size_t(i)]);
    }
    CHECK(bad_y == 0);
    CHECK(bad_w == 0);
    CHECK(bad_z == 0);
  }
}
