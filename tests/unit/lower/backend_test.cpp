//===- tests/unit/lower/backend_test.cpp - The back end on the examples ---===//
//
// What this covers: run_backend on examples/rowsum and examples/softmax with
// their tile constants changed, each built through the real front half
// (parse, inline, sema, taskgraph, schedule): the LLVM IR verifies
// (run_backend verifies before code generation), the PTX for sm_80/sm_90
// assembles with ptxas, and the sim shared object computes the right numbers
// when run in-process on several CTAs (exercising masking, reductions,
// broadcasts, loops and the event protocol).
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"
#include "lower/backend.h"
#include "target/target.h"

#include "etl_abi.h"
#include "backend_harness.h"
#include "sim_harness.h"

#include "../skip.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

using namespace etl;
using namespace etl::testing;

namespace {

/// Assembles `ptx` with ptxas for `arch`; returns ptxas's output, sets ok.
std::string ptxas(const std::string &ptx, const std::string &arch, bool &ok) {
  std::string dir = "/tmp/etl-be-ptx-" + std::to_string(getpid());
  std::string in = dir + "-" + arch + ".ptx", log = dir + "-" + arch + ".log";
  std::ofstream(in) << ptx;
  std::string cmd =
      std::string(ETL_PTXAS) + " -arch=" + arch + " " + in + " -o /dev/null > " + log + " 2>&1";
  ok = std::system(cmd.c_str()) == 0;
  std::ifstream f(log);
  std::string out((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove(in.c_str());
  std::remove(log.c_str());
  return out;
}

const TargetOutput *find(const BackendResult &r, const std::string &t) {
  for (const auto &o : r.outputs)
    if (o.target == t)
      return &o;
  return nullptr;
}

void check_ptx(const BackendResult &r) {
  for (const char *t : {"sm_80", "sm_90"}) {
    const TargetOutput *o = find(r, t);
    REQUIRE(o);
    CHECK(o->code.find(".entry etl_main") != std::string::npos);
    CHECK(o->code.find(std::string(".target ") + t) != std::string::npos);
    if (std::string(ETL_PTXAS).empty()) {
      ETL_TEST_SKIP("ptxas not found at configure time: skipping PTX assembly of " << t);
      continue;
    }
    bool ok = false;
    std::string out = ptxas(o->code, t, ok);
    INFO("ptxas said: " << out);
    CHECK(ok);
  }
}

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// examples/NAME/NAME.etl with `const C = ...;` set to each given value,
/// through the front half of the pipeline; the Compilation holds the checked
/// program and its task graph.
std::unique_ptr<Compilation> front(const std::string &name,
                                   const std::vector<std::pair<std::string, int64_t>> &consts) {
  std::string path = std::string(ETL_SOURCE_DIR) + "/examples/" + name + "/" + name + ".etl";
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE_MESSAGE(!text.empty(), "cannot read " << path);
  for (const auto &[c, v] : consts) {
    size_t at = text.find("const " + c + " = ");
    REQUIRE(at != std::string::npos);
    size_t end = text.find(';', at);
    text.replace(at, end - at, "const " + c + " = " + std::to_string(v));
  }
  auto c = std::make_unique<Compilation>();
  c->file = c->sm.add(name + ".etl", text);
  bool ok = compile_front(*c);
  INFO(c->diag.render());
  REQUIRE(ok);
  return c;
}

BackendResult backend(Compilation &c, const std::vector<std::string> &targets,
                      const BackendOptions &opts) {
  return testing::lower_compiled(c, targets, opts);
}

/// The first program slot: the dims, then the tensors, then the events.
constexpr unsigned P = ETL_SLOT_FIRST_PROGRAM;

} // namespace

TEST_CASE("backend: rowsum lowers to verified IR, PTX and a sim object") {
  auto c = front("rowsum", {{"TM", 16}, {"TN", 128}});
  BackendOptions opts;
  BackendResult r = backend(*c, {"sm_90", "sm_80", "sim"}, opts);
  INFO(r.error);
  REQUIRE(r.ok);
  CHECK(r.threads_per_cta == 128);
  // The row sums of a 16 x 128 tile reduce in registers, across lanes and
  // warps; shared memory holds only the 16 row sums (64 bytes) on their way
  // to the store's layout: tile/smem.cpp's one convert_layout buffer, of
  // 128 bytes (its alignment).
  CHECK(r.smem_bytes == kSmemHeaderBytes + 128);
  CHECK(r.outputs.size() == 3);
  check_ptx(r);
  const TargetOutput *sim = find(r, "sim");
  REQUIRE(sim);
  CHECK(sim->code.substr(0, 4) == "\x7f"
                                  "ELF");
  CHECK(sim->llvm_ir.find("__etl_sim_ops") != std::string::npos);
  // NVPTX never sees an instruction it cannot select.
  CHECK(find(r, "sm_90")->llvm_ir.find(" fence ") == std::string::npos);
}

TEST_CASE("backend: softmax lowers to verified IR and PTX") {
  auto c = front("softmax", {{"TB", 4}, {"TN", 128}});
  BackendResult r = backend(*c, {"sm_90", "sm_80"}, BackendOptions{});
  INFO(r.error);
  REQUIRE(r.ok);
  check_ptx(r);
  CHECK(find(r, "sm_90")->llvm_ir.find("llvm.exp") == std::string::npos);
}

TEST_CASE("backend: rowsum on sim computes y = sum(x, axis=1)") {
  const int64_t TM = 4, TN = 8, M = 10, N = 21;
  const unsigned T = 32, CTAS = 3;
  auto c = front("rowsum", {{"TM", TM}, {"TN", TN}});
  BackendOptions opts;
  opts.threads_per_cta = T;
  BackendResult r = backend(*c, {"sim"}, opts);
  INFO(r.error);
  REQUIRE(r.ok);

  std::vector<float> x(size_t(M * N)), y(size_t(M), -1.f), part(size_t(cdiv(N, TN) * M), 0.f);
  for (int64_t i = 0; i < M * N; ++i)
    x[size_t(i)] = float((i * 7) % 13) - 3.f;
  std::vector<uint32_t> events(size_t(cdiv(M, TM)), uint32_t(cdiv(N, TN)));
  SimLaunch launch({{0, uint32_t(cdiv(M, TM) * cdiv(N, TN))}, {1, uint32_t(cdiv(M, TM))}}, CTAS);
  uint64_t args[P + 6] = {};
  launch.fill(args, events.data());
  args[P] = uint64_t(M);
  args[P + 1] = uint64_t(N);
  args[P + 2] = uint64_t(uintptr_t(x.data()));
  args[P + 3] = uint64_t(uintptr_t(y.data()));
  args[P + 4] = uint64_t(uintptr_t(part.data()));
  args[P + 5] = 0; // E's offset in the counter array
  SimState st;
  st.buffers = {{reinterpret_cast<const char *>(x.data()), x.size() * 4},
                {reinterpret_cast<const char *>(y.data()), y.size() * 4},
                {reinterpret_cast<const char *>(part.data()), part.size() * 4}};
  std::string err = run_sim(find(r, "sim")->code, args, CTAS, T, r.smem_bytes, st);
  REQUIRE(err == "");
  CHECK(st.violations == 0);
  CHECK(st.tasks == int(cdiv(M, TM) * cdiv(N, TN) + cdiv(M, TM)));
  for (int64_t m = 0; m < M; ++m) {
    float want = 0;
    for (int64_t n = 0; n < N; ++n)
      want += x[size_t(m * N + n)];
    CHECK(y[size_t(m)] == doctest::Approx(want));
  }
  for (uint32_t e : events)
    CHECK(e == 0);
}

TEST_CASE("backend: softmax on sim matches a reference") {
  const int64_t TB = 2, TN = 8, B = 5, N = 19;
  const unsigned T = 32, CTAS = 2;
  auto c = front("softmax", {{"TB", TB}, {"TN", TN}});
  BackendOptions opts;
  opts.threads_per_cta = T;
  BackendResult r = backend(*c, {"sim"}, opts);
  INFO(r.error);
  REQUIRE(r.ok);

  std::vector<float> x(size_t(B * N)), y(size_t(B * N), -1.f), rmax(static_cast<size_t>(B)),
      rsum(static_cast<size_t>(B));
  for (int64_t i = 0; i < B * N; ++i)
    x[size_t(i)] = float((i * 5) % 11) * 0.25f - 1.f;
  std::vector<uint32_t> events(size_t(cdiv(B, TB)), 1u);
  SimLaunch launch({{0, uint32_t(cdiv(B, TB))}, {1, uint32_t(cdiv(B, TB) * cdiv(N, TN))}}, CTAS);
  uint64_t args[P + 7] = {};
  launch.fill(args, events.data());
  args[P] = uint64_t(B);
  args[P + 1] = uint64_t(N);
  args[P + 2] = uint64_t(uintptr_t(x.data()));
  args[P + 3] = uint64_t(uintptr_t(y.data()));
  args[P + 4] = uint64_t(uintptr_t(rmax.data()));
  args[P + 5] = uint64_t(uintptr_t(rsum.data()));
  args[P + 6] = 0;
  SimState st;
  st.buffers = {{reinterpret_cast<const char *>(x.data()), x.size() * 4},
                {reinterpret_cast<const char *>(y.data()), y.size() * 4},
                {reinterpret_cast<const char *>(rmax.data()), rmax.size() * 4},
                {reinterpret_cast<const char *>(rsum.data()), rsum.size() * 4}};
  std::string err = run_sim(find(r, "sim")->code, args, CTAS, T, r.smem_bytes, st);
  REQUIRE(err == "");
  CHECK(st.violations == 0);
  for (int64_t b = 0; b < B; ++b) {
    float mx = -INFINITY, s = 0;
    for (int64_t n = 0; n < N; ++n)
      mx = std::max(mx, x[size_t(b * N + n)]);
    for (int64_t n = 0; n < N; ++n)
      s += std::exp(x[size_t(b * N + n)] - mx);
    CHECK(rmax[size_t(b)] == doctest::Approx(mx));
    CHECK(rsum[size_t(b)] == doctest::Approx(s));
    for (int64_t n = 0; n < N; ++n)
      CHECK(y[size_t(b * N + n)] == doctest::Approx(std::exp(x[size_t(b * N + n)] - mx) / s));
  }
}

TEST_CASE("backend: the abort flag stops a CTA stuck in a wait") {
  const unsigned T = 32;
  auto c = front("rowsum", {{"TM", 4}, {"TN", 8}});
  BackendOptions opts;
  opts.threads_per_cta = T;
  BackendResult r = backend(*c, {"sim"}, opts);
  REQUIRE(r.ok);
  // Only `final` tasks in the queue: their event never reaches zero.
  std::vector<float> x(16), y(4), part(8);
  std::vector<uint32_t> events(1, 1u);
  SimLaunch launch({{1, 1}}, 1);
  uint32_t &abort_flag = launch.abort_flag();
  uint64_t args[P + 6] = {};
  launch.fill(args, events.data());
  args[P] = 4;
  args[P + 1] = 4;
  args[P + 2] = uint64_t(uintptr_t(x.data()));
  args[P + 3] = uint64_t(uintptr_t(y.data()));
  args[P + 4] = uint64_t(uintptr_t(part.data()));
  SimState st;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    __atomic_store_n(&abort_flag, 1u, __ATOMIC_RELEASE);
  });
  std::string err = run_sim(find(r, "sim")->code, args, 1, T, r.smem_bytes, st);
  stopper.join();
  CHECK(err == "");
  CHECK(y[0] == 0.f); // the body never ran
}

TEST_CASE("backend: unknown targets and bad options are reported, not crashed on") {
  auto c = front("rowsum", {{"TM", 16}, {"TN", 128}});
  BackendResult r = backend(*c, {"sm_99x"}, BackendOptions{});
  CHECK_FALSE(r.ok);
  CHECK(r.error.find("sm_99x") != std::string::npos);
  // The message lists every target of target/targets.def.
  for (const TargetDesc &t : all_targets())
    CHECK(r.error.find(t.name) != std::string::npos);
  BackendOptions bad;
  bad.threads_per_cta = 0;
  CHECK_FALSE(backend(*c, {"sim"}, bad).ok);
}
