//===- tests/unit/e2e/tile_port_test.cpp - Bodies ported to the tile IR ---===//
//
// What this pins (docs/ARCHITECTURE.md "Lowering the tile IR, family by
// family"): bodies of every op family compile (ETL_TILE_DEBUG's "lowering
// GROUP: tile IR"), and on sim every
// tensor ends with the bytes a reference computed here says, element by
// element (grammar/REFERENCE.md's rules; NaN equals any NaN, its payload is
// not specified):
//
//   math     sin cos tanh erf floor ceil round pow (f32, f16, bf16) and
//            popc (i32, i64): sim calls glibc's libm (target/sim.cpp), so
//            the reference calls the same functions on the same f32
//            arguments and rounds to f16/bf16 to nearest even after every
//            op; constants keep every bit (a float's 17 digits, an i64's
//            2^53 + 1).
//   atomics  add/max/min of f32, f16, bf16, i32, i64 into colliding bins
//            (exact sums, so every order gives the same bits), old values
//            of atomic_add/_max/_cas (each element hit once, so they are
//            the initial ones; 0 where the mask is off) from [64] and [16]
//            slices at 128 and 32 threads (copies in other warps: scratch;
//            in other lanes: shuffles, i64 in two halves) and of a rank-0
//            atomic; the gemv_atomic example's bodies take the tile IR path.
//   if       if / else if / else on task indices, a scalar parameter and a
//            loop variable, assigning tile and scalar vars, with a
//            cross-warp reduction, an element read bound by a `let`, a
//            store, a hazard
//            barrier and an atomic inside branches, in and around a `for`
//            (multiples of 1/8: every sum exact in any order);
//            tests/unit/target/branches.etl's body takes the tile IR path.
//   narrow   u8, i8, u16, i16, u32, packed i4/u4 and FP8 (e4m3, e5m2):
//            loads (vectors of words, and elements one by one past a
//            tensor's end with a wrapped pad), wrapping arithmetic, unsigned
//            shifts, floor division, comparisons, max/min, reductions,
//            argmax, argmin and cumsum, ~ - abs,
//            saturating casts, FP8 rounding, masked stores; with the `where`
//            fact that makes the accesses 128-bit vectors and with one that
//            allows pairs (a 16-bit word of two u8, a byte of two u4), at 128
//            and 32 threads;
//            the gemv_int4 example's bodies (u4 weights) take the tile IR
//            path.
//   shape    transposes of non-power-of-two f32 and f16 tiles and of a
//            [32, 32] one, stored (rows converted through scratch) and
//            reduced, at 128 and 32 threads; reshapes that move data
//            through scratch and one that renames registers; the [160, 150]
//            transpose of tests/unit/target/mma_hoist_budget.etl within
//            sm_86's shared-memory budget.
//
//===----------------------------------------------------------------------===//
#include "../number_refs.h"
#include "compile_run.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace etl {
namespace {
using testing::Bind;
using testing::compile_and_run;
using testing::compile_text_tile_debug;
using testing::ScalarArg;

/// FP8 code `c`'s value (every one is an f32).
float fp8_val(uint8_t c, bool e4) { return float(testing::fp8_decode(c, e4)); }

/// A tensor of a run: its name, type, shape and initial bytes; `out`: the
/// run writes it.
struct Buf {
  const char *name;
  etlDType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  bool out = false;
};

/// An output tensor of `bytes` per element, every byte `fill`.
Buf out(const char *name, etlDType t, std::vector<int64_t> shape, size_t bytes,
        uint8_t fill = 0xAB) {
  size_t n = bytes;
  for (int64_t s : shape)
    n *= size_t(s);
  return Buf{name, t, std::move(shape), std::vector<uint8_t>(n, fill), true};
}

template <class T> Buf buf(const char *name, etlDType t, const std::vector<T> &v) {
  Buf b{name, t, {int64_t(v.size())}, std::vector<uint8_t>(v.size() * sizeof(T))};
  std::memcpy(b.bytes.data(), v.data(), b.bytes.size());
  return b;
}

/// Runs `src` on sim from `bufs` (copied); returns the tensors' bytes after
/// the run.
std::vector<std::vector<uint8_t>> run(const std::string &src, const std::string &stem,
                                      const std::vector<std::pair<const char *, int64_t>> &dims,
                                      std::vector<Buf> bufs,
                                      const std::vector<ScalarArg> &scalars = {},
                                      unsigned threads = 128) {
  std::vector<Bind> binds;
  for (Buf &b : bufs)
    binds.push_back({b.name, b.bytes.data(), b.dtype, b.shape});
  testing::RunOptions o;
  o.threads_per_cta = threads;
  std::string err = compile_and_run(src, stem, dims, binds, o, scalars);
  INFO(err);
  CHECK(err.empty());
  std::vector<std::vector<uint8_t>> out;
  for (const Buf &b : bufs)
    out.push_back(b.bytes);
  return out;
}

size_t elem_bytes(etlDType t) {
  switch (t) {
  case ETL_I64:
    return 8;
  case ETL_F32:
  case ETL_I32:
  case ETL_U32:
    return 4;
  case ETL_F16:
  case ETL_BF16:
  case ETL_I16:
  case ETL_U16:
    return 2;
  default:
    return 1;
  }
}

/// Is the element of `t` at `p` a NaN?
bool is_nan(etlDType t, const uint8_t *p) {
  uint32_t u = 0;
  std::memcpy(&u, p, elem_bytes(t));
  switch (t) {
  case ETL_F32:
    return (u & 0x7FFFFFFFu) > 0x7F800000u;
  case ETL_F16:
    return (u & 0x7FFFu) > 0x7C00u;
  case ETL_BF16:
    return (u & 0x7FFFu) > 0x7F80u;
  case ETL_F8E4M3:
    return (u & 0x7Fu) == 0x7Fu;
  case ETL_F8E5M2:
    return (u & 0x7Fu) > 0x7Cu;
  default:
    return false;
  }
}

/// Every tensor of a run holds the bytes of `want`, element by element of
/// its type (a NaN equals any NaN: the payload is not specified); the
/// outputs were written (differ from their initial bytes).
void expect(const std::vector<Buf> &bufs, const std::vector<std::vector<uint8_t>> &got,
            const std::vector<std::vector<uint8_t>> &want) {
  REQUIRE(got.size() == bufs.size());
  REQUIRE(want.size() == bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) {
    std::string name = bufs[i].name;
    CAPTURE(name);
    if (bufs[i].out)
      CHECK(got[i] != bufs[i].bytes); // the run wrote it
    REQUIRE(got[i].size() == want[i].size());
    size_t w = elem_bytes(bufs[i].dtype), bad = 0, first = 0;
    std::string got_hex, want_hex;
    for (size_t e = 0; e * w < got[i].size(); ++e) {
      const uint8_t *g = got[i].data() + e * w, *x = want[i].data() + e * w;
      if (std::memcmp(g, x, w) == 0 || (is_nan(bufs[i].dtype, g) && is_nan(bufs[i].dtype, x)))
        continue;
      if (bad++ == 0) {
        first = e;
        uint64_t a = 0, b = 0;
        std::memcpy(&a, g, w);
        std::memcpy(&b, x, w);
        std::ostringstream os;
        os << std::hex << a;
        got_hex = os.str();
        os.str("");
        os << std::hex << b;
        want_hex = os.str();
      }
    }
    CAPTURE(first);
    CAPTURE(got_hex);
    CAPTURE(want_hex);
    CHECK(bad == 0);
  }
}

/// The initial bytes of `bufs`: the reference starts from them.
std::vector<std::vector<uint8_t>> initial(const std::vector<Buf> &bufs) {
  std::vector<std::vector<uint8_t>> v;
  for (const Buf &b : bufs)
    v.push_back(b.bytes);
  return v;
}

template <class T> T get(const std::vector<uint8_t> &v, size_t k) {
  T x;
  std::memcpy(&x, v.data() + k * sizeof(T), sizeof(T));
  return x;
}
template <class T> void put(std::vector<uint8_t> &v, size_t k, T x) {
  std::memcpy(v.data() + k * sizeof(T), &x, sizeof(T));
}

/// `v` rounded to f32 here, not fused into a following add (the host
/// compiler may contract a * b + c; sim rounds every op).
float rn(float v) {
  volatile float r = v;
  return r;
}

uint32_t f32_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}
float f32_of(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

/// f32 -> f16 bits, round to nearest even, overflow to infinity.
uint16_t f16_rne(float f) {
  uint32_t x = f32_bits(f), ax = x & 0x7FFFFFFFu;
  uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  if (ax > 0x7F800000u)
    return uint16_t(sign | 0x7E00u);
  if (ax >= 0x477FF000u) // 65520 and up (a tie with the odd 65504): infinity
    return uint16_t(sign | 0x7C00u);
  if (ax < 0x38800000u) // below 2^-14: a multiple of 2^-24 (scaling is exact)
    return uint16_t(sign | uint16_t(std::nearbyint(f32_of(ax) * 16777216.0f)));
  uint32_t r = (ax + 0x0FFFu + ((ax >> 13) & 1u)) >> 13;
  return uint16_t(sign | (r - (112u << 10)));
}
float f16_val(uint16_t h) {
  int e = (h >> 10) & 0x1F;
  float m = float(h & 0x3FF), v;
  if (e == 31)
    v = m != 0 ? NAN : INFINITY;
  else
    v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024.0f + m, e - 25);
  return (h & 0x8000) ? -v : v;
}
/// f32 -> bf16 bits, round to nearest even, a NaN stays a quiet NaN.
uint16_t bf16_rne(float f) {
  uint32_t x = f32_bits(f);
  if (std::isnan(f))
    return uint16_t((x >> 16) | 0x40);
  return uint16_t((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}
float bf16_val(uint16_t h) { return f32_of(uint32_t(h) << 16); }
float h16(float v) { return f16_val(f16_rne(v)); }   ///< v rounded to f16
float b16(float v) { return bf16_val(bf16_rne(v)); } ///< v rounded to bf16


/// cast<I>(v) of a float: toward zero, saturated to I's range, NaN -> 0.
template <class I> I sat(float v) {
  if (std::isnan(v))
    return 0;
  double t = std::trunc(double(v));
  double lo = double(std::numeric_limits<I>::min()), hi = double(std::numeric_limits<I>::max());
  return I(t < lo ? lo : t > hi ? hi : t);
}

/// ETL's integer `/` and `%` of signed operands: floor division, a modulo
/// with the divisor's sign (grammar/REFERENCE.md "Element types").
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a % b < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

/// ETL_TILE_DEBUG's lowering lines of `src` compiled for sm_90 PTX: one
/// "lowering GROUP: PATH" line per group.
std::string lowering_lines(const std::string &src, unsigned threads = 128) {
  CompileOptions o;
  o.targets = {"sm_90"};
  o.emit = "ptx";
  o.threads_per_cta = threads;
  std::string ptx, err, lines;
  int code = compile_text_tile_debug(src, o, "lowering ", ptx, err, lines);
  INFO(err);
  REQUIRE(code == 0);
  return lines;
}

/// Every group of `src` takes the tile IR path.
void all_tile_ir(const std::string &src, size_t groups, unsigned threads = 128) {
  std::string lines = lowering_lines(src, threads);
  INFO(lines);
  size_t n = 0, at = 0;
  while ((at = lines.find(": tile IR\n", at)) != std::string::npos)
    ++n, ++at;
  CHECK(n == groups);
  CHECK(lines.find(": AST") == std::string::npos);
}

/// The source of examples/NAME/NAME.etl.
std::string example(const char *name) {
  std::ifstream in(std::string(ETL_SOURCE_DIR) + "/examples/" + name + "/" + name + ".etl");
  std::stringstream ss;
  ss << in.rdbuf();
  REQUIRE(!ss.str().empty());
  return ss.str();
}

template <class T> std::vector<T> filled(int64_t n, T v) {
  return std::vector<T>(static_cast<size_t>(n), v);
}

std::vector<float> spread(int64_t n, double lo, double hi) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    x[size_t(k)] = float(lo + (hi - lo) * double(k) / double(n - 1));
  return x;
}

/// What the `nar` kernel of the narrow test leaves in its tensors `in` (of
/// N = `n` elements), by grammar/REFERENCE.md's rules: each op of a narrow
/// type wraps to it (here: in 32 bits, then cut), signed `/` and `%` floor,
/// unsigned ones and `>>` do not look at a sign, float -> integer casts
/// truncate and saturate, FP8 rounds to nearest even (saturating) after
/// every op; a load past N gives the pad (a's -1 as u8 255, g's 7, else 0),
/// which the reductions, argmax/argmin (first index on ties) and cumsums of
/// the last 512-element tile see; stores past N are dropped, and yu8 keeps
/// its bytes where ua == 17.
std::vector<std::vector<uint8_t>> narrow_reference(const std::vector<Buf> &in, size_t n) {
  const size_t T = 512;
  std::vector<std::vector<uint8_t>> want = initial(in);
  auto nib = [&](size_t buf, size_t k, bool sign) {
    int v = (in[buf].bytes[k / 2] >> (k % 2 ? 4 : 0)) & 15;
    return sign && v > 7 ? v - 16 : v;
  };
  for (size_t i = 0; i * T < n; ++i) {
    uint8_t s_ua = 0, s_up = 0, c_ua = 0;
    uint32_t max_uw = 0, c_uw = 0;
    int8_t min_sb = 0;
    int16_t max_sg = 0, c_sg = 0;
    int32_t arg_uw = 0, arg_sb = 0;
    for (size_t t = 0; t < T; ++t) {
      size_t k = i * T + t;
      bool live = k < n;
      uint8_t ua = live ? in[0].bytes[k] : 255;
      int8_t sb = live ? int8_t(in[1].bytes[k]) : 0;
      uint16_t uh = live ? get<uint16_t>(in[2].bytes, k) : 0;
      int16_t sg = live ? get<int16_t>(in[3].bytes, k) : 7;
      uint32_t uw = live ? get<uint32_t>(in[4].bytes, k) : 0;
      int8_t sq = int8_t(live ? nib(5, k, true) : 0);
      uint8_t up = uint8_t(live ? nib(6, k, false) : 0);
      float v = live ? get<float>(in[7].bytes, k) : 0.0f;
      float e4 = live ? fp8_val(in[8].bytes[k], true) : 0.0f;
      float e5 = live ? fp8_val(in[9].bytes[k], false) : 0.0f;
      // Reductions and scans over the whole tile, pads included.
      s_ua = uint8_t(s_ua + ua);
      s_up = uint8_t(s_up + up);
      if (t == 0 || uw > max_uw)
        max_uw = uw, arg_uw = int32_t(t);
      if (t == 0 || sb < min_sb)
        min_sb = sb, arg_sb = int32_t(t);
      max_sg = t == 0 ? sg : std::max(max_sg, sg);
      c_ua = uint8_t(c_ua + ua);
      c_sg = int16_t(c_sg + sg);
      c_uw = c_uw + uw;
      if (!live)
        continue;
      uint8_t y8 = uint8_t(uint8_t(uint8_t((ua >> 2) + uint8_t(sat<uint8_t>(v) * ua)) -
                                   uint8_t(~ua)) +
                           std::max<uint8_t>(ua, 200) / 3);
      if (ua != 17)
        want[10][k] = y8;
      int8_t n1 = int8_t(floor_div(sb, 3));
      n1 = int8_t(n1 + sat<int8_t>(v));
      n1 = int8_t(n1 - int8_t(-sb));
      n1 = int8_t(n1 + int8_t(sb < 0 ? -sb : sb));
      n1 = int8_t(n1 + int8_t(floor_mod(int8_t(sq * sb), 5)));
      want[11][k] = uint8_t(n1);
      put(want[12], k,
          uint16_t(uint16_t(uint16_t(uint32_t(uh) * uh) + (uh >> 3)) -
                   std::min<uint16_t>(uh, 40000)));
      put(want[13], k,
          int16_t(int16_t(int16_t(int16_t(sg * sg) - int16_t(uint32_t(sg) << 3)) +
                          int16_t(sg < 0 ? -sg : sg)) +
                  std::max<int16_t>(sg, -5)));
      put(want[14], k,
          uint32_t((uw > 3000000000u ? uw >> 3 : uw / 7) + uint32_t(uh) +
                   std::max<uint32_t>(uw, 4000000000u)));
      put(want[15], k, float(uw) + float(up) + float(sat<uint32_t>(v)) + e5);
      put(want[15], n + k,
          float(ua) * 0.5f + float(sb) + float(sq) * 0.25f + float(int8_t(int8_t(up) - sq)));
      float f4 = fp8_val(testing::fp8_encode(e4 * 0.5f, true), true);
      want[16][k] = testing::fp8_encode(f4 + fp8_val(testing::fp8_encode(v, true), true), true);
      float f5 = fp8_val(testing::fp8_encode(std::exp(e5), false), false);
      want[17][k] = testing::fp8_encode(f5 + fp8_val(testing::fp8_encode(v, false), false), false);
      put(want[19], k, int32_t(c_ua));
      put(want[19], n + k, int32_t(uint32_t(int32_t(c_sg)) + c_uw));
    }
    put(want[18], 0 * n + i, int32_t(s_ua));
    put(want[18], 1 * n + i, int32_t(max_uw));
    put(want[18], 2 * n + i, int32_t(min_sb));
    put(want[18], 3 * n + i, int32_t(s_up) + int32_t(max_sg));
    put(want[18], 4 * n + i, arg_uw + 1000 * arg_sb);
  }
  return want;
}

} // namespace

