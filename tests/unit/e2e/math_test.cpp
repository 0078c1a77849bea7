// End-to-end tests of the float math builtins (sin cos tanh erf pow floor
// ceil round, with exp log sqrt rsqrt) and of min/max's NaN rule on sim,
// against C's double-precision libm: each function's largest error in ulps
// of the f32 result is asserted and printed (grammar/REFERENCE.md, "Math",
// quotes these numbers). Also the clamped and ring event indices of issue
// 15 item 7 (`E[max(j - 1, 0)]`, `E[min(j + 1, N - 1)]`, `E[(j + 1) % N]`)
// compiled and run.
#include "compile_run.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace etl {
namespace {
using testing::compile_and_run;

/// |got - want| in units of the f32 spacing at want (0 when both are the
/// same NaN class or the same infinity).
double ulps(float got, double want) {
  if (std::isnan(want) || std::isnan(got))
    return std::isnan(want) && std::isnan(got) ? 0 : 1e30;
  if (std::isinf(want) || std::isinf(got))
    return double(got) == want ? 0 : 1e30;
  float w = float(want);
  double spacing = std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
  if (spacing == 0 || !std::isfinite(spacing))
    spacing = std::numeric_limits<float>::denorm_min();
  return std::fabs(double(got) - want) / spacing;
}

constexpr int64_t N = 4096;

/// x[k] spread over [lo, hi], with the exact endpoints.
std::vector<float> spread(double lo, double hi) {
  std::vector<float> x(N);
  for (int64_t k = 0; k < N; ++k)
    x[k] = float(lo + (hi - lo) * double(k) / double(N - 1));
  return x;
}

} // namespace

TEST_CASE("math: sin cos tanh erf exp log sqrt rsqrt floor ceil round pow on sim, in ulps") {
  const char *src = R"(
const TN = 64;
kernel math<N: dim>(x: tensor<f32>[N], p: tensor<f32>[N], y: tensor<f32>[12, N])
  where N % 64 == 0 {
  task t[i in 0 .. N / TN] {
    let a = load(x[i * TN .. +TN]);
    let e = load(p[i * TN .. +TN]);
    store(y[0, i * TN .. +TN], sin(a));
    store(y[1, i * TN .. +TN], cos(a));
    store(y[2, i * TN .. +TN], tanh(a));
    store(y[3, i * TN .. +TN], erf(a));
    store(y[4, i * TN .. +TN], exp(a));
    store(y[5, i * TN .. +TN], log(abs(a)));
    store(y[6, i * TN .. +TN], sqrt(abs(a)));
    store(y[7, i * TN .. +TN], rsqrt(abs(a)));
    store(y[8, i * TN .. +TN], floor(a * 3.0));
    store(y[9, i * TN .. +TN], ceil(a * 3.0));
    store(y[10, i * TN .. +TN], round(a * 3.0));
    store(y[11, i * TN .. +TN], pow(a, e));
  }
}
)";
  std::vector<float> x = spread(-9.5, 9.5), p(N), y(12 * N, -7.f);
  for (int64_t k = 0; k < N; ++k) // integer exponents (negative bases) and fractional ones
    p[k] = k % 3 == 0 ? float(k % 7) - 3.f : float(k % 11) * 0.37f - 1.5f;
  std::string err = compile_and_run(src, "math_ulps", {{"N", N}},
                                    {{"x", x.data(), ETL_F32, {N}},
                                     {"p", p.data(), ETL_F32, {N}},
                                     {"y", y.data(), ETL_F32, {12, N}}});
  REQUIRE_MESSAGE(err.empty(), err);
  struct Fn {
    const char *name;
    std::function<double(double, double)> ref;
    double max_ulps; ///< glibc's documented bounds for these are <= 2 ulp
  };
  const Fn fns[] = {
      {"sin", [](double a, double) { return std::sin(a); }, 1},
      {"cos", [](double a, double) { return std::cos(a); }, 1},
      {"tanh", [](double a, double) { return std::tanh(a); }, 2},
      {"erf", [](double a, double) { return std::erf(a); }, 2},
      {"exp", [](double a, double) { return std::exp(a); }, 1},
      {"log", [](double a, double) { return std::log(std::fabs(a)); }, 1},
      {"sqrt", [](double a, double) { return std::sqrt(std::fabs(a)); }, 0.5},
      // 1 / sqrt: two roundings
      {"rsqrt", [](double a, double) { return 1 / std::sqrt(std::fabs(a)); }, 1.5},
      {"floor", [](double a, double) { return std::floor(double(float(a * 3.0f))); }, 0},
      {"ceil", [](double a, double) { return std::ceil(double(float(a * 3.0f))); }, 0},
      {"round", [](double a, double) { return std::nearbyint(double(float(a * 3.0f))); }, 0},
      {"pow", [](double a, double e) { return std::pow(a, e); }, 2},
  };
  for (size_t f = 0; f < std::size(fns); ++f) {
    double worst = 0;
    int64_t at = 0;
    for (int64_t k = 0; k < N; ++k) {
      double u = ulps(y[f * N + k], fns[f].ref(double(x[k]), double(p[k])));
      if (u > worst)
        worst = u, at = k;
    }
    MESSAGE("sim " << std::string(fns[f].name) << ": max error " << worst << " ulp (x = " << x[at]
                   << ", p = " << p[at] << ")");
    CHECK_MESSAGE(worst <= fns[f].max_ulps, std::string(fns[f].name) << " at x = " << x[at]);
  }
}

