//===- tests/fake_cuda/cuda_path_test.cpp - The runtime's CUDA path, no GPU ===//
//
// What this covers: runtime/src/cuda.c driven through the fake libcuda.so.1
// (fake_cuda.h), which ctest puts first on LD_LIBRARY_PATH: a context, a
// program load, a run up to and through the launch, reading results back;
// every Driver API call failing in turn (table below) maps to an etlStatus
// and a message naming the call, leaks nothing, and leaves the context
// usable; the watchdog fires on a hung kernel and not on a slow one;
// contexts and streams (cuda_context_test.cpp) are the caller's. The
// fake computes nothing, so no test here claims a correct result: the
// buffers the kernel would write come back as they were uploaded.
//
//===----------------------------------------------------------------------===//
#include "fake_harness.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <string>
#include <unistd.h>
#include <vector>

using namespace fake_cuda;

namespace {

/// One program's run on a CUDA context, as etl calls in order, so that the
/// first one to fail can be retried and the rest run on the same context.
struct Session {
  etlContext ctx = nullptr;
  etlProgram prog = nullptr;
  std::vector<void *> bufs;
  std::vector<float> out;
  etlContextParams params = etlContextDefaultParams();
  std::string trace = "/tmp/etl-fake-cuda-" + std::to_string(getpid()) + ".json";
  bool timeline = true;

  struct Step {
    const char *what;
    std::function<etlStatus()> call;
    bool cleanup;
  };
  std::vector<Step> steps;

  /// rowsum.etl: M = 40, N = 300.
  void rowsum() {
    add("etlContextCreate", [this] { return etlContextCreate(&ctx, "cuda", &params); });
    add("etlProgramLoadFile",
        [this] { return etlProgramLoadFile(ctx, artifact("rowsum").c_str(), &prog); });
    tensor("x", {40, 300});
    tensor("y", {40});
    add("etlBindDim", [this] {
      etlStatus st = etlBindDim(prog, "M", 40);
      return st ? st : etlBindDim(prog, "N", 300);
    });
    run_and_read(1, 40);
  }
  /// dynamic_mixed.etl (static and dynamic groups): NB = 3.
  void mixed() {
    add("etlContextCreate", [this] { return etlContextCreate(&ctx, "cuda", &params); });
    add("etlProgramLoadFile",
        [this] { return etlProgramLoadFile(ctx, artifact("dynamic_mixed").c_str(), &prog); });
    for (const char *t : {"x", "y", "z", "w", "o"})
      tensor(t, {2 * 3 * 16});
    add("etlBindDim", [this] { return etlBindDim(prog, "NB", 3); });
    run_and_read(4, 2 * 3 * 16);
  }

  /// zeros_accumulate.etl (a `buffer ... = zeros` and a plain one): M = 40.
  void zeros() {
    add("etlContextCreate", [this] { return etlContextCreate(&ctx, "cuda", &params); });
    add("etlProgramLoadFile",
        [this] { return etlProgramLoadFile(ctx, artifact("zeros_accumulate").c_str(), &prog); });
    for (const char *t : {"x", "y", "u"})
      tensor(t, {40});
    add("etlBindDim", [this] { return etlBindDim(prog, "M", 40); });
    run_and_read(1, 40);
  }

