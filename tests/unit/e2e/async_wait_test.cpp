// The sim lands cp.async data only at the cp.async.wait_group that covers
// it (runtime/src/sim_async.h), so a missing or too weak wait cannot pass
// by luck. Proof by decoration: the tile GEMMs below are compiled for sim
// through a Machine decorator (BackendOptions::wrap_machine) that forwards
// every operation to the real sim machine, except that it may drop every
// async_wait or wait for one group fewer. With the waits as the compiler
// wrote them the results are exact; without them the run fails with
// ETL_ERROR_RACE naming the shared-memory read that met a copy in flight.
// A copy issued just before a task ends (and never waited for) fails the
// run as well, naming the task.
#include "compile_run.h"
#include "forwarding_machine.h"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

using etl::testing::bf16_bits;
using etl::testing::Bind;
using etl::testing::compile_and_run;
using etl::testing::RunOptions;

namespace {

/// Keep: as compiled; Drop: no wait_group at all; Weaker: wait_group N + 1
/// for N; Leftover: as compiled, plus one 16-byte copy per thread (from the
/// task's argument block to shared memory) right before each task_end.
enum class Waits { Keep, Drop, Weaker, Leftover };

/// Forwards every operation to `in`; async_wait and task_end as `mode`
/// says. Counts the waits the lowering asked for.
class WaitDecorator : public etl::testing::ForwardingMachine {
public:
  WaitDecorator(std::unique_ptr<etl::Machine> in, Waits mode, int *waits)
      : ForwardingMachine(std::move(in)), mode_(mode), waits_(waits) {}

  void async_wait(Builder &b, unsigned pending) override {
    ++*waits_;
    if (mode_ == Waits::Keep || mode_ == Waits::Leftover)
      in_->async_wait(b, pending);
    else if (mode_ == Waits::Weaker)
      in_->async_wait(b, pending + 1);
  }
  void task_end(Builder &b) override {
    if (mode_ == Waits::Leftover) { // the task function's argument 0 is the argument block
      llvm::Value *args = b.GetInsertBlock()->getParent()->getArg(0);
      llvm::Value *tid = b.CreateZExt(in_->thread_id(b), b.getInt64Ty());
      llvm::Value *dst =
          b.CreateGEP(b.getInt8Ty(), in_->shared_base(b), b.CreateMul(tid, b.getInt64(16)));
      in_->async_copy(b, dst, args, 16);
    }
    in_->task_end(b);
  }

private:
  Waits mode_;
  int *waits_;
};

std::string read_program(const char *rel) {
  std::ifstream in(std::string(ETL_SOURCE_DIR) + "/" + rel);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// C = A @ B with small-integer bf16 data (exact f32 sums) through `text`
/// compiled with `mode`; returns the run's error ("" on success) and counts
/// the mismatches with the reference in *bad and the waits in *waits.
std::string gemm(const std::string &text, const std::string &stem, int64_t M, int64_t N, int64_t K,
                 bool dims, Waits mode, int *bad, int *waits) {
  std::vector<float> af(size_t(M * K)), bfv(size_t(K * N));
  std::vector<uint16_t> a(af.size()), b(bfv.size());
  for (size_t i = 0; i < af.size(); ++i)
    a[i] = bf16_bits(af[i] = float(int((i * 2654435761u) % 7) - 3));
  for (size_t i = 0; i < bfv.size(); ++i)
    b[i] = bf16_bits(bfv[i] = float(int((i * 40503u + 11) % 7) - 3));
  std::vector<float> c(size_t(M * N), NAN);
  RunOptions run;
  run.threads_per_cta = 64;
  run.wrap_machine = [mode, waits](std::unique_ptr<etl::Machine> m) {
    return std::unique_ptr<etl::Machine>(new WaitDecorator(std::move(m), mode, waits));
  };
  std::vector<std::pair<const char *, int64_t>> dv;
  if (dims)
    dv = {{"M", M}, {"N", N}, {"K", K}};
  std::string err =
      compile_and_run(text, stem, dv,
                      {Bind{"a", a.data(), ETL_BF16, {M, K}}, Bind{"b", b.data(), ETL_BF16, {K, N}},
                       Bind{"c", c.data(), ETL_F32, {M, N}}},
                      run);
  *bad = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += af[size_t(m * K + k)] * bfv[size_t(k * N + n)];
      *bad += std::memcmp(&acc, &c[size_t(m * N + n)], 4) != 0;
    }
  return err;
}

/// One dot of two loaded slices (BodyLowerer::tile_async: copy, commit, wait 0).
const char *kOneDot = R"(
kernel one_dot(a: tensor<bf16>[64, 32], b: tensor<bf16>[32, 16], c: tensor<f32>[64, 16]) {
  task t[i in 0 .. 2] {
    store(c[i * 32 .. +32, 0 .. +16], dot(load(a[i * 32 .. +32, 0 .. +32]), load(b[0 .. +32, 0 .. +16])));
  }
}
)";

} // namespace

