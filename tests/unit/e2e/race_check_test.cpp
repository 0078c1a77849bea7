// The sim's race check (runtime/src/sim_race.h): programs whose tasks touch
// one element without a chain of events between them fail with
// ETL_ERROR_RACE naming the tensor and both tasks; correctly ordered
// programs (static and dynamic schedules, split-K joins, chains inside a
// group) run clean with the check on. The racy programs are ones the
// compiler cannot reject: its group-level check (schedule/races.h) sees an
// event path between the groups, or only warns, and its task-level check
// (schedule/coverage.h) cannot evaluate an index that reads data.
#include "compile_run.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace etl {
using testing::compile_and_run;
using testing::RunOptions;

namespace {

/// A split-K row sum whose final task of block i reads the partial sums of
/// block `READ` (i: ordered by E[i]; i + off[0], off[0] = 1 at run time:
/// not ordered), scheduled SCHED.
std::string rowsum(const std::string &read, const std::string &sched) {
  return R"(
const TM = 16;
const TN = 64;
kernel rs<M: dim, N: dim>(x: tensor<f32>[M, N], off: tensor<i32>[1], y: tensor<f32>[M]) )" +
         sched + R"( {
  buffer part: tensor<f32>[cdiv(N, TN), M + TM];
  event E[cdiv(M, TM)];
  task partial[i in 0 .. cdiv(M, TM), j in 0 .. cdiv(N, TN)] notifies E[i] {
    store(part[j, i * TM .. +TM], sum(load(x[i * TM .. +TM, j * TN .. +TN]), axis = 1));
  }
  task final[i in 0 .. cdiv(M, TM)] waits E[i] {
    var acc = zeros<f32>[TM];
    for j in 0 .. cdiv(N, TN) {
      acc += load(part[j, )" +
         read + R"( * TM .. +TM]);
    }
    store(y[i * TM .. +TM], acc);
  }
}
)";
}

std::string run(const std::string &src, const char *stem, int64_t M, int64_t N) {
  std::vector<float> x(size_t(M * N), 1.0f), y(size_t(M), 0.0f);
  std::vector<int32_t> off(1, 1);
  return compile_and_run(src, stem, {{"M", M}, {"N", N}},
                         {{"x", x.data(), ETL_F32, {M, N}},
                          {"off", off.data(), ETL_I32, {1}},
                          {"y", y.data(), ETL_F32, {M}}},
                         RunOptions{true, "", ""});
}

} // namespace

TEST_CASE("race check: ordered split-K joins run clean, static and dynamic") {
  CHECK(run(rowsum("i", ""), "race_ok_static", 64, 256) == "");
  CHECK(run(rowsum("i", "schedule dynamic"), "race_ok_dynamic", 64, 256) == "");
}

TEST_CASE("race check: a task reading the block of a task it does not wait for") {
  // final[i] waits E[i] but reads block i + 1 (the compiler sees the event
  // path from partial to final, and the index reads data): partial[i + 1, *]
  // wrote it. With `i + 1` written out it is a compile-time error
  // (tests/diag/fail_wait_stencil.etl has the shape).
  for (const char *sched : {"", "schedule dynamic"}) {
    std::string err = run(rowsum("(i + off[0])", sched), "race_neighbour", 64, 256);
    INFO(err);
    CHECK(err.find("ETL_ERROR_RACE") != std::string::npos);
    CHECK(err.find("of 'part'") != std::string::npos);
    CHECK(err.find("no chain of events orders partial[") != std::string::npos);
    CHECK(err.find(" before final[") != std::string::npos);
  }
}

TEST_CASE("race check: unordered groups writing through a gather (a compile-time warning)") {
  const char *src = R"(
const TB = 32;
kernel k<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N]) where N % TB == 0 {
  task plain[i in 0 .. N / TB] {
    store(y[i * TB .. +TB], load(x[i * TB .. +TB]));
  }
  task reversed[i in 0 .. N / TB] {
    store(y[(TB - 1) - arange<i32>[TB] + i * TB], load(x[i * TB .. +TB]) * 2.0);
  }
}
)";
  const int64_t N = 128;
  std::vector<float> x(N, 1.0f), y(N, 0.0f);
  std::string err = compile_and_run(src, "race_gather", {{"N", N}},
                                    {{"x", x.data(), ETL_F32, {N}}, {"y", y.data(), ETL_F32, {N}}},
                                    RunOptions{true, "", ""});
  INFO(err);
  CHECK(err.find("ETL_ERROR_RACE") != std::string::npos);
  CHECK(err.find("of 'y'") != std::string::npos);
  // Without the check the same program runs (and its result depends on the order).
  CHECK(compile_and_run(src, "race_gather_off", {{"N", N}},
                        {{"x", x.data(), ETL_F32, {N}}, {"y", y.data(), ETL_F32, {N}}}) == "");
}

TEST_CASE("race check: a chain inside one group is ordered by its own events") {
  // Block-wise prefix: task i waits for task i - 1 (S[i]) and reads its result.
  const char *src = R"(
const TB = 32;
kernel scan<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N + TB]) where N % TB == 0 {
  event S[N / TB + 1];
  task first[u in 0 .. 1] notifies S[0] {
    store(y[0 .. +TB], zeros<f32>[TB]);
  }
  task advance[i in 0 .. N / TB] waits S[i] notifies S[i + 1] {
    let prev = load(y[i * TB + TB - 1]);
    store(y[(i + 1) * TB .. +TB], cumsum(load(x[i * TB .. +TB]), axis = 0) + prev);
  }
}
)";
  const int64_t N = 256;
  std::vector<float> x(N, 1.0f), y(N + 32, -1.0f);
  for (const char *stem : {"race_chain"}) {
    std::string err = compile_and_run(
        src, stem, {{"N", N}}, {{"x", x.data(), ETL_F32, {N}}, {"y", y.data(), ETL_F32, {N + 32}}},
        RunOptions{true, "", ""});
    CHECK_MESSAGE(err.empty(), err);
    CHECK(y[N + 31] == float(N));
  }
}

} // namespace etl
