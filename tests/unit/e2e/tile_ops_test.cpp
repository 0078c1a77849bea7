// End-to-end tests of the compute tile ops (bool tiles and comparisons,
// select, arange, cumsum, argmax/argmin, transpose, dot, reductions on i32
// and over axis 0): small ETL programs compiled for sim with 32 threads per
// CTA (so tiles span several registers per thread and have dead elements),
// run through the runtime and compared with values computed here.
#include "compile_run.h"
#include "driver/pipeline.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace etl {
namespace {
using testing::Bind;
using testing::compile_and_run;
using testing::half_bits;
} // namespace

TEST_CASE("tile ops: comparisons, && || !, select with broadcasting, bool casts and counts") {
  // Tiles of [4, 12] = 48 elements over 32 threads: two registers, dead elements.
  const char *src = R"(
const TM = 4;
const TN = 12;
kernel cmp<R: dim>(x: tensor<f32>[R, TN], n: tensor<i32>[R, TN], sel: tensor<f32>[R, TN],
                   logic: tensor<i32>[R, TN], rows: tensor<f32>[R, TN], cnt: tensor<i32>[R],
                   anyv: tensor<i32>[R], first: tensor<f32>[R, TN])
  where R % 4 == 0 {
  task t[i in 0 .. R / TM] {
    let a = load(x[i * TM .. +TM, 0 .. +TN]);
    let b = load(n[i * TM .. +TM, 0 .. +TN]);
    store(sel[i * TM .. +TM, 0 .. +TN], select(a > 0.5 && !(b == 3), a, -1.0));
    let m = (a < -0.5) || (cast<f32>(b) >= a);
    store(logic[i * TM .. +TM, 0 .. +TN],
          cast<i32>(m) + 2 * cast<i32>(cast<bool>(b)) + 4 * cast<i32>(a != 0.0));
    // A [TM, 1] condition, a [TM, TN] value and a [TN] value broadcast together.
    let pos = expand(sum(a, axis = 1) > 0.0, axis = 1);
    store(rows[i * TM .. +TM, 0 .. +TN], select(pos, a, cast<f32>(arange<i32>[TN])));
    store(cnt[i * TM .. +TM], sum(a > 0.0, axis = 1));
    store(anyv[i * TM .. +TM], cast<i32>(max(b > 6, axis = 1)) + 2 * cast<i32>(min(b >= 0, axis = 1)));
    // An index comparison is a bool scalar.
    store(first[i * TM .. +TM, 0 .. +TN], a * cast<f32>(i == 0) + select(i > 0, 1.0, 0.0));
  }
}
)";
  const int64_t R = 8, TN = 12;
  std::vector<float> x(R * TN), sel(R * TN, -9), rows(R * TN, -9), first(R * TN, -9);
  std::vector<int32_t> n(R * TN), logic(R * TN, -9), cnt(R, -9), anyv(R, -9);
  for (int64_t k = 0; k < R * TN; ++k) {
    x[k] = float((k * 7) % 11) * 0.25f - 1.25f; // -1.25 .. 1.25, includes 0
    n[k] = int32_t((k * 5) % 8) - (k / TN == 5 ? 3 : 0);
  }
  std::string err = compile_and_run(src, "cmp", {{"R", R}},
                                    {{"x", x.data(), ETL_F32, {R, TN}},
                                     {"n", n.data(), ETL_I32, {R, TN}},
                                     {"sel", sel.data(), ETL_F32, {R, TN}},
                                     {"logic", logic.data(), ETL_I32, {R, TN}},
                                     {"rows", rows.data(), ETL_F32, {R, TN}},
                                     {"cnt", cnt.data(), ETL_I32, {R}},
                                     {"anyv", anyv.data(), ETL_I32, {R}},
                                     {"first", first.data(), ETL_F32, {R, TN}}});
  REQUIRE_MESSAGE(err.empty(), err);
  for (int64_t r = 0; r < R; ++r) {
    float rs = 0;
    int c = 0, any = 0, all = 1;
    for (int64_t j = 0; j < TN; ++j) {
      rs += x[r * TN + j];
      c += x[r * TN + j] > 0;
      any |= n[r * TN + j] > 6;
      all &= n[r * TN + j] >= 0;
    }
    CHECK(cnt[r] == c);
    CHECK(anyv[r] == any + 2 * all);
    for (int64_t j = 0; j < TN; ++j) {
      int64_t k = r * TN + j;
      float a = x[k];
      int32_t b = n[k];
      INFO("row " << r << " col " << j << " x " << a << " n " << b);
      CHECK(sel[k] == (a > 0.5f && !(b == 3) ? a : -1.f));
      int m = (a < -0.5f) || (float(b) >= a);
      CHECK(logic[k] == m + 2 * (b != 0) + 4 * (a != 0.f));
      CHECK(rows[k] == (rs > 0 ? a : float(j)));
      CHECK(first[k] == (r < 4 ? a : 1.f));
    }
  }
}

