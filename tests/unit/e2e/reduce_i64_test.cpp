//===- tests/unit/e2e/reduce_i64_test.cpp - i64 and bool reductions -------===//
//
// What this pins: sum/max/min, argmax/argmin and cumsum of i64 tiles (whose
// registers cross lanes as two 32-bit shuffles, BodyLowerer::shuffle_reg, and
// warps through 8-byte scratch slots), and argmax of a bool tile, on the
// tile IR at 1 and 4 warps, against references computed here. The values
// straddle 2^32 and are negative too, so a lost high half or a signed/
// unsigned mix-up shows.
//
//===----------------------------------------------------------------------===//
#include "compile_run.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

using namespace etl;
using namespace etl::testing;

namespace {

constexpr const char *kSrc = R"(
const TM = 4;
const TN = 64;
kernel r<M: dim>(x: tensor<i64>[M, TN], s: tensor<i64>[M], mx: tensor<i64>[M],
                 mn: tensor<i64>[M], am: tensor<i32>[M], an: tensor<i32>[M],
                 bm: tensor<i32>[M], cs: tensor<i64>[M, TN]) where M % TM == 0 {
  task t[i in 0 .. M / TM] {
    let v = load(x[i * TM .. +TM, 0 .. +TN]);
    store(s[i * TM .. +TM], sum(v, axis = 1));
    store(mx[i * TM .. +TM], max(v, axis = 1));
    store(mn[i * TM .. +TM], min(v, axis = 1));
    store(am[i * TM .. +TM], argmax(v, axis = 1));
    store(an[i * TM .. +TM], argmin(v, axis = 1));
    store(bm[i * TM .. +TM], argmax(v > 4294967296, axis = 1));
    store(cs[i * TM .. +TM, 0 .. +TN], cumsum(v, axis = 1));
  }
}
)";

} // namespace

TEST_CASE("reductions of i64 tiles and argmax of a bool tile, at 1 and 4 warps") {
  const int64_t M = 8, N = 64;
  std::vector<int64_t> x(size_t(M * N));
  for (int64_t k = 0; k < M * N; ++k) // spread over +-2^40, distinct per row
    x[size_t(k)] = (k * 2654435761LL % 2199023255552LL) - 1099511627776LL + k;
  const size_t rows = size_t(M), all = size_t(M * N);
  std::vector<int64_t> ws(rows), wmx(rows), wmn(rows), wcs(all);
  std::vector<int32_t> wam(rows), wan(rows), wbm(rows);
  for (int64_t m = 0; m < M; ++m) {
    const int64_t *row = &x[size_t(m * N)];
    int64_t acc = 0;
    for (int64_t n = 0; n < N; ++n) {
      acc += row[n];
      wcs[size_t(m * N + n)] = acc;
    }
    ws[size_t(m)] = acc;
    wam[size_t(m)] = int32_t(std::max_element(row, row + N) - row); // first maximum
    wan[size_t(m)] = int32_t(std::min_element(row, row + N) - row);
    wmx[size_t(m)] = row[wam[size_t(m)]];
    wmn[size_t(m)] = row[wan[size_t(m)]];
    int32_t first = 0; // argmax of a bool: the first true, or 0
    for (int64_t n = N - 1; n >= 0; --n)
      if (row[n] > 4294967296LL)
        first = int32_t(n);
    wbm[size_t(m)] = first;
  }
  for (unsigned threads : {32u, 128u}) {
    CAPTURE(threads);
    std::vector<int64_t> s(rows, -1), mx(rows, -1), mn(rows, -1), cs(all, -1);
    std::vector<int32_t> am(rows, -1), an(rows, -1), bm(rows, -1);
    RunOptions ro;
    ro.threads_per_cta = threads;
    std::string err = compile_and_run(kSrc, "reduce_i64", {{"M", M}},
                                      {{"x", x.data(), ETL_I64, {M, N}},
                                       {"s", s.data(), ETL_I64, {M}},
                                       {"mx", mx.data(), ETL_I64, {M}},
                                       {"mn", mn.data(), ETL_I64, {M}},
                                       {"am", am.data(), ETL_I32, {M}},
                                       {"an", an.data(), ETL_I32, {M}},
                                       {"bm", bm.data(), ETL_I32, {M}},
                                       {"cs", cs.data(), ETL_I64, {M, N}}},
                                      ro);
    REQUIRE_MESSAGE(err.empty(), err);
    CHECK(s == ws);
    CHECK(mx == wmx);
    CHECK(mn == wmn);
    CHECK(am == wam);
    CHECK(an == wan);
    CHECK(bm == wbm);
    CHECK(cs == wcs);
  }
}