TEST_CASE("tile port: math builtins and popc take the tile IR path, bit for bit libm's") {
  const char *src = R"(
const TN = 64;
kernel math<N: dim>(x: tensor<f32>[N], p: tensor<f32>[N], h: tensor<f16>[N], g: tensor<bf16>[N],
                    k: tensor<i32>[N], w: tensor<i64>[N],
                    y: tensor<f32>[10, N], yh: tensor<f16>[3, N], yg: tensor<bf16>[2, N],
                    c: tensor<i32>[2, N]) where N % 64 == 0 {
  task t[i in 0 .. N / TN] {
    let a = load(x[i * TN .. +TN]);
    let e = load(p[i * TN .. +TN]);
    store(y[0, i * TN .. +TN], sin(a));
    store(y[1, i * TN .. +TN], cos(a));
    store(y[2, i * TN .. +TN], tanh(a));
    store(y[3, i * TN .. +TN], erf(a));
    store(y[4, i * TN .. +TN], floor(a) + ceil(a) * 0.5);
    store(y[5, i * TN .. +TN], round(a));
    store(y[6, i * TN .. +TN], pow(a, e));
    store(y[7, i * TN .. +TN], pow(abs(a), 0.5) + pow(a, 3.0));
    store(y[8, i * TN .. +TN], exp(a) + log(abs(a)) + sqrt(abs(a)) + rsqrt(abs(a) + 1.0));
    store(y[9, i * TN .. +TN], sin(a) * sin(a) + cos(a) * cos(a));
    let hv = load(h[i * TN .. +TN]);
    store(yh[0, i * TN .. +TN], erf(hv) + tanh(hv));
    store(yh[1, i * TN .. +TN], pow(hv, cast<f16>(e)) + floor(hv));
    store(yh[2, i * TN .. +TN], sin(hv) * cos(hv) + round(hv));
    let gv = load(g[i * TN .. +TN]);
    store(yg[0, i * TN .. +TN], erf(gv) + ceil(gv));
    store(yg[1, i * TN .. +TN], pow(abs(gv), cast<bf16>(e)) + tanh(gv));
    store(c[0, i * TN .. +TN], popc(load(k[i * TN .. +TN])));
    store(c[1, i * TN .. +TN], popc(load(w[i * TN .. +TN]) & 9007199254740993) +
                               popc(load(k[i * TN .. +TN]) * 3));
  }
}
)";
  all_tile_ir(src, 1);
  const int64_t N = 1024;
  std::vector<float> x = spread(N, -9.5, 9.5), p = spread(N, -3.0, 3.0);
  x[0] = 0.0f, x[1] = -0.0f, x[2] = 0.5f, x[3] = -2.5f, x[4] = INFINITY, x[5] = -INFINITY;
  x[6] = NAN, x[7] = 1.0f, p[7] = NAN, p[8] = 0.0f, x[9] = -2.0f, p[9] = 3.0f;
  std::mt19937 rng(28);
  std::vector<uint16_t> h(static_cast<size_t>(N)), g(static_cast<size_t>(N));
  std::vector<int32_t> k(static_cast<size_t>(N));
  std::vector<int64_t> w(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) {
    h[size_t(i)] = uint16_t(rng() & 0x7bffu) ^ uint16_t(i & 1 ? 0x8000u : 0); // finite
    g[size_t(i)] = testing::bf16_bits(x[size_t(i)] * 0.37f);
    k[size_t(i)] = int32_t(rng());
    w[size_t(i)] = int64_t(uint64_t(rng()) << 32 | rng());
  }
  std::vector<Buf> in{buf("x", ETL_F32, x),           buf("p", ETL_F32, p),
                      buf("h", ETL_F16, h),           buf("g", ETL_BF16, g),
                      buf("k", ETL_I32, k),           buf("w", ETL_I64, w),
                      out("y", ETL_F32, {10, N}, 4),  out("yh", ETL_F16, {3, N}, 2),
                      out("yg", ETL_BF16, {2, N}, 2), out("c", ETL_I32, {2, N}, 4)};
  // The reference: sim computes each builtin with libm on the f32 operand
  // (target/sim.cpp: sinf cosf tanhf erff powf expf logf, and sqrt, floor,
  // ceil and roundeven, which are exact or correctly rounded), every op
  // rounded to f32 (sim never fuses), and f16/bf16 results rounded to
  // nearest even after every op (grammar/REFERENCE.md "Element types").
  std::vector<std::vector<uint8_t>> want = initial(in);
  std::vector<uint8_t> &y = want[6], &yh = want[7], &yg = want[8], &c = want[9];
  const size_t n = size_t(N);
  for (size_t i = 0; i < n; ++i) {
    float a = x[i], e = p[i], aa = std::fabs(a);
    put(y, 0 * n + i, std::sin(a));
    put(y, 1 * n + i, std::cos(a));
    put(y, 2 * n + i, std::tanh(a));
    put(y, 3 * n + i, std::erf(a));
    put(y, 4 * n + i, std::floor(a) + rn(std::ceil(a) * 0.5f));
    put(y, 5 * n + i, std::nearbyint(a)); // ties to even
    put(y, 6 * n + i, std::pow(a, e));
    put(y, 7 * n + i, std::pow(aa, 0.5f) + std::pow(a, 3.0f));
    put(y, 8 * n + i, std::exp(a) + std::log(aa) + std::sqrt(aa) + 1.0f / std::sqrt(aa + 1.0f));
    put(y, 9 * n + i, rn(std::sin(a) * std::sin(a)) + rn(std::cos(a) * std::cos(a)));
    float hv = f16_val(h[i]), he = h16(e);
    put(yh, 0 * n + i, f16_rne(h16(std::erf(hv)) + h16(std::tanh(hv))));
    put(yh, 1 * n + i, f16_rne(h16(std::pow(hv, he)) + std::floor(hv)));
    put(yh, 2 * n + i,
        f16_rne(h16(h16(std::sin(hv)) * h16(std::cos(hv))) + std::nearbyint(hv)));
    float gv = bf16_val(g[i]), ge = b16(e);
    put(yg, 0 * n + i, bf16_rne(b16(std::erf(gv)) + std::ceil(gv)));
    put(yg, 1 * n + i, bf16_rne(b16(std::pow(std::fabs(gv), ge)) + b16(std::tanh(gv))));
    put(c, 0 * n + i, int32_t(__builtin_popcount(uint32_t(k[i]))));
    put(c, 1 * n + i,
        int32_t(__builtin_popcountll(uint64_t(w[i]) & 9007199254740993ull) +
                __builtin_popcount(uint32_t(k[i]) * 3u)));
  }
  expect(in, run(src, "port_math", {{"N", N}}, in), want);
}

