// `--events=barrier` (inline/barrier.h): every wait becomes a whole-group
// barrier, chains within a group stay, the events nothing waits on any more
// disappear; the same program gives the same results on sim either way.
#include "driver/cli.h"
#include "driver/pipeline.h"

#include "../e2e/compile_run.h"

#include <doctest/doctest.h>

#include <sstream>

namespace etl {
namespace {

// `part` feeds `final` through E[i] (fine: row tile by row tile); `block`
// is a chain (waits S[i], notifies S[i + 1]) that also waits for `final`.
const char kProgram[] = R"(const TM = 16;
const TN = 32;

kernel k<M: dim, N: dim>(x: tensor<f32>[M, N], y: tensor<f32>[M], z: tensor<f32>[M]) {
  buffer part: tensor<f32>[cdiv(N, TN), M];
  event E[cdiv(M, TM)];
  event F[cdiv(M, TM)];
  event S[cdiv(M, TM) + 1];
  task partial[i in 0 .. cdiv(M, TM), j in 0 .. cdiv(N, TN)] notifies E[i] {
    store(part[j, i * TM .. +TM], sum(load(x[i * TM .. +TM, j * TN .. +TN]), axis = 1));
  }
  task final[i in 0 .. cdiv(M, TM)] waits E[i] notifies F[i] {
    var acc = zeros<f32>[TM];
    for j in 0 .. cdiv(N, TN) {
      acc += load(part[j, i * TM .. +TM]);
    }
    store(y[i * TM .. +TM], acc);
  }
  task block[i in 0 .. cdiv(M, TM)] waits F[i], S[i] notifies S[i + 1] {
    let carry = load(z[max(i * TM - 1, 0) .. +1]) * select(i > 0, 1.0, 0.0);
    store(z[i * TM .. +TM], cumsum(load(y[i * TM .. +TM]), axis = 0) + carry);
  }
}
)";

std::string taskgraph(const std::vector<std::string> &extra) {
  std::vector<std::string> args = {"compile", "-", "--emit=taskgraph"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::istringstream in(kProgram);
  std::ostringstream out, err;
  int code = run_cli(args, in, out, err, false);
  CHECK_MESSAGE(code == kExitOk, err.str());
  CHECK_MESSAGE(err.str().empty(), err.str()); // no "notified but not awaited" warnings
  return out.str();
}

TEST_CASE("--events=barrier waits for whole groups, keeps chains, drops unused events") {
  std::string fine = taskgraph({});
  CHECK(fine.find("waits       E[i]") != std::string::npos);
  std::string bar = taskgraph({"--events=barrier"});
  CHECK(bar.find("event partial.all[1]") != std::string::npos);
  CHECK(bar.find("event final.all[1]") != std::string::npos);
  CHECK(bar.find("event E[") == std::string::npos); // nothing waits on E any more
  CHECK(bar.find("event F[") == std::string::npos);
  CHECK(bar.find("waits       partial.all[0]") != std::string::npos);
  CHECK(bar.find("waits       final.all[0]") != std::string::npos);
  CHECK(bar.find("waits       S[i]") != std::string::npos); // the chain stays
  CHECK(bar.find("notifies    S[i + 1]") != std::string::npos);
  CHECK(bar.find("event block.all") == std::string::npos); // nobody waits on block
}

TEST_CASE("--events=fine|barrier is checked and listed in --help") {
  std::istringstream in(kProgram);
  std::ostringstream out, err;
  CHECK(run_cli({"compile", "-", "--events=coarse"}, in, out, err, false) == kExitUsage);
  CHECK(err.str().find("--events") != std::string::npos);
  std::ostringstream hout, herr;
  std::istringstream none;
  run_cli({"compile", "--help"}, none, hout, herr, false);
  CHECK(hout.str().find("--events") != std::string::npos);
  CHECK(hout.str().find("barrier") != std::string::npos);
}

TEST_CASE("the barrier baseline computes what the fine-grained program does on sim") {
  const int64_t M = 50, N = 70;
  std::vector<float> x(size_t(M * N));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(int(i * 37 % 11) - 5) / 4.0f;
  std::vector<float> y[2], z[2];
  for (int b = 0; b < 2; ++b) {
    y[b].assign(size_t(M), -1.0f);
    z[b].assign(size_t(M), -1.0f);
    testing::RunOptions run;
    run.barrier_events = b == 1;
    std::string msg = testing::compile_and_run(
        kProgram, b ? "barrier_events_barrier" : "barrier_events_fine", {{"M", M}, {"N", N}},
        {{"x", x.data(), ETL_F32, {M, N}},
         {"y", y[b].data(), ETL_F32, {M}},
         {"z", z[b].data(), ETL_F32, {M}}},
        run);
    REQUIRE_MESSAGE(msg.empty(), msg);
  }
  float carry = 0;
  for (int64_t i = 0; i < M; ++i) {
    float want = 0;
    for (int64_t j = 0; j < N; ++j)
      want += x[size_t(i * N + j)];
    carry += want;
    CHECK(y[0][size_t(i)] == doctest::Approx(want));
    CHECK(z[0][size_t(i)] == doctest::Approx(carry));
    CHECK(y[1][size_t(i)] == y[0][size_t(i)]); // same tile code, same order: bit-identical
    CHECK(z[1][size_t(i)] == z[0][size_t(i)]);
  }
}

} // namespace
} // namespace etl
