//===- tests/unit/target/mma_warptile_test.cpp - Warp tiles in PTX ---------===//
//
// What this covers: the warp tiles of the pipelined K loops, now on the
// tile IR (mma_layout's col_warps, mma_dot_col_warps in tile/mma.cpp).
// examples/gemm (128 x 128 tile, 8 warps: a 32 x 64 warp tile each, 3
// ldmatrix per 8 mma, checked below) loads each k16 step's A and B
// fragments once per warp tile: at most one ldmatrix per two mma in the PTX
// of the K loop. tests/unit/runtime/programs/mma_warptile.etl (64 x 64, two
// dots sharing b: a 16 x 32 warp tile per accumulator) loads them once per
// dot: 3 ldmatrix per 4 mma (one per 2 would do if the two dots shared b's
// fragments; the tile IR reads each dot's operands by its own ldmatrix).
// 0 ptxas spills on sm_80 and sm_90. Their
// sim results (bit for bit on integer data): sim_mma_test.cpp and the gemm
// example's tests; the sim's ldmatrix count: example_gemm_tensor_core_share.
//
//===----------------------------------------------------------------------===//
#include "ptx_programs.h"

#include "../skip.h"

#include <doctest/doctest.h>

#include <string>

using namespace etl;

namespace {

size_t count(const std::string &s, const char *what) {
  size_t n = 0;
  for (size_t at = 0; (at = s.find(what, at)) != std::string::npos; ++at)
    ++n;
  return n;
}

} // namespace

TEST_CASE("f16/bf16 dots: a pipelined K loop's warp tiles issue at most one ldmatrix per two "
          "mma (gemm; 3 per 4 with two dots), without spills") {
  struct Case {
    const char *path;
    size_t ldm_per_4_mma;
  };
  for (const Case &c : {Case{"examples/gemm/gemm.etl", 2},
                        Case{"tests/unit/runtime/programs/mma_warptile.etl", 3}})
    for (const char *target : {"sm_80", "sm_90"}) {
      const char *path = c.path;
      CAPTURE(path);
      CAPTURE(target);
      std::string ptx = ptxcheck::compile_ptx(std::string(ETL_SOURCE_DIR) + "/" + path, target);
      // Every ldmatrix and mma of these programs is in the K loop (the
      // result goes back through st.shared, not fragments).
      const size_t ldm = count(ptx, "ldmatrix.sync.aligned"), mma = count(ptx, "mma.sync.aligned");
      CHECK(mma >= 8);
      CHECK(4 * ldm <= c.ldm_per_4_mma * mma);
      long spills = ptxcheck::ptxas_spills(ptx, target);
      if (spills < 0) {
        ETL_TEST_SKIP("ptxas not found at configure time: skipping the spill check of " << path);
        continue;
      }
      CHECK(spills == 0);
    }
}

TEST_CASE("examples/gemm: 32 x 64 warp tiles, 3 ldmatrix per 8 mma, within 255 registers and "
          "without spills on sm_80 and sm_90") {
  for (const char *target : {"sm_80", "sm_90"}) {
    CAPTURE(target);
    std::string ptx =
        ptxcheck::compile_ptx(std::string(ETL_SOURCE_DIR) + "/examples/gemm/gemm.etl", target);
    // Per warp and k16: 2 A + 4 B ldmatrix.x4 for 2 x 4 units of 2 n8 mma;
    // two k16 per 32-wide K slice, the loop body's code once.
    CHECK(count(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared") == 4);
    CHECK(count(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared") == 8);
    CHECK(count(ptx, "mma.sync.aligned") == 32);
    // The accumulators persist across a three-stage ring (wait_group S - 2).
    CHECK(count(ptx, "cp.async.wait_group 1;") == 1);
    // 64 accumulator registers plus the 64 of the result: no spill only
    // while their offsets stay in the task (the ring body's opaque thread
    // index, Machine::opaque_zero; without it ptxas spilled 336 / 592 bytes on sm_80 / sm_90).
    long spills = ptxcheck::ptxas_spills(ptx, target);
    if (spills < 0) {
      ETL_TEST_SKIP("ptxas not found at configure time: skipping the spill check");
      continue;
    }
    CHECK(spills == 0);
  }
}
