// Tests of the driver (driver/pipeline.h) as `etlc compile` runs it: exit
// codes, dumps, nothing written on failure, and artifacts the runtime runs.
#include "driver/pipeline.h"
#include "driver_harness.h"
#include "target/target.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace etl {
namespace {

using drivertest::Result;
using drivertest::run;
using drivertest::write;

fs::path temp_dir() { return drivertest::temp_dir("driver_test"); }

const std::string kRowsum = std::string(ETL_SOURCE_DIR) + "/examples/rowsum/rowsum.etl";

TEST_CASE("etlc --version names the artifact format the runtime reads") {
  const std::string want = "artifact format " + std::to_string(etlArtifactVersion()) + ",";
  CHECK(version_text().find(want) != std::string::npos);
  // The etlc binary prints the same line.
  std::string cmd = std::string(ETL_ETLC_PATH) + " --version 2>&1";
  FILE *f = popen(cmd.c_str(), "r");
  REQUIRE(f);
  std::string out;
  char buf[256];
  while (size_t n = fread(buf, 1, sizeof buf, f))
    out.append(buf, n);
  CHECK(pclose(f) == 0);
  CHECK(out == version_text() + "\n");
  CHECK(out.find(want) != std::string::npos);
}

TEST_CASE("--target's help and validation list every target of targets.def") {
  for (const TargetDesc &t : all_targets())
    CHECK(target_help().find(t.name) != std::string::npos);
  CompileOptions o;
  o.input = kRowsum;
  o.emit = "taskgraph";
  o.targets = {"sm_70"};
  Result r = run(o);
  CHECK(r.code == 2);
  CHECK(r.err.find("expected " + target_names()) != std::string::npos);
}

TEST_CASE("etlc writes an artifact that the runtime runs on sim") {
  CompileOptions o;
  o.input = kRowsum;
  o.output = (temp_dir() / "rowsum.etlb").string();
  o.targets = {"sm_90", "sim"};
  Result r = run(o);
  INFO(r.err);
  REQUIRE(r.code == 0);

  etlContext ctx;
  etlProgram prog;
  REQUIRE(etlContextCreate(&ctx, "sim", nullptr) == ETL_SUCCESS);
  REQUIRE(etlProgramLoadFile(ctx, o.output.c_str(), &prog) == ETL_SUCCESS);
  const int64_t M = 33, N = 200;
  std::vector<float> x(M * N), y(M, -1.f);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i % 7) - 3.f;
  int64_t xs[2] = {M, N}, ys[1] = {M};
  CHECK(etlBindDim(prog, "M", M) == ETL_SUCCESS);
  CHECK(etlBindDim(prog, "N", N) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "x", x.data(), ETL_F32, 2, xs) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "y", y.data(), ETL_F32, 1, ys) == ETL_SUCCESS);
  REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
  for (int64_t m = 0; m < M; ++m) {
    float ref = 0;
    for (int64_t n = 0; n < N; ++n)
      ref += x[m * N + n];
    CHECK(std::fabs(y[m] - ref) < 1e-3f);
  }
  // A shape that breaks the tensor's declared shape is refused before launch.
  int64_t bad[1] = {M + 1};
  CHECK(etlBindTensor(prog, "y", y.data(), ETL_F32, 1, bad) == ETL_SUCCESS);
  CHECK(etlRun(prog) == ETL_ERROR_BINDING);
  etlProgramDestroy(prog);

  // The same artifact, truncated, is refused with a message.
  std::ifstream in(o.output, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  bytes.resize(bytes.size() / 2);
  CHECK(etlProgramLoadMemory(ctx, bytes.data(), bytes.size(), &prog) == ETL_ERROR_INVALID_ARTIFACT);
  CHECK(std::string(etlGetLastErrorMessage()).size() > 0);
  etlContextDestroy(ctx);
}

TEST_CASE("a program with errors exits 1 and leaves the old artifact untouched") {
  fs::path out = temp_dir() / "keep.etlb";
  write(out, "previous contents");
  CompileOptions o;
  o.input = write(temp_dir() / "broken.etl", "const TM = 16\nkernel k<M: dim>() {}\n");
  o.output = out.string();
  Result r = run(o);
  CHECK(r.code == 1);
  CHECK(r.err.find("broken.etl:1:14: error: expected ';'") != std::string::npos);
  CHECK(r.err.find("^") != std::string::npos);
  std::ifstream in(out);
  std::string kept((std::istreambuf_iterator<char>(in)), {});
  CHECK(kept == "previous contents");
}