TEST_CASE("tile port: atomics take the tile IR path, bit for bit a C reference") {
  const char *src = R"(
const T = 64;
const S = 16;
kernel at<N: dim, B: dim>(bin: tensor<i32>[N], x: tensor<f32>[N],
    fadd: tensor<f32>[B], fmax: tensor<f32>[B], fmin: tensor<f32>[B], hadd: tensor<f16>[B],
    hmax: tensor<f16>[B], gadd: tensor<bf16>[B], gmin: tensor<bf16>[B], iadd: tensor<i32>[B],
    imax: tensor<i32>[B], lmin: tensor<i64>[B], ladd: tensor<i64>[B],
    uf: tensor<f32>[N], ui: tensor<i32>[N], ul: tensor<i64>[N], ul2: tensor<i64>[N],
    of: tensor<f32>[N], oi: tensor<i32>[N], ol: tensor<i64>[N], os: tensor<i64>[N],
    per: tensor<f32>[N], first: tensor<f32>[N]) {
  task t[i in 0 .. cdiv(N, T)] {
    let b = load(bin[i * T .. +T], pad = -1);
    let v = load(x[i * T .. +T]);
    let live = b >= 0 && b < B;
    atomic_add(fadd[b], v, mask = live);
    atomic_max(fmax[b], v, mask = live);
    atomic_min(fmin[b], v, mask = live);
    atomic_add(hadd[b], cast<f16>(v), mask = live);
    atomic_max(hmax[b], cast<f16>(v), mask = live);
    atomic_add(gadd[b], cast<bf16>(floor(v)), mask = live);
    atomic_min(gmin[b], cast<bf16>(v), mask = live);
    atomic_add(iadd[b], 1, mask = live && v > 0.0);
    atomic_max(imax[b], b);
    atomic_min(lmin[b], cast<i64>(b) * 3);
    atomic_add(ladd[b], cast<i64>(b));
    store(of[i * T .. +T], atomic_add(uf[i * T .. +T], v));
    store(oi[i * T .. +T], atomic_cas(ui[i * T .. +T], 0, b, mask = v > 0.0));
    store(ol[i * T .. +T], atomic_max(ul[i * T .. +T], cast<i64>(b) * 5000000000));
    for k in 0 .. T / S {
      store(os[i * T + k * S .. +S], atomic_add(ul2[i * T + k * S .. +S], k + 1) * 2);
    }
    let o = atomic_add(per[i], 1.5);
    store(first[i], o + 1.0);
  }
}
)";
  const int64_t N = 1000, B = 37;
  std::mt19937 rng(19);
  std::vector<int32_t> bin(static_cast<size_t>(N)), ui(static_cast<size_t>(N));
  std::vector<float> x(static_cast<size_t>(N)), uf(static_cast<size_t>(N));
  std::vector<int64_t> ul(static_cast<size_t>(N)), ul2(static_cast<size_t>(N));
  for (size_t k = 0; k < size_t(N); ++k) {
    bin[k] = int32_t(rng() % 45) - 4; // some outside [0, B): masked off
    x[k] = float(int(rng() % 65) - 32) * 0.25f;
    uf[k] = float(int(rng() % 100)) * 0.5f;
    ui[k] = rng() % 3 == 0 ? 0 : int32_t(rng() % 1000);
    ul[k] = int64_t(rng() % 7) * 3000000000;
    ul2[k] = int64_t(rng()) << 20;
  }
  // The accumulators start at 0 (lmin high), the returned old values' outputs at 0xAB..
  std::vector<Buf> in{
      buf("bin", ETL_I32, bin),         buf("x", ETL_F32, x),
      out("fadd", ETL_F32, {B}, 4, 0),  out("fmax", ETL_F32, {B}, 4, 0),
      out("fmin", ETL_F32, {B}, 4, 0),  out("hadd", ETL_F16, {B}, 2, 0),
      out("hmax", ETL_F16, {B}, 2, 0),  out("gadd", ETL_BF16, {B}, 2, 0),
      out("gmin", ETL_BF16, {B}, 2, 0), out("iadd", ETL_I32, {B}, 4, 0),
      out("imax", ETL_I32, {B}, 4, 0),  out("lmin", ETL_I64, {B}, 8, 0x3F),
      out("ladd", ETL_I64, {B}, 8, 0),  buf("uf", ETL_F32, uf),
      buf("ui", ETL_I32, ui),           buf("ul", ETL_I64, ul),
      buf("ul2", ETL_I64, ul2),         out("of", ETL_F32, {N}, 4),
      out("oi", ETL_I32, {N}, 4),       out("ol", ETL_I64, {N}, 8),
      out("os", ETL_I64, {N}, 8),       buf("per", ETL_F32, filled<float>(N, 2.0f)),
      out("first", ETL_F32, {N}, 4),
  };
  for (size_t k : {13u, 14u, 15u, 16u, 21u}) // updated in place
    in[k].out = true;
  // The reference. Every sum is exact (multiples of 1/4 below 2^8 in f32,
  // f16 and bf16; integers), so any order of the atomics gives these bits.
  // Elements past N (b's pad -1) and bins outside [0, B) are off.
  std::vector<std::vector<uint8_t>> want = initial(in);
  std::vector<double> fadd(size_t(B), 0), fmax(size_t(B), 0), fmin(size_t(B), 0),
      hadd(size_t(B), 0), hmax(size_t(B), 0), gadd(size_t(B), 0), gmin(size_t(B), 0);
  std::vector<int64_t> iadd(size_t(B), 0), imax(size_t(B), 0), ladd(size_t(B), 0);
  std::vector<int64_t> lmin(size_t(B), get<int64_t>(in[11].bytes, 0));
  for (size_t k = 0; k < size_t(N); ++k) {
    int32_t b = bin[k];
    float v = x[k];
    if (b >= 0 && b < B) {
      size_t u = size_t(b);
      fadd[u] += v;
      fmax[u] = std::max(fmax[u], double(v));
      fmin[u] = std::min(fmin[u], double(v));
      hadd[u] += h16(v);
      hmax[u] = std::max(hmax[u], double(h16(v)));
      gadd[u] += b16(std::floor(v));
      gmin[u] = std::min(gmin[u], double(b16(v)));
      iadd[u] += v > 0.0f;
      imax[u] = std::max<int64_t>(imax[u], b);
      lmin[u] = std::min<int64_t>(lmin[u], int64_t(b) * 3);
      ladd[u] += b;
    }
    // Old values: each element is hit once, so they are the initial ones
    // (0 where the mask is off); the tensors end updated.
    put(want[17], k, uf[k]);
    put(want[13], k, uf[k] + v);
    put(want[18], k, v > 0.0f ? ui[k] : 0);
    put(want[14], k, v > 0.0f && ui[k] == 0 ? b : ui[k]);
    put(want[19], k, ul[k]);
    put(want[15], k, std::max<int64_t>(ul[k], int64_t(b) * 5000000000));
    int64_t step = int64_t(k % 64 / 16) + 1;
    put(want[20], k, ul2[k] * 2);
    put(want[16], k, ul2[k] + step);
  }
  for (size_t u = 0; u < size_t(B); ++u) {
    put(want[2], u, float(fadd[u]));
    put(want[3], u, float(fmax[u]));
    put(want[4], u, float(fmin[u]));
    put(want[5], u, f16_rne(float(hadd[u])));
    put(want[6], u, f16_rne(float(hmax[u])));
    put(want[7], u, bf16_rne(float(gadd[u])));
    put(want[8], u, bf16_rne(float(gmin[u])));
    put(want[9], u, int32_t(iadd[u]));
    put(want[10], u, int32_t(imax[u]));
    put(want[11], u, lmin[u]);
    put(want[12], u, ladd[u]);
  }
  for (size_t i = 0; i < size_t((N + 63) / 64); ++i) { // one rank-0 atomic per task
    put(want[21], i, 2.0f + 1.5f);
    put(want[22], i, 2.0f + 1.0f);
  }
  for (unsigned threads : {128u, 32u}) {
    CAPTURE(threads);
    all_tile_ir(src, 1, threads);
    expect(in,
           run(src, "port_atomics_" + std::to_string(threads), {{"N", N}, {"B", B}}, in, {},
               threads),
           want);
  }
}

