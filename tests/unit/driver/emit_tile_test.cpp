// `etlc compile --emit=tile`: both dumps with every layout, remarks on
// stderr (never errors, also under -Werror), the stage timed by
// --time-passes, the dump written by -o, and the kind listed in --help.
#include "driver/pipeline.h"
#include "driver_harness.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using namespace etl;

namespace {

using drivertest::Result;
using drivertest::run;

std::string read_file(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// examples/rowsum without its `where N % 4 == 0` (same lines), so that
/// its load of x is narrow and remarked on.
CompileOptions tile_opts() {
  std::string s = read_file(std::string(ETL_SOURCE_DIR) + "/examples/rowsum/rowsum.etl");
  const std::string fact = " where N % 4 == 0";
  size_t at = s.find(fact);
  REQUIRE(at != std::string::npos);
  s.erase(at, fact.size());
  fs::path dir = fs::path(ETL_TEST_BINARY_DIR) / "emit_tile_test" / "nofact";
  fs::create_directories(dir);
  std::ofstream((dir / "rowsum.etl").string()) << s;
  CompileOptions o;
  o.input = (dir / "rowsum.etl").string();
  o.emit = "tile";
  return o;
}

} // namespace

TEST_CASE("--emit=tile prints the IR before and after layout assignment") {
  Result r = run(tile_opts());
  CHECK(r.code == 0);
  size_t before = r.out.find("// ---- tile IR as built ----");
  size_t after = r.out.find("// ---- after layout assignment ----");
  REQUIRE(before != std::string::npos);
  REQUIRE(after != std::string::npos);
  CHECK(before < after);
  // Layouts only after assignment, each defined once per task and used.
  CHECK(r.out.substr(0, after).find("#L0") == std::string::npos);
  CHECK(r.out.find("#L0 = ll<16x128 ", after) != std::string::npos);
  CHECK(r.out.find("tile<16x128xf32, #L0>", after) != std::string::npos);
  CHECK(r.out.find("reduce sum %0, axis=1 : tile<16xf32, #L1>", after) != std::string::npos);
  // The remark goes to stderr with a caret, and is no error.
  CHECK(r.err.find("rowsum.etl:18:13: remark: load of 'x' uses 32-bit accesses") !=
        std::string::npos);
  CHECK(r.err.find("^~~~") != std::string::npos);
}

TEST_CASE("--emit=tile: the shipped rowsum, softmax and gemv carry the facts, no narrow remark") {
  for (const char *ex : {"rowsum", "softmax", "gemv"}) {
    CAPTURE(ex);
    CompileOptions o;
    o.input = std::string(ETL_SOURCE_DIR) + "/examples/" + ex + "/" + ex + ".etl";
    o.emit = "tile";
    Result r = run(o);
    CHECK(r.code == 0);
    CHECK(r.err.find("remark:") == std::string::npos);
    CHECK(r.out.find("(128-bit)") != std::string::npos);
    CHECK(r.out.find("narrowed") == std::string::npos);
  }
}

TEST_CASE("--emit=tile: remarks stay remarks under -Werror; -w keeps them") {
  CompileOptions o = tile_opts();
  o.werror = true;
  Result r = run(o);
  CHECK(r.code == 0);
  CHECK(r.err.find("remark:") != std::string::npos);
  CHECK(r.err.find("error") == std::string::npos);
}

TEST_CASE("--emit=tile --time-passes times the tile stages") {
  CompileOptions o = tile_opts();
  o.time_passes = true;
  Result r = run(o);
  CHECK(r.code == 0);
  for (const char *step : {"  tile-build ", "  tile-layout ", "  tile-pipeline ", "  tile-smem "})
    CHECK(r.err.find(step) != std::string::npos);
  CHECK(r.err.find("  backend ") == std::string::npos); // stops before the back end
}

TEST_CASE("--emit=tile -o FILE writes the dump; a program with errors prints no IR") {
  fs::path dir = fs::path(ETL_TEST_BINARY_DIR) / "emit_tile_test";
  fs::create_directories(dir);
  CompileOptions o = tile_opts();
  o.output = (dir / "rowsum.tile").string();
  fs::remove(o.output);
  Result r = run(o);
  CHECK(r.code == 0);
  std::ifstream in(o.output);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str().find("// ---- after layout assignment ----") != std::string::npos);

  std::string bad = (dir / "bad.etl").string();
  std::ofstream(bad) << "kernel k<N: dim>(x: tensor<f32>[N]) {\n  task t[i in 0 .. N] {\n"
                        "    store(x[i .. +1], load(y[i .. +1]));\n  }\n}\n";
  CompileOptions b = tile_opts();
  b.input = bad;
  Result rb = run(b);
  CHECK(rb.code == 1);
  CHECK(rb.out.empty());
  CHECK(rb.err.find("undefined name 'y'") != std::string::npos);
}

TEST_CASE("etlc --help lists --emit=tile") {
  std::string cmd = std::string(ETL_ETLC_PATH) + " compile --help 2>&1";
  FILE *f = popen(cmd.c_str(), "r");
  REQUIRE(f);
  std::string out;
  char buf[256];
  while (size_t n = fread(buf, 1, sizeof buf, f))
    out.append(buf, n);
  pclose(f);
  CHECK(out.find("tile: the tile IR") != std::string::npos);
}

TEST_CASE("--emit=tile shows atomics: kind, slice, values, old values and their writers") {
  std::string path = (fs::temp_directory_path() / "etl_emit_tile_atomic.etl").string();
  std::ofstream(path)
      << "kernel k<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N], c: tensor<i32>[N],\n"
         "                 o: tensor<i32>[N]) where N % 64 == 0 {\n"
         "  task t[i in 0 .. N / 64] {\n"
         "    atomic_add(y[0], load(x[i * 64]));\n"
         "    store(o[i * 64 .. +64], atomic_cas(c[i * 64 .. +64], 0, 1));\n"
         "  }\n"
         "}\n";
  CompileOptions o;
  o.input = path;
  o.emit = "tile";
  Result r = run(o);
  std::remove(path.c_str());
  INFO(r.err);
  REQUIRE(r.code == 0);
  // A statement has no result; a value gives the old values in the
  // values' layout, one writer per replica group, copies in other warps
  // through a shared-memory buffer. `i in 0 .. N / 64` with N % 64 == 0
  // tiles c exactly: no bounds test.
  CHECK(r.out.find("  atomic add y[fix(0)], %0\n") != std::string::npos);
  CHECK(r.out.find("%5 = atomic cas c[range(64*i, 64)], %2, %4 : tile<64xi32, #L0> {vec=1 "
                   "(32-bit), bounds=[in]} {pred: one writer per replica group} "
                   "{smem=#S0}") != std::string::npos);
  CHECK(r.out.find("store o[range(64*i, 64)], %5") != std::string::npos);
}
