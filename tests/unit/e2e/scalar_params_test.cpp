// End-to-end tests of scalar kernel parameters (`eps: f32`, `n: i32`): one
// program per element type compiled for sim, its scalar bound with
// etlBindScalar and used in tile arithmetic, a comparison with an index and
// a `var` update; then a program whose scalars are bound again between runs.
#include "compile_run.h"
#include "driver/pipeline.h"

#include <etl/etl.h>

#include "../skip.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace etl {
namespace {
using testing::bf16_bits;
using testing::bf16_value;
using testing::Bind;
using testing::compile_and_run;
using testing::half_bits;
using testing::half_value;

/// y = x * s + s (then + 1 from a `var` when i < n), one element type.
std::string program(const char *t) {
  return std::string("kernel k<N: dim>(x: tensor<") + t + ">[N], s: " + t + ", y: tensor<" + t +
         R"(>[N]) where N % 16 == 0 {
  task t[i in 0 .. N / 16] {
    var a = load(x[i * 16 .. +16]) * s;
    a += s;
    store(y[i * 16 .. +16], a);
  }
}
)";
}

constexpr int64_t N = 64;

} // namespace

TEST_CASE("scalar params: f32 in tile arithmetic") {
  std::vector<float> x(N), y(N, -1);
  for (int64_t k = 0; k < N; ++k)
    x[size_t(k)] = float(k) * 0.25f - 3;
  float s = 1.5f;
  std::vector<testing::ScalarArg> sc = {{"s", ETL_F32, &s}};
  REQUIRE(compile_and_run(program("f32"), "scalar_f32", {{"N", N}},
                          {{"x", x.data(), ETL_F32, {N}}, {"y", y.data(), ETL_F32, {N}}}, {},
                          sc) == "");
  for (int64_t k = 0; k < N; ++k)
    CHECK(y[size_t(k)] == doctest::Approx(x[size_t(k)] * s + s));
}

TEST_CASE("scalar params: f16 and bf16 (bound as their 16 bits)") {
  for (bool bf : {false, true}) {
    CAPTURE(bf);
    std::vector<uint16_t> x(N), y(N, 0xFFFF);
    for (int64_t k = 0; k < N; ++k) {
      float v = float(k % 16) * 0.25f - 1;
      x[size_t(k)] = bf ? bf16_bits(v) : half_bits(v);
    }
    uint16_t s = bf ? bf16_bits(-0.5f) : half_bits(-0.5f);
    etlDType dt = bf ? ETL_BF16 : ETL_F16;
    std::vector<testing::ScalarArg> sc = {{"s", dt, &s}};
    REQUIRE(compile_and_run(program(bf ? "bf16" : "f16"), bf ? "scalar_bf16" : "scalar_f16",
                            {{"N", N}}, {{"x", x.data(), dt, {N}}, {"y", y.data(), dt, {N}}}, {},
                            sc) == "");
    for (int64_t k = 0; k < N; ++k) {
      float xv = bf ? bf16_value(x[size_t(k)]) : half_value(x[size_t(k)]);
      float yv = bf ? bf16_value(y[size_t(k)]) : half_value(y[size_t(k)]);
      CHECK(yv == xv * -0.5f - 0.5f); // exact in both formats
    }
  }
}

TEST_CASE("scalar params: i32 and i64, negative values and the full 64 bits") {
  {
    std::vector<int32_t> x(N), y(N, 0);
    for (int64_t k = 0; k < N; ++k)
      x[size_t(k)] = int32_t(k) - 20;
    int32_t s = -7;
    std::vector<testing::ScalarArg> sc = {{"s", ETL_I32, &s}};
    REQUIRE(compile_and_run(program("i32"), "scalar_i32", {{"N", N}},
                            {{"x", x.data(), ETL_I32, {N}}, {"y", y.data(), ETL_I32, {N}}}, {},
                            sc) == "");
    for (int64_t k = 0; k < N; ++k)
      CHECK(y[size_t(k)] == x[size_t(k)] * s + s);
  }
  {
    std::vector<int64_t> x(N), y(N, 0);
    for (int64_t k = 0; k < N; ++k)
      x[size_t(k)] = k - 20;
    int64_t s = int64_t(1) << 40; // needs the slot's upper half
    std::vector<testing::ScalarArg> sc = {{"s", ETL_I64, &s}};
    REQUIRE(compile_and_run(program("i64"), "scalar_i64", {{"N", N}},
                            {{"x", x.data(), ETL_I64, {N}}, {"y", y.data(), ETL_I64, {N}}}, {},
                            sc) == "");
    for (int64_t k = 0; k < N; ++k)
      CHECK(y[size_t(k)] == x[size_t(k)] * s + s);
  }
}

