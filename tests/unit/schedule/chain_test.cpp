// Chains inside one task group (schedule/schedule.cpp, forward_chain): a
// group may wait on an event it notifies itself when every task waits only
// on earlier tasks of the group; other self-waits stay cycles. The scan runs
// on sim, statically and dynamically scheduled.
#include "../e2e/compile_run.h"

#include <doctest/doctest.h>

namespace etl {
namespace {

using testing::compile_and_run;

// A block-wise inclusive prefix sum: block i waits for block i - 1 (S[i]),
// adds that block's last sum to its own cumsum, and lets block i + 1 go.
const char *kScan = R"(
const TB = 32;
kernel scan<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N]) SCHED {
  event S[cdiv(N, TB) + 1];
  task block[i in 0 .. cdiv(N, TB)] waits S[i] notifies S[i + 1] {
    let carry = load(y[max(i * TB - 1, 0) .. +1]) * select(i > 0, 1.0, 0.0);
    store(y[i * TB .. +TB], cumsum(load(x[i * TB .. +TB]), axis = 0) + carry);
  }
}
)";

TEST_CASE("a chain inside one group (waits S[i], notifies S[i + 1]) compiles and runs in order") {
  for (const char *sched : {"", "schedule dynamic"}) {
    std::string src = kScan;
    src.replace(src.find("SCHED"), 5, sched);
    const int64_t N = 300;
    std::vector<float> x(N), y(N, -7.f);
    for (int64_t i = 0; i < N; ++i)
      x[size_t(i)] = float(i % 5) - 1.f;
    INFO(sched);
    REQUIRE(compile_and_run(src, std::string("scan") + (sched[0] ? "_dyn" : ""), {{"N", N}},
                            {{"x", x.data(), ETL_F32, {N}}, {"y", y.data(), ETL_F32, {N}}}) == "");
    float acc = 0;
    for (int64_t i = 0; i < N; ++i) {
      acc += x[size_t(i)];
      CHECK(y[size_t(i)] == acc);
    }
  }
}

TEST_CASE("self-waits that are not forward chains are still cycles") {
  struct Case {
    const char *clauses, *why;
  };
  for (const Case &c : {Case{"waits S[j + 1] notifies S[j]", "waits on a later task"},
                        Case{"waits S[j] notifies S[j]", "waits on itself"},
                        Case{"waits S[j] notifies S[j + 1]", "i is free, so later tasks too"}}) {
    std::string src = R"(
kernel k<N: dim>(x: tensor<f32>[N]) {
  event S[N + 1];
  task t[i in 0 .. 2, j in 0 .. N] CLAUSES {
    store(x[j .. +1], load(x[j .. +1]));
  }
}
)";
    src.replace(src.find("CLAUSES"), 7, c.clauses);
    INFO(c.why);
    std::string msg = compile_and_run(src, "not_chain", {{"N", 4}}, {});
    CHECK(msg.find("cycle") != std::string::npos);
  }
}

} // namespace
} // namespace etl