TEST_CASE("tile ops: arange, cumsum, argmax/argmin and reductions over both axes") {
  // [6, 10] tiles: 60 elements over 32 threads.
  const char *src = R"(
const TM = 6;
const TN = 10;
kernel scan(x: tensor<f32>[TM, TN], n: tensor<i32>[TM, TN], cs1: tensor<f32>[TM, TN],
            cs0: tensor<i32>[TM, TN], amax1: tensor<i32>[TM], amin0: tensor<i32>[TN],
            amaxi: tensor<i32>[TN], isum0: tensor<i32>[TN], imax0: tensor<i32>[TN],
            imin1: tensor<i32>[TM], fsum0: tensor<f32>[TN], ar: tensor<f32>[TN],
            cs16: tensor<f32>[TN]) {
  task t[i in 0 .. 1] {
    let a = load(x[0 .. +TM, 0 .. +TN]);
    let b = load(n[0 .. +TM, 0 .. +TN]);
    store(cs1[0 .. +TM, 0 .. +TN], cumsum(a, axis = 1));
    store(cs0[0 .. +TM, 0 .. +TN], cumsum(b, axis = 0));
    store(amax1[0 .. +TM], argmax(a, axis = 1));
    store(amin0[0 .. +TN], argmin(a, axis = 0));
    store(amaxi[0 .. +TN], argmax(b, axis = 0));
    store(isum0[0 .. +TN], sum(b, axis = 0));
    store(imax0[0 .. +TN], max(b, axis = 0));
    store(imin1[0 .. +TM], min(b, axis = 1));
    store(fsum0[0 .. +TN], sum(a, axis = 0));
    store(ar[0 .. +TN], arange<f32>[TN] * 0.5 + cast<f32>(arange<i32>[TN]));
    store(cs16[0 .. +TN], cast<f32>(cumsum(cast<f16>(arange<f32>[TN]), axis = 0)));
  }
}
)";
  const int64_t TM = 6, TN = 10;
  std::vector<float> x(TM * TN), cs1(TM * TN), fsum0(TN), ar(TN), cs16(TN);
  std::vector<int32_t> n(TM * TN), cs0(TM * TN), amax1(TM), amin0(TN), amaxi(TN), isum0(TN),
      imax0(TN), imin1(TM);
  for (int64_t k = 0; k < TM * TN; ++k) {
    x[k] = float((k * 13) % 7) - 3.f; // ties within rows and columns
    n[k] = int32_t((k * 11) % 9) - 4;
  }
  std::string err = compile_and_run(src, "scan", {},
                                    {{"x", x.data(), ETL_F32, {TM, TN}},
                                     {"n", n.data(), ETL_I32, {TM, TN}},
                                     {"cs1", cs1.data(), ETL_F32, {TM, TN}},
                                     {"cs0", cs0.data(), ETL_I32, {TM, TN}},
                                     {"amax1", amax1.data(), ETL_I32, {TM}},
                                     {"amin0", amin0.data(), ETL_I32, {TN}},
                                     {"amaxi", amaxi.data(), ETL_I32, {TN}},
                                     {"isum0", isum0.data(), ETL_I32, {TN}},
                                     {"imax0", imax0.data(), ETL_I32, {TN}},
                                     {"imin1", imin1.data(), ETL_I32, {TM}},
                                     {"fsum0", fsum0.data(), ETL_F32, {TN}},
                                     {"ar", ar.data(), ETL_F32, {TN}},
                                     {"cs16", cs16.data(), ETL_F32, {TN}}});
  REQUIRE_MESSAGE(err.empty(), err);
  auto X = [&](int64_t r, int64_t c) { return x[r * TN + c]; };
  auto N = [&](int64_t r, int64_t c) { return n[r * TN + c]; };
  for (int64_t r = 0; r < TM; ++r) {
    float s = 0;
    int best = 0, mn = N(r, 0);
    for (int64_t c = 0; c < TN; ++c) {
      s += X(r, c);
      CHECK(cs1[r * TN + c] == doctest::Approx(s));
      if (X(r, c) > X(r, best))
        best = int(c);
      mn = std::min(mn, N(r, c));
    }
    CHECK(amax1[r] == best);
    CHECK(imin1[r] == mn);
  }
  for (int64_t c = 0; c < TN; ++c) {
    int32_t s = 0, mx = N(0, c);
    float fs = 0;
    int lo = 0, hi = 0;
    for (int64_t r = 0; r < TM; ++r) {
      s += N(r, c);
      fs += X(r, c);
      CHECK(cs0[r * TN + c] == s);
      if (X(r, c) < X(lo, c))
        lo = int(r);
      if (N(r, c) > N(hi, c))
        hi = int(r);
      mx = std::max(mx, N(r, c));
    }
    CHECK(amin0[c] == lo);
    CHECK(amaxi[c] == hi);
    CHECK(isum0[c] == s);
    CHECK(imax0[c] == mx);
    CHECK(fsum0[c] == doctest::Approx(fs));
    CHECK(ar[c] == float(c) * 1.5f);
    CHECK(cs16[c] == float(c * (c + 1) / 2));
  }
}