TEST_CASE("scalar params: an i32 bound compared with indices masks a store") {
  // Only the first n elements are written: a data-sized tail, known at run time.
  const char *src = R"(
kernel tail<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N], n: i32, scale: f32)
  where N % 16 == 0 {
  task t[i in 0 .. N / 16] {
    let pos = arange<i32>[16] + i * 16;
    store(y[i * 16 .. +16], load(x[i * 16 .. +16]) * scale, mask = pos < n);
  }
}
)";
  std::vector<float> x(N), y(N, -1);
  for (int64_t k = 0; k < N; ++k)
    x[size_t(k)] = float(k);
  int32_t n = 37;
  float scale = 2;
  std::vector<testing::ScalarArg> sc = {{"n", ETL_I32, &n}, {"scale", ETL_F32, &scale}};
  REQUIRE(compile_and_run(src, "scalar_tail", {{"N", N}},
                          {{"x", x.data(), ETL_F32, {N}}, {"y", y.data(), ETL_F32, {N}}}, {},
                          sc) == "");
  for (int64_t k = 0; k < N; ++k)
    CHECK(y[size_t(k)] == (k < n ? 2.0f * float(k) : -1.0f));
}

TEST_CASE("scalar params: every element type compiles for sm_80 and ptxas accepts it") {
  fs::path dir = fs::path(ETL_TEST_BINARY_DIR) / "e2e_programs";
  fs::create_directories(dir);
  for (const char *t : {"f32", "f16", "bf16", "i32", "i64"}) {
    CAPTURE(t);
    fs::path in = dir / (std::string("scalar_ptx_") + t + ".etl");
    std::ofstream(in) << program(t);
    CompileOptions co;
    co.input = in.string();
    co.targets = {"sm_80"};
    co.emit = "ptx";
    std::ostringstream out, err;
    REQUIRE_MESSAGE(compile(co, out, err) == 0, err.str());
    // the scalar is read from its slot, after N's, x's and y's: slot 11
    // (byte offset 88); scalars follow the tensors whatever the source order
    CHECK(out.str().find("+88]") != std::string::npos);
    if (std::string(ETL_PTXAS).empty()) {
      ETL_TEST_SKIP("ptxas not found at configure time: skipping PTX assembly");
      continue;
    }
    std::string ptx = "/tmp/etl-scalar-" + std::to_string(getpid()) + "-" + t + ".ptx";
    std::ofstream(ptx) << out.str();
    std::string cmd = std::string(ETL_PTXAS) + " -arch=sm_80 " + ptx + " -o /dev/null 2>&1";
    int rc = std::system(cmd.c_str());
    std::remove(ptx.c_str());
    CHECK_MESSAGE(rc == 0, "ptxas rejected the PTX for a scalar of " << t);
  }
}

