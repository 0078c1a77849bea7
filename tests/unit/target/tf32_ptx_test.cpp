//===- tests/unit/target/tf32_ptx_test.cpp - tf32 dots in PTX -------------===//
//
// What this covers: `dot(a, b, precision = tf32)` of f32 tiles
// (compiler/lower/lower_tile_mma.cpp) compiled for sm_80 and sm_90
// (tests/unit/runtime/programs/mma_tf32.etl): the PTX has
// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 and cvt.rna.tf32.f32,
// ptxas accepts it with no spills, the mma calls are convergent in the LLVM
// IR; a program whose f32 dots keep the default precision has neither (the
// exact FMA path). The three K loops of programs/mma_tf32_loop.etl run on a
// cp.async ring of three stages (wait_group 1 in each loop), their raw f32
// operands rounded by cvt.rna at the fragment loads, with no spills.
//
//===----------------------------------------------------------------------===//
#include "ptx_programs.h"

#include "../skip.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <regex>

namespace fs = std::filesystem;
using namespace etl;

namespace {

const char kMma[] = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32";

std::string program() {
  return std::string(ETL_SOURCE_DIR) + "/tests/unit/runtime/programs/mma_tf32.etl";
}

/// ptxas assembles `ptx` for `target` with 0 spill bytes (skipped, saying
/// why, when ptxas was not found at configure time).
void check_assembles(const std::string &ptx, const char *target) {
  if (std::string(ETL_PTXAS).empty()) {
    ETL_TEST_SKIP("ptxas not found at configure time: skipping PTX assembly");
    return;
  }
  std::string log;
  int rc = ptxcheck::run_ptxas(ptx, target, log);
  INFO(log);
  CHECK(rc == 0);
  CHECK(log.find("bytes spill stores") != std::string::npos);
  CHECK(ptxcheck::spill_bytes(log) == 0);
}

} // namespace

TEST_CASE("tf32 dots: the PTX has mma.sync m16n8k8 tf32 and cvt.rna.tf32.f32; ptxas, 0 spills") {
  for (const char *target : {"sm_80", "sm_90"}) {
    CAPTURE(target);
    std::string ptx = ptxcheck::compile_ptx(program(), target);
    CHECK(ptxcheck::has(ptx, kMma));
    CHECK(ptxcheck::has(ptx, "cvt.rna.tf32.f32"));
    // A fragments: ldmatrix.x4 of 8 x 4 f32 (8 x 8 b16) matrices, never
    // .trans (it would swap b16 halves); B ([K, N] rows): plain loads.
    CHECK(ptxcheck::has(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
    CHECK(!ptxcheck::has(ptx, ".trans"));
    check_assembles(ptx, target);
  }
}

TEST_CASE("tf32 K loops: a cp.async ring of three stages, rounding at the fragments; 0 spills") {
  const std::string src =
      std::string(ETL_SOURCE_DIR) + "/tests/unit/runtime/programs/mma_tf32_loop.etl";
  for (const char *target : {"sm_80", "sm_90"}) {
    CAPTURE(target);
    std::string ptx = ptxcheck::compile_ptx(src, target);
    CHECK(ptxcheck::has(ptx, kMma));
    CHECK(ptxcheck::has(ptx, "cp.async.cg.shared.global"));
    // S = 3: wait_group S - 2, once per loop (the tile IR's rings,
    // tile/pipeline.cpp; task r's N = 24 too).
    size_t waits = 0;
    for (size_t at = 0; (at = ptx.find("cp.async.wait_group 1;", at)) != std::string::npos; ++at)
      ++waits;
    CHECK(waits == 3);
    CHECK(ptxcheck::has(ptx, "cvt.rna.tf32.f32"));
    CHECK(ptxcheck::has(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
    CHECK(!ptxcheck::has(ptx, ".trans"));
    check_assembles(ptx, target);
  }
}

TEST_CASE("tf32 dots: the mma calls are convergent in the LLVM IR") {
  CompileOptions o;
  o.input = program();
  o.targets = {"sm_80"};
  o.emit = "llvm";
  std::ostringstream out, err;
  REQUIRE(compile(o, out, err) == 0);
  std::string ir = out.str();
  std::regex call(R"(call .*@llvm\.nvvm\.mma\.m16n8k8\.row\.col\.tf32\(.*\) #(\d+))");
  int calls = 0;
  for (auto it = std::sregex_iterator(ir.begin(), ir.end(), call); it != std::sregex_iterator();
       ++it) {
    ++calls;
    size_t at = ir.find("attributes #" + (*it)[1].str() + " = {");
    REQUIRE(at != std::string::npos);
    CHECK(ir.substr(at, ir.find('\n', at) - at).find("convergent") != std::string::npos);
  }
  CHECK(calls >= 3); // one per dot at least (n16 blocks: two per k8 step)
  CHECK(ir.find("@llvm.nvvm.f2tf32.rna") != std::string::npos);
}

TEST_CASE("f32 dots without precision = tf32 stay on the exact FMA path") {
  fs::path src = fs::path(ETL_TEST_BINARY_DIR) / "tf32_ptx_default.etl";
  std::ofstream(src)
      << "kernel k(a: tensor<f32>[32, 16], b: tensor<f32>[16, 16], "
         "c: tensor<f32>[32, 16]) {\n"
         "  task t[i in 0 .. 1] {\n"
         "    let p = load(a[0 .. +32, 0 .. +16]);\n"
         "    let q = load(b[0 .. +16, 0 .. +16]);\n"
         "    store(c[0 .. +32, 0 .. +16], dot(p, q) + dot(p, q, precision = ieee));\n"
         "  }\n"
         "}\n";
  for (const char *target : {"sm_80", "sm_90"}) {
    CAPTURE(target);
    std::string ptx = ptxcheck::compile_ptx(src.string(), target);
    CHECK(!ptxcheck::has(ptx, "mma.sync"));
    CHECK(!ptxcheck::has(ptx, "tf32"));
    CHECK(ptxcheck::has(ptx, "fma.rn.f32")); // the FMA path's multiply-adds
  }
}