  void add(const char *what, std::function<etlStatus()> f, bool cleanup = false) {
    steps.push_back({what, std::move(f), cleanup});
  }
  void tensor(const char *name, std::vector<int64_t> shape) {
    size_t i = bufs.size(), n = 1;
    for (int64_t d : shape)
      n *= size_t(d);
    bufs.push_back(nullptr);
    add("etlMalloc", [this, i, n] { return etlMalloc(ctx, n * 4, &bufs[i]); });
    add("etlMemcpyHtoD", [this, i, n] {
      std::vector<float> host(n, 1.0f);
      return etlMemcpyHtoD(ctx, bufs[i], host.data(), n * 4);
    });
    add("etlBindTensor", [this, i, name, shape] {
      return etlBindTensor(prog, name, bufs[i], ETL_F32, int(shape.size()), shape.data());
    });
  }
  void run_and_read(size_t result, size_t n) {
    add("etlProgramSetTimeline",
        [this] { return timeline ? etlProgramSetTimeline(prog, trace.c_str()) : ETL_SUCCESS; });
    add("etlRun", [this] { return etlRun(prog); });
    add("etlMemcpyDtoH", [this, result, n] {
      out.assign(n, 0.0f);
      return etlMemcpyDtoH(ctx, out.data(), bufs[result], n * 4);
    });
    add(
        "etlFree",
        [this] {
          for (void *&b : bufs) {
            if (etlStatus st = etlFree(ctx, b))
              return st;
            b = nullptr;
          }
          return ETL_SUCCESS;
        },
        true);
    add(
        "etlProgramDestroy", [this] { return etlProgramDestroy(prog); }, true);
    add(
        "etlContextDestroy", [this] { return etlContextDestroy(ctx); }, true);
  }
  size_t first_cleanup() const {
    for (size_t i = 0; i < steps.size(); ++i)
      if (steps[i].cleanup)
        return i;
    return steps.size();
  }
  ~Session() { std::remove(trace.c_str()); }
};

/// What failing each Driver API call must turn into. `cleanup`: a call made
/// only while tearing down (destroy/free), whose failure nothing can report.
/// `also_silent`: made around frees too (the context push and pop), where a
/// failure has nothing to report it either.
struct Expect {
  const char *symbol;
  etlStatus status;
  const char *message;
  bool cleanup;
  bool also_silent = false;
  bool zeros_only = false; // made only for a `buffer ... = zeros` (Session::zeros)
};
const Expect kTable[] = {
    {"cuInit", ETL_ERROR_NO_DEVICE, "no CUDA device available", false},
    {"cuDeviceGetCount", ETL_ERROR_NO_DEVICE, "no CUDA device available", false},
    {"cuDeviceGet", ETL_ERROR_CUDA, "querying the device", false},
    {"cuDeviceGetName", ETL_ERROR_CUDA, "querying the device", false},
    {"cuDeviceGetAttribute", ETL_ERROR_CUDA, "querying the device", false},
    {"cuCtxGetCurrent", ETL_ERROR_CUDA, "current context", false},
    {"cuDevicePrimaryCtxRetain", ETL_ERROR_CUDA, "cuDevicePrimaryCtxRetain", false},
    {"cuCtxPushCurrent_v2", ETL_ERROR_CUDA, "cuCtxPushCurrent", false, true},
    {"cuCtxPopCurrent_v2", ETL_ERROR_CUDA, "cuCtxPopCurrent", false, true},
    {"cuMemHostAlloc", ETL_ERROR_CUDA, "mapped abort flag", false},
    {"cuMemHostGetDevicePointer_v2", ETL_ERROR_CUDA, "mapped abort flag", false},
    {"cuEventCreate", ETL_ERROR_CUDA, "cuEventCreate", false},
    {"cuModuleLoadDataEx", ETL_ERROR_LAUNCH_FAILED, "loading PTX", false},
    {"cuModuleGetFunction", ETL_ERROR_LAUNCH_FAILED, "no kernel", false},
    {"cuFuncSetAttribute", ETL_ERROR_LAUNCH_FAILED, "cuFuncSetAttribute", false},
    {"cuMemAlloc_v2", ETL_ERROR_OUT_OF_MEMORY, "cuMemAlloc", false},
    {"cuMemcpyHtoD_v2", ETL_ERROR_CUDA, "cuMemcpyHtoD", false},
    {"cuMemcpyDtoH_v2", ETL_ERROR_CUDA, "cuMemcpyDtoH", false},
    {"cuMemsetD8Async", ETL_ERROR_CUDA, "cuMemsetD8Async", false, false, true},
    {"cuMemcpyAsync", ETL_ERROR_CUDA, "cuMemcpyAsync", false},
    {"cuLaunchKernel", ETL_ERROR_LAUNCH_FAILED, "cuLaunchKernel", false},
    {"cuEventRecord", ETL_ERROR_CUDA, "cuEventRecord", false},
    {"cuEventQuery", ETL_ERROR_CUDA, "kernel failed", false},
    {"cuMemFree_v2", ETL_SUCCESS, "", true},
    {"cuMemFreeHost", ETL_SUCCESS, "", true},
    {"cuModuleUnload", ETL_SUCCESS, "", true},
    {"cuEventDestroy_v2", ETL_SUCCESS, "", true},
    {"cuDevicePrimaryCtxRelease_v2", ETL_SUCCESS, "", true},
};

int release_primary(Fake &f) { return sym<int (*)(int)>(f, "cuDevicePrimaryCtxRelease_v2")(0); }

void check_clean(Fake &f, const etl_fake_cuda_stats &before) {
  etl_fake_cuda_stats s = f.stats();
  CHECK(s.contexts == before.contexts);
  CHECK(s.primary_refs == before.primary_refs);
  CHECK(s.streams == before.streams);
  CHECK(s.events == before.events);
  CHECK(s.device_allocs == before.device_allocs);
  CHECK(s.host_allocs == before.host_allocs);
  CHECK(s.modules == before.modules);
  CHECK_MESSAGE(s.violations == 0, "first violation: " << f.violation());
}

/// Runs `make`'s session with the nth call of `symbol` failing (nth 0: none).
void run_failing(Fake &f, const std::function<void(Session &)> &make, const Expect &e, int nth) {
  etl_fake_cuda_stats before = f.stats();
  f.reset();
  Session s;
  make(s);
  if (nth)
    REQUIRE(f.fail(e.symbol, 999, nth) == 0); // CUDA_ERROR_UNKNOWN: "unknown error"
  int failed = 0, calls_before_cleanup = -1;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    if (i == s.first_cleanup())
      calls_before_cleanup = f.calls(e.symbol);
    etlStatus st = s.steps[i].call();
    if (st == ETL_SUCCESS)
      continue;
    failed++;
    std::string msg = etlGetLastErrorMessage();
    CAPTURE(s.steps[i].what);
    CAPTURE(msg);
    CHECK(st == e.status);
    CHECK(msg.find(e.message) != std::string::npos);
    CHECK((msg.find("unknown error") != std::string::npos ||
           msg.find("CUresult 999") != std::string::npos));
    // the context (or the next try at one) works: the same call again succeeds
    st = s.steps[i].call();
    INFO("retrying " << s.steps[i].what << ": " << etlGetLastErrorMessage());
    REQUIRE(st == ETL_SUCCESS);
  }
  bool silent = nth && failed == 0;
  if (!nth || e.cleanup) {
    CHECK(failed == 0); // cleanup: nothing can report it; the driver reclaims with the context
  } else if (silent) {
    // only a call made while tearing down or freeing may fail unreported: a
    // free that did not happen gives its memory back with the context
    CHECK((e.also_silent || calls_before_cleanup < nth || f.stats().reclaimed == 1));
  } else {
    CHECK(failed == 1);
  }
  CHECK(f.stats().launches >= 1);
  if (e.cleanup && std::strcmp(e.symbol, "cuDevicePrimaryCtxRelease_v2") == 0) {
    // the primary context stays retained: release it as the runtime could not
    CHECK(f.stats().primary_refs == before.primary_refs + 1);
    CHECK(release_primary(f) == 0);
    CHECK(f.stats().reclaimed == 0); // the runtime had freed all it allocated
  } else if (!e.cleanup && !silent) {
    CHECK(f.stats().reclaimed == 0); // the runtime freed all it allocated itself
  }
  check_clean(f, before);
}