TEST_CASE("scalar params: bound again between runs; unbound, wrong dtype and unknown names") {
  fs::path dir = fs::path(ETL_TEST_BINARY_DIR) / "e2e_programs";
  fs::create_directories(dir);
  fs::path in = dir / "scalar_rebind.etl", art = dir / "scalar_rebind.etlb";
  std::ofstream(in) << program("f32");
  CompileOptions co;
  co.input = in.string();
  co.output = art.string();
  co.targets = {"sim"};
  co.threads_per_cta = 32;
  std::ostringstream out, err;
  REQUIRE_MESSAGE(compile(co, out, err) == 0, err.str());

  etlContextParams params = etlContextDefaultParams();
  params.sim_workers = 2;
  etlContext ctx = nullptr;
  REQUIRE(etlContextCreate(&ctx, "sim", &params) == ETL_SUCCESS);
  etlProgram prog = nullptr;
  REQUIRE(etlProgramLoadFile(ctx, art.string().c_str(), &prog) == ETL_SUCCESS);

  int count = -1;
  REQUIRE(etlProgramNumScalars(prog, &count) == ETL_SUCCESS);
  CHECK(count == 1);
  etlScalarInfo info{};
  REQUIRE(etlProgramScalarInfo(prog, 0, &info) == ETL_SUCCESS);
  CHECK(std::string(info.name) == "s");
  CHECK(info.dtype == ETL_F32);
  CHECK(etlProgramScalarInfo(prog, 1, &info) == ETL_ERROR_INVALID_VALUE);
  CHECK(etlProgramScalarInfo(prog, 0, nullptr) == ETL_ERROR_INVALID_VALUE);
  CHECK(etlProgramNumScalars(prog, nullptr) == ETL_ERROR_INVALID_VALUE);
  REQUIRE(etlProgramNumTensors(prog, &count) == ETL_SUCCESS);
  CHECK(count == 2); // scalars are not tensors

  std::vector<float> x(N, 2), y(N, 0);
  int64_t shape[1] = {N};
  REQUIRE(etlBindDim(prog, "N", N) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(prog, "x", x.data(), ETL_F32, 1, shape) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(prog, "y", y.data(), ETL_F32, 1, shape) == ETL_SUCCESS);

  // Unbound: nothing runs, the message names the scalar.
  CHECK(etlRun(prog) == ETL_ERROR_UNBOUND);
  CHECK(std::string(etlGetLastErrorMessage()).find("scalar 's' (f32) is not bound") !=
        std::string::npos);
  CHECK(y[0] == 0);

  // Wrong dtype, unknown name, a dim's or tensor's name, NULL value: refused.
  double d = 1;
  CHECK(etlBindScalar(prog, "s", ETL_I64, &d) == ETL_ERROR_BINDING);
  CHECK(std::string(etlGetLastErrorMessage()).find("has dtype f32, bound as i64") !=
        std::string::npos);
  CHECK(etlBindScalar(prog, "eps", ETL_F32, &d) == ETL_ERROR_NOT_FOUND);
  CHECK(std::string(etlGetLastErrorMessage()).find("it has: s (f32)") != std::string::npos);
  CHECK(etlBindScalar(prog, "N", ETL_F32, &d) == ETL_ERROR_NOT_FOUND);
  CHECK(std::string(etlGetLastErrorMessage()).find("etlBindDim") != std::string::npos);
  CHECK(etlBindScalar(prog, "x", ETL_F32, &d) == ETL_ERROR_NOT_FOUND);
  CHECK(std::string(etlGetLastErrorMessage()).find("etlBindTensor") != std::string::npos);
  CHECK(etlBindScalar(prog, "s", ETL_F32, nullptr) == ETL_ERROR_INVALID_VALUE);
  CHECK(etlBindScalar(prog, nullptr, ETL_F32, &d) == ETL_ERROR_INVALID_VALUE);
  CHECK(etlBindScalar(nullptr, "s", ETL_F32, &d) == ETL_ERROR_INVALID_HANDLE);
  CHECK(etlRun(prog) == ETL_ERROR_UNBOUND); // the failed binds bound nothing

  float s = 3;
  REQUIRE(etlBindScalar(prog, "s", ETL_F32, &s) == ETL_SUCCESS);
  REQUIRE(etlRun(prog) == ETL_SUCCESS);
  CHECK(y[0] == 2 * 3 + 3);
  CHECK(y[N - 1] == 2 * 3 + 3);
  // A failed bind keeps the previous value; a new one is used by the next run.
  CHECK(etlBindScalar(prog, "s", ETL_I32, &s) == ETL_ERROR_BINDING);
  REQUIRE(etlRun(prog) == ETL_SUCCESS);
  CHECK(y[5] == 9);
  s = -0.5f;
  REQUIRE(etlBindScalar(prog, "s", ETL_F32, &s) == ETL_SUCCESS);
  REQUIRE(etlRun(prog) == ETL_SUCCESS); // the same shapes: the cached plan
  CHECK(y[5] == 2 * -0.5f - 0.5f);
  etlContextDestroy(ctx);
}

} // namespace etl
