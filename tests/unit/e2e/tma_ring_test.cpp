// TMA rings on sim (tile/pipeline.cpp's kTmaRing, lower/lower_tma.cpp,
// runtime/src/sim_tma.c): the naive GEMV of ring_plain_test.cpp, compiled
// with ETL_TILE_TMA=1 so that sim runs what sm_90a runs: both plain rings
// filled by TMA copies (thread 0, mbarrier expect_tx), every thread waiting
// on the slot's mbarrier phase. The result equals the exact sum (small
// integers) with a K and an N that end in partial tiles (the map's zero
// fill at the edges) and the cp.async ring's result bit for bit; the
// profile counts the TMA bytes (whole boxes) and thread 0's mbarrier waits.
// Dropping the mbarrier waits (a decorator of the sim machine) makes the
// run fail with ETL_ERROR_RACE naming the shared-memory read that met a TMA
// copy whose phase no wait completed.
#include "compile_run.h"
#include "forwarding_machine.h"

#include <llvm/Support/JSON.h>

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

using etl::testing::bf16_bits;
using etl::testing::Bind;
using etl::testing::compile_and_run;
using etl::testing::RunOptions;

namespace {

const char *kGemv = R"(
const TN = 64;
const TK = 32;
kernel tma_gemv<N: dim, K: dim>(x: tensor<bf16>[K], w: tensor<bf16>[K, N], y: tensor<f32>[N])
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

/// Drops every mbarrier wait when `drop`; counts them and the TMA copies.
class Waits : public etl::testing::ForwardingMachine {
public:
  Waits(std::unique_ptr<etl::Machine> in, bool drop, int *waits, int *copies)
      : ForwardingMachine(std::move(in)), drop_(drop), waits_(waits), copies_(copies) {}
  void mbarrier_wait(Builder &b, llvm::Value *bar, llvm::Value *parity, unsigned line) override {
    ++*waits_;
    if (!drop_)
      in_->mbarrier_wait(b, bar, parity, line);
  }
  void tma_load(Builder &b, llvm::Value *dst, llvm::Value *map,
                const std::vector<llvm::Value *> &coords, llvm::Value *bar) override {
    ++*copies_;
    in_->tma_load(b, dst, map, coords, bar);
  }

private:
  bool drop_;
  int *waits_, *copies_;
};

struct Result {
  std::string err;
  std::vector<float> y;
  int bad = 0;               ///< elements off the exact sum
  int waits = 0, copies = 0; ///< lowered mbarrier waits and TMA copies
};

Result gemv(const std::string &stem, int64_t N, int64_t K, bool tma, bool drop_waits,
            const std::string &profile = "") {
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
  run.profile = profile;
  int *waits = &r.waits, *copies = &r.copies;
  run.wrap_machine = [drop_waits, waits, copies](std::unique_ptr<etl::Machine> m) {
    return std::unique_ptr<etl::Machine>(new Waits(std::move(m), drop_waits, waits, copies));
  };
  setenv("ETL_TILE_TMA", tma ? "1" : "0", 1);
  r.err =
      compile_and_run(kGemv, stem, {{"N", N}, {"K", K}},
                      {Bind{"x", x.data(), ETL_BF16, {K}}, Bind{"w", w.data(), ETL_BF16, {K, N}},
                       Bind{"y", r.y.data(), ETL_F32, {N}}},
                      run);
  unsetenv("ETL_TILE_TMA");
  for (int64_t n = 0; n < N; ++n) {
    float acc = 0;
    for (int64_t k = 0; k < K; ++k)
      acc += xf[size_t(k)] * wf[size_t(k * N + n)];
    r.bad += std::memcmp(&acc, &r.y[size_t(n)], 4) != 0;
  }
  return r;
}

int64_t counter(const std::string &path, const char *name) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  auto v = llvm::json::parse(ss.str());
  REQUIRE_MESSAGE(bool(v), "not JSON: " << path);
  int64_t n = 0;
  for (const llvm::json::Value &g : *v->getAsObject()->getArray("groups"))
    if (auto c = g.getAsObject()->getObject("sync")->getInteger(name))
      n += *c;
  return n;
}

} // namespace

TEST_CASE(
    "TMA ring: a naive GEMV streams x and w by TMA on sim, exact, bit-identical to cp.async") {
  // K = 200: 6 whole K steps and one of 8 rows (the rest of its box zeros);
  // N = 152: two whole column tiles and one of 24 columns.
  const std::string prof =
      std::string(ETL_TEST_BINARY_DIR) + "/e2e_programs/tma_ring_gemv.profile.json";
  Result tma = gemv("tma_ring_gemv", 152, 200, true, false, prof);
  REQUIRE_MESSAGE(tma.err.empty(), tma.err);
  CHECK(tma.bad == 0);
  CHECK(tma.waits == 2);      // one per ring, in the loop
  CHECK(tma.copies == 2 * 3); // per ring: the prologue's 2 stages and the loop's
  // Every K step's boxes, whole: 3 column tiles x 7 steps x (64 x 32 w + 32 x) bf16.
  CHECK(counter(prof, "tma_bytes") == 3 * 7 * (64 * 32 + 32) * 2);
  CHECK(counter(prof, "mbarrier_waits") == 3 * 7 * 2);

  Result cp = gemv("tma_ring_gemv_cp", 152, 200, false, false);
  REQUIRE_MESSAGE(cp.err.empty(), cp.err);
  CHECK(cp.copies == 0); // ETL_TILE_TMA=0: the cp.async ring
  CHECK(std::memcmp(tma.y.data(), cp.y.data(), tma.y.size() * 4) == 0);

  // Fewer K steps than stages: the prologue's copies past the end are not issued.
  Result short_k = gemv("tma_ring_gemv_short", 64, 40, true, false);
  REQUIRE_MESSAGE(short_k.err.empty(), short_k.err);
  CHECK(short_k.bad == 0);

  Result dropped = gemv("tma_ring_gemv_drop", 152, 200, true, true);
  CHECK(dropped.err.find("ETL_ERROR_RACE") != std::string::npos);
  CHECK(dropped.err.find("TMA copy (cp.async.bulk.tensor)") != std::string::npos);
  CHECK(dropped.err.find("mbarrier") != std::string::npos);
  MESSAGE(dropped.err);
}