TEST_CASE("usage and I/O errors exit 2 with a message") {
  CompileOptions o;
  o.input = kRowsum;
  o.output = (temp_dir() / "x.etlb").string();
  o.targets = {"sm_70"};
  Result r = run(o);
  CHECK(r.code == 2);
  CHECK(r.err.find("unknown target 'sm_70'") != std::string::npos);

  o.targets = {"sim"};
  o.emit = "ptx";
  r = run(o);
  CHECK(r.code == 2);
  CHECK(r.err.find("needs an sm_* target") != std::string::npos);

  o.emit = "";
  o.input = (temp_dir() / "does-not-exist.etl").string();
  r = run(o);
  CHECK(r.code == 2);
  CHECK(r.err.find("cannot read") != std::string::npos);

  o.input = kRowsum;
  o.output = (temp_dir() / "no-such-dir" / "x.etlb").string();
  r = run(o);
  CHECK(r.code == 2);
  CHECK(r.err.find("cannot write") != std::string::npos);
}

TEST_CASE("a kernel over the GPU's shared memory is the program's error (exit 1), not internal") {
  // Its reduction re-lays out a 128x256 f32 tile through 128 KiB of shared
  // scratch: within sm_90's 227 KiB, more than sm_86's 99 KiB. sema checks
  // against the targets asked for and reports it at the op (ScratchTooLarge).
  CompileOptions o;
  o.input = write(temp_dir() / "smem.etl",
                  R"(kernel k<M: dim>(x: tensor<f32>[M, 256], y: tensor<f32>[M]) {
  task t[i in 0 .. cdiv(M, 128)] {
    let a = load(x[i * 128 .. +128, 0 .. +256]);
    store(y[i * 128 .. +128], sum(a, axis = 1));
  }
}
)");
  o.output = (temp_dir() / "smem.etlb").string();
  o.targets = {"sm_90"};
  Result r = run(o);
  CHECK_MESSAGE(r.code == kExitOk, r.err);
  o.targets = {"sm_86", "sm_90"};
  r = run(o);
  CHECK(r.code == kExitProgramError);
  CHECK(r.err.find("smem.etl:4:31: error: 'sum' of a tile<f32>[128, 256] goes through shared "
                   "scratch memory: 131072 bytes, more than the 101344 bytes available") !=
        std::string::npos);
  CHECK(r.err.find("internal compiler error") == std::string::npos);
}

TEST_CASE("--emit stops after its stage and prints to the output stream") {
  CompileOptions o;
  o.input = kRowsum;
  for (const char *kind : {"ast", "taskgraph", "dot", "llvm", "ptx"}) {
    o.emit = kind;
    o.targets = {"sm_90"};
    Result r = run(o);
    INFO(kind << ": " << r.err);
    CHECK(r.code == 0);
    CHECK(!r.out.empty());
  }
  o.emit = "ptx";
  CHECK(run(o).out.find(".target sm_90") != std::string::npos);
  o.emit = "llvm";
  CHECK(run(o).out.find("etl_main") != std::string::npos);
}

TEST_CASE("--time-passes reports every stage") {
  CompileOptions o;
  o.input = kRowsum;
  o.emit = "llvm";
  o.targets = {"sim"};
  o.time_passes = true;
  Result r = run(o);
  for (const char *stage : {"parse", "sema", "taskgraph", "schedule", "backend", "total"})
    CHECK(r.err.find(stage) != std::string::npos);
}