TEST_CASE("tile port: the gemv_atomic example's bodies take the tile IR path") {
  all_tile_ir(example("gemv_atomic"), 2, 0);
}

TEST_CASE("tile port: if / else if / else take the tile IR path, bit for bit a C reference") {
  const char *src = R"(
const T = 64;
kernel br<N: dim>(x: tensor<f32>[N], off: tensor<i32>[N], y: tensor<f32>[N], z: tensor<f32>[N],
                  w: tensor<i32>[N], cnt: tensor<i32>[8], n: i32) where N % 64 == 0 {
  task t[i in 0 .. N / T] {
    var v = load(x[i * T .. +T]);
    var m = zeros<f32>[1];
    var q = 0.0;
    var c = zeros<i32>[T];
    if i == 0 {
      v = v * 2.0;
      m = sum(v, axis = 0);
      q = 2.0;
    } else if i < n {
      store(y[i * T .. +T], v);
      let k = off[i];
      v = v + load(x[k * T .. +T]) + load(y[i * T .. +T]);
      m = sum(v * v, axis = 0);
      c = c + 1;
    } else {
      v = v - 1.0;
      atomic_add(cnt[i % 8], 1);
    }
    for j in 0 .. 3 {
      if j == i % 3 {
        v = v + cast<f32>(j);
        c = c + 2;
        q = q + 0.25;
      } else {
        v = v * 0.5;
      }
    }
    if n > 7 && i > 2 {
      m = m + max(v, axis = 0);
    }
    store(y[i * T .. +T], v);
    store(z[i * T .. +T], v + m + q);
    store(w[i * T .. +T], c);
  }
}
)";
  const int64_t N = 64 * 12;
  // Multiples of 1/8: every value below is a multiple of 1/64 under 2^13,
  // so f32 holds it exactly and the reductions' order does not change a bit;
  // the reference computes in double.
  std::vector<float> x(static_cast<size_t>(N));
  for (size_t k = 0; k < x.size(); ++k)
    x[k] = float(int(k * 37 % 41) - 20) / 8.0f;
  std::vector<int32_t> off(static_cast<size_t>(N));
  for (size_t k = 0; k < off.size(); ++k)
    off[k] = int32_t((k * 7) % 13); // 12: outside x, loads its pad
  const size_t T = 64;
  for (int32_t nv : {5, 9}) {
    CAPTURE(nv);
    std::vector<Buf> in{buf("x", ETL_F32, x),       buf("off", ETL_I32, off),
                        out("y", ETL_F32, {N}, 4),  out("z", ETL_F32, {N}, 4),
                        out("w", ETL_I32, {N}, 4),  out("cnt", ETL_I32, {8}, 4, 0)};
    std::vector<std::vector<uint8_t>> want = initial(in);
    std::vector<int32_t> cnt(8, 0);
    for (size_t i = 0; i < size_t(N) / T; ++i) {
      std::vector<double> v(T);
      for (size_t e = 0; e < T; ++e)
        v[e] = x[i * T + e];
      double m = 0, q = 0;
      int32_t c = 0;
      if (i == 0) {
        for (double &a : v)
          a *= 2;
        for (double a : v)
          m += a;
        q = 2;
      } else if (int64_t(i) < nv) {
        size_t k = size_t(off[i]); // the stored y is v itself; block 12 is x's pad, 0
        for (size_t e = 0; e < T; ++e)
          v[e] = v[e] + (k * T + e < size_t(N) ? double(x[k * T + e]) : 0.0) + v[e];
        for (double a : v)
          m += a * a;
        c += 1;
      } else {
        for (double &a : v)
          a -= 1;
        cnt[i % 8] += 1;
      }
      for (size_t j = 0; j < 3; ++j) {
        if (j == i % 3) {
          for (double &a : v)
            a += double(j);
          c += 2;
          q += 0.25;
        } else {
          for (double &a : v)
            a *= 0.5;
        }
      }
      if (nv > 7 && i > 2)
        m += *std::max_element(v.begin(), v.end());
      for (size_t e = 0; e < T; ++e) {
        put(want[2], i * T + e, float(v[e]));
        put(want[3], i * T + e, float(v[e] + m + q));
        put(want[4], i * T + e, c);
      }
    }
    for (size_t b = 0; b < 8; ++b)
      put(want[5], b, cnt[b]);
    for (unsigned threads : {128u, 32u}) {
      CAPTURE(threads);
      all_tile_ir(src, 1, threads);
      expect(in,
             run(src, "port_if_" + std::to_string(nv) + "_" + std::to_string(threads), {{"N", N}},
                 in, {{"n", ETL_I32, &nv}}, threads),
             want);
    }
  }
}

