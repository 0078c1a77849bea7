// Plain rings (tile/pipeline.cpp, kRowMajorRing): a GEMV written naively
// (one task per column tile, its K loop loading x and a weight tile per
// step, no dot) gets a 3-stage cp.async ring for both loads, read back into
// registers from row-major slots. On sim, with the race check on: the
// result equals the exact sum (small integers: every order of the f32 sums
// is exact) for a K and an N that end in a partial tile (the edge chunks
// move element by element, 0 outside), and equals the loop compiled without
// rings bit for bit. Dropping the lowering's cp.async waits (the decorator
// of async_wait_test.cpp) makes the run fail with ETL_ERROR_RACE naming the
// shared-memory read that met a copy in flight: the waits are the ones that
// make the slots safe, and the sim checks them.
#include "compile_run.h"
#include "forwarding_machine.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>

using etl::testing::bf16_bits;
using etl::testing::Bind;
using etl::testing::compile_and_run;
using etl::testing::RunOptions;

namespace {

const char *kGemv = R"(
const TN = 64;
const TK = 32;
kernel ring_gemv<N: dim, K: dim>(x: tensor<bf16>[K], w: tensor<bf16>[K, N], y: tensor<f32>[N])
    where N % 8 == 0 {
  task col[n in 0 .. cdiv(N, TN)] {
    var acc = zeros<f32>[TN];
    for k in 0 .. cdiv(K, TK) {
      let xv = expand(cast<f32>(load(x[k * TK .. +TK])), axis = 1);
      acc += sum(xv * cast<f32>(load(w[k * TK .. +TK, n * TN .. +TN])), axis = 0);
    }
    store(y[n * TN .. +TN], acc);
  }
}
)";

/// Drops every cp.async wait_group when `drop`; counts them.
class Waits : public etl::testing::ForwardingMachine {
public:
  Waits(std::unique_ptr<etl::Machine> in, bool drop, int *n)
      : ForwardingMachine(std::move(in)), drop_(drop), n_(n) {}
  void async_wait(Builder &b, unsigned pending) override {
    ++*n_;
    if (!drop_)
      in_->async_wait(b, pending);
  }

private:
  bool drop_;
  int *n_;
};

struct Result {
  std::string err;
  std::vector<float> y;
  int bad = 0; ///< elements off the exact sum
  int waits = 0;
};

Result gemv(const std::string &stem, int64_t N, int64_t K, bool drop_waits) {
  std::vector<float> xf(static_cast<size_t>(K)), wf(static_cast<size_t>(K * N));
  std::vector<uint16_t> x(xf.size()), w(wf.size());
  for (size_t i = 0; i < xf.size(); ++i)
    x[i] = bf16_bits(xf[i] = float(int((i * 2654435761u) % 7) - 3));
  for (size_t i = 0; i < wf.size(); ++i)
    w[i] = bf16_bits(wf[i] = float(int((i * 40503u + 11) % 9) - 4));
  Result r;
  r.y.assign(size_t(N), NAN);
  RunOptions run;
  run.threads_per_cta = 128;
  run.race_check = true;
  int *waits = &r.waits;
  run.wrap_machine = [drop_waits, waits](std::unique_ptr<etl::Machine> m) {
    return std::unique_ptr<etl::Machine>(new Waits(std::move(m), drop_waits, waits));
  };
  r.err =
      compile_and_run(kGemv, stem, {{"N", N}, {"K", K}},
                      {Bind{"x", x.data(), ETL_BF16, {K}}, Bind{"w", w.data(), ETL_BF16, {K, N}},
                       Bind{"y", r.y.data(), ETL_F32, {N}}},
                      run);
  for (int64_t n = 0; n < N; ++n) {
    float acc = 0;
    for (int64_t k = 0; k < K; ++k)
      acc += xf[size_t(k)] * wf[size_t(k * N + n)];
    r.bad += std::memcmp(&acc, &r.y[size_t(n)], 4) != 0;
  }
  return r;
}

} // namespace

TEST_CASE("plain ring: a naive GEMV streams x and w through a cp.async ring, exact and race-free") {
  // K = 200: 6 whole K steps and one of 8 rows (its chunks element by
  // element); N = 152: two whole column tiles and one of 24 columns.
  Result ring = gemv("ring_plain_gemv", 152, 200, false);
  REQUIRE_MESSAGE(ring.err.empty(), ring.err);
  CHECK(ring.bad == 0);
  CHECK(ring.waits >= 2); // wait_group 1 in the loop, wait_group 0 after it

  setenv("ETL_TILE_RING", "0", 1);
  Result plain = gemv("ring_plain_gemv_off", 152, 200, false);
  unsetenv("ETL_TILE_RING");
  REQUIRE_MESSAGE(plain.err.empty(), plain.err);
  CHECK(plain.waits == 0); // no ring: no cp.async at all
  CHECK(std::memcmp(ring.y.data(), plain.y.data(), ring.y.size() * 4) == 0);

  // Fewer K steps than stages: the prologue's copies past the end are not issued.
  Result short_k = gemv("ring_plain_gemv_short", 64, 40, false);
  REQUIRE_MESSAGE(short_k.err.empty(), short_k.err);
  CHECK(short_k.bad == 0);

  Result dropped = gemv("ring_plain_gemv_drop", 152, 200, true);
  CHECK(dropped.err.find("ETL_ERROR_RACE") != std::string::npos);
  CHECK(dropped.err.find("cp.async") != std::string::npos);
  MESSAGE(dropped.err);
}
