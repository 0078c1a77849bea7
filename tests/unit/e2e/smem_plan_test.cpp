// End-to-end test of the shared-memory allocator (compiler/tile/smem.cpp)
// on sim: a task with two cross-warp reductions per loop iteration and two
// re-layouts, where plan_shared drops the trailing barriers of the sum and
// of the last re-layout (tests/unit/tile/smem_test.cpp checks the plan).
// The body takes the tile IR path (ETL_TILE_DEBUG says so), every output
// is checked against a reference computed here (small multiples of 1/4:
// exact in any order), under the sim's race check. The sim runs a CTA's
// threads as fibers that switch only at barriers and shuffles, so a thread
// that wrote a buffer another thread still had to read would show as a
// wrong sum or max.
#include "compile_run.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace etl {
namespace {
using testing::Bind;
using testing::compile_and_run;
using testing::RunOptions;

const char *kProgram = R"(
const T = 4;
const C = 512;
kernel k<N: dim>(x: tensor<f32>[N, C], y: tensor<f32>[N], z: tensor<f32>[N]) {
  task t[i in 0 .. cdiv(N, T)] {
    var s = zeros<f32>[T];
    var m = full<f32>[T](-inf);
    for j in 0 .. 3 {
      let a = load(x[i * T .. +T, 0 .. +C]);
      s += sum(a, axis = 1);
      m = max(m, max(a, axis = 1));
    }
    store(y[i * T .. +T], s);
    store(z[i * T .. +T], m);
  }
}
)";

} // namespace

TEST_CASE("shared-memory plan: dropped barriers keep sums and maxima exact on sim") {
  std::filesystem::path dir = std::filesystem::path(ETL_TEST_BINARY_DIR) / "e2e_programs";
  std::filesystem::create_directories(dir);
  std::filesystem::path in = dir / "smem_plan_debug.etl";
  std::ofstream(in) << kProgram;
  CompileOptions o;
  o.input = in.string();
  o.output = (dir / "smem_plan_debug.etlb").string();
  o.targets = {"sim"};
  o.threads_per_cta = 256;
  std::string out, err, lines;
  REQUIRE(testing::compile_tile_debug(o, "lowering ", out, err, lines) == 0);
  CHECK(lines == "lowering t: tile IR\n");

  const int64_t N = 12, C = 512;
  std::vector<float> x(size_t(N * C)), y(size_t(N), -1.0f), z(size_t(N), -1.0f);
  for (int64_t r = 0; r < N; ++r)
    for (int64_t c = 0; c < C; ++c)
      x[size_t(r * C + c)] = float((r * 37 + c * 11) % 29 - 14) * 0.25f;
  RunOptions run;
  run.race_check = true;
  run.threads_per_cta = 256;
  std::string msg = compile_and_run(kProgram, "smem_plan", {{"N", N}},
                                    {{"x", x.data(), ETL_F32, {N, C}},
                                     {"y", y.data(), ETL_F32, {N}},
                                     {"z", z.data(), ETL_F32, {N}}},
                                    run);
  REQUIRE_MESSAGE(msg.empty(), msg);
  for (int64_t r = 0; r < N; ++r) {
    float s = 0.0f, m = -1e30f;
    for (int j = 1; j <= 3; ++j)
      for (int64_t c = 0; c < C; ++c) {
        float a = x[size_t(r * C + c)];
        s += a;
        m = std::max(m, a);
      }
    CHECK_MESSAGE(y[size_t(r)] == s, "row " << r);
    CHECK_MESSAGE(z[size_t(r)] == m, "row " << r);
  }
}

} // namespace etl