TEST_CASE("sim cp.async: the pipelined K loop is exact with its waits and fails without them") {
  const std::string text = read_program("tests/unit/runtime/programs/mma_pipeline.etl");
  REQUIRE(!text.empty());
  int bad = 0, waits = 0;
  // K = 72: 16-byte aligned rows (cp.async), the last K step half outside.
  std::string err = gemm(text, "async_wait_keep", 40, 24, 72, true, Waits::Keep, &bad, &waits);
  REQUIRE_MESSAGE(err.empty(), err);
  CHECK(bad == 0);
  CHECK(waits >= 2); // wait_group 1 in the loop, wait_group 0 after it

  waits = 0;
  err = gemm(text, "async_wait_drop", 40, 24, 72, true, Waits::Drop, &bad, &waits);
  CHECK(waits >= 2);
  CHECK(err.find("ETL_ERROR_RACE") != std::string::npos);
  CHECK(err.find("ldmatrix.sync row read") != std::string::npos);
  CHECK(err.find("cp.async") != std::string::npos);
  CHECK(err.find("wait_group") != std::string::npos);
  CHECK(err.find("in task tile[") != std::string::npos);
  MESSAGE(err);

  // wait_group 2 instead of 1: iteration k's group is still in flight.
  err = gemm(text, "async_wait_weaker", 40, 24, 72, true, Waits::Weaker, &bad, &waits);
  CHECK(err.find("ETL_ERROR_RACE") != std::string::npos);
  CHECK(err.find("ldmatrix.sync row read") != std::string::npos);
  CHECK(err.find("has landed yet") != std::string::npos);
}

TEST_CASE("sim cp.async: a dot of loaded slices is exact with its wait and fails without it") {
  int bad = 0, waits = 0;
  std::string err =
      gemm(kOneDot, "async_one_dot_keep", 64, 16, 32, false, Waits::Keep, &bad, &waits);
  REQUIRE_MESSAGE(err.empty(), err);
  CHECK(bad == 0);
  CHECK(waits >= 1);
  err = gemm(kOneDot, "async_one_dot_drop", 64, 16, 32, false, Waits::Drop, &bad, &waits);
  CHECK(err.find("ETL_ERROR_RACE") != std::string::npos);
  CHECK(err.find("ldmatrix.sync row read") != std::string::npos);
  CHECK(err.find("in task t[") != std::string::npos);
  // A copy in flight when the task ends: never landed silently.
  err = gemm(kOneDot, "async_one_dot_leftover", 64, 16, 32, false, Waits::Leftover, &bad, &waits);
  CHECK(err.find("ETL_ERROR_RACE") != std::string::npos);
  CHECK(err.find("sim: task t[") != std::string::npos);
  CHECK(err.find("ends with 1 cp.async copies of thread") != std::string::npos);
  CHECK(err.find("no cp.async.wait_group landed them") != std::string::npos);
  MESSAGE(err);
}
