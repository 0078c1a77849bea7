// End-to-end tests of the FP8 storage types f8e4m3 and f8e5m2 on sim against
// a C reference written independently of the compiler's arithmetic
// (grammar/REFERENCE.md "8-bit floats"): every one of the 256 codes of each
// type decodes to its value (NaN codes to NaN), f32 values encode to the
// nearest code with ties to even, saturating past the largest finite value
// (infinities included) and keeping NaN, and arithmetic on FP8 tiles rounds
// each result to the type.
#include "../number_refs.h"
#include "compile_run.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace etl {
namespace {
using testing::compile_and_run;
using testing::fp8_decode;
using testing::fp8_encode;


} // namespace

TEST_CASE("fp8: decode every code, encode f32 with ties to even and saturation, round f8 "
          "arithmetic") {
  const char *src = R"(
const TN = 64;
kernel fp8<N: dim>(c4: tensor<f8e4m3>[256], c5: tensor<f8e5m2>[256], d: tensor<f32>[2, 256],
                   x: tensor<f32>[N], y4: tensor<f8e4m3>[N], y5: tensor<f8e5m2>[N],
                   s4: tensor<f8e4m3>[N], s5: tensor<f8e5m2>[N]) where N % 64 == 0 {
  task dec[j in 0 .. 4] {
    store(d[0, j * TN .. +TN], cast<f32>(load(c4[j * TN .. +TN])));
    store(d[1, j * TN .. +TN], cast<f32>(load(c5[j * TN .. +TN])));
  }
  task enc[i in 0 .. N / TN] {
    let v = load(x[i * TN .. +TN]);
    store(y4[i * TN .. +TN], cast<f8e4m3>(v));
    store(y5[i * TN .. +TN], cast<f8e5m2>(v));
    let a = cast<f8e4m3>(v);
    store(s4[i * TN .. +TN], a + a * 0.5);
    let b = cast<f8e5m2>(v);
    store(s5[i * TN .. +TN], b * b);
  }
}
)";
  std::vector<uint8_t> c4(256), c5(256);
  for (int c = 0; c < 256; ++c)
    c4[size_t(c)] = c5[size_t(c)] = uint8_t(c);
  std::vector<float> d(512, 7);
  // ties (1.0625 is halfway between 1 and 1.125 in e4m3), subnormals, the
  // boundary values, overflow, infinities, NaN, and a spread of values
  std::vector<float> x = {
      0.0f,     -0.0f,        1.0f,          1.0625f,       1.1875f, -1.0625f,          448.0f,
      464.0f,   479.0f,       480.0f,        1e6f,          -1e6f,   INFINITY,          -INFINITY,
      NAN,      0.001953125f, 0.0009765625f, 0.0029296875f, 1e-7f,   57344.0f,          61439.0f,
      61440.0f, 65536.0f,     0.3f,          -2.75f,        3.0e-5f, 1.52587890625e-05f};
  const int64_t N = 256;
  while (int64_t(x.size()) < N)
    x.push_back(std::ldexp(float(int64_t(x.size() * 7919 % 2001) - 1000) / 1000.0f,
                           int(x.size() % 40) - 20));
  std::vector<uint8_t> y4(N, 1), y5(N, 1), s4(N, 1), s5(N, 1);
  std::string err = compile_and_run(src, "fp8", {{"N", N}},
                                    {{"c4", c4.data(), ETL_F8E4M3, {256}},
                                     {"c5", c5.data(), ETL_F8E5M2, {256}},
                                     {"d", d.data(), ETL_F32, {2, 256}},
                                     {"x", x.data(), ETL_F32, {N}},
                                     {"y4", y4.data(), ETL_F8E4M3, {N}},
                                     {"y5", y5.data(), ETL_F8E5M2, {N}},
                                     {"s4", s4.data(), ETL_F8E4M3, {N}},
                                     {"s5", s5.data(), ETL_F8E5M2, {N}}});
  REQUIRE_MESSAGE(err.empty(), err);
  for (int c = 0; c < 256; ++c) {
    INFO("code " << c);
    for (int t = 0; t < 2; ++t) {
      double want = fp8_decode(uint8_t(c), t == 0);
      float got = d[size_t(t * 256 + c)];
      if (std::isnan(want))
        CHECK(std::isnan(got));
      else
        CHECK(double(got) == want);
    }
  }
  for (int64_t k = 0; k < N; ++k) {
    float v = x[size_t(k)];
    INFO("k=" << k << " x=" << v);
    CHECK(int(y4[size_t(k)]) == int(fp8_encode(v, true)));
    CHECK(int(y5[size_t(k)]) == int(fp8_encode(v, false)));
    // a + a * 0.5 in f8e4m3: a * 0.5 rounded, then the sum rounded
    float a = float(fp8_decode(fp8_encode(v, true), true));
    float h = float(fp8_decode(fp8_encode(a * 0.5f, true), true));
    CHECK(int(s4[size_t(k)]) == int(fp8_encode(a + h, true)));
    float b = float(fp8_decode(fp8_encode(v, false), false));
    CHECK(int(s5[size_t(k)]) == int(fp8_encode(b * b, false)));
  }
}

} // namespace etl