TEST_CASE("tile ops: dot (f32 and f16 operands, GEMV) and transpose") {
  // [6, 5] x [5, 7]: 42 outputs over 32 threads; K loop of 5.
  const char *src = R"(
const TM = 6;
const TK = 5;
const TN = 7;
kernel mm<M: dim>(a: tensor<f32>[M, TK], w: tensor<f16>[TK, TN], y: tensor<f32>[M, TN],
                  yh: tensor<f32>[M, TN], at: tensor<f32>[TK, M], v: tensor<f32>[M, TN])
  where M % 6 == 0 {
  task t[i in 0 .. M / TM] {
    let x = load(a[i * TM .. +TM, 0 .. +TK]);
    let wh = load(w[0 .. +TK, 0 .. +TN]);
    store(y[i * TM .. +TM, 0 .. +TN], dot(x, cast<f32>(wh)));
    store(yh[i * TM .. +TM, 0 .. +TN], dot(cast<f16>(x), wh));
    store(at[0 .. +TK, i * TM .. +TM], transpose(x));
    // GEMV: [TK] x [TK, TN] -> [TN], broadcast over the rows.
    let g = dot(sum(x, axis = 0), cast<f32>(wh));
    store(v[i * TM .. +TM, 0 .. +TN], zeros<f32>[TM, TN] + g);
  }
}
)";
  const int64_t M = 12, K = 5, N = 7;
  std::vector<float> a(M * K), y(M * N), yh(M * N), at(K * M), v(M * N), wf(K * N);
  std::vector<uint16_t> w(K * N);
  for (int64_t k = 0; k < M * K; ++k)
    a[k] = float((k * 7) % 9) * 0.25f - 1.f; // exact in f16
  for (int64_t k = 0; k < K * N; ++k) {
    wf[k] = float((k * 5) % 7) * 0.5f - 1.5f;
    w[k] = half_bits(wf[k]);
  }
  std::string err = compile_and_run(src, "mm", {{"M", M}},
                                    {{"a", a.data(), ETL_F32, {M, K}},
                                     {"w", w.data(), ETL_F16, {K, N}},
                                     {"y", y.data(), ETL_F32, {M, N}},
                                     {"yh", yh.data(), ETL_F32, {M, N}},
                                     {"at", at.data(), ETL_F32, {K, M}},
                                     {"v", v.data(), ETL_F32, {M, N}}});
  REQUIRE_MESSAGE(err.empty(), err);
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < N; ++c) {
      float s = 0, g = 0;
      for (int64_t k = 0; k < K; ++k) {
        s += a[r * K + k] * wf[k * N + c];
        float col = 0;
        for (int64_t rr = r / 6 * 6; rr < r / 6 * 6 + 6; ++rr)
          col += a[rr * K + k];
        g += col * wf[k * N + c];
      }
      INFO("y[" << r << ", " << c << "]");
      CHECK(y[r * N + c] == doctest::Approx(s));
      CHECK(yh[r * N + c] == doctest::Approx(s));
      CHECK(v[r * N + c] == doctest::Approx(g));
    }
  for (int64_t k = 0; k < K; ++k)
    for (int64_t r = 0; r < M; ++r)
      CHECK(at[k * M + r] == a[r * K + k]);
}