void table_test(const std::function<void(Session &)> &make, bool zeros = false) {
  Fake &f = fake();
  // a clean pass counts the calls each function gets
  Expect none{"cuInit", ETL_SUCCESS, "", false};
  run_failing(f, make, none, 0);
  std::vector<std::pair<const Expect *, int>> counts;
  for (const Expect &e : kTable)
    counts.push_back({&e, f.calls(e.symbol)});
  for (auto [e, n] : counts) {
    std::string symbol = e->symbol;
    CAPTURE(symbol);
    if (e->zeros_only && !zeros) {
      CHECK(n == 0); // no zeros buffer, no memset
      continue;
    }
    CHECK(n > 0); // the table lists only what the runtime calls
    for (int nth = 1; nth <= n; ++nth) {
      CAPTURE(nth);
      run_failing(f, make, *e, nth);
    }
  }
}

} // namespace

TEST_CASE("a cuda context on the fake driver names the device and frees what it took") {
  Fake &f = fake();
  etl_fake_cuda_stats before = f.stats();
  etlContext ctx = nullptr;
  REQUIRE(etlContextCreate(&ctx, "cuda", nullptr) == ETL_SUCCESS);
  CHECK(etlContextIsGpu(ctx));
  std::string name = etlContextDeviceName(ctx);
  CHECK(name == std::string(ETL_FAKE_DEVICE_NAME) + " (sm_90, 132 SMs)");
  CHECK(f.stats().contexts == before.contexts + 1); // the primary context, retained
  CHECK(f.stats().primary_refs == before.primary_refs + 1);
  CHECK(f.stats().host_allocs == before.host_allocs + 1); // the mapped control block
  CHECK(f.stats().events == before.events + 1);           // what a launch is waited with
  CHECK(etlContextDestroy(ctx) == ETL_SUCCESS);
  check_clean(f, before);
  CHECK(f.stats().reclaimed == 0);
}