TEST_CASE("tile port: tests/unit/target/branches.etl takes the tile IR path") {
  std::ifstream in(std::string(ETL_SOURCE_DIR) + "/tests/unit/target/branches.etl");
  std::stringstream ss;
  ss << in.rdbuf();
  all_tile_ir(ss.str(), 1, 0);
}

TEST_CASE("tile port: narrow, unsigned, packed and FP8 elements take the tile IR path, bit for "
          "bit a C reference") {
  const std::string tmpl = R"(
const T = 512;
kernel nar<N: dim>(a: tensor<u8>[N], b: tensor<i8>[N], h: tensor<u16>[N], g: tensor<i16>[N],
                   w: tensor<u32>[N], q: tensor<i4>[N], p: tensor<u4>[N], x: tensor<f32>[N],
                   e4: tensor<f8e4m3>[N], e5: tensor<f8e5m2>[N], yu8: tensor<u8>[N],
                   yi8: tensor<i8>[N], yu16: tensor<u16>[N], yi16: tensor<i16>[N],
                   yu32: tensor<u32>[N], yf: tensor<f32>[2, N], ye4: tensor<f8e4m3>[N],
                   ye5: tensor<f8e5m2>[N], red: tensor<i32>[5, N], yc: tensor<i32>[2, N])
    WHERE {
  task t[i in 0 .. cdiv(N, T)] {
    let ua = load(a[i * T .. +T], pad = -1);
    let sb = load(b[i * T .. +T]);
    let uh = load(h[i * T .. +T]);
    let sg = load(g[i * T .. +T], pad = 7);
    let uw = load(w[i * T .. +T]);
    let v = load(x[i * T .. +T]);
    let sq = load(q[i * T .. +T]);
    let up = load(p[i * T .. +T]);
    store(yu8[i * T .. +T], (ua >> 2) + cast<u8>(v) * ua - ~ua + max(ua, cast<u8>(200)) / 3,
          mask = ua != 17);
    store(yi8[i * T .. +T], sb / 3 + cast<i8>(v) - -sb + abs(sb) + sq * sb % 5);
    store(yu16[i * T .. +T], uh * uh + (uh >> 3) - min(uh, cast<u16>(40000)));
    store(yi16[i * T .. +T], sg * sg - (sg << 3) + abs(sg) + max(sg, cast<i16>(-5)));
    store(yu32[i * T .. +T], select(uw > 3000000000, uw >> 3, uw / 7) + cast<u32>(uh) +
                             max(uw, cast<u32>(4000000000)));
    store(yf[0, i * T .. +T], cast<f32>(uw) + cast<f32>(up) + cast<f32>(cast<u32>(v)) +
                              cast<f32>(load(e5[i * T .. +T])));
    store(yf[1, i * T .. +T], cast<f32>(ua) * 0.5 + cast<f32>(sb) + cast<f32>(sq) * 0.25 +
                              cast<f32>(cast<i8>(up) - sq));
    store(ye4[i * T .. +T], load(e4[i * T .. +T]) * 0.5 + cast<f8e4m3>(v));
    store(ye5[i * T .. +T], exp(load(e5[i * T .. +T])) + cast<f8e5m2>(v));
    store(red[0, i .. +1], cast<i32>(sum(ua, axis = 0)));
    store(red[1, i .. +1], cast<i32>(max(uw, axis = 0)));
    store(red[2, i .. +1], cast<i32>(min(sb, axis = 0)));
    store(red[3, i .. +1], cast<i32>(sum(up, axis = 0)) + cast<i32>(max(sg, axis = 0)));
    store(red[4, i .. +1], argmax(uw, axis = 0) + 1000 * argmin(sb, axis = 0));
    store(yc[0, i * T .. +T], cast<i32>(cumsum(ua, axis = 0)));
    store(yc[1, i * T .. +T], cast<i32>(cumsum(sg, axis = 0)) + cast<i32>(cumsum(uw, axis = 0)));
  }
}
)";
  for (bool facts : {true, false}) {
    const int64_t N = facts ? 4096 : 4000;
    std::string src = tmpl;
    src.replace(src.find("WHERE"), 5, facts ? "where N % 512 == 0" : "where N % 2 == 0");
    std::mt19937 rng(facts ? 4 : 8);
    auto bytes = [&](size_t n) {
      std::vector<uint8_t> v(n);
      for (uint8_t &x : v)
        x = uint8_t(rng());
      return v;
    };
    std::vector<float> x(static_cast<size_t>(N));
    for (float &f : x)
      f = float(int(rng() % 2001) - 1000) * 0.37f;
    std::vector<uint32_t> w(static_cast<size_t>(N));
    for (uint32_t &u : w)
      u = uint32_t(rng());
    // FP8 bits without NaNs (e4m3: S.1111.111; e5m2: exponent 31)
    std::vector<uint8_t> e4 = bytes(size_t(N)), e5 = bytes(size_t(N));
    for (uint8_t &c : e4)
      c = (c & 0x7F) == 0x7F ? uint8_t(c ^ 1) : c;
    for (uint8_t &c : e5)
      c = (c & 0x7C) == 0x7C ? uint8_t(c ^ 0x40) : c;
    const size_t n = size_t(N), half = (n + 1) / 2;
    std::vector<Buf> in{
        Buf{"a", ETL_U8, {N}, bytes(n)},
        Buf{"b", ETL_I8, {N}, bytes(n)},
        Buf{"h", ETL_U16, {N}, bytes(2 * n)},
        Buf{"g", ETL_I16, {N}, bytes(2 * n)},
        buf("w", ETL_U32, w),
        Buf{"q", ETL_I4, {N}, bytes(half)},
        Buf{"p", ETL_U4, {N}, bytes(half)},
        buf("x", ETL_F32, x),
        Buf{"e4", ETL_F8E4M3, {N}, e4},
        Buf{"e5", ETL_F8E5M2, {N}, e5},
        out("yu8", ETL_U8, {N}, 1),
        out("yi8", ETL_I8, {N}, 1),
        out("yu16", ETL_U16, {N}, 2),
        out("yi16", ETL_I16, {N}, 2),
        out("yu32", ETL_U32, {N}, 4),
        out("yf", ETL_F32, {2, N}, 4),
        out("ye4", ETL_F8E4M3, {N}, 1),
        out("ye5", ETL_F8E5M2, {N}, 1),
        out("red", ETL_I32, {5, N}, 4),
        out("yc", ETL_I32, {2, N}, 4),
    };
    std::vector<std::vector<uint8_t>> want = narrow_reference(in, n);
    for (unsigned threads : {128u, 32u}) {
      CAPTURE(facts);
      CAPTURE(threads);
      all_tile_ir(src, 1, threads);
      expect(in,
             run(src, "port_narrow_" + std::to_string(facts) + std::to_string(threads),
                 {{"N", N}}, in, {}, threads),
             want);
    }
  }
}

