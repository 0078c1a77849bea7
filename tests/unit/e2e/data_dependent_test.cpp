// Data-dependent waits end to end on sim: an event index read from a tensor
// (`waits E[idx[0]]`), evaluated when the task waits, in clause order;
// range-checked on the device (the error names task, event and value); and
// a program whose only cycle goes through data, which compiles and ends in
// the watchdog's report, leaving the context usable.
#include "driver/pipeline.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace etl {
namespace {

/// Compiles `text` for sim; returns the artifact path ("" on failure, with
/// the diagnostics in `err`).
std::string compile_sim(const std::string &text, const std::string &stem, std::string &err) {
  fs::path dir = fs::path(ETL_TEST_BINARY_DIR) / "data_dependent_test";
  fs::create_directories(dir);
  fs::path in = dir / (stem + ".etl");
  std::ofstream(in) << text;
  CompileOptions o;
  o.input = in.string();
  o.output = (dir / (stem + ".etlb")).string();
  o.targets = {"sim"};
  o.threads_per_cta = 32;
  std::ostringstream out, e;
  int code = compile(o, out, e);
  err = e.str();
  return code == 0 ? o.output : "";
}

// `gate` waits R[0] first (init has then copied src into idx), then E[idx[0]].
const char *kGate = R"(
kernel dd<N: dim>(src: tensor<i32>[1], x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[1]) {
  buffer idx: tensor<i32>[1];
  event R[1];
  event E[N];
  task init[i in 0 .. 1] notifies R[0] {
    store(idx[0 .. +1], load(src[0 .. +1]));
  }
  task produce[i in 0 .. N] notifies E[i] {
    store(y[i .. +1], load(x[i .. +1]) * 2.0);
  }
  task gate[i in 0 .. 1] waits R[0], E[idx[0]] {
    store(out[0 .. +1], full<f32>[1](1.0));
  }
}
)";

// The only cycle goes through data: gate waits E[idx[0]], every E[i] is
// notified by produce[i], which waits on gate.
const char *kDeadlock = R"(
kernel dead<N: dim>(idx: tensor<i32>[1], x: tensor<f32>[N]) {
  event E[N];
  event G[1];
  task gate[i in 0 .. 1] waits E[idx[0]] notifies G[0] {
    store(x[0 .. +1], load(x[0 .. +1]));
  }
  task produce[i in 0 .. N] waits G[0] notifies E[i] {
    store(x[i .. +1], load(x[i .. +1]) + 1.0);
  }
}
)";

struct Ctx {
  etlContext ctx = nullptr;
  explicit Ctx(uint32_t workers, uint32_t watchdog_ms) {
    etlContextParams params = etlContextDefaultParams();
    params.sim_workers = workers;
    params.watchdog_ms = watchdog_ms;
    REQUIRE(etlContextCreate(&ctx, "sim", &params) == ETL_SUCCESS);
  }
  ~Ctx() { etlContextDestroy(ctx); }
};

TEST_CASE("data-dependent wait: evaluated after the earlier waits, range-checked on the device") {
  std::string err;
  std::string path = compile_sim(kGate, "gate", err);
  INFO(err);
  REQUIRE(!path.empty());
  Ctx c(3, 5000);
  etlProgram prog = nullptr;
  REQUIRE(etlProgramLoadFile(c.ctx, path.c_str(), &prog) == ETL_SUCCESS);
  const int64_t N = 9;
  std::vector<float> x(N, 1.5f), y(N, 0.f), out(1, 0.f);
  std::vector<int32_t> src(1, 4);
  int64_t sn[1] = {N}, s1[1] = {1};
  REQUIRE(etlBindDim(prog, "N", N) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(prog, "src", src.data(), ETL_I32, 1, s1) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(prog, "x", x.data(), ETL_F32, 1, sn) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(prog, "y", y.data(), ETL_F32, 1, sn) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(prog, "out", out.data(), ETL_F32, 1, s1) == ETL_SUCCESS);
  for (int32_t good : {0, 4, 8}) {
    src[0] = good;
    out[0] = 0.f;
    CHECK_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
    CHECK(out[0] == 1.f);
    CHECK(y[size_t(N - 1)] == 3.f);
  }
  for (int32_t bad : {9, -1, 1000}) {
    src[0] = bad;
    out[0] = 0.f;
    CHECK(etlRun(prog) == ETL_ERROR_BINDING);
    std::string msg = etlGetLastErrorMessage();
    INFO(msg);
    CHECK(msg.find("task gate[0]") != std::string::npos);
    CHECK(msg.find("event 'E'") != std::string::npos);
    CHECK(msg.find("at index " + std::to_string(bad)) != std::string::npos);
    CHECK(msg.find("outside [0, 9)") != std::string::npos);
    CHECK(out[0] == 0.f); // gate's body did not run
  }
  src[0] = 2; // and the program still runs afterwards
  CHECK_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
  CHECK(out[0] == 1.f);
  etlProgramDestroy(prog);
}

