// The simulator's warp-shuffle rendezvous (runtime/src/sim_warp.c): PTX's
// shfl.sync results for every mode and segment width, and the divergence
// reports: a lane that exits or waits at a barrier while its warp waits at
// a shuffle, lanes at different shuffles, a mask naming missing lanes.
// Each report names the operation and its source line. A compiled
// reduction runs through the real rendezvous in reduce_warps_test below.
#include "artifacts.h"
#include "sim_warp.h"

#include "etl_abi.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

/// Every lane of a 32-lane warp arrives with value 100 + lane and `b`.
etl_warp full_warp(uint32_t mode, uint32_t b, uint32_t c, uint32_t line = 7) {
  etl_warp w;
  std::memset(&w, 0, sizeof w);
  etl_warp_op op{mode, c, 0xFFFFFFFFu, line};
  for (uint32_t l = 0; l < 32; ++l)
    etl_warp_arrive(&w, l, 100 + l, &op, b);
  return w;
}

int settle(etl_warp &w, uint32_t n_lanes, const std::vector<int> &state, std::string &msg,
           uint32_t *done = nullptr) {
  char buf[512] = "";
  uint32_t d = 0;
  int rc = etl_warp_settle(&w, n_lanes, state.data(), &d, buf, sizeof buf);
  msg = buf;
  if (done)
    *done = d;
  return rc;
}

const std::vector<int> all_waiting(32, ETL_LANE_WAITING);

} // namespace

TEST_CASE("sim warp shuffle: PTX's results for bfly, up, down and idx") {
  std::string msg;
  struct Case {
    uint32_t mode, b, c;
    uint32_t (*want)(uint32_t lane);
  };
  const Case cases[] = {
      {ETL_SHFL_BFLY, 16, 31, [](uint32_t l) { return 100 + (l ^ 16); }},
      {ETL_SHFL_BFLY, 1, 31, [](uint32_t l) { return 100 + (l ^ 1); }},
      {ETL_SHFL_UP, 4, 0, [](uint32_t l) { return 100 + (l >= 4 ? l - 4 : l); }},
      {ETL_SHFL_DOWN, 8, 31, [](uint32_t l) { return 100 + (l + 8 <= 31 ? l + 8 : l); }},
      {ETL_SHFL_IDX, 5, 31, [](uint32_t) { return 105u; }},
      // segments of 8 lanes: c = ((32 - 8) << 8) | 31
      {ETL_SHFL_IDX, 2, (24u << 8) | 31u, [](uint32_t l) { return 100 + (l & ~7u) + 2; }},
      {ETL_SHFL_DOWN, 4, (24u << 8) | 31u,
       [](uint32_t l) { return 100 + ((l & 7u) + 4 <= 7 ? l + 4 : l); }},
  };
  for (const Case &c : cases) {
    CAPTURE(c.mode);
    CAPTURE(c.b);
    CAPTURE(c.c);
    etl_warp w = full_warp(c.mode, c.b, c.c);
    uint32_t done = 0;
    REQUIRE(settle(w, 32, all_waiting, msg, &done) == ETL_WARP_DONE);
    CHECK(done == 0xFFFFFFFFu);
    CHECK(w.arrived == 0u);
    int wrong = 0;
    for (uint32_t l = 0; l < 32; ++l)
      wrong += w.out[l] != c.want(l);
    CHECK(wrong == 0);
  }
}

TEST_CASE("sim warp shuffle: waits while a lane of the mask still runs") {
  etl_warp w;
  std::memset(&w, 0, sizeof w);
  etl_warp_op op{ETL_SHFL_BFLY, 31, 0xFFFFFFFFu, 12};
  for (uint32_t l = 0; l < 31; ++l)
    etl_warp_arrive(&w, l, l, &op, 1);
  std::vector<int> state = all_waiting;
  state[31] = ETL_LANE_RUNNING;
  std::string msg;
  CHECK(settle(w, 32, state, msg) == ETL_WARP_WAIT);
  etl_warp_arrive(&w, 31, 31, &op, 1);
  state[31] = ETL_LANE_WAITING;
  CHECK(settle(w, 32, state, msg) == ETL_WARP_DONE);
  CHECK(w.out[30] == 31u);
  CHECK(w.out[31] == 30u);
}

TEST_CASE("sim warp shuffle: a lane that never arrives is a divergence naming the op and line") {
  etl_warp w;
  std::memset(&w, 0, sizeof w);
  etl_warp_op op{ETL_SHFL_BFLY, 31, 0xFFFFFFFFu, 42};
  for (uint32_t l = 0; l < 32; ++l)
    if (l != 5)
      etl_warp_arrive(&w, l, l, &op, 16);
  std::vector<int> state = all_waiting;
  state[5] = ETL_LANE_GONE; // exited, or parked at a CTA barrier
  std::string msg;
  REQUIRE(settle(w, 32, state, msg) == ETL_WARP_DIVERGED);
  CHECK(msg.find("shfl.sync.bfly") != std::string::npos);
  CHECK(msg.find("line 42") != std::string::npos);
  CHECK(msg.find("lane 5 never arrives") != std::string::npos);
}

