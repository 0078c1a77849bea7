// End-to-end tests of the narrow, unsigned and packed integer types on sim
// against C references (grammar/REFERENCE.md "Narrow and unsigned integers",
// "Conversions" and "Packed 4-bit integers"): i8/u8/i16/u16/u32 tensors and
// tiles, arithmetic that wraps to the type's width, the logical `>>`, the
// unsigned `/ %`, comparisons and max/min of u32, `cast` between every
// numeric type (float to integer toward zero, saturating, NaN to 0; integer
// to integer wrapping), loads of packed i4/u4 tensors (low nibble first, odd
// offsets, masks, pad) and the std.quant dequant helpers.
#include "compile_run.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace etl {
namespace {
using testing::compile_and_run;

constexpr int64_t N = 128;

/// C's float -> integer conversion made total the way ETL defines it:
/// toward zero, saturating at the type's range, NaN -> 0.
template <typename T> T sat(float v) {
  if (std::isnan(v))
    return 0;
  double t = std::trunc(double(v));
  if (t <= double(std::numeric_limits<T>::min()))
    return std::numeric_limits<T>::min();
  if (t >= double(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  return T(t);
}

/// Floor division as ETL's integer `/` (zero divisor: 0).
int32_t floordiv(int32_t a, int32_t b) {
  if (b == 0)
    return 0;
  int32_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023;
  float v = exp == 0    ? std::ldexp(float(man), -24)
            : exp == 31 ? (man ? NAN : INFINITY)
                        : std::ldexp(float(man | 1024), int(exp) - 25);
  return sign ? -v : v;
}

/// A non-negative integer value rounded to half precision (nearest even;
/// inf from 65520 on).
float round_half(float u) {
  if (u == 0)
    return 0;
  float ulp = std::ldexp(1.0f, std::max(0, std::ilogb(u) - 10));
  float r = std::nearbyint(u / ulp) * ulp;
  return r >= 65520.0f ? INFINITY : r;
}

} // namespace

TEST_CASE("narrow and unsigned integers: wrap-around arithmetic, logical >>, unsigned / % "
          "and comparisons match C") {
  const char *src = R"(
const TN = 64;
kernel narrow<N: dim>(a: tensor<u8>[N], b: tensor<u8>[N], c: tensor<i8>[N], d: tensor<u16>[N],
                      e: tensor<u32>[N], f: tensor<i16>[N], yu8: tensor<u8>[7, N],
                      yi8: tensor<i8>[4, N], yu16: tensor<u16>[2, N], yu32: tensor<u32>[6, N],
                      yi32: tensor<i32>[5, N], yi16: tensor<i16>[N],
                      r: tensor<u32>[2, N / 64], su8: tensor<u8>[N / 64]) where N % 64 == 0 {
  task t[i in 0 .. N / TN] {
    let x = load(a[i * TN .. +TN]);
    let z = load(b[i * TN .. +TN]);
    let s = load(c[i * TN .. +TN]);
    let h = load(d[i * TN .. +TN]);
    let w = load(e[i * TN .. +TN]);
    let g = load(f[i * TN .. +TN]);
    store(yu8[0, i * TN .. +TN], x + z);
    store(yu8[1, i * TN .. +TN], x - z);
    store(yu8[2, i * TN .. +TN], x * z);
    store(yu8[3, i * TN .. +TN], x >> 3);
    store(yu8[4, i * TN .. +TN], x / z);
    store(yu8[5, i * TN .. +TN], x << 5 | ~z);
    store(yu8[6, i * TN .. +TN], x % 7 + 300);
    store(yi8[0, i * TN .. +TN], s >> 2);
    store(yi8[1, i * TN .. +TN], s + s);
    store(yi8[2, i * TN .. +TN], -s);
    store(yi8[3, i * TN .. +TN], s / 3);
    store(yu16[0, i * TN .. +TN], h * h);
    store(yu16[1, i * TN .. +TN], h >> 9 ^ h);
    store(yu32[0, i * TN .. +TN], w >> 7);
    store(yu32[1, i * TN .. +TN], w / 10 + w % 1000);
    store(yu32[2, i * TN .. +TN], select(w > 3000000000, w, 7));
    store(yu32[3, i * TN .. +TN], w + 4294967295);
    store(yu32[4, i * TN .. +TN], cast<u32>(s));
    store(yu32[5, i * TN .. +TN], max(w, cast<u32>(x) << 24));
    store(yi32[0, i * TN .. +TN], cast<i32>(x) + cast<i32>(s));
    store(yi32[1, i * TN .. +TN], cast<i32>(w > 2147483648) + cast<i32>(x < z) * 2);
    store(yi32[2, i * TN .. +TN], popc(s) + popc(x) * 100);
    store(yi32[3, i * TN .. +TN], cast<i32>(h) - cast<i32>(g));
    store(yi32[4, i * TN .. +TN], cast<i32>(w));
    store(yi16[i * TN .. +TN], g * 3);
    store(r[0, i], max(w, axis = 0));
    store(r[1, i], min(w, axis = 0));
    store(su8[i], sum(x, axis = 0));
  }
}
)";
  std::vector<uint8_t> a(N), b(N), yu8(7 * N, 1);
  std::vector<int8_t> c(N), yi8(4 * N, 1);
  std::vector<uint16_t> d(N), yu16(2 * N, 1);
  std::vector<uint32_t> e(N), yu32(6 * N, 1), r(2 * N / 64, 1);
  std::vector<int16_t> f(N), yi16(N, 1);
  std::vector<int32_t> yi32(5 * N, 1);
  std::vector<uint8_t> su8(N / 64, 1);
  const uint32_t wedge[] = {0, 1, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu, 3000000001u, 2999999999u};
  for (int64_t k = 0; k < N; ++k) {
    uint32_t h = uint32_t(k) * 2654435761u;
    a[k] = uint8_t(k < 4 ? (uint8_t[]){0, 255, 128, 1}[k] : h >> 24);
    b[k] = uint8_t(k % 9 == 0 ? 0 : h >> 16);
    c[k] = int8_t(k < 4 ? (int8_t[]){-128, 127, -1, 0}[k] : int8_t(h >> 8));
    d[k] = uint16_t(k == 0 ? 65535 : h >> 4);
    e[k] = k < 7 ? wedge[k] : h;
    f[k] = int16_t(k == 0 ? -32768 : int16_t(h >> 12));
  }
  std::string err = compile_and_run(src, "quant_narrow", {{"N", N}},
                                    {{"a", a.data(), ETL_U8, {N}},
                                     {"b", b.data(), ETL_U8, {N}},
                                     {"c", c.data(), ETL_I8, {N}},
                                     {"d", d.data(), ETL_U16, {N}},
                                     {"e", e.data(), ETL_U32, {N}},
                                     {"f", f.data(), ETL_I16, {N}},
                                     {"yu8", yu8.data(), ETL_U8, {7, N}},
                                     {"yi8", yi8.data(), ETL_I8, {4, N}},
                                     {"yu16", yu16.data(), ETL_U16, {2, N}},
                                     {"yu32", yu32.data(), ETL_U32, {6, N}},
                                     {"yi32", yi32.data(), ETL_I32, {5, N}},
                                     {"yi16", yi16.data(), ETL_I16, {N}},
                                     {"r", r.data(), ETL_U32, {2, N / 64}},
                                     {"su8", su8.data(), ETL_U8, {N / 64}}});
  REQUIRE_MESSAGE(err.empty(), err);
  for (int64_t k = 0; k < N; ++k) {
    uint8_t x = a[k], z = b[k];
    int8_t s = c[k];
    uint16_t h = d[k];
    uint32_t w = e[k];
    int16_t g = f[k];
    INFO("k=" << k << " x=" << int(x) << " z=" << int(z) << " s=" << int(s) << " h=" << h
              << " w=" << w << " g=" << g);
    CHECK(yu8[0 * N + k] == uint8_t(x + z));
    CHECK(yu8[1 * N + k] == uint8_t(x - z));
    CHECK(yu8[2 * N + k] == uint8_t(x * z));
    CHECK(yu8[3 * N + k] == uint8_t(x >> 3));
    CHECK(yu8[4 * N + k] == uint8_t(z ? x / z : 0));
    CHECK(yu8[5 * N + k] == uint8_t((x << 5) | uint8_t(~z)));
    CHECK(yu8[6 * N + k] == uint8_t(x % 7 + 300));
    CHECK(yi8[0 * N + k] == int8_t(s >> 2));
    CHECK(yi8[1 * N + k] == int8_t(s + s));
    CHECK(yi8[2 * N + k] == int8_t(-s));
    CHECK(yi8[3 * N + k] == int8_t(floordiv(s, 3)));
    CHECK(yu16[0 * N + k] == uint16_t(uint32_t(h) * h));
    CHECK(yu16[1 * N + k] == uint16_t((h >> 9) ^ h));
    CHECK(yu32[0 * N + k] == w >> 7);
    CHECK(yu32[1 * N + k] == w / 10 + w % 1000);
    CHECK(yu32[2 * N + k] == (w > 3000000000u ? w : 7u));
    CHECK(yu32[3 * N + k] == w + 4294967295u);
    CHECK(yu32[4 * N + k] == uint32_t(int32_t(s)));
    CHECK(yu32[5 * N + k] == std::max(w, uint32_t(x) << 24));
    CHECK(yi32[0 * N + k] == int32_t(x) + int32_t(s));
    CHECK(yi32[1 * N + k] == int32_t(w > 2147483648u) + int32_t(x < z) * 2);
    CHECK(yi32[2 * N + k] == __builtin_popcount(uint8_t(s)) + __builtin_popcount(x) * 100);
    CHECK(yi32[3 * N + k] == int32_t(h) - int32_t(g));
    CHECK(yi32[4 * N + k] == int32_t(w));
    CHECK(yi16[k] == int16_t(g * 3));
  }
  for (int64_t i = 0; i < N / 64; ++i) {
    uint32_t mx = 0, mn = 0xFFFFFFFFu;
    uint8_t sm = 0;
    for (int64_t k = i * 64; k < i * 64 + 64; ++k) {
      mx = std::max(mx, e[k]);
      mn = std::min(mn, e[k]);
      sm = uint8_t(sm + a[k]);
    }
    CHECK(r[0 * (N / 64) + i] == mx);
    CHECK(r[1 * (N / 64) + i] == mn);
    CHECK(su8[i] == sm);
  }
}

TEST_CASE("bit operators on constant indices fold: consts, shapes, extents, tile operands") {
  const char *src = R"(
const G = 1 << 5;
const MASK = (1 << 8) - 1;
const HI = ~MASK & 65535;
kernel cb<N: dim>(x: tensor<i32>[N], y: tensor<i32>[N], z: tensor<i32>[G | 16])
    where N % 32 == 0 {
  task t[i in 0 .. N / G] {
    let v = load(x[i * G .. +(G >> 1) * 2]);
    store(y[i * G .. +G], (v & MASK) + (v & HI) + (3 ^ 1) + (-1 >> 70));
  }
  task u[j in 0 .. 1] {
    store(z[0 .. +(G | 16)], arange<i32>[G | 16] << 1);
  }
}
)";
  const int64_t n = 64;
  std::vector<int32_t> x(n), y(n, 7), z(48, 7);
  for (int64_t k = 0; k < n; ++k)
    x[size_t(k)] = int32_t(uint32_t(k) * 2654435761u);
  std::string err = compile_and_run(src, "quant_const_bits", {{"N", n}},
                                    {{"x", x.data(), ETL_I32, {n}},
                                     {"y", y.data(), ETL_I32, {n}},
                                     {"z", z.data(), ETL_I32, {48}}});
  REQUIRE_MESSAGE(err.empty(), err);
  for (int64_t k = 0; k < n; ++k) {
    int32_t v = x[size_t(k)];
    CHECK(y[size_t(k)] == (v & 255) + (v & 65280) + 2 - 1); // -1 >> (70 % 64) is -1
  }
  for (int32_t k = 0; k < 48; ++k)
    CHECK(z[size_t(k)] == k * 2);
}