TEST_CASE("the runtime loads the best PTX of the artifact that the device runs") {
  Fake &f = fake();
  // rowsum_targets holds sm_80, sm_90 and sm_90a; rowsum_90a only sm_90a,
  // which runs on compute capability 9.0 alone and beats sm_90 there.
  struct Case {
    int cc;
    const char *file, *loaded; // nullptr: no target fits
  } cases[] = {{90, "rowsum_targets", "sm_90a"}, {80, "rowsum_targets", "sm_80"},
               {89, "rowsum_targets", "sm_80"},  {100, "rowsum_targets", "sm_90"},
               {90, "rowsum_90a", "sm_90a"},     {80, "rowsum_90a", nullptr},
               {100, "rowsum_90a", nullptr}};
  for (const Case &c : cases) {
    CAPTURE(c.cc);
    CAPTURE(c.file);
    f.reset();
    f.device_cc(c.cc);
    etl_fake_cuda_stats before = f.stats();
    etlContext ctx = nullptr;
    REQUIRE(etlContextCreate(&ctx, "cuda", nullptr) == ETL_SUCCESS);
    std::string name = etlContextDeviceName(ctx);
    CHECK(name.find("(sm_" + std::to_string(c.cc) + ",") != std::string::npos);
    etlProgram prog = nullptr;
    etlStatus st = etlProgramLoadFile(ctx, artifact(c.file).c_str(), &prog);
    if (c.loaded) {
      INFO(etlGetLastErrorMessage());
      REQUIRE(st == ETL_SUCCESS);
      CHECK(std::string(f.stats().last_target) == c.loaded);
      CHECK(f.stats().modules == before.modules + 1);
      CHECK(etlProgramDestroy(prog) == ETL_SUCCESS);
    } else {
      CHECK(st == ETL_ERROR_NOT_FOUND);
      std::string msg = etlGetLastErrorMessage();
      CHECK(msg.find("no PTX this sm_" + std::to_string(c.cc) + " device runs") !=
            std::string::npos);
      CHECK(msg.find("it has: sm_90a") != std::string::npos);
      CHECK(f.stats().modules == before.modules);
    }
    CHECK(etlContextDestroy(ctx) == ETL_SUCCESS);
    check_clean(f, before);
  }
  f.reset();
}

TEST_CASE("rowsum launches one CTA per SM, and the fake's unwritten output is no result") {
  Fake &f = fake();
  Session s;
  s.rowsum();
  for (auto &step : s.steps) {
    INFO(step.what << ": " << etlGetLastErrorMessage());
    REQUIRE(step.call() == ETL_SUCCESS);
    if (std::strcmp(step.what, "etlMemcpyDtoH") == 0) {
      // nothing ran the kernel: y holds what was uploaded (1.0), not the row sums (300)
      REQUIRE(s.out.size() == 40);
      for (float v : s.out)
        CHECK(v == 1.0f);
    }
  }
  etl_fake_cuda_stats st = f.stats();
  CHECK(st.launches == 1);
  CHECK(st.last_grid == 132);
  CHECK(st.last_block == 256); // rowsum's 16x300 tile: 256 threads (target/targets.def)
  CHECK(st.last_smem > 0);     // dynamic shared memory: the kernel's header and scratch
  CHECK(f.calls("cuModuleLoadDataEx") == 1);
  CHECK_MESSAGE(st.violations == 0, f.violation());
}

TEST_CASE("every failing driver call maps to a status and message, leaks nothing (rowsum)") {
  table_test([](Session &s) { s.rowsum(); });
}

TEST_CASE("every failing driver call maps to a status and message, leaks nothing (dynamic)") {
  table_test([](Session &s) { s.mixed(); });
}

TEST_CASE("every failing driver call maps to a status and message, leaks nothing (zeros)") {
  table_test([](Session &s) { s.zeros(); }, true);
}