TEST_CASE("tile ops: a 32x64 by 64x32 dot matches a reference") {
  const char *src = R"(
kernel big(a: tensor<f32>[32, 64], b: tensor<f32>[64, 32], c: tensor<f32>[32, 32]) {
  task t[i in 0 .. 1] {
    store(c[0 .. +32, 0 .. +32], dot(load(a[0 .. +32, 0 .. +64]), load(b[0 .. +64, 0 .. +32])));
  }
}
)";
  std::vector<float> a(32 * 64), b(64 * 32), c(32 * 32);
  for (size_t k = 0; k < a.size(); ++k) {
    a[k] = std::sin(float(k));
    b[k] = std::cos(float(k) * 0.5f);
  }
  std::string err = compile_and_run(src, "big", {},
                                    {{"a", a.data(), ETL_F32, {32, 64}},
                                     {"b", b.data(), ETL_F32, {64, 32}},
                                     {"c", c.data(), ETL_F32, {32, 32}}});
  REQUIRE_MESSAGE(err.empty(), err);
  for (int r = 0; r < 32; ++r)
    for (int j = 0; j < 32; ++j) {
      float s = 0;
      for (int k = 0; k < 64; ++k)
        s += a[r * 64 + k] * b[k * 32 + j];
      CHECK(c[r * 32 + j] == doctest::Approx(s).epsilon(1e-4));
    }
}

} // namespace etl