TEST_CASE("math: special values, round ties to even, pow's sign rules, f16 results") {
  const char *src = R"(
kernel special(x: tensor<f32>[16], e: tensor<f32>[16], y: tensor<f32>[6, 16],
               h: tensor<f16>[16], yh: tensor<f16>[16]) {
  task t[i in 0 .. 1] {
    let a = load(x[0 .. +16]);
    store(y[0, 0 .. +16], round(a));
    store(y[1, 0 .. +16], pow(a, load(e[0 .. +16])));
    store(y[2, 0 .. +16], erf(a));
    store(y[3, 0 .. +16], tanh(a));
    store(y[4, 0 .. +16], max(a, load(e[0 .. +16])));
    store(y[5, 0 .. +16], min(load(e[0 .. +16]), a));
    store(yh[0 .. +16], sin(load(h[0 .. +16])));
  }
}
)";
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = INFINITY;
  std::vector<float> x = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.f, -2.f,  -8.f,
                          0.f,  nan,  inf,  -inf,  1.f,   3.f,  -3.5f, 2.f};
  std::vector<float> e = {2.f, 0.f, 0.5f, nan, 3.f, 3.f, 0.5f, 1.f / 3,
                          2.f, 0.f, -1.f, 3.f, nan, nan, 1.f,  -2.f};
  std::vector<float> y(6 * 16, -7.f);
  std::vector<uint16_t> h(16), yh(16);
  for (int k = 0; k < 16; ++k) {
    float v = float(k) * 0.25f - 2.f; // exact in f16
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    int32_t ex = int32_t((bits >> 23) & 0xff) - 127 + 15;
    h[k] = v == 0
               ? 0
               : uint16_t(((bits >> 16) & 0x8000u) | uint32_t(ex) << 10 | ((bits >> 13) & 0x3ffu));
  }
  std::string err = compile_and_run(src, "math_special", {},
                                    {{"x", x.data(), ETL_F32, {16}},
                                     {"e", e.data(), ETL_F32, {16}},
                                     {"y", y.data(), ETL_F32, {6, 16}},
                                     {"h", h.data(), ETL_F16, {16}},
                                     {"yh", yh.data(), ETL_F16, {16}}});
  REQUIRE_MESSAGE(err.empty(), err);
  auto same = [](float got, float want) {
    return (std::isnan(got) && std::isnan(want)) ||
           (got == want && std::signbit(got) == std::signbit(want));
  };
  for (int k = 0; k < 16; ++k) {
    INFO("k " << k << " x " << x[k] << " e " << e[k]);
    CHECK(
        same(y[0 * 16 + k], std::nearbyint(x[k]))); // ties to even: 0.5 -> 0, 2.5 -> 2, -0.5 -> -0
    CHECK(
        same(y[1 * 16 + k], std::pow(x[k], e[k]))); // C's rules: pow(-2, 3) = -8, pow(-2, .5) = NaN
    CHECK(same(y[2 * 16 + k], std::erf(x[k])));
    CHECK(same(y[3 * 16 + k], std::tanh(x[k])));
    // max/min: a NaN operand is ignored (IEEE maxNum/minNum); both NaN give NaN.
    CHECK(same(y[4 * 16 + k], std::fmax(x[k], e[k])));
    CHECK(same(y[5 * 16 + k], std::fmin(e[k], x[k])));
  }
  for (int k = 0; k < 16; ++k) { // f16 result: sin in f32, rounded once to half
    uint16_t b = yh[k];
    int ex = (b >> 10) & 0x1f;
    double mant = (b & 0x3ff) / 1024.0;
    double got = (b & 0x8000 ? -1 : 1) *
                 (ex == 0 ? mant * std::ldexp(1, -14) : (1 + mant) * std::ldexp(1, ex - 15));
    double want = std::sin(double(k) * 0.25 - 2);
    CHECK(std::fabs(got - want) <= std::ldexp(1, -11) * std::max(std::fabs(want), 0x1p-14));
  }
}