// i64 and bf16 tensors through the artifact: the metadata records their
// element codes, the runtime checks dtypes against them and runs a gather.
TEST_CASE("etlc: a paged gather of bf16 rows through an i64 page table runs on sim") {
  CompileOptions o;
  o.input = write(temp_dir() / "paged.etl", R"(
const TM = 4;
const TK = 8;
kernel paged<M: dim, V: dim, K: dim>(pages: tensor<bf16>[V, K], table: tensor<i64>[M],
                                     y: tensor<f32>[M, K]) {
  task a[i in 0 .. cdiv(M, TM), j in 0 .. cdiv(K, TK)] {
    let r = load(table[i * TM .. +TM], pad = -1);
    let t = load(pages[r, j * TK .. +TK], pad = -1.0);
    store(y[i * TM .. +TM, j * TK .. +TK], cast<f32>(t) * 2.0);
  }
}
)");
  o.output = (temp_dir() / "paged.etlb").string();
  o.targets = {"sim"};
  Result r = run(o);
  INFO(r.err);
  REQUIRE(r.code == 0);

  etlContext ctx;
  etlProgram prog;
  REQUIRE(etlContextCreate(&ctx, "sim", nullptr) == ETL_SUCCESS);
  REQUIRE(etlProgramLoadFile(ctx, o.output.c_str(), &prog) == ETL_SUCCESS);
  const int64_t M = 6, V = 5, K = 11;
  std::vector<uint16_t> pages(V * K);
  for (size_t i = 0; i < pages.size(); ++i)
    pages[i] = uint16_t(0x3F80 + i); // 1.0, 1.0078125, ...
  std::vector<int64_t> table = {4, 0, 9, 2, -3, 4};
  std::vector<float> y(M * K, 0.f);
  int64_t ps[2] = {V, K}, ts[1] = {M}, ys[2] = {M, K};
  CHECK(etlBindDim(prog, "M", M) == ETL_SUCCESS);
  CHECK(etlBindDim(prog, "V", V) == ETL_SUCCESS);
  CHECK(etlBindDim(prog, "K", K) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "pages", pages.data(), ETL_F16, 2, ps) == ETL_ERROR_BINDING);
  CHECK(etlBindTensor(prog, "pages", pages.data(), ETL_BF16, 2, ps) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "table", table.data(), ETL_I32, 1, ts) == ETL_ERROR_BINDING);
  CHECK(etlBindTensor(prog, "table", table.data(), ETL_I64, 1, ts) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "y", y.data(), ETL_F32, 2, ys) == ETL_SUCCESS);
  REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      int64_t p = table[size_t(m)];
      float want = -2.f;
      if (p >= 0 && p < V) {
        uint32_t bits = uint32_t(pages[size_t(p * K + k)]) << 16;
        std::memcpy(&want, &bits, 4);
        want *= 2.f;
      }
      INFO("m=" << m << " k=" << k);
      CHECK(y[size_t(m * K + k)] == want);
    }
  etlProgramDestroy(prog);
  etlContextDestroy(ctx);
}

} // namespace
} // namespace etl

namespace etl {

TEST_CASE("--emit with -o writes the dump to the file, one target's worth") {
  CompileOptions o;
  o.input = std::string(ETL_SOURCE_DIR) + "/examples/rowsum/rowsum.etl";
  o.emit = "ptx";
  o.output = (temp_dir() / "rowsum.ptx").string();
  std::filesystem::remove(o.output);
  std::ostringstream out, err;
  REQUIRE(compile(o, out, err) == kExitOk);
  CHECK(out.str().empty());
  std::ifstream f(o.output);
  std::stringstream ss;
  ss << f.rdbuf();
  CHECK(ss.str().find(".entry etl_main") != std::string::npos);
  CHECK(ss.str().find("===-- target") == std::string::npos);
  // LLVM IR for sm_90 and sim would be two modules in one file.
  o.emit = "llvm";
  o.output = (temp_dir() / "rowsum.ll").string();
  std::filesystem::remove(o.output);
  std::ostringstream out2, err2;
  CHECK(compile(o, out2, err2) == kExitUsage);
  CHECK(err2.str().find("2 targets (sm_90, sim) would be written into one file") !=
        std::string::npos);
  CHECK(!std::filesystem::exists(o.output));
  o.targets = {"sim"};
  std::ostringstream out3, err3;
  CHECK(compile(o, out3, err3) == kExitOk);
  CHECK(std::filesystem::file_size(o.output) > 0);
}

TEST_CASE("-Werror turns warnings into errors, -w drops them with their notes") {
  CompileOptions o;
  o.input = std::string(ETL_SOURCE_DIR) + "/tests/diag/warn_group_may_race.etl";
  o.emit = "taskgraph";
  std::ostringstream out, err;
  CHECK(compile(o, out, err) == kExitOk);
  CHECK(err.str().find("warning: 'reversed' writes 'y'") != std::string::npos);
  CHECK(err.str().find("note:") != std::string::npos);
  o.werror = true;
  std::ostringstream out2, err2;
  CHECK(compile(o, out2, err2) == kExitProgramError);
  CHECK(err2.str().find("error: 'reversed' writes 'y'") != std::string::npos);
  CHECK(err2.str().find("[-Werror]") != std::string::npos);
  o.werror = false;
  o.no_warnings = true;
  std::ostringstream out3, err3;
  CHECK(compile(o, out3, err3) == kExitOk);
  CHECK(err3.str().empty());
}

} // namespace etl