TEST_CASE("data-dependent notify out of range: the error names the notify, not a wait") {
  const char *src = R"(
kernel dn<N: dim>(dst: tensor<i32>[N], x: tensor<f32>[N], z: tensor<f32>[N]) {
  event E[N];
  task scatter[i in 0 .. N] notifies E[dst[i]] {
    store(z[i .. +1], load(x[i .. +1]));
  }
  task after[i in 0 .. 1] waits E[*] {
    store(x[0 .. +1], zeros<f32>[1]);
  }
}
)";
  std::string err;
  std::string path = compile_sim(src, "notify_range", err);
  INFO(err);
  REQUIRE(!path.empty());
  Ctx c(2, 5000);
  etlProgram prog = nullptr;
  REQUIRE(etlProgramLoadFile(c.ctx, path.c_str(), &prog) == ETL_SUCCESS);
  const int64_t N = 6;
  std::vector<float> x(N, 1.f), z(N, 0.f);
  std::vector<int32_t> dst = {0, 1, 2, 3, 4, 5};
  dst[3] = 17;
  int64_t sn[1] = {N};
  REQUIRE(etlBindDim(prog, "N", N) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(prog, "dst", dst.data(), ETL_I32, 1, sn) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(prog, "x", x.data(), ETL_F32, 1, sn) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(prog, "z", z.data(), ETL_F32, 1, sn) == ETL_SUCCESS);
  CHECK(etlRun(prog) == ETL_ERROR_BINDING);
  std::string msg = etlGetLastErrorMessage();
  INFO(msg);
  CHECK(msg.find("task scatter[3] notifies event 'E' at index 17") != std::string::npos);
  CHECK(msg.find("waits") == std::string::npos);
  etlProgramDestroy(prog);
}

TEST_CASE(
    "a cycle through data compiles, ends in the watchdog's report, and the context lives on") {
  std::string err;
  std::string dead = compile_sim(kDeadlock, "deadlock", err);
  INFO(err);
  REQUIRE(!dead.empty());
  std::string gate = compile_sim(kGate, "gate_after", err);
  REQUIRE(!gate.empty());
  Ctx c(2, 300);
  etlProgram pd = nullptr, pg = nullptr;
  REQUIRE(etlProgramLoadFile(c.ctx, dead.c_str(), &pd) == ETL_SUCCESS);
  REQUIRE(etlProgramLoadFile(c.ctx, gate.c_str(), &pg) == ETL_SUCCESS);
  const int64_t N = 4;
  std::vector<float> x(N, 0.f);
  std::vector<int32_t> idx(1, 2);
  int64_t sn[1] = {N}, s1[1] = {1};
  REQUIRE(etlBindDim(pd, "N", N) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(pd, "idx", idx.data(), ETL_I32, 1, s1) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(pd, "x", x.data(), ETL_F32, 1, sn) == ETL_SUCCESS);
  // The watchdog ends it (300 ms); a hang would be ctest's timeout, not an
  // assertion on the time a loaded machine took.
  CHECK(etlRun(pd) == ETL_ERROR_TIMEOUT);
  std::string msg = etlGetLastErrorMessage();
  INFO(msg);
  CHECK(msg.find("watchdog") != std::string::npos);
  CHECK(msg.find("E[2]=1") != std::string::npos); // pending, one notification missing
  CHECK(msg.find("G[0]=1") != std::string::npos);
  CHECK(msg.find("gate[0]") != std::string::npos); // the task waiting on it
  // Same context: another program runs.
  std::vector<float> gx(3, 1.f), gy(3, 0.f), gout(1, 0.f);
  std::vector<int32_t> src(1, 1);
  int64_t s3[1] = {3};
  REQUIRE(etlBindDim(pg, "N", 3) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(pg, "src", src.data(), ETL_I32, 1, s1) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(pg, "x", gx.data(), ETL_F32, 1, s3) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(pg, "y", gy.data(), ETL_F32, 1, s3) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(pg, "out", gout.data(), ETL_F32, 1, s1) == ETL_SUCCESS);
  CHECK_MESSAGE(etlRun(pg) == ETL_SUCCESS, etlGetLastErrorMessage());
  CHECK(gout[0] == 1.f);
  etlProgramDestroy(pd);
  etlProgramDestroy(pg);
}