TEST_CASE("a `= zeros` buffer is cleared with cuMemsetD8Async before each launch") {
  Fake &f = fake();
  Session s;
  s.zeros();
  int runs = 0;
  for (auto &step : s.steps) {
    INFO(step.what << ": " << etlGetLastErrorMessage());
    if (std::strcmp(step.what, "etlRun") == 0) {
      for (; runs < 3; ++runs) { // the same binding (plan) three times: cleared each time
        REQUIRE(step.call() == ETL_SUCCESS);
        CHECK(f.calls("cuMemsetD8Async") == runs + 1);
        CHECK(f.stats().launches == runs + 1);
      }
      continue;
    }
    REQUIRE(step.call() == ETL_SUCCESS);
    if (std::strcmp(step.what, "etlProgramLoadFile") == 0) {
      // poisoned buffers are a sim checking mode
      CHECK(etlProgramSetPoisonBuffers(s.prog, 1) == ETL_ERROR_INVALID_VALUE);
      CHECK(std::string(etlGetLastErrorMessage()).find("sim checking mode") != std::string::npos);
      CHECK(etlProgramSetPoisonBuffers(s.prog, 0) == ETL_SUCCESS);
    }
  }
  etl_fake_cuda_stats st = f.stats();
  CHECK(f.calls("cuMemsetD8Async") == 3); // one per run: `acc` only, not the plain `raw`
  CHECK(st.last_memset_bytes == 40 * 4);
  CHECK(st.last_memset_stream == 0); // etlRun: the default stream
  CHECK_MESSAGE(st.violations == 0, f.violation());
}

TEST_CASE("a failing cuGetErrorString still leaves a message with the CUresult") {
  Fake &f = fake();
  Session s;
  s.rowsum();
  f.fail("cuLaunchKernel", 719, 1);
  f.fail("cuGetErrorString", 1, 1);
  for (auto &step : s.steps) {
    etlStatus st = step.call();
    if (std::strcmp(step.what, "etlRun") == 0) {
      CHECK(st == ETL_ERROR_LAUNCH_FAILED);
      std::string msg = etlGetLastErrorMessage();
      CHECK(msg.find("unknown CUDA error") != std::string::npos);
      CHECK(msg.find("CUresult 719") != std::string::npos);
    } else {
      CHECK(st == ETL_SUCCESS);
    }
  }
}

TEST_CASE("the watchdog stops a hung kernel, and the context runs the next launch") {
  Fake &f = fake();
  Session s;
  s.params.watchdog_ms = 200;
  s.timeline = false;
  s.rowsum();
  for (auto &step : s.steps) {
    if (std::strcmp(step.what, "etlRun") != 0) {
      REQUIRE(step.call() == ETL_SUCCESS);
      continue;
    }
    f.kernel(ETL_FAKE_KERNEL_HANG, 0);
    CHECK(step.call() == ETL_ERROR_TIMEOUT);
    std::string msg = etlGetLastErrorMessage();
    CHECK(msg.find("watchdog: no task finished for 200 ms") != std::string::npos);
    CHECK(msg.find("pending events: E[0]=") != std::string::npos);
    f.kernel(ETL_FAKE_KERNEL_COMPLETE, 0);
    CHECK(step.call() == ETL_SUCCESS);
  }
  CHECK(f.stats().launches == 2);
  CHECK(f.stats().reclaimed == 0);
  CHECK_MESSAGE(f.stats().violations == 0, f.violation());
}

TEST_CASE("the watchdog lets a slow kernel whose tasks keep finishing complete") {
  Fake &f = fake();
  Session s;
  s.params.watchdog_ms = 200; // the kernel runs 4x as long, finishing a task every 5 ms
  s.timeline = false;
  s.rowsum();
  for (auto &step : s.steps) {
    if (std::strcmp(step.what, "etlRun") == 0)
      f.kernel(ETL_FAKE_KERNEL_SLOW, 800);
    INFO(step.what << ": " << etlGetLastErrorMessage());
    CHECK(step.call() == ETL_SUCCESS);
  }
  CHECK(f.stats().launches == 1);
  CHECK_MESSAGE(f.stats().violations == 0, f.violation());
}