TEST_CASE("cast: float to integer truncates and saturates (NaN -> 0), integer to float rounds") {
  const char *src = R"(
const TN = 32;
kernel casts<N: dim>(x: tensor<f32>[N], yi8: tensor<i8>[N], yu8: tensor<u8>[N],
                     yu16: tensor<u16>[N], yu32: tensor<u32>[N], yi32: tensor<i32>[N],
                     yi64: tensor<i64>[N], yf: tensor<f32>[3, N], yh: tensor<f16>[N])
    where N % 32 == 0 {
  task t[i in 0 .. N / TN] {
    let v = load(x[i * TN .. +TN]);
    store(yi8[i * TN .. +TN], cast<i8>(v));
    store(yu8[i * TN .. +TN], cast<u8>(v));
    store(yu16[i * TN .. +TN], cast<u16>(v));
    store(yu32[i * TN .. +TN], cast<u32>(v));
    store(yi32[i * TN .. +TN], cast<i32>(v));
    store(yi64[i * TN .. +TN], cast<i64>(v));
    store(yf[0, i * TN .. +TN], cast<f32>(cast<u32>(v)));
    store(yf[1, i * TN .. +TN], cast<f32>(cast<i8>(cast<i32>(v))));
    store(yf[2, i * TN .. +TN], cast<f32>(cast<u8>(cast<i16>(v))));
    store(yh[i * TN .. +TN], cast<f16>(cast<u16>(v)));
  }
}
)";
  std::vector<float> x(N);
  const float edge[] = {0.0f,      -0.0f,   0.9f,    -0.9f,   1.5f,         -1.5f,    127.9f,
                        128.0f,    -128.9f, -129.f,  255.5f,  256.f,        65535.5f, 65536.f,
                        3e9f,      5e9f,    -3e9f,   2.2e9f,  1e20f,        -1e20f,   INFINITY,
                        -INFINITY, NAN,     -300.7f, 70000.f, 4294967040.f, 33000.5f, -1e-30f};
  const size_t ne = sizeof edge / sizeof edge[0];
  for (int64_t k = 0; k < N; ++k)
    x[k] = size_t(k) < ne ? edge[k] : float(int64_t(k * 7919 % 1000) - 500) * 0.73f;
  std::vector<int8_t> yi8(N, 1);
  std::vector<uint8_t> yu8(N, 1);
  std::vector<uint16_t> yu16(N, 1), yh(N, 1);
  std::vector<uint32_t> yu32(N, 1);
  std::vector<int32_t> yi32(N, 1);
  std::vector<int64_t> yi64(N, 1);
  std::vector<float> yf(3 * N, 1);
  std::string err = compile_and_run(src, "quant_casts", {{"N", N}},
                                    {{"x", x.data(), ETL_F32, {N}},
                                     {"yi8", yi8.data(), ETL_I8, {N}},
                                     {"yu8", yu8.data(), ETL_U8, {N}},
                                     {"yu16", yu16.data(), ETL_U16, {N}},
                                     {"yu32", yu32.data(), ETL_U32, {N}},
                                     {"yi32", yi32.data(), ETL_I32, {N}},
                                     {"yi64", yi64.data(), ETL_I64, {N}},
                                     {"yf", yf.data(), ETL_F32, {3, N}},
                                     {"yh", yh.data(), ETL_F16, {N}}});
  REQUIRE_MESSAGE(err.empty(), err);
  for (int64_t k = 0; k < N; ++k) {
    float v = x[k];
    INFO("k=" << k << " v=" << v);
    CHECK(int(yi8[k]) == int(sat<int8_t>(v)));
    CHECK(int(yu8[k]) == int(sat<uint8_t>(v)));
    CHECK(yu16[k] == sat<uint16_t>(v));
    CHECK(yu32[k] == sat<uint32_t>(v));
    CHECK(yi32[k] == sat<int32_t>(v));
    CHECK(yi64[k] == sat<int64_t>(v));
    CHECK(yf[0 * N + k] == float(sat<uint32_t>(v)));
    CHECK(yf[1 * N + k] == float(int8_t(sat<int32_t>(v))));  // wraps
    CHECK(yf[2 * N + k] == float(uint8_t(sat<int16_t>(v)))); // wraps
    CHECK(half_to_float(yh[k]) == round_half(float(sat<uint16_t>(v))));
  }
}