namespace etl {

TEST_CASE("tile ops: a tiled GEMM with a K loop, ReLU by select and top-1 routing by argmax") {
  const char *src = R"(
const TM = 8;
const TN = 8;
const TK = 16;
kernel gemm<M: dim, N: dim, K: dim>(a: tensor<f32>[M, K], b: tensor<f16>[K, N],
                                    c: tensor<f32>[M, N], top: tensor<i32>[M, N / TN])
  where M % 8 == 0, N % 8 == 0, K % 16 == 0 {
  task t[i in 0 .. M / TM, j in 0 .. N / TN] {
    var acc = zeros<f32>[TM, TN];
    for k in 0 .. K step TK {
      acc += dot(load(a[i * TM .. +TM, k .. +TK]), load(b[k .. +TK, j * TN .. +TN]));
    }
    let r = select(acc > 0.0, acc, 0.0);
    store(c[i * TM .. +TM, j * TN .. +TN], r);
    store(top[i * TM .. +TM, j .. +1], expand(argmax(r, axis = 1), axis = 1));
  }
}
)";
  const int64_t M = 16, N = 24, K = 48;
  std::vector<float> a(M * K), bf(K * N), c(M * N);
  std::vector<uint16_t> b(K * N);
  std::vector<int32_t> top(M * (N / 8), -1);
  for (int64_t k = 0; k < M * K; ++k)
    a[k] = float((k * 5) % 9) * 0.25f - 1.f;
  for (int64_t k = 0; k < K * N; ++k) {
    bf[k] = float((k * 3) % 7) * 0.5f - 1.5f;
    b[k] = half_bits(bf[k]);
  }
  std::string err = compile_and_run(src, "gemm", {{"M", M}, {"N", N}, {"K", K}},
                                    {{"a", a.data(), ETL_F32, {M, K}},
                                     {"b", b.data(), ETL_F16, {K, N}},
                                     {"c", c.data(), ETL_F32, {M, N}},
                                     {"top", top.data(), ETL_I32, {M, N / 8}}});
  REQUIRE_MESSAGE(err.empty(), err);
  std::vector<float> ref(M * N);
  for (int64_t r = 0; r < M; ++r)
    for (int64_t j = 0; j < N; ++j) {
      float s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += a[r * K + k] * bf[k * N + j];
      ref[r * N + j] = s > 0 ? s : 0;
      CHECK(c[r * N + j] == doctest::Approx(ref[r * N + j]));
    }
  for (int64_t r = 0; r < M; ++r)
    for (int64_t t = 0; t < N / 8; ++t) {
      int best = 0;
      for (int j = 1; j < 8; ++j)
        if (c[r * N + t * 8 + j] > c[r * N + t * 8 + best])
          best = j;
      CHECK(top[r * (N / 8) + t] == best);
    }
}

} // namespace etl

namespace etl {
namespace {
using testing::Bind;
using testing::compile_and_run;

TEST_CASE("integer tile / and % round like index arithmetic (floor), and x / 0 is 0") {
  const char *src = R"(
kernel divmod<N: dim>(a: tensor<i32>[N], d: tensor<i32>[N], q: tensor<i32>[N], r: tensor<i32>[N]) {
  task t[i in 0 .. cdiv(N, 64)] {
    let x = load(a[i * 64 .. +64]);
    let y = load(d[i * 64 .. +64]);
    store(q[i * 64 .. +64], x / y);
    store(r[i * 64 .. +64], x % y + (x % 4) * 0);
  }
}
)";
  const int64_t N = 70;
  std::vector<int32_t> a(N), d(N), q(N, 99), r(N, 99);
  for (int64_t i = 0; i < N; ++i) {
    a[size_t(i)] = int32_t(i % 17) - 8;
    d[size_t(i)] = int32_t(i % 7) - 3; // includes 0 and negatives
  }
  std::string msg = compile_and_run(src, "divmod", {{"N", N}},
                                    {{"a", a.data(), ETL_I32, {N}},
                                     {"d", d.data(), ETL_I32, {N}},
                                     {"q", q.data(), ETL_I32, {N}},
                                     {"r", r.data(), ETL_I32, {N}}});
  REQUIRE(msg == "");
  for (int64_t i = 0; i < N; ++i) {
    int32_t x = a[size_t(i)], y = d[size_t(i)];
    int32_t fq = 0, fr = 0;
    if (y != 0) {
      fq = x / y - ((x % y != 0) && ((x < 0) != (y < 0)));
      fr = x - fq * y;
    }
    CAPTURE(x);
    CAPTURE(y);
    CHECK(q[size_t(i)] == fq);
    CHECK(r[size_t(i)] == fr);
  }
}

} // namespace
} // namespace etl

