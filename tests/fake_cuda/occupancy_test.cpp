//===- tests/fake_cuda/occupancy_test.cpp - Shared memory and residency ---===//
//
// What this covers, on the fake libcuda.so.1 (fake_cuda.h, fake_occupancy.h):
// loading a program opts its kernel in to the artifact's dynamic shared
// memory (cuFuncSetAttribute, also beyond 48 KiB) and launches with it; and
// a program whose persistent CTAs cannot all be resident at once (the
// occupancy API says so) is refused at load with a clear message instead of
// deadlocking, leaking nothing.
//
//===----------------------------------------------------------------------===//
#include "fake_harness.h"
#include "fake_occupancy.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

using fake_cuda::artifact;

/// The fake (fake_harness.h), reset, and its occupancy API answering
/// honestly again.
struct Occupancy {
  fake_cuda::Fake &f = fake_cuda::fake();
  etl_fake_cuda_occupancy_fn force =
      fake_cuda::sym<etl_fake_cuda_occupancy_fn>(f, "etl_fake_cuda_occupancy");
  etl_fake_cuda_occupancy_fail_fn fail =
      fake_cuda::sym<etl_fake_cuda_occupancy_fail_fn>(f, "etl_fake_cuda_occupancy_fail");
  etl_fake_cuda_occupancy_stats_fn stats =
      fake_cuda::sym<etl_fake_cuda_occupancy_stats_fn>(f, "etl_fake_cuda_occupancy_stats");
  Occupancy() {
    force(-1);
    fail(0);
  }
};

/// Loads big_smem.etlb (M = 128) and runs it; returns the status of the
/// first step that failed (load or run), with `ctx` left for the caller.
etlStatus load_and_run(etlContext ctx, etlStatus *load_status) {
  etlProgram prog = nullptr;
  *load_status = etlProgramLoadFile(ctx, artifact("big_smem").c_str(), &prog);
  if (*load_status != ETL_SUCCESS)
    return *load_status;
  std::vector<void *> bufs(2, nullptr);
  std::vector<float> host(128 * 128, 1.0f);
  int64_t xs[2] = {128, 128}, ys[2] = {128, 128};
  etlStatus st = etlBindDim(prog, "M", 128);
  if (!st)
    st = etlMalloc(ctx, host.size() * 4, &bufs[0]);
  if (!st)
    st = etlMalloc(ctx, host.size() * 4, &bufs[1]);
  if (!st)
    st = etlMemcpyHtoD(ctx, bufs[0], host.data(), host.size() * 4);
  if (!st)
    st = etlBindTensor(prog, "x", bufs[0], ETL_F32, 2, xs);
  if (!st)
    st = etlBindTensor(prog, "y", bufs[1], ETL_F32, 2, ys);
  if (!st)
    st = etlRun(prog);
  for (void *b : bufs)
    if (b)
      etlFree(ctx, b);
  etlProgramDestroy(prog);
  return st;
}

} // namespace

TEST_CASE("a kernel beyond 48 KiB of shared memory is opted in and launched with it") {
  Occupancy occ;
  fake_cuda::Fake &f = occ.f;
  etl_fake_cuda_stats before = f.stats();
  etlContext ctx = nullptr;
  REQUIRE(etlContextCreate(&ctx, "cuda", nullptr) == ETL_SUCCESS);
  etlStatus load = ETL_SUCCESS;
  etlStatus st = load_and_run(ctx, &load);
  INFO(etlGetLastErrorMessage());
  CHECK(load == ETL_SUCCESS);
  CHECK(st == ETL_SUCCESS);
  etl_fake_cuda_stats s = f.stats();
  etl_fake_occupancy_stats o = occ.stats();
  CHECK(f.calls("cuFuncSetAttribute") == 1);
  CHECK(o.calls >= 1);
  // a 128x128 f32 transpose's scratch (64 KiB) after the 32-byte header, beyond the
  // 48 KiB a function gets without cuFuncSetAttribute.
  CHECK(s.last_smem >= 64u * 1024u + 32u);
  CHECK(o.last_dynamic_smem == s.last_smem);
  CHECK(o.last_block_size == int(s.last_block));
  CHECK(o.last_result_blocks >= 1);
  CHECK(s.launches == 1);
  CHECK(s.violations == 0);
  CHECK(etlContextDestroy(ctx) == ETL_SUCCESS);
  CHECK(f.stats().modules == before.modules);
  CHECK(f.stats().reclaimed == 0);
}

TEST_CASE("persistent CTAs that cannot all be resident are refused at load, not deadlocked") {
  Occupancy occ;
  fake_cuda::Fake &f = occ.f;
  etl_fake_cuda_stats before = f.stats();
  etlContext ctx = nullptr;
  REQUIRE(etlContextCreate(&ctx, "cuda", nullptr) == ETL_SUCCESS);
  occ.force(0); // the occupancy API: no CTA of this kernel fits on an SM
  etlStatus load = ETL_SUCCESS;
  etlStatus st = load_and_run(ctx, &load);
  std::string msg = etlGetLastErrorMessage();
  CAPTURE(msg);
  CHECK(load == ETL_ERROR_LAUNCH_FAILED);
  CHECK(st == ETL_ERROR_LAUNCH_FAILED);
  CHECK(msg.find("needs its 132 CTAs resident at once") != std::string::npos);
  CHECK(msg.find("only 0 CTA(s)") != std::string::npos);
  CHECK(msg.find("fewer --threads or smaller tiles") != std::string::npos);
  CHECK(f.stats().launches == 0);
  CHECK(f.stats().modules == before.modules); // the module was unloaded again

  // The occupancy call itself failing is a clear error too.
  occ.force(-1);
  occ.fail(999);
  st = load_and_run(ctx, &load);
  msg = etlGetLastErrorMessage();
  CHECK(load == ETL_ERROR_LAUNCH_FAILED);
  CHECK(msg.find("cuOccupancyMaxActiveBlocksPerMultiprocessor failed") != std::string::npos);
  CHECK(msg.find("CUresult 999") != std::string::npos);
  CHECK(f.stats().modules == before.modules);

  // And the next load, with the device answering honestly, works.
  st = load_and_run(ctx, &load);
  INFO(etlGetLastErrorMessage());
  CHECK(st == ETL_SUCCESS);
  CHECK(f.stats().launches == 1);
  CHECK(f.stats().violations == 0);
  CHECK(etlContextDestroy(ctx) == ETL_SUCCESS);
  CHECK(f.stats().reclaimed == 0);
}