// A range that reads data: expert[e, m] for m < min(cnt[e], T / TM), cnt
// copied from `count` by prep (so the expanders must run after prep's
// notify); fin (static) waits done[*], fin2 (dynamic) done[e], including
// elements whose range is empty.
const char *kExperts = R"(
const TM = 4;
kernel moe<E: dim, T: dim>(count: tensor<i32>[E], x: tensor<f32>[E, T], y: tensor<f32>[E, T],
                           total: tensor<f32>[E, TM], total2: tensor<f32>[E, TM]) where T % 4 == 0 {
  buffer cnt: tensor<i32>[E];
  event counted[1];
  event done[E];
  task prep[i in 0 .. 1] notifies counted[0] {
    for e in 0 .. E {
      store(cnt[e .. +1], load(count[e .. +1]));
    }
  }
  task expert[e in 0 .. E, m in 0 .. min(cnt[e], T / TM)] waits counted[0] notifies done[e] {
    store(y[e, m * TM .. +TM], load(x[e, m * TM .. +TM]) * 2.0);
  }
  task fin[e in 0 .. E] waits done[*] {
    var acc = zeros<f32>[TM];
    for j in 0 .. T / TM {
      acc += load(y[e, j * TM .. +TM]);
    }
    store(total[e, 0 .. +TM], acc);
  }
  task fin2[e in 0 .. E] schedule dynamic waits done[e] {
    var acc = zeros<f32>[TM];
    for j in 0 .. T / TM {
      acc += load(y[e, j * TM .. +TM]);
    }
    store(total2[e, 0 .. +TM], acc);
  }
}
)";

TEST_CASE("a range that reads data: tasks expanded at run time, empty ranges included") {
  std::string err;
  std::string path = compile_sim(kExperts, "experts", err);
  INFO(err);
  REQUIRE(!path.empty());
  const int64_t TM = 4;
  for (uint32_t workers : {1u, 3u, 5u}) {
    Ctx c(workers, 5000);
    etlProgram prog = nullptr;
    REQUIRE(etlProgramLoadFile(c.ctx, path.c_str(), &prog) == ETL_SUCCESS);
    for (int64_t E : {1, 4, 7}) {
      const int64_t T = 24;
      INFO("workers " << workers << ", E " << E);
      std::vector<int32_t> count(static_cast<size_t>(E), 0);
      for (int64_t e = 0; e < E; ++e)
        count[size_t(e)] =
            int32_t((e * 5 + int64_t(workers)) % 9) - 1; // -1 .. 7: empty and clamped
      std::vector<float> x(size_t(E * T)), y(size_t(E * T), 0.f), total(size_t(E * TM), -1.f),
          total2(size_t(E * TM), -1.f);
      for (size_t k = 0; k < x.size(); ++k)
        x[k] = float(k % 7) + 0.5f;
      int64_t se[1] = {E}, set[2] = {E, T}, stm[2] = {E, TM};
      REQUIRE(etlBindDim(prog, "E", E) == ETL_SUCCESS);
      REQUIRE(etlBindDim(prog, "T", T) == ETL_SUCCESS);
      REQUIRE(etlBindTensor(prog, "count", count.data(), ETL_I32, 1, se) == ETL_SUCCESS);
      REQUIRE(etlBindTensor(prog, "x", x.data(), ETL_F32, 2, set) == ETL_SUCCESS);
      REQUIRE(etlBindTensor(prog, "y", y.data(), ETL_F32, 2, set) == ETL_SUCCESS);
      REQUIRE(etlBindTensor(prog, "total", total.data(), ETL_F32, 2, stm) == ETL_SUCCESS);
      REQUIRE(etlBindTensor(prog, "total2", total2.data(), ETL_F32, 2, stm) == ETL_SUCCESS);
      REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
      for (int64_t e = 0; e < E; ++e) {
        int64_t blocks = std::min<int64_t>(std::max<int64_t>(count[size_t(e)], 0), T / TM);
        for (int64_t t = 0; t < T; ++t) {
          float want = t < blocks * TM ? x[size_t(e * T + t)] * 2.f : 0.f;
          CHECK(y[size_t(e * T + t)] == want);
        }
        for (int64_t l = 0; l < TM; ++l) {
          float want = 0.f;
          for (int64_t j = 0; j < T / TM; ++j)
            want += y[size_t(e * T + j * TM + l)];
          CHECK(total[size_t(e * TM + l)] == want);
          CHECK(total2[size_t(e * TM + l)] == want);
        }
      }
    }
    etlProgramDestroy(prog);
  }
}