namespace etl {
namespace {
using testing::Bind;
using testing::compile_and_run;

TEST_CASE("stdlib: std.linalg matmul_tile / matvec_tile and std.nn topk on sim") {
  const char *src = R"(
import std.linalg;
import std.nn;
const TM = 16;
const TN = 16;
const TK = 8;
const KK = 3;
kernel k<M: dim, K: dim, N: dim>(a: tensor<f32>[M, K], b: tensor<f32>[K, N], v: tensor<f32>[K],
                                 c: tensor<f32>[M, N], y: tensor<f32>[N],
                                 ti: tensor<i32>[M, KK], tv: tensor<f32>[M, KK]) {
  task mm[i in 0 .. cdiv(M, TM), j in 0 .. cdiv(N, TN)] {
    store(c[i * TM .. +TM, j * TN .. +TN], matmul_tile(a, b, i * TM, j * TN, K, TM, TN, TK));
  }
  task mv[j in 0 .. cdiv(N, TN)] {
    store(y[j * TN .. +TN], matvec_tile(v, b, j * TN, K, TN, TK));
  }
  task top[i in 0 .. cdiv(M, TM)] {
    let x = load(a[i * TM .. +TM, 0 .. +TN], pad = -inf);
    store(ti[i * TM .. +TM, 0 .. +KK], topk_indices(x, KK));
    store(tv[i * TM .. +TM, 0 .. +KK], topk_values(x, KK));
  }
}
)";
  const int64_t M = 20, K = 13, N = 18, KKv = 3, TNv = 16;
  std::vector<float> a(M * K), b(K * N), v(K), c(M * N, -1), y(N, -1), tv(M * KKv, -1);
  std::vector<int32_t> ti(M * KKv, -1);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(int(i * 37 % 23) - 11) / 4.f; // distinct enough per row, some ties
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(int(i * 11 % 7) - 3) / 2.f;
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = float(int(i % 5) - 2);
  std::string msg = compile_and_run(src, "linalg_topk", {{"M", M}, {"K", K}, {"N", N}},
                                    {{"a", a.data(), ETL_F32, {M, K}},
                                     {"b", b.data(), ETL_F32, {K, N}},
                                     {"v", v.data(), ETL_F32, {K}},
                                     {"c", c.data(), ETL_F32, {M, N}},
                                     {"y", y.data(), ETL_F32, {N}},
                                     {"ti", ti.data(), ETL_I32, {M, KKv}},
                                     {"tv", tv.data(), ETL_F32, {M, KKv}}});
  REQUIRE(msg == "");
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += a[size_t(i * K + k)] * b[size_t(k * N + j)];
      CHECK(c[size_t(i * N + j)] == doctest::Approx(s).epsilon(1e-5));
    }
  for (int64_t j = 0; j < N; ++j) {
    float s = 0;
    for (int64_t k = 0; k < K; ++k)
      s += v[size_t(k)] * b[size_t(k * N + j)];
    CHECK(y[size_t(j)] == doctest::Approx(s).epsilon(1e-5));
  }
  // Top-3 of the first min(K, TN) columns of each row (the rest are -inf pad).
  for (int64_t i = 0; i < M; ++i) {
    std::vector<bool> taken(size_t(TNv), false);
    for (int64_t s = 0; s < KKv; ++s) {
      int64_t best = -1;
      for (int64_t k = 0; k < std::min(K, TNv); ++k)
        if (!taken[size_t(k)] && (best < 0 || a[size_t(i * K + k)] > a[size_t(i * K + best)]))
          best = k;
      taken[size_t(best)] = true;
      CAPTURE(i);
      CAPTURE(s);
      CHECK(ti[size_t(i * KKv + s)] == best);
      CHECK(tv[size_t(i * KKv + s)] == a[size_t(i * K + best)]);
    }
  }
}

} // namespace
} // namespace etl

