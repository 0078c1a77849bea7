//===- tests/unit/target/wgmma_ptx_test.cpp - dot as wgmma on sm_90a -----===//
//
// What this covers: on `--target sm_90a` a tensor-core dot whose operands
// are ring slots and whose shape fits warpgroups (tile/mma.cpp wgmma_gap)
// lowers to wgmma.mma_async (lower/lower_tile_wgmma.cpp): examples/gemm's
// 128 x 128 x 32 bf16 K loop has, per iteration, wgmma.fence, two
// m64n128k16 wgmmas (K 32: two k16 steps) on 128B- and 64B-swizzled
// descriptors, commit_group and wait_group 0 (tile/pipeline.cpp placed
// them), no mma.sync and no ldmatrix; the dynamic shared memory is
// 1024-byte aligned; ptxas -arch=sm_90a accepts it with 0 spills. sm_90
// and sm_80 keep mma.sync (no wgmma anywhere). mlp_bf16 at its default
// tiles (TM 32 on 8 warps: not 16 rows a warp) stays on mma.sync on sm_90a;
// at -D TM=64 --threads 128 its three K loops run m64n64k16 wgmmas; both
// with ptxas's 0 spills.
//
//===----------------------------------------------------------------------===//
#include "ptx_programs.h"

#include "../skip.h"

#include <doctest/doctest.h>

#include <sstream>
#include <string>

using namespace etl;

namespace {

size_t count(const std::string &s, const std::string &what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1))
    ++n;
  return n;
}

} // namespace

TEST_CASE("gemm on sm_90a: wgmma.mma_async with fence, commit and wait in the K loop") {
  const std::string src = std::string(ETL_SOURCE_DIR) + "/examples/gemm/gemm.etl";
  const std::string ptx = ptxcheck::compile_ptx(src, "sm_90a");
  CHECK(ptx.find(".target sm_90a") != std::string::npos);
  CHECK(count(ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") == 2);
  CHECK(count(ptx, "wgmma.fence.sync.aligned;") == 1);
  CHECK(count(ptx, "wgmma.commit_group.sync.aligned;") == 1);
  CHECK(count(ptx, "wgmma.wait_group.sync.aligned 0;") == 1);
  CHECK(ptx.find("mma.sync") == std::string::npos);
  CHECK(ptx.find("ldmatrix") == std::string::npos);
  CHECK(ptx.find(".align 1024 .b8 __etl_smem") != std::string::npos);
  // In program order: fence, the wgmmas, commit, wait.
  const size_t f = ptx.find("wgmma.fence"), m = ptx.find("wgmma.mma_async"),
               c = ptx.find("wgmma.commit_group"), w = ptx.find("wgmma.wait_group");
  CHECK(f < m);
  CHECK(m < c);
  CHECK(c < w);
  for (const char *t : {"sm_90", "sm_80"}) {
    CAPTURE(t);
    const std::string p = ptxcheck::compile_ptx(src, t);
    CHECK(p.find("wgmma") == std::string::npos);
    CHECK(p.find("mma.sync.aligned.m16n8k16") != std::string::npos);
  }
  if (std::string(ETL_PTXAS).empty()) {
    ETL_TEST_SKIP("ptxas not found at configure time: skipping ptxas -arch=sm_90a");
    return;
  }
  CHECK(ptxcheck::ptxas_spills(ptx, "sm_90a") == 0);
}

TEST_CASE("mlp_bf16 on sm_90a: wgmma where 64 rows fall to each warpgroup") {
  const std::string src = std::string(ETL_SOURCE_DIR) + "/examples/mlp/mlp_bf16.etl";
  const std::string dflt = ptxcheck::compile_ptx(src, "sm_90a");
  CHECK(dflt.find("wgmma") == std::string::npos);
  CHECK(dflt.find("mma.sync.aligned.m16n8k16") != std::string::npos);
  CompileOptions o;
  o.input = src;
  o.targets = {"sm_90a"};
  o.emit = "ptx";
  o.threads_per_cta = 128;
  o.defines = {"TM=64"};
  std::ostringstream out, err;
  REQUIRE_MESSAGE(compile(o, out, err) == 0, err.str());
  const std::string ptx = out.str();
  // gate and up (K loop of TK 32: two k16 steps each), down (two k16 steps).
  CHECK(count(ptx, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16") == 6);
  CHECK(count(ptx, "wgmma.wait_group.sync.aligned 0;") == 3);
  CHECK(ptx.find("mma.sync") == std::string::npos);
  if (std::string(ETL_PTXAS).empty()) {
    ETL_TEST_SKIP("ptxas not found at configure time: skipping ptxas -arch=sm_90a");
    return;
  }
  CHECK(ptxcheck::ptxas_spills(dflt, "sm_90a") == 0);
  CHECK(ptxcheck::ptxas_spills(ptx, "sm_90a") == 0);
}