TEST_CASE("tile port: the gemv_int4 example's bodies (u4 weights) take the tile IR path") {
  all_tile_ir(example("gemv_int4"), 4, 0);
}

TEST_CASE("tile port: transposes and reshapes that move data take the tile IR path") {
  // Transposes of [12, 20] f32 (then scaled), [12, 6] f16, [32, 32] f32 and
  // a max over a transpose's rows; reshapes [12, 12] -> [9, 16] -> [12, 12]
  // (row-major order: each row of the [9, 16] view gets its row index) and
  // [48] -> [4, 12] (both move data through scratch), [48] -> [6, 8] (a
  // renaming: the padded coordinates are the row-major index).
  const char *src = R"(
kernel tr<M: dim>(x: tensor<f32>[M, 20], y: tensor<f32>[20, M], h: tensor<f16>[M, 6],
                  ht: tensor<f16>[6, M], z: tensor<i32>[M, 12], w: tensor<i32>[M, 12],
                  mx: tensor<f32>[M], s: tensor<f32>[M, 32], st: tensor<f32>[32, M],
                  q: tensor<f32>[M, 4], r8: tensor<f32>[M, 8]) where M % 96 == 0 {
  task t[i in 0 .. M / 12] {
    let a = load(x[i * 12 .. +12, 0 .. +20]);
    store(y[0 .. +20, i * 12 .. +12], transpose(a) * 2.0 - 1.0);
    store(mx[i * 12 .. +12], max(transpose(a), axis = 0));
    store(ht[0 .. +6, i * 12 .. +12], transpose(load(h[i * 12 .. +12, 0 .. +6])));
    let r = reshape(load(z[i * 12 .. +12, 0 .. +12]), 9, 16);
    store(w[i * 12 .. +12, 0 .. +12], reshape(r + expand(arange<i32>[9], axis = 1), 12, 12));
  }
  task p[i in 0 .. M / 32] {
    store(st[0 .. +32, i * 32 .. +32], transpose(load(s[i * 32 .. +32, 0 .. +32])));
  }
  task v[i in 0 .. M / 12] {
    let e = load(x[i * 12 .. +12, 0 .. +4]);
    let l = reshape(load(x[i * 12 .. +12, 4 .. +4]), 48);
    store(q[i * 12 .. +12, 0 .. +4], e + reshape(reshape(l, 4, 12), 12, 4));
    store(r8[i * 6 .. +6, 0 .. +8], reshape(l, 6, 8) * 0.5);
  }
}
)";
  const int64_t M = 96;
  std::vector<float> x = spread(M * 20, -7.0, 9.0), s = spread(M * 32, -3.0, 5.0);
  std::mt19937 rng(28);
  std::vector<uint16_t> h(static_cast<size_t>(M * 6));
  std::vector<int32_t> z(static_cast<size_t>(M * 12));
  for (uint16_t &b : h)
    b = uint16_t(rng() & 0x7bffu); // finite
  for (int32_t &k : z)
    k = int32_t(rng() % 100000);
  std::vector<Buf> in{buf("x", ETL_F32, x),           out("y", ETL_F32, {20, M}, 4),
                      Buf{"h", ETL_F16, {M, 6}, {}},   out("ht", ETL_F16, {6, M}, 2),
                      Buf{"z", ETL_I32, {M, 12}, {}},  out("w", ETL_I32, {M, 12}, 4),
                      out("mx", ETL_F32, {M}, 4),      Buf{"s", ETL_F32, {M, 32}, {}},
                      out("st", ETL_F32, {32, M}, 4),  out("q", ETL_F32, {M, 4}, 4),
                      out("r8", ETL_F32, {M, 8}, 4)};
  in[0].shape = {M, 20};
  in[2].bytes.resize(h.size() * 2);
  std::memcpy(in[2].bytes.data(), h.data(), in[2].bytes.size());
  in[4].bytes.resize(z.size() * 4);
  std::memcpy(in[4].bytes.data(), z.data(), in[4].bytes.size());
  in[7].bytes.resize(s.size() * 4);
  std::memcpy(in[7].bytes.data(), s.data(), in[7].bytes.size());
  // The reference: every element moved, scaled exactly, or a max.
  std::vector<std::vector<uint8_t>> want = initial(in);
  for (int64_t r = 0; r < M; ++r) {
    float m = -INFINITY;
    for (int64_t c = 0; c < 20; ++c) {
      put<float>(want[1], size_t(c * M + r), rn(x[size_t(r * 20 + c)] * 2.0f) - 1.0f);
      m = std::max(m, x[size_t(r * 20 + c)]);
    }
    put<float>(want[6], size_t(r), m);
    for (int64_t c = 0; c < 6; ++c)
      put<uint16_t>(want[3], size_t(c * M + r), h[size_t(r * 6 + c)]);
    for (int64_t c = 0; c < 12; ++c) // the [9, 16] view's row of element (r % 12, c)
      put<int32_t>(want[5], size_t(r * 12 + c),
                   z[size_t(r * 12 + c)] + int32_t((r % 12 * 12 + c) / 16));
    for (int64_t c = 0; c < 32; ++c)
      put<float>(want[8], size_t(c * M + r), s[size_t(r * 32 + c)]);
    for (int64_t c = 0; c < 4; ++c)
      put<float>(want[9], size_t(r * 4 + c), x[size_t(r * 20 + c)] + x[size_t(r * 20 + 4 + c)]);
  }
  for (int64_t k = 0; k < M / 2 * 8; ++k) { // r8's first M / 2 rows: l's elements in order
    int64_t t = k / 48, e = k % 48;
    put<float>(want[10], size_t(k), x[size_t((t * 12 + e / 4) * 20 + 4 + e % 4)] * 0.5f);
  }
  for (unsigned threads : {128u, 32u}) {
    CAPTURE(threads);
    all_tile_ir(src, 3, threads);
    expect(in, run(src, "port_transpose" + std::to_string(threads), {{"M", M}}, in, {}, threads),
           want);
  }
}