namespace etl {
namespace {
using testing::Bind;
using testing::compile_and_run;

TEST_CASE("reshape keeps the row-major order: row maxima of a reshaped vector") {
  const char *src = R"(
kernel rows<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N]) {
  task t[i in 0 .. cdiv(N, 48)] {
    let m = reshape(load(x[i * 48 .. +48]), 6, 8);
    store(y[i * 48 .. +48], reshape(m - expand(max(m, axis = 1), axis = 1), 48));
  }
}
)";
  const int64_t N = 96;
  std::vector<float> x(N), y(N, -1);
  for (int64_t i = 0; i < N; ++i)
    x[size_t(i)] = float((i * 7) % 13);
  REQUIRE(compile_and_run(src, "reshape", {{"N", N}},
                          {{"x", x.data(), ETL_F32, {N}}, {"y", y.data(), ETL_F32, {N}}}) == "");
  for (int64_t r = 0; r < N / 8; ++r) {
    float m = -1;
    for (int64_t c = 0; c < 8; ++c)
      m = std::max(m, x[size_t(r * 8 + c)]);
    for (int64_t c = 0; c < 8; ++c)
      CHECK(y[size_t(r * 8 + c)] == x[size_t(r * 8 + c)] - m);
  }
}

} // namespace
} // namespace etl

namespace etl {
namespace {

TEST_CASE("let binds index values, including element reads, and they index slices") {
  const char *src = R"(
const TM = 16;
kernel k<M: dim>(x: tensor<f32>[M], off: tensor<i64>[1], y: tensor<f32>[M]) {
  task t[i in 0 .. cdiv(M, TM)] {
    let row0 = i * TM;
    let o = off[0];
    store(y[row0 .. +TM], load(x[row0 + o .. +TM], pad = -1.0) + cast<f32>(arange<i32>[TM] * 0 + o));
  }
}
)";
  const int64_t M = 40;
  std::vector<float> x(M), y(M, 0);
  std::vector<int64_t> off = {3}; // an i64 element read
  for (int64_t i = 0; i < M; ++i)
    x[size_t(i)] = float(i);
  REQUIRE(compile_and_run(src, "index_let", {{"M", M}},
                          {{"x", x.data(), ETL_F32, {M}},
                           {"off", off.data(), ETL_I64, {1}},
                           {"y", y.data(), ETL_F32, {M}}}) == "");
  for (int64_t i = 0; i < M; ++i)
    CHECK(y[size_t(i)] == (i + 3 < M ? float(i + 3) : -1.f) + 3.f);
}

} // namespace
} // namespace etl

namespace etl {
namespace {

TEST_CASE("bf16 tiles compare and cumsum as floats") {
  const char *src = R"(
kernel k<N: dim>(h: tensor<bf16>[N], gt: tensor<i32>[N], cs: tensor<f32>[N]) {
  task t[u in 0 .. 1] {
    let v = load(h[0 .. +32]);
    store(gt[0 .. +32], cast<i32>(v > 0.5));
    store(cs[0 .. +32], cast<f32>(cumsum(v, axis = 0)));
  }
}
)";
  const int64_t N = 32;
  std::vector<uint16_t> h(N);
  std::vector<float> vals(N), cs(N, -1.f);
  std::vector<int32_t> gt(N, -1);
  for (int64_t i = 0; i < N; ++i) {
    vals[size_t(i)] = float(i % 5) * 0.25f; // 0 .. 1, exact in bf16
    uint32_t bits;
    std::memcpy(&bits, &vals[size_t(i)], 4);
    h[size_t(i)] = uint16_t(bits >> 16);
  }
  REQUIRE(compile_and_run(src, "bf16_cmp", {{"N", N}},
                          {{"h", h.data(), ETL_BF16, {N}},
                           {"gt", gt.data(), ETL_I32, {N}},
                           {"cs", cs.data(), ETL_F32, {N}}}) == "");
  float acc = 0.f;
  for (int64_t i = 0; i < N; ++i) {
    acc += vals[size_t(i)];
    CHECK(gt[size_t(i)] == (vals[size_t(i)] > 0.5f ? 1 : 0));
    CHECK(cs[size_t(i)] == acc);
  }
}

} // namespace
} // namespace etl
