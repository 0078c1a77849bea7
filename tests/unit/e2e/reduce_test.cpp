// End-to-end tests of the reductions and scans (compiler/lower/lower_tile_reduce.cpp):
// sum/max/min along both axes, the full sum, argmax/argmin, bool counts and
// cumsum, for tile shapes that take the warp-shuffle path (power-of-two
// rows, an outermost axis of any extent) and shapes that take the serial
// fallback, at 32 and 128 threads per CTA (one warp; four warps, so the
// cross-warp step through shared memory runs), on sim. Every output element
// is checked against a reference computed here; the data are small
// multiples of 1/4, so every sum is exact in any order.
#include "compile_run.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace etl {
namespace {
using testing::Bind;
using testing::compile_and_run;
using testing::RunOptions;

std::string program(int64_t R, int64_t C) {
  std::ostringstream s;
  s << "const R = " << R << ";\nconst C = " << C << ";\n"
    << R"(
kernel red(x: tensor<f32>[R, C], n: tensor<i32>[R, C], s1: tensor<f32>[R], mx1: tensor<f32>[R],
           mn1: tensor<f32>[R], am1: tensor<i32>[R], an1: tensor<i32>[R], c1: tensor<i32>[R],
           is1: tensor<i32>[R], cs1: tensor<f32>[R, C], s0: tensor<f32>[C], mx0: tensor<i32>[C],
           am0: tensor<i32>[C], an0: tensor<i32>[C], cs0: tensor<i32>[R, C], tot: tensor<f32>[1],
           itot: tensor<i32>[1]) {
  task t[i in 0 .. 1] {
    let a = load(x[0 .. +R, 0 .. +C]);
    let b = load(n[0 .. +R, 0 .. +C]);
    store(s1[0 .. +R], sum(a, axis = 1));
    store(mx1[0 .. +R], max(a, axis = 1));
    store(mn1[0 .. +R], min(a, axis = 1));
    store(am1[0 .. +R], argmax(a, axis = 1));
    store(an1[0 .. +R], argmin(b, axis = 1));
    store(c1[0 .. +R], sum(a > 0.0, axis = 1));
    store(is1[0 .. +R], sum(b, axis = 1));
    store(cs1[0 .. +R, 0 .. +C], cumsum(a, axis = 1));
    store(s0[0 .. +C], sum(a, axis = 0));
    store(mx0[0 .. +C], max(b, axis = 0));
    store(am0[0 .. +C], argmax(b, axis = 0));
    store(an0[0 .. +C], argmin(a, axis = 0));
    store(cs0[0 .. +R, 0 .. +C], cumsum(b, axis = 0));
    store(tot[0], sum(sum(a, axis = 1), axis = 0));
    store(itot[0], sum(sum(b, axis = 0), axis = 0));
  }
}
)";
  return s.str();
}

