// wgmma on sim (runtime/src/sim_wgmma.h): examples/gemm compiled with
// `--target sm_90a,sim` runs its K loop as wgmma.mma_async on sim
// (lower/lower_tile_wgmma.cpp; TargetInfo::wgmma), and its C is bit for
// bit the C of the mma.sync path (`--target sim`) on random bf16 data, and
// the exact product on small integers; the profile counts the wgmmas (one
// per warpgroup) and the same tensor FLOPs as the mma.sync path. Proof by
// decoration that the sim enforces wgmma's synchronisation: through a
// Machine decorator (BackendOptions::wrap_machine) that drops every
// wgmma.fence, the run fails with ETL_ERROR_RACE ("without a wgmma.fence");
// one that drops every wgmma.wait_group (its registers read as the wgmma
// left them), or waits with one group more in flight, fails with
// ETL_ERROR_RACE naming the read of the accumulator registers.
#include "compile_run.h"
#include "forwarding_machine.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

using etl::testing::bf16_bits;
using etl::testing::Bind;
using etl::testing::compile_and_run;
using etl::testing::RunOptions;

namespace {

enum class Sync { Keep, NoFence, NoWait, Weaker };

class SyncDecorator : public etl::testing::ForwardingMachine {
public:
  SyncDecorator(std::unique_ptr<etl::Machine> in, Sync mode)
      : ForwardingMachine(std::move(in)), mode_(mode) {}
  void wgmma_fence(Builder &b) override {
    if (mode_ != Sync::NoFence)
      in_->wgmma_fence(b);
  }
  std::vector<llvm::Value *> wgmma_wait(Builder &b, unsigned pending,
                                        const std::vector<llvm::Value *> &acc,
                                        unsigned line) override {
    if (mode_ == Sync::NoWait)
      return acc;
    return in_->wgmma_wait(b, mode_ == Sync::Weaker ? pending + 1 : pending, acc, line);
  }

private:
  Sync mode_;
};

std::string read_file(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

long long sum_of(const std::string &json, const std::string &key) {
  const std::string k = "\"" + key + "\": ";
  long long n = 0;
  for (size_t at = 0; (at = json.find(k, at)) != std::string::npos; at += k.size())
    n += std::stoll(json.substr(at + k.size()));
  return n;
}

struct Gemm {
  int64_t M, N, K;
  bool exact; ///< small integers (exact f32 sums) or random bf16
};

/// examples/gemm on sim, 256 threads; `wgmma` compiles with sm_90a in the
/// target list. Returns the run's error, C in *c and the profile's JSON.
std::string run_gemm(const Gemm &g, bool wgmma, Sync mode, std::vector<float> *c,
                     std::vector<float> *ref, std::string *profile) {
  const std::string text = read_file(std::string(ETL_SOURCE_DIR) + "/examples/gemm/gemm.etl");
  REQUIRE(!text.empty());
  std::vector<uint16_t> a(size_t(g.M * g.K)), b(size_t(g.K * g.N));
  std::vector<float> af(a.size()), bf(b.size());
  uint32_t s = 12345;
  auto next = [&] {
    s = s * 1664525u + 1013904223u;
    return g.exact ? float(int(s >> 29) - 3) : float(int(s >> 16) - 32768) / 4096.0f;
  };
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = bf16_bits(next()), af[i] = etl::testing::bf16_value(a[i]);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = bf16_bits(next()), bf[i] = etl::testing::bf16_value(b[i]);
  c->assign(size_t(g.M * g.N), NAN);
  RunOptions run;
  run.threads_per_cta = 256;
  if (wgmma)
    run.targets = {"sm_90a", "sim"};
  if (mode != Sync::Keep)
    run.wrap_machine = [mode](std::unique_ptr<etl::Machine> m) {
      return std::unique_ptr<etl::Machine>(new SyncDecorator(std::move(m), mode));
    };
  const std::string stem = std::string("wgmma_gemm_") + (wgmma ? "90a_" : "sim_") +
                           std::to_string(int(mode)) + "_" + std::to_string(g.M);
  if (profile)
    run.profile = std::string(ETL_TEST_BINARY_DIR) + "/e2e_programs/" + stem + ".json";
  std::string err =
      compile_and_run(text, stem, {{"M", g.M}, {"N", g.N}, {"K", g.K}},
                      {Bind{"a", a.data(), ETL_BF16, {g.M, g.K}},
                       Bind{"b", b.data(), ETL_BF16, {g.K, g.N}},
                       Bind{"c", c->data(), ETL_F32, {g.M, g.N}}},
                      run);
  if (profile && err.empty())
    *profile = read_file(run.profile);
  if (ref) {
    ref->assign(c->size(), 0.0f);
    for (int64_t m = 0; m < g.M; ++m)
      for (int64_t n = 0; n < g.N; ++n) {
        float acc = 0;
        for (int64_t k = 0; k < g.K; ++k)
          acc += af[size_t(m * g.K + k)] * bf[size_t(k * g.N + n)];
        (*ref)[size_t(m * g.N + n)] = acc;
      }
  }
  return err;
}

} // namespace

TEST_CASE("sim wgmma: gemm for sm_90a is bit for bit the mma.sync path, and counted") {
  for (const Gemm &g : {Gemm{256, 256, 96, false}, Gemm{200, 136, 80, false},
                        Gemm{128, 128, 64, true}}) {
    CAPTURE(g.M);
    CAPTURE(g.N);
    CAPTURE(g.K);
    std::vector<float> c_mma, c_wg, ref;
    std::string p_mma, p_wg;
    std::string err = run_gemm(g, false, Sync::Keep, &c_mma, &ref, &p_mma);
    REQUIRE_MESSAGE(err.empty(), err);
    err = run_gemm(g, true, Sync::Keep, &c_wg, nullptr, &p_wg);
    REQUIRE_MESSAGE(err.empty(), err);
    CHECK(std::memcmp(c_mma.data(), c_wg.data(), 4 * c_wg.size()) == 0);
    if (g.exact)
      CHECK(std::memcmp(ref.data(), c_wg.data(), 4 * c_wg.size()) == 0);
    // One wgmma per warpgroup (2: M 128 on 8 warps) per k16 step per task.
    const long long tiles = (g.M + 127) / 128 * ((g.N + 127) / 128), steps = (g.K + 31) / 32;
    CHECK(sum_of(p_wg, "wgmma") % (tiles * steps * 2 * 2) == 0);
    CHECK(sum_of(p_wg, "wgmma") > 0);
    CHECK(sum_of(p_wg, "mma") == 0);
    CHECK(sum_of(p_wg, "ldmatrix") == 0);
    CHECK(sum_of(p_mma, "wgmma") == 0);
    CHECK(sum_of(p_wg, "tensor_flops") == sum_of(p_mma, "tensor_flops"));
  }
}

TEST_CASE("sim wgmma: a missing fence or wait fails the run with ETL_ERROR_RACE") {
  const Gemm g{128, 128, 64, true};
  std::vector<float> c;
  std::string err = run_gemm(g, true, Sync::NoFence, &c, nullptr, nullptr);
  CHECK(err.find("ETL_ERROR_RACE") != std::string::npos);
  CHECK(err.find("without a wgmma.fence") != std::string::npos);
  MESSAGE(err);
  err = run_gemm(g, true, Sync::NoWait, &c, nullptr, nullptr);
  CHECK(err.find("ETL_ERROR_RACE") != std::string::npos);
  CHECK(err.find("read of wgmma accumulator registers") != std::string::npos);
  CHECK(err.find("still in flight") != std::string::npos);
  MESSAGE(err);
  err = run_gemm(g, true, Sync::Weaker, &c, nullptr, nullptr);
  CHECK(err.find("ETL_ERROR_RACE") != std::string::npos);
  CHECK(err.find("read of wgmma accumulator registers") != std::string::npos);
  MESSAGE(err);
}