TEST_CASE("tile port: mma_hoist_budget's [160, 150] transpose beside a K loop takes the tile IR "
          "path within sm_86's shared-memory budget") {
  // The transposed tile goes to its store's rows through 96000 bytes of
  // scratch; with sm_86 among the targets (99 KiB a CTA) the K loop's
  // two-stage ring of k (2 x 16 x 128 bf16) does not fit beside it, so each
  // dot stages its b (4096 bytes, sharing the area); for sim alone (the
  // largest GPU's budget) the ring stays. examples_backend_test.cpp checks
  // the kernels' shared-memory sizes.
  const std::string file = std::string(ETL_SOURCE_DIR) + "/tests/unit/target/mma_hoist_budget.etl";
  std::filesystem::path dir = std::filesystem::path(ETL_TEST_BINARY_DIR) / "e2e_programs";
  std::filesystem::create_directories(dir);
  for (bool sm86 : {true, false}) {
    CAPTURE(sm86);
    CompileOptions o;
    o.input = file;
    o.targets = sm86 ? std::vector<std::string>{"sim", "sm_86"} : std::vector<std::string>{"sim"};
    o.output = (dir / "mma_hoist_budget_tile.etlb").string();
    std::string out, err, lines;
    REQUIRE(testing::compile_tile_debug(o, "lowering ", out, err, lines) == 0);
    CHECK(lines == "lowering t: tile IR\n");
    o.output.clear();
    o.emit = "tile";
    REQUIRE(testing::compile_tile_debug(o, "lowering ", out, err, lines) == 0);
    INFO(out);
    CHECK(out.find("convert_layout %9 : tile<150x160xf32") != std::string::npos);
    CHECK(out.find("via=scratch") != std::string::npos);
    if (sm86) {
      CHECK(out.find("shared memory: 2 buffers, 96000 bytes") != std::string::npos);
      CHECK(out.find("smem.alloc") == std::string::npos);
      CHECK(err.find("two stages of its operand tiles do not fit") != std::string::npos);
    } else {
      CHECK(out.find("shared memory: 2 buffers, 104192 bytes") != std::string::npos);
      CHECK(out.find("smem.alloc : smem<2x16x128xbf16>") != std::string::npos);
    }
  }
}

} // namespace etl