TEST_CASE("packed i4/u4 tensors: loads give i8/u8 tiles, low nibble first, odd offsets, masks") {
  const char *src = R"(
const TK = 16;
kernel packed<N: dim, K: dim>(w: tensor<i4>[N, K], u: tensor<u4>[N, K], y: tensor<i32>[N, K],
                              z: tensor<i32>[N, K], o: tensor<i8>[N, 7], p: tensor<u8>[N, 5])
    where K % 16 == 0 {
  task t[r in 0 .. N, j in 0 .. K / TK] {
    store(y[r, j * TK .. +TK], cast<i32>(load(w[r, j * TK .. +TK])));
    store(z[r, j * TK .. +TK], cast<i32>(load(u[r, j * TK .. +TK])) * 2 + 1);
  }
  task odd[r in 0 .. N] {
    let m = arange<i32>[7] != 5;
    store(o[r, 0 .. +7], load(w[r, K - 5 .. +7], mask = m, pad = -9) + load(w[r, 1 .. +7]));
    store(p[r, 0 .. +5], load(u[r, 3 .. +5]) >> 1);
  }
}
)";
  const int64_t R = 3, K = 32;
  std::vector<uint8_t> w(R * K / 2), u(R * K / 2);
  std::vector<int32_t> y(R * K, 7), z(R * K, 7);
  std::vector<int8_t> o(R * 7, 7);
  std::vector<uint8_t> p(R * 5, 7);
  auto wi = [&](int64_t r, int64_t k) { // element (r, k) of w as a signed nibble
    uint8_t byte = w[size_t((r * K + k) / 2)];
    int v = ((r * K + k) % 2 ? byte >> 4 : byte) & 15;
    return v >= 8 ? v - 16 : v;
  };
  auto ui = [&](int64_t r, int64_t k) {
    uint8_t byte = u[size_t((r * K + k) / 2)];
    return ((r * K + k) % 2 ? byte >> 4 : byte) & 15;
  };
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = uint8_t(i * 37 + 11);
    u[i] = uint8_t(i * 91 + 200);
  }
  std::string err = compile_and_run(src, "quant_packed", {{"N", R}, {"K", K}},
                                    {{"w", w.data(), ETL_I4, {R, K}},
                                     {"u", u.data(), ETL_U4, {R, K}},
                                     {"y", y.data(), ETL_I32, {R, K}},
                                     {"z", z.data(), ETL_I32, {R, K}},
                                     {"o", o.data(), ETL_I8, {R, 7}},
                                     {"p", p.data(), ETL_U8, {R, 5}}});
  REQUIRE_MESSAGE(err.empty(), err);
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t k = 0; k < K; ++k) {
      INFO("r=" << r << " k=" << k);
      CHECK(y[size_t(r * K + k)] == wi(r, k));
      CHECK(z[size_t(r * K + k)] == ui(r, k) * 2 + 1);
    }
    for (int64_t j = 0; j < 7; ++j) {
      INFO("r=" << r << " j=" << j);
      int64_t col = K - 5 + j;
      int first = j == 5 ? -9 : col < K ? wi(r, col) : 0; // masked: pad; past the end: pad too
      if (j != 5 && col >= K)
        first = -9;
      CHECK(int(o[size_t(r * 7 + j)]) == first + wi(r, 1 + j));
    }
    for (int64_t j = 0; j < 5; ++j)
      CHECK(int(p[size_t(r * 5 + j)]) == ui(r, 3 + j) >> 1);
  }
}