TEST_CASE("math: a RoPE table computed on the device matches the host's") {
  // cos/sin of p * theta^(-2j / D) for D = 2 * TN, as examples/rmsnorm_rope's
  // host fills its tables; the frequencies through exp (one rounding less
  // than pow(10000.0, ...), whose error grows with the exponent).
  const char *src = R"(
const TN = 64;
kernel rope_table<P: dim>(cos_t: tensor<f32>[P, TN], sin_t: tensor<f32>[P, TN]) {
  task t[p in 0 .. P] {
    let j = cast<f32>(arange<i32>[TN]);
    let inv_freq = exp(j * (-2.0 * 9.210340371976184 / 128.0)); // ln(10000) = 9.2103...
    let ang = cast<f32>(p) * inv_freq;
    store(cos_t[p, 0 .. +TN], cos(ang));
    store(sin_t[p, 0 .. +TN], sin(ang));
  }
}
)";
  const int64_t P = 300, TN = 64;
  std::vector<float> c(P * TN, -7.f), s(P * TN, -7.f);
  std::string err = compile_and_run(
      src, "rope_table", {{"P", P}},
      {{"cos_t", c.data(), ETL_F32, {P, TN}}, {"sin_t", s.data(), ETL_F32, {P, TN}}});
  REQUIRE_MESSAGE(err.empty(), err);
  double worst = 0;
  for (int64_t p = 0; p < P; ++p)
    for (int64_t j = 0; j < TN; ++j) {
      double theta = double(p) * std::pow(10000.0, -2.0 * double(j) / double(2 * TN));
      // The f32 angle itself carries p's relative rounding: allow |theta| * 2^-22.
      double tol = 1e-6 + std::fabs(theta) * 0x1p-22;
      double e = std::max(std::fabs(c[p * TN + j] - std::cos(theta)),
                          std::fabs(s[p * TN + j] - std::sin(theta)));
      worst = std::max(worst, e);
      CHECK_MESSAGE(e <= tol, "p " << p << " j " << j << " theta " << theta);
    }
  MESSAGE("RoPE table on sim: max abs error " << worst << " for positions < " << P);
}

TEST_CASE("prover: clamped and ring event indices compile and run (issue 15 item 7)") {
  // Each b[j] reads what a[j - 1] (clamped at 0), a[j + 1] (clamped at N - 1)
  // and a[(j + 1) % N] (a ring) wrote, waiting on exactly those elements.
  const char *src = R"(
kernel ring<N: dim>(x: tensor<f32>[N], t: tensor<f32>[N], y: tensor<f32>[N]) {
  event E[N];
  task a[j in 0 .. N] notifies E[j] {
    store(t[j .. +1], load(x[j .. +1]) * 2.0);
  }
  task b[j in 0 .. N] waits E[max(j - 1, 0)], E[min(j + 1, N - 1)], E[(j + 1) % N] {
    let l = load(t[max(j - 1, 0) .. +1]);
    let r = load(t[min(j + 1, N - 1) .. +1]);
    let w = load(t[(j + 1) % N .. +1]);
    store(y[j .. +1], l + 10.0 * r + 100.0 * w);
  }
}
)";
  for (int64_t n : {1, 2, 7}) {
    std::vector<float> x(static_cast<size_t>(n)), t(static_cast<size_t>(n), -1.f),
        y(static_cast<size_t>(n), -1.f);
    for (int64_t k = 0; k < n; ++k)
      x[k] = float(k + 1);
    std::string err = compile_and_run(src, "ring", {{"N", n}},
                                      {{"x", x.data(), ETL_F32, {n}},
                                       {"t", t.data(), ETL_F32, {n}},
                                       {"y", y.data(), ETL_F32, {n}}},
                                      {/*race_check=*/true, "", ""});
    REQUIRE_MESSAGE(err.empty(), err);
    for (int64_t j = 0; j < n; ++j) {
      float l = 2 * x[std::max<int64_t>(j - 1, 0)], r = 2 * x[std::min<int64_t>(j + 1, n - 1)],
            w = 2 * x[(j + 1) % n];
      CHECK(y[j] == l + 10 * r + 100 * w);
    }
  }
}

} // namespace etl