TEST_CASE("a dynamic group cannot wait at a data-dependent index; a notify cannot read data "
          "beside a `*`") {
  std::string err;
  std::string path = compile_sim(R"(
kernel k<N: dim>(idx: tensor<i32>[1], x: tensor<f32>[N]) {
  event E[N];
  event F[N, N];
  task p[i in 0 .. N] notifies E[i] {
    store(x[i .. +1], load(x[i .. +1]));
  }
  task q[i in 0 .. 1] schedule dynamic waits E[idx[0]] notifies F[idx[i], *] {
    store(x[0 .. +1], load(x[0 .. +1]));
  }
}
)",
                                 "bad", err);
  CHECK(path.empty());
  CHECK(err.find("'q' is scheduled dynamically but waits on 'E' at an index that reads tensor "
                 "data") != std::string::npos);
  CHECK(err.find("write `schedule static` on 'q'") != std::string::npos);
  CHECK(err.find("index 'idx[i]' of 'q' notifying 'F' reads tensor data, which is not supported "
                 "beside a `*`") != std::string::npos);
}

// p[i] writes y[i] and notifies C[idx[i]]; q[j] waits C[j] and adds up the
// y[i] with idx[i] == j. The wait counts are only known on the device.
const char *kHistogram = R"(
kernel hist<N: dim, M: dim>(idx: tensor<i32>[N], x: tensor<f32>[N], y: tensor<f32>[N],
                            z: tensor<f32>[M], SCHED) {
  event C[M];
  task p[i in 0 .. N] notifies C[idx[i]] {
    store(y[i .. +1], load(x[i .. +1]) * 2.0);
  }
  task q[j in 0 .. M] QSCHED waits C[j] {
    var acc = zeros<f32>[1];
    for i in 0 .. N {
      acc += select(load(idx[i .. +1]) == j, load(y[i .. +1]), 0.0);
    }
    store(z[j .. +1], acc);
  }
}
)";

TEST_CASE("a notify index that reads data: wait counts settled on the device") {
  for (const char *qs : {"schedule static", "schedule dynamic"}) {
    std::string text = kHistogram;
    text.replace(text.find(", SCHED"), 7, "");
    text.replace(text.find("QSCHED"), 6, qs);
    std::string err;
    std::string path = compile_sim(text, std::string("hist_") + (qs[9] == 's' ? "s" : "d"), err);
    INFO(qs);
    INFO(err);
    REQUIRE(!path.empty());
    for (uint32_t workers : {1u, 4u}) {
      Ctx c(workers, 5000);
      etlProgram prog = nullptr;
      REQUIRE(etlProgramLoadFile(c.ctx, path.c_str(), &prog) == ETL_SUCCESS);
      const int64_t N = 40, M = 7;
      std::vector<int32_t> idx(N);
      std::vector<float> x(N), y(N, -100.f), z(M, -1.f);
      for (int64_t i = 0; i < N; ++i) {
        idx[size_t(i)] = int32_t((i * i + workers) % (M - 1)); // element M - 1: no producer
        x[size_t(i)] = float(i % 5) + 0.25f;
      }
      int64_t sn[1] = {N}, sm[1] = {M};
      REQUIRE(etlBindDim(prog, "N", N) == ETL_SUCCESS);
      REQUIRE(etlBindDim(prog, "M", M) == ETL_SUCCESS);
      REQUIRE(etlBindTensor(prog, "idx", idx.data(), ETL_I32, 1, sn) == ETL_SUCCESS);
      REQUIRE(etlBindTensor(prog, "x", x.data(), ETL_F32, 1, sn) == ETL_SUCCESS);
      REQUIRE(etlBindTensor(prog, "y", y.data(), ETL_F32, 1, sn) == ETL_SUCCESS);
      REQUIRE(etlBindTensor(prog, "z", z.data(), ETL_F32, 1, sm) == ETL_SUCCESS);
      REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
      for (int64_t j = 0; j < M; ++j) {
        float want = 0.f;
        for (int64_t i = 0; i < N; ++i)
          if (idx[size_t(i)] == j)
            want += x[size_t(i)] * 2.f;
        CHECK(z[size_t(j)] == want);
      }
      // An index outside C is caught on the device.
      idx[3] = int32_t(M + 2);
      CHECK(etlRun(prog) != ETL_SUCCESS);
      CHECK(std::string(etlGetLastErrorMessage()).find("'C'") != std::string::npos);
      etlProgramDestroy(prog);
    }
  }
}

} // namespace
} // namespace etl