TEST_CASE("std.quant: dequant and dequant_sym of an int4 tile with per-row f16 scales") {
  const char *src = R"(
import std.quant;
kernel dq<N: dim>(q: tensor<u4>[N, 128], qs: tensor<i4>[N, 128], s: tensor<f16>[N],
                  zp: tensor<f16>[N], y: tensor<f32>[2, N, 128]) where N % 4 == 0 {
  task t[i in 0 .. N / 4] {
    let sc = load(s[i * 4 .. +4]);
    store(y[0, i * 4 .. +4, 0 .. +128],
          dequant(load(q[i * 4 .. +4, 0 .. +128]), sc, load(zp[i * 4 .. +4])));
    store(y[1, i * 4 .. +4, 0 .. +128], dequant_sym(load(qs[i * 4 .. +4, 0 .. +128]), sc));
  }
}
)";
  const int64_t R = 8;
  std::vector<uint8_t> q(R * 64), qs(R * 64);
  std::vector<uint16_t> s(R), zp(R);
  std::vector<float> y(2 * R * 128, 7);
  const uint16_t scales[] = {0x3C00, 0x3800, 0x2C00, 0x4000}; // 1, 0.5, 1/16, 2
  const uint16_t zeros[] = {0x4800, 0x47C0, 0x0000, 0x4400};  // 8, 7.75, 0, 4
  for (int64_t r = 0; r < R; ++r) {
    s[size_t(r)] = scales[r % 4];
    zp[size_t(r)] = zeros[(r + 1) % 4];
  }
  for (size_t i = 0; i < q.size(); ++i) {
    q[i] = uint8_t(i * 53 + 7);
    qs[i] = uint8_t(i * 29 + 130);
  }
  std::string err = compile_and_run(src, "quant_stdlib", {{"N", R}},
                                    {{"q", q.data(), ETL_U4, {R, 128}},
                                     {"qs", qs.data(), ETL_I4, {R, 128}},
                                     {"s", s.data(), ETL_F16, {R}},
                                     {"zp", zp.data(), ETL_F16, {R}},
                                     {"y", y.data(), ETL_F32, {2, R, 128}}});
  REQUIRE_MESSAGE(err.empty(), err);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t k = 0; k < 128; ++k) {
      size_t e = size_t(r * 128 + k);
      int uq = (e % 2 ? q[e / 2] >> 4 : q[e / 2]) & 15;
      int sq = (e % 2 ? qs[e / 2] >> 4 : qs[e / 2]) & 15;
      sq = sq >= 8 ? sq - 16 : sq;
      float sc = half_to_float(s[size_t(r)]), z = half_to_float(zp[size_t(r)]);
      INFO("r=" << r << " k=" << k);
      CHECK(y[e] == (float(uq) - z) * sc);
      CHECK(y[size_t(R * 128) + e] == float(sq) * sc);
    }
}

} // namespace etl
