//===- tests/unit/e2e/tile_scan_test.cpp - argmax/argmin and cumsum on the tile IR -===//
//
// What this pins: argreduce and scan bodies (lower/lower_tile_reduce.cpp)
// give the right results on sim for
// layouts whose axis bits lie in registers, lanes and warps (and a run of
// warp bits below a register bit: [1, 1024] at 128 threads), with dead
// elements (extents that are not powers of two), ties (the first extremum
// wins) and NaNs (skipped unless at index 0). Every value here is a small
// multiple of 1/4, so each prefix sum is exact in any order and compared
// bit for bit. The sim's race check runs on the 4-warp shapes (the scan's
// trips through scratch), and their shared accesses are free of bank
// conflicts in the sim profile.
//
//===----------------------------------------------------------------------===//
#include "compile_run.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace etl {
namespace {
using testing::compile_and_run;
using testing::RunOptions;

std::string program(int64_t R, int64_t C) {
  std::ostringstream s;
  s << "const R = " << R << ";\nconst C = " << C << ";\n"
    << R"(
kernel scans(x: tensor<f32>[R, C], n: tensor<i32>[R, C], am1: tensor<i32>[R],
             an0: tensor<i32>[C], am0: tensor<i32>[C], an1: tensor<i32>[R],
             cs1: tensor<f32>[R, C], cs0: tensor<i32>[R, C], cn1: tensor<i32>[R, C],
             cx0: tensor<f32>[R, C]) {
  task t[i in 0 .. 1] {
    let a = load(x[0 .. +R, 0 .. +C]);
    let b = load(n[0 .. +R, 0 .. +C]);
    store(am1[0 .. +R], argmax(a, axis = 1));
    store(an1[0 .. +R], argmin(b, axis = 1));
    store(am0[0 .. +C], argmax(b, axis = 0));
    store(an0[0 .. +C], argmin(a, axis = 0));
    store(cs1[0 .. +R, 0 .. +C], cumsum(a, axis = 1));
    store(cn1[0 .. +R, 0 .. +C], cumsum(b, axis = 1));
    store(cs0[0 .. +R, 0 .. +C], cumsum(b, axis = 0));
    store(cx0[0 .. +R, 0 .. +C], cumsum(a, axis = 0));
  }
}
)";
  return s.str();
}

/// ETL_TILE_DEBUG's route of group `t` for sim at `threads`.
std::string route(const std::string &src, unsigned threads) {
  CompileOptions o;
  o.targets = {"sim"};
  o.emit = "llvm";
  o.threads_per_cta = threads;
  std::string out, err, lines;
  int code = testing::compile_text_tile_debug(src, o, "lowering ", out, err, lines);
  INFO(err);
  REQUIRE(code == 0);
  return lines;
}

