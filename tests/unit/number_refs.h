//===- tests/unit/number_refs.h - Reference roundings the tests share -----===//
//
// What the language's narrow float formats hold, computed the slow, plain
// way, for tests to compare the compiler's bits against: the tf32 rounding
// of cvt.rna.tf32.f32, and the OCP FP8 formats (E4M3, E5M2) by value and
// by a nearest-code search.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cmath>
#include <cstdint>
#include <cstddef>
#include <cstring>

namespace etl::testing {

/// The bits of `f`.
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

/// tf32 by arithmetic: 11 significant bits, ties away from zero
/// (cvt.rna's rounding).
inline float tf32_ref(float x) {
  if (x == 0 || !std::isfinite(x))
    return x;
  int e = 0;
  double m = std::frexp(double(x), &e); // |m| in [0.5, 1)
  return float(std::ldexp(std::round(std::ldexp(m, 11)), e - 11));
}

/// Fractions that are not tf32 values (most need more than 11 bits), a
/// different sequence per `salt`.
inline float frac_not_tf32(size_t i, int salt) {
  return float(int((i * 2654435761u + unsigned(salt) * 40503u) % 20011u) - 10005) / 1237.0f;
}

/// The value of FP8 code `c` (OCP FP8: E4M3 bias 7, S.1111.111 NaN, no
/// infinities; E5M2 bias 15, IEEE-like).
inline double fp8_decode(uint8_t c, bool e4) {
  int M = e4 ? 3 : 2, bias = e4 ? 7 : 15;
  int e = (c & 0x7F) >> M, m = c & ((1 << M) - 1);
  double v;
  if (e4 && e == 15 && m == 7)
    return NAN;
  if (!e4 && e == 31)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = std::ldexp(double(m), 1 - bias - M);
  else
    v = std::ldexp(1.0 + double(m) / (1 << M), e - bias);
  return (c & 0x80) ? -v : v;
}

/// The FP8 code of `x` by search: the nearest finite code, ties to the even
/// code; saturating past the largest finite value (infinities too); NaN to
/// the canonical NaN (sign kept).
inline uint8_t fp8_encode(float x, bool e4) {
  uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x))
    return uint8_t(sign | (e4 ? 0x7F : 0x7E));
  double ax = std::fabs(double(x)), best_d = INFINITY;
  if (ax >= (e4 ? 448.0 : 57344.0))
    return uint8_t(sign | (e4 ? 0x7E : 0x7B));
  int best = 0;
  for (int c = 0; c < 128; ++c) {
    double v = fp8_decode(uint8_t(c), e4);
    if (std::isnan(v) || std::isinf(v))
      continue;
    double d = std::fabs(v - ax);
    if (d < best_d || (d == best_d && (c & 1) == 0)) {
      best_d = d;
      best = c;
    }
  }
  return uint8_t(sign | best);
}

} // namespace etl::testing