TEST_CASE("sim warp shuffle: lanes at different shuffles, or a mask of missing lanes, diverge") {
  std::string msg;
  {
    etl_warp w;
    std::memset(&w, 0, sizeof w);
    etl_warp_op a{ETL_SHFL_BFLY, 31, 0xFFFFFFFFu, 10}, b{ETL_SHFL_UP, 0, 0xFFFFFFFFu, 11};
    for (uint32_t l = 0; l < 32; ++l)
      etl_warp_arrive(&w, l, l, l == 9 ? &b : &a, 1);
    REQUIRE(settle(w, 32, all_waiting, msg) == ETL_WARP_DIVERGED);
    CHECK(msg.find("different warp shuffles") != std::string::npos);
    CHECK(msg.find("shfl.sync.up (line 11") != std::string::npos);
    CHECK(msg.find("shfl.sync.bfly (line 10") != std::string::npos);
  }
  {
    // A partial last warp of 20 lanes whose shuffle names all 32.
    etl_warp w;
    std::memset(&w, 0, sizeof w);
    etl_warp_op a{ETL_SHFL_IDX, 31, 0xFFFFFFFFu, 3};
    for (uint32_t l = 0; l < 20; ++l)
      etl_warp_arrive(&w, l, l, &a, 0);
    REQUIRE(settle(w, 20, all_waiting, msg) == ETL_WARP_DIVERGED);
    CHECK(msg.find("do not exist") != std::string::npos);
  }
  {
    // A mask of lanes 0-15: lanes 16-31 need not come, and lane 16 running is fine.
    etl_warp w;
    std::memset(&w, 0, sizeof w);
    etl_warp_op a{ETL_SHFL_BFLY, 31, 0xFFFFu, 3};
    for (uint32_t l = 0; l < 16; ++l)
      etl_warp_arrive(&w, l, l, &a, 8);
    std::vector<int> state = all_waiting;
    for (uint32_t l = 16; l < 32; ++l)
      state[l] = ETL_LANE_GONE;
    uint32_t done = 0;
    REQUIRE(settle(w, 32, state, msg, &done) == ETL_WARP_DONE);
    CHECK(done == 0xFFFFu);
    CHECK(w.out[0] == 8u);
  }
}

TEST_CASE("the divergence status has a name and a description") {
  CHECK(std::string(etlGetErrorName(ETL_ERROR_DIVERGENCE)) == "ETL_ERROR_DIVERGENCE");
  CHECK(std::string(etlGetErrorString(ETL_ERROR_DIVERGENCE)).find("shuffle") != std::string::npos);
}

TEST_CASE("sim warp shuffle: compiled row reductions run through the rendezvous") {
  std::string path = etl::testartifacts::built("reduce_warps");
  if (path.empty())
    return;
  const int64_t M = 32, TN = 128;
  for (uint32_t workers : {1u, 3u}) {
    CAPTURE(workers);
    etlContextParams params = etlContextDefaultParams();
    params.sim_workers = workers;
    params.watchdog_ms = 10000;
    etlContext ctx = nullptr;
    REQUIRE(etlContextCreate(&ctx, "sim", &params) == ETL_SUCCESS);
    etlProgram prog = nullptr;
    REQUIRE_MESSAGE(etlProgramLoadFile(ctx, path.c_str(), &prog) == ETL_SUCCESS,
                    etlGetLastErrorMessage());
    std::vector<float> x(size_t(M * TN)), s(size_t(M), NAN), cs(size_t(M * TN), NAN);
    std::vector<int32_t> am(size_t(M), -1);
    std::vector<float> peak(size_t(M / 8), NAN);
    for (size_t k = 0; k < x.size(); ++k)
      x[k] = float(int64_t((k * 37) % 29) - 14) * 0.5f;
    int64_t sx[2] = {M, TN}, sm[1] = {M};
    CHECK(etlBindDim(prog, "M", M) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "x", x.data(), ETL_F32, 2, sx) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "s", s.data(), ETL_F32, 1, sm) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "am", am.data(), ETL_I32, 1, sm) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "cs", cs.data(), ETL_F32, 2, sx) == ETL_SUCCESS);
    int64_t sp[1] = {M / 8};
    CHECK(etlBindTensor(prog, "peak", peak.data(), ETL_F32, 1, sp) == ETL_SUCCESS);
    REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
    int bad = 0;
    for (int64_t r = 0; r < M; ++r) {
      float acc = 0;
      int best = 0;
      for (int64_t c = 0; c < TN; ++c) {
        acc += x[size_t(r * TN + c)];
        bad += cs[size_t(r * TN + c)] != acc;
        if (x[size_t(r * TN + c)] > x[size_t(r * TN + best)])
          best = int(c);
      }
      bad += (s[size_t(r)] != acc) + (am[size_t(r)] != best);
    }
    for (int64_t blk = 0; blk < M / 8; ++blk)
      bad += peak[size_t(blk)] != *std::max_element(s.begin() + blk * 8, s.begin() + blk * 8 + 8);
    CHECK(bad == 0);
    etlContextDestroy(ctx);
  }
}