/// Runs every reduction of an [R, C] tile at `threads` per CTA and checks
/// each output element. `nan`: plant NaNs (element 0 of row 0, and one in
/// the middle of row 1), which argmax skips unless it is element 0.
void check_shape(int64_t R, int64_t C, unsigned threads, bool nan = false,
                 const std::string &profile = "") {
  CAPTURE(R);
  CAPTURE(C);
  CAPTURE(threads);
  size_t N = size_t(R * C);
  std::vector<float> x(N), cs1(N), s1(R), mx1(R), mn1(R), s0(C), tot(1);
  std::vector<int32_t> n(N), cs0(N), am1(R), an1(R), c1(R), is1(R), mx0(C), am0(C), an0(C), itot(1);
  for (size_t k = 0; k < N; ++k) {
    x[k] = float(int64_t((k * 37 + k / 7) % 23) - 11) * 0.25f; // ties in rows and columns
    n[k] = int32_t((k * 29 + k / 5) % 31) - 15;
  }
  if (nan && R >= 2 && C >= 3) {
    x[0] = std::numeric_limits<float>::quiet_NaN();
    x[size_t(C) + 1] = std::numeric_limits<float>::quiet_NaN();
  }
  RunOptions opt;
  opt.threads_per_cta = threads;
  opt.profile = profile;
  std::string stem = "reduce_" + std::to_string(R) + "x" + std::to_string(C) + "_" +
                     std::to_string(threads) + (nan ? "_nan" : "");
  std::string err = compile_and_run(program(R, C), stem, {},
                                    {{"x", x.data(), ETL_F32, {R, C}},
                                     {"n", n.data(), ETL_I32, {R, C}},
                                     {"s1", s1.data(), ETL_F32, {R}},
                                     {"mx1", mx1.data(), ETL_F32, {R}},
                                     {"mn1", mn1.data(), ETL_F32, {R}},
                                     {"am1", am1.data(), ETL_I32, {R}},
                                     {"an1", an1.data(), ETL_I32, {R}},
                                     {"c1", c1.data(), ETL_I32, {R}},
                                     {"is1", is1.data(), ETL_I32, {R}},
                                     {"cs1", cs1.data(), ETL_F32, {R, C}},
                                     {"s0", s0.data(), ETL_F32, {C}},
                                     {"mx0", mx0.data(), ETL_I32, {C}},
                                     {"am0", am0.data(), ETL_I32, {C}},
                                     {"an0", an0.data(), ETL_I32, {C}},
                                     {"cs0", cs0.data(), ETL_I32, {R, C}},
                                     {"tot", tot.data(), ETL_F32, {1}},
                                     {"itot", itot.data(), ETL_I32, {1}}},
                                    opt);
  REQUIRE_MESSAGE(err.empty(), err);
  auto X = [&](int64_t r, int64_t c) { return x[size_t(r * C + c)]; };
  auto Nn = [&](int64_t r, int64_t c) { return n[size_t(r * C + c)]; };
  auto same = [](float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; };
  int bad = 0;
  float all = 0;
  int32_t iall = 0;
  for (int64_t r = 0; r < R; ++r) {
    float s = 0, mx = -INFINITY, mn = INFINITY;
    int32_t is = 0, cnt = 0;
    int best = 0, lo = 0;
    for (int64_t c = 0; c < C; ++c) {
      float v = X(r, c);
      s += v;
      if (!std::isnan(v)) {
        mx = std::max(mx, v);
        mn = std::min(mn, v);
      }
      cnt += v > 0;
      is += Nn(r, c);
      if (v > X(r, best)) // the serial rule: strict, from element 0
        best = int(c);
      if (Nn(r, c) < Nn(r, lo))
        lo = int(c);
      bad += !same(cs1[size_t(r * C + c)], s);
    }
    all += s;
    iall += is;
    bad += !same(s1[size_t(r)], s) + !same(mx1[size_t(r)], mx) + !same(mn1[size_t(r)], mn);
    bad += (am1[size_t(r)] != best) + (an1[size_t(r)] != lo) + (c1[size_t(r)] != cnt) +
           (is1[size_t(r)] != is);
    if (bad) {
      INFO("first bad row ", r, ": sum ", s1[size_t(r)], " want ", s, ", max ", mx1[size_t(r)],
           " want ", mx, ", argmax ", am1[size_t(r)], " want ", best, ", argmin ", an1[size_t(r)],
           " want ", lo);
      CHECK(bad == 0);
      return;
    }
  }
  for (int64_t c = 0; c < C; ++c) {
    float s = 0;
    int32_t mx = Nn(0, c), cs = 0;
    int best = 0, lo = 0;
    for (int64_t r = 0; r < R; ++r) {
      s += X(r, c);
      mx = std::max(mx, Nn(r, c));
      cs += Nn(r, c);
      if (Nn(r, c) > Nn(best, c))
        best = int(r);
      if (X(r, c) < X(lo, c))
        lo = int(r);
      bad += cs0[size_t(r * C + c)] != cs;
    }
    bad += !same(s0[size_t(c)], s) + (mx0[size_t(c)] != mx) + (am0[size_t(c)] != best) +
           (an0[size_t(c)] != lo);
    if (bad) {
      INFO("first bad column ", c, ": sum ", s0[size_t(c)], " want ", s, ", argmax ",
           am0[size_t(c)], " want ", best, ", argmin ", an0[size_t(c)], " want ", lo);
      CHECK(bad == 0);
      return;
    }
  }
  CHECK(same(tot[0], all));
  CHECK(itot[0] == iall);
}

TEST_CASE("reductions and scans: shapes of the warp-shuffle path, one and four warps") {
  for (unsigned threads : {32u, 128u})
    for (auto [R, C] : std::vector<std::pair<int64_t, int64_t>>{
             {1, 32}, {4, 32}, {3, 64}, {2, 256}, {16, 8}, {33, 16}, {64, 4}, {5, 128}, {8, 2}})
      check_shape(R, C, threads);
  // Two and eight warps (the back end may pick other CTA sizes per target).
  for (unsigned threads : {64u, 256u})
    for (auto [R, C] :
         std::vector<std::pair<int64_t, int64_t>>{{4, 32}, {2, 512}, {33, 16}, {1, 100}})
      check_shape(R, C, threads);
}

TEST_CASE("reductions and scans: an outermost axis of any extent, and the serial fallback") {
  // [1, C]: axis 1 is outermost once the size-1 dim is gone only for the
  // full sum; [R, C] with C not a power of two reduces axis 1 serially and
  // axis 0 with shuffles when R is any extent.
  for (unsigned threads : {32u, 128u})
    for (auto [R, C] : std::vector<std::pair<int64_t, int64_t>>{
             {1, 100}, {1, 1000}, {5, 100}, {7, 33}, {3, 1}, {100, 2}, {37, 64}, {130, 1}})
      check_shape(R, C, threads);
}

TEST_CASE("argmax/argmin keep the serial tie and NaN rule on the shuffle path") {
  // Row 0 starts with a NaN (argmax answers 0), row 1 has one inside (skipped).
  for (unsigned threads : {32u, 128u}) {
    check_shape(4, 32, threads, true);
    check_shape(2, 256, threads, true);
    check_shape(3, 100, threads, true); // serial fallback, same answers
  }
}

TEST_CASE("the sim profile counts warp shuffles, and the reduction's shared accesses do not "
          "conflict") {
  std::string path = std::string(ETL_TEST_BINARY_DIR) + "/e2e_programs/reduce_profile.json";
  check_shape(8, 128, 128, false, path);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string js = ss.str();
  size_t at = js.find("\"shuffles\": ");
  REQUIRE(at != std::string::npos);
  long shuffles = std::stol(js.substr(at + 12));
  // per task: at least the 7 butterflies of one row sum in each of 4 warps
  CHECK(shuffles >= 28);
  size_t bank = js.find("\"bank_conflict_factor\": ");
  REQUIRE(bank != std::string::npos);
  double factor = std::stod(js.substr(bank + 24));
  CHECK(factor <= 1.1);
}

} // namespace
} // namespace etl