void check_shape(int64_t R, int64_t C, unsigned threads, bool nan,
                 const std::string &profile = "") {
  CAPTURE(R);
  CAPTURE(C);
  CAPTURE(threads);
  std::string src = program(R, C);
  CHECK(route(src, threads) == "lowering t: tile IR\n");
  size_t N = size_t(R * C);
  std::vector<float> x(N), cs1(N), cx0(N);
  std::vector<int32_t> n(N), cs0(N), cn1(N), am1(R), an1(R), am0(C), an0(C);
  for (size_t k = 0; k < N; ++k) {
    x[k] = float(int64_t((k * 37 + k / 7) % 23) - 11) * 0.25f; // ties in rows and columns
    n[k] = int32_t((k * 29 + k / 5) % 31) - 15;
  }
  if (nan && R >= 2 && C >= 3) {
    x[0] = std::numeric_limits<float>::quiet_NaN();             // index 0 of row 0 and column 0
    x[size_t(C) + 1] = std::numeric_limits<float>::quiet_NaN(); // skipped by row 1, column 1
  }
  RunOptions opt;
  opt.threads_per_cta = threads;
  opt.race_check = threads > 32 && profile.empty();
  opt.profile = profile;
  std::string stem = "tile_scan_" + std::to_string(R) + "x" + std::to_string(C) + "_" +
                     std::to_string(threads) + (nan ? "_nan" : "");
  std::string err = compile_and_run(src, stem, {},
                                    {{"x", x.data(), ETL_F32, {R, C}},
                                     {"n", n.data(), ETL_I32, {R, C}},
                                     {"am1", am1.data(), ETL_I32, {R}},
                                     {"an0", an0.data(), ETL_I32, {C}},
                                     {"am0", am0.data(), ETL_I32, {C}},
                                     {"an1", an1.data(), ETL_I32, {R}},
                                     {"cs1", cs1.data(), ETL_F32, {R, C}},
                                     {"cs0", cs0.data(), ETL_I32, {R, C}},
                                     {"cn1", cn1.data(), ETL_I32, {R, C}},
                                     {"cx0", cx0.data(), ETL_F32, {R, C}}},
                                    opt);
  REQUIRE_MESSAGE(err.empty(), err);
  // The reference's serial rule: start at element 0, take strictly better.
  auto arg = [](auto at, int64_t len, bool is_max) {
    int64_t best = 0;
    for (int64_t j = 1; j < len; ++j) {
      auto v = at(j), cur = at(best);
      if (is_max ? v > cur : v < cur)
        best = j;
    }
    return int32_t(best);
  };
  auto same = [](float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; };
  int bad = 0;
  // Along one axis: `lines` lines of `len` elements, element j of line l at
  // at(l, j); argmax of x (or of n when !max_x), argmin of the other, and
  // the prefix sums of x and n.
  auto check_axis = [&](int64_t lines, int64_t len, auto at, bool max_x, const int32_t *amax,
                        const int32_t *amin, const float *csx, const int32_t *csn) {
    for (int64_t l = 0; l < lines; ++l) {
      auto xl = [&](int64_t j) { return x[at(l, j)]; };
      auto nl = [&](int64_t j) { return n[at(l, j)]; };
      bad += amax[l] != (max_x ? arg(xl, len, true) : arg(nl, len, true));
      bad += amin[l] != (max_x ? arg(nl, len, false) : arg(xl, len, false));
      float s = 0;
      int32_t si = 0;
      for (int64_t j = 0; j < len; ++j) {
        s += xl(j);
        si += nl(j);
        bad += !same(csx[at(l, j)], s) || csn[at(l, j)] != si;
      }
    }
  };
  check_axis(
      R, C, [&](int64_t r, int64_t c) { return size_t(r * C + c); }, true, am1.data(), an1.data(),
      cs1.data(), cn1.data());
  check_axis(
      C, R, [&](int64_t c, int64_t r) { return size_t(r * C + c); }, false, am0.data(), an0.data(),
      cx0.data(), cs0.data());
  CHECK(bad == 0);
}

} // namespace

TEST_CASE("tile IR argmax/argmin and cumsum: one warp, registers and lanes along the axis") {
  check_shape(4, 12, 32, false); // dead elements in both axes
  check_shape(8, 64, 32, true);  // the row axis over registers and lanes; NaNs
  check_shape(33, 5, 32, false); // a long column axis
}

TEST_CASE("tile IR argmax/argmin and cumsum: four warps, warp bits along the axis") {
  check_shape(64, 8, 128, true); // rows over warps
  check_shape(16, 128, 128, false);
  check_shape(1, 1024, 128, false); // a register bit above the warp bits
  check_shape(3, 100, 128, true);
}

TEST_CASE("tile IR argmax/argmin and cumsum: the trips through scratch do not conflict on banks") {
  // Each warp's partials and block totals sit at compact slots of their
  // owners' hardware bits: a request's lanes hit consecutive words.
  for (std::pair<int64_t, int64_t> shape : {std::pair<int64_t, int64_t>{8, 128}, {64, 8}}) {
    const int64_t R = shape.first, C = shape.second; // no structured binding: CAPTURE takes R
    std::string path = std::string(ETL_TEST_BINARY_DIR) + "/e2e_programs/tile_scan_profile_" +
                       std::to_string(R) + ".json";
    check_shape(R, C, 128, false, path);
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string js = ss.str();
    size_t bank = js.find("\"bank_conflict_factor\": ");
    REQUIRE(bank != std::string::npos);
    CAPTURE(R);
    CHECK(std::stod(js.substr(bank + 24)) <= 1.1);
  }
}

} // namespace etl