TEST_CASE("the fake refuses what a driver refuses: no context, bad copies, launch limits, PTX") {
  Fake &f = fake();
  using ull = unsigned long long;
  auto init = sym<int (*)(unsigned)>(f, "cuInit");
  auto create = sym<int (*)(void **, unsigned, int)>(f, "cuCtxCreate_v2");
  auto destroy = sym<int (*)(void *)>(f, "cuCtxDestroy_v2");
  auto set = sym<int (*)(void *)>(f, "cuCtxSetCurrent");
  auto alloc = sym<int (*)(ull *, size_t)>(f, "cuMemAlloc_v2");
  auto mfree = sym<int (*)(ull)>(f, "cuMemFree_v2");
  auto htod = sym<int (*)(ull, const void *, size_t)>(f, "cuMemcpyHtoD_v2");
  auto load =
      sym<int (*)(void **, const void *, unsigned, int *, void **)>(f, "cuModuleLoadDataEx");
  auto unload = sym<int (*)(void *)>(f, "cuModuleUnload");
  auto get = sym<int (*)(void **, void *, const char *)>(f, "cuModuleGetFunction");
  auto attr = sym<int (*)(void *, int, int)>(f, "cuFuncSetAttribute");
  auto launch = sym<int (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, void *, void **, void **)>(f, "cuLaunchKernel");
  auto sync = sym<int (*)()>(f, "cuCtxSynchronize");
  REQUIRE(init(0) == 0);
  void *ctx = nullptr;
  REQUIRE(create(&ctx, 0, 0) == 0);
  REQUIRE(set(nullptr) == 0);
  ull d = 0;
  CHECK(alloc(&d, 64) == 201); // CUDA_ERROR_INVALID_CONTEXT: nothing current
  REQUIRE(set(ctx) == 0);
  REQUIRE(alloc(&d, 64) == 0);
  char buf[65] = {};
  CHECK(htod(d + 1, buf, 64) == 1); // one byte past the allocation
  CHECK(htod(d, buf, 64) == 0);
  CHECK(f.stats().violations == 2);

  const char *ptx = ".version 7.8\n.target sm_90\n.address_size 64\n"
                    ".visible .entry k(\n.param .u64 k_p\n)\n.maxntid 256, 1, 1\n{\n"
                    ".shared .align 16 .b8 s[1024];\nret;\n}\n";
  char log[512] = "";
  int opts[2] = {5, 6};
  void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
  void *mod = nullptr, *fn = nullptr;
  REQUIRE(load(&mod, ptx, 2, opts, vals) == 0);
  REQUIRE(get(&fn, mod, "k") == 0);
  CHECK(get(&fn, mod, "nope") == 500); // CUDA_ERROR_NOT_FOUND
  void *arg = &d;
  auto go = [&](unsigned grid, unsigned block, unsigned smem) {
    return launch(fn, grid, 1, 1, block, 1, 1, smem, nullptr, &arg, nullptr);
  };
  CHECK(go(132, 256, 0) == 0);
  CHECK(sync() == 0);
  CHECK(go(132, 512, 0) == 1);      // past the kernel's .maxntid
  CHECK(go(0, 128, 0) == 1);        // an empty grid
  CHECK(go(1, 128, 64 << 10) == 1); // 64 KiB dynamic shared memory without the opt-in
  CHECK(attr(fn, 8, 64 << 10) == 0);
  CHECK(go(1, 128, 64 << 10) == 0);
  CHECK(attr(fn, 8, 227 << 10) == 1); // with the 1 KiB static, past the 227 KiB opt-in
  CHECK(sync() == 0);
  int before = f.stats().violations;
  CHECK(before == 5);

  // images the driver cannot load: the log says why
  std::string newer = ptx;
  newer.replace(newer.find("sm_90"), 5, "sm_100");
  vals[1] = (void *)(uintptr_t)sizeof log;
  void *bad = nullptr;
  CHECK(load(&bad, newer.c_str(), 2, opts, vals) == 218); // CUDA_ERROR_INVALID_PTX
  CHECK(std::string(log).find("sm_100") != std::string::npos);
  std::string big = ptx;
  big.replace(big.find("[1024]"), 6, "[65536]");
  vals[1] = (void *)(uintptr_t)sizeof log;
  CHECK(load(&bad, big.c_str(), 2, opts, vals) == 218);
  CHECK(std::string(log).find("too much shared data") != std::string::npos);
  std::string broken = ptx;
  broken.replace(broken.find("ret;"), 4, "frobnicate %r1;");
  vals[1] = (void *)(uintptr_t)sizeof log;
  int r = load(&bad, broken.c_str(), 2, opts, vals);
  if (std::string(ETL_FAKE_CUDA_PTXAS).empty()) {
    MESSAGE("ptxas not found at configure time: the fake cannot reject PTX that does not "
            "assemble, only its header, entries and shared memory");
    CHECK(r == 0);
    CHECK(unload(bad) == 0);
  } else {
    CHECK(r == 218); // ptxas rejects the unknown instruction
    CHECK(std::string(log).find("frobnicate") != std::string::npos);
  }
  CHECK(f.stats().violations == before); // refusing an image is no misuse of the API
  CHECK(unload(mod) == 0);
  CHECK(mfree(d) == 0);
  CHECK(destroy(ctx) == 0);
  CHECK(f.stats().reclaimed == 0);
}
