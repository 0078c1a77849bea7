//===- tests/fake_cuda/cuda_context_test.cpp - Whose context, which stream ===//
//
// What this covers: runtime/src/cuda.c on the fake libcuda.so.1 as a host
// that owns CUDA itself (PyTorch) uses it: with nothing current, the
// runtime retains the device's primary context and releases it on destroy;
// with the primary context current (as torch leaves it), the runtime runs
// in it; after every call the caller's current context is current again;
// etlRunAsync passes the caller's stream to cuLaunchKernel, and etlRunQuery
// reports ETL_ERROR_NOT_READY until the kernel ends, then its status; the
// watchdog runs while waiting or querying; a run not waited for is finished
// (and a failure reported) by the next etlRunAsync.
//
//===----------------------------------------------------------------------===//
#include "fake_harness.h"

#include <etl/etl.h>

#include <chrono>
#include <thread>
#include <vector>

using namespace fake_cuda;

namespace {

/// The Driver API calls a host makes itself.
struct Host {
  int (*init)(unsigned);
  int (*create)(void **, unsigned, int);
  int (*destroy)(void *);
  int (*get)(void **);
  int (*set)(void *);
  int (*retain)(void **, int);
  int (*release)(int);
  int (*stream_create)(void **, unsigned);
  int (*stream_destroy)(void *);
  explicit Host(Fake &f)
      : init(sym<int (*)(unsigned)>(f, "cuInit")),
        create(sym<int (*)(void **, unsigned, int)>(f, "cuCtxCreate_v2")),
        destroy(sym<int (*)(void *)>(f, "cuCtxDestroy_v2")),
        get(sym<int (*)(void **)>(f, "cuCtxGetCurrent")),
        set(sym<int (*)(void *)>(f, "cuCtxSetCurrent")),
        retain(sym<int (*)(void **, int)>(f, "cuDevicePrimaryCtxRetain")),
        release(sym<int (*)(int)>(f, "cuDevicePrimaryCtxRelease_v2")),
        stream_create(sym<int (*)(void **, unsigned)>(f, "cuStreamCreate")),
        stream_destroy(sym<int (*)(void *)>(f, "cuStreamDestroy_v2")) {
    REQUIRE(init(0) == 0);
  }
  void *current() const {
    void *c = reinterpret_cast<void *>(1);
    REQUIRE(get(&c) == 0);
    return c;
  }
  /// torch's way: the device's primary context, retained and made current.
  void *primary_current() {
    void *p = nullptr;
    REQUIRE(retain(&p, 0) == 0);
    REQUIRE(set(p) == 0);
    return p;
  }
};

/// rowsum.etl (M = 40, N = 300) loaded and bound on a "cuda" context.
struct Rowsum {
  etlContext ctx = nullptr;
  etlProgram prog = nullptr;
  void *x = nullptr, *y = nullptr;
  /// Runs each step, then `after()` (the caller's context check).
  template <class After> void open(etlContextParams params, After after) {
    REQUIRE(etlContextCreate(&ctx, "cuda", &params) == ETL_SUCCESS);
    after("etlContextCreate");
    REQUIRE(etlProgramLoadFile(ctx, artifact("rowsum").c_str(), &prog) == ETL_SUCCESS);
    after("etlProgramLoadFile");
    REQUIRE(etlMalloc(ctx, 40 * 300 * 4, &x) == ETL_SUCCESS);
    REQUIRE(etlMalloc(ctx, 40 * 4, &y) == ETL_SUCCESS);
    after("etlMalloc");
    std::vector<float> h(40 * 300, 1.0f);
    REQUIRE(etlMemcpyHtoD(ctx, x, h.data(), h.size() * 4) == ETL_SUCCESS);
    after("etlMemcpyHtoD");
    int64_t sx[2] = {40, 300}, sy[1] = {40};
    REQUIRE(etlBindDim(prog, "M", 40) == ETL_SUCCESS);
    REQUIRE(etlBindDim(prog, "N", 300) == ETL_SUCCESS);
    REQUIRE(etlBindTensor(prog, "x", x, ETL_F32, 2, sx) == ETL_SUCCESS);
    REQUIRE(etlBindTensor(prog, "y", y, ETL_F32, 1, sy) == ETL_SUCCESS);
  }
  template <class After> void close(After after) {
    std::vector<float> h(40);
    REQUIRE(etlMemcpyDtoH(ctx, h.data(), y, h.size() * 4) == ETL_SUCCESS);
    after("etlMemcpyDtoH");
    CHECK(etlFree(ctx, x) == ETL_SUCCESS);
    CHECK(etlFree(ctx, y) == ETL_SUCCESS);
    after("etlFree");
    CHECK(etlProgramDestroy(prog) == ETL_SUCCESS);
    after("etlProgramDestroy");
    CHECK(etlContextDestroy(ctx) == ETL_SUCCESS);
    after("etlContextDestroy");
  }
};

/// Polls etlRunQuery until the run ends (at most `ms`); returns the last
/// status and how many NOT_READY answers came first.
etlStatus poll(etlProgram prog, int ms, int *not_ready) {
  *not_ready = 0;
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    etlStatus st = etlRunQuery(prog);
    if (st != ETL_ERROR_NOT_READY || std::chrono::steady_clock::now() > end)
      return st;
    ++*not_ready;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

} // namespace

TEST_CASE("nothing current: the primary context is retained, released, and never left current") {
  Fake &f = fake();
  Host host(f);
  etl_fake_cuda_stats before = f.stats();
  REQUIRE(host.current() == nullptr);
  Rowsum r;
  void *mine = nullptr; // the host's own context, made current after the etl context
  auto caller_current = [&](const char *what) {
    INFO(what << ": " << etlGetLastErrorMessage());
    CHECK(host.current() == mine);
  };
  r.open(etlContextDefaultParams(), [&](const char *what) {
    caller_current(what);
    if (!mine) {
      CHECK(f.stats().primary_refs == before.primary_refs + 1);
      REQUIRE(host.create(&mine, 0, 0) == 0); // current from here on
    }
  });
  CHECK(etlRun(r.prog) == ETL_SUCCESS);
  caller_current("etlRun");
  CHECK(f.stats().launches == 1);
  CHECK(f.stats().last_stream == 0);
  r.close(caller_current);
  CHECK(f.stats().primary_refs == before.primary_refs); // released
  CHECK(f.stats().contexts == before.contexts + 1);     // only the host's own is left
  CHECK(host.current() == mine);
  CHECK(host.destroy(mine) == 0);
  CHECK(f.stats().reclaimed == 0);
  CHECK_MESSAGE(f.stats().violations == 0, f.violation());
}

TEST_CASE("torch's way: the primary context current, a stream of its own, NOT_READY then OK") {
  Fake &f = fake();
  Host host(f);
  void *primary = host.primary_current(), *stream = nullptr;
  REQUIRE(host.stream_create(&stream, 1) == 0);
  etl_fake_cuda_stats before = f.stats();
  auto caller_current = [&](const char *what) {
    INFO(what << ": " << etlGetLastErrorMessage());
    CHECK(host.current() == primary);
  };
  Rowsum r;
  etlContextParams prm = etlContextDefaultParams();
  prm.watchdog_ms = 200;
  r.open(prm, caller_current);
  CHECK(f.stats().primary_refs == before.primary_refs); // used, not retained again
  CHECK(f.stats().contexts == before.contexts);
  CHECK(f.calls("cuCtxGetDevice") == 1);

  // a slow kernel (tasks keep finishing): in flight, then done
  f.kernel(ETL_FAKE_KERNEL_SLOW, 300);
  REQUIRE(etlRunAsync(r.prog, stream) == ETL_SUCCESS);
  caller_current("etlRunAsync");
  CHECK(f.stats().last_stream == reinterpret_cast<uintptr_t>(stream));
  CHECK(etlRunQuery(r.prog) == ETL_ERROR_NOT_READY);
  CHECK(std::string(etlGetLastErrorMessage()).find("still in flight") != std::string::npos);
  caller_current("etlRunQuery");
  int not_ready = 0;
  CHECK(poll(r.prog, 10000, &not_ready) == ETL_SUCCESS);
  CHECK(not_ready > 0);
  caller_current("etlRunQuery");
  CHECK(etlRunWait(r.prog) == ETL_SUCCESS);
  CHECK(etlRunQuery(r.prog) == ETL_SUCCESS);

  // a hung kernel: the watchdog runs inside etlRunQuery too
  f.kernel(ETL_FAKE_KERNEL_HANG, 0);
  REQUIRE(etlRunAsync(r.prog, stream) == ETL_SUCCESS);
  etlStatus st = poll(r.prog, 10000, &not_ready);
  CHECK(st == ETL_ERROR_TIMEOUT);
  CHECK(std::string(etlGetLastErrorMessage()).find("watchdog: no task finished for 200 ms") !=
        std::string::npos);
  CHECK(etlRunWait(r.prog) == ETL_ERROR_TIMEOUT); // kept until the next run
  caller_current("etlRunWait");

  // a hung run nobody waits for: the next etlRunAsync finishes it and reports it
  int launches = f.stats().launches;
  REQUIRE(etlRunAsync(r.prog, stream) == ETL_SUCCESS);
  f.kernel(ETL_FAKE_KERNEL_COMPLETE, 0);
  CHECK(etlRunAsync(r.prog, stream) == ETL_ERROR_TIMEOUT);
  std::string msg = etlGetLastErrorMessage();
  CHECK(msg.find("nothing launched: the previous run, not waited for, failed: watchdog") !=
        std::string::npos);
  CHECK(f.stats().launches == launches + 1);
  caller_current("etlRunAsync");
  REQUIRE(etlRunAsync(r.prog, nullptr) == ETL_SUCCESS); // the NULL stream
  CHECK(f.stats().last_stream == 0);
  CHECK(etlRunWait(r.prog) == ETL_SUCCESS);

  // a run in flight when the program is destroyed is waited for first
  f.kernel(ETL_FAKE_KERNEL_SLOW, 50);
  REQUIRE(etlRunAsync(r.prog, stream) == ETL_SUCCESS);
  int queries = f.calls("cuEventQuery");
  CHECK(etlProgramDestroy(r.prog) == ETL_SUCCESS);
  CHECK(f.calls("cuEventQuery") > queries);
  r.prog = nullptr; // close() destroys NULL: accepted
  r.close(caller_current);
  CHECK(f.stats().primary_refs == before.primary_refs);
  CHECK(f.stats().device_allocs == before.device_allocs);
  CHECK(f.stats().events == before.events);
  CHECK(host.stream_destroy(stream) == 0);
  CHECK(host.set(nullptr) == 0);
  CHECK(host.release(0) == 0);
  CHECK(f.stats().reclaimed == 0);
  CHECK_MESSAGE(f.stats().violations == 0, f.violation());
}

TEST_CASE("one run in flight per context: another program's launch finishes it, its outcome kept") {
  Fake &f = fake();
  Host host(f);
  auto none = [](const char *) {};
  etlContextParams prm = etlContextDefaultParams();
  prm.watchdog_ms = 200;
  Rowsum r;
  r.open(prm, none);
  etlProgram other = nullptr;
  REQUIRE(etlProgramLoadFile(r.ctx, artifact("rowsum").c_str(), &other) == ETL_SUCCESS);
  int64_t sx[2] = {40, 300}, sy[1] = {40};
  REQUIRE(etlBindDim(other, "M", 40) == ETL_SUCCESS);
  REQUIRE(etlBindDim(other, "N", 300) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(other, "x", r.x, ETL_F32, 2, sx) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(other, "y", r.y, ETL_F32, 1, sy) == ETL_SUCCESS);
  f.kernel(ETL_FAKE_KERNEL_HANG, 0);
  REQUIRE(etlRunAsync(r.prog, nullptr) == ETL_SUCCESS);
  CHECK(etlRunQuery(r.prog) == ETL_ERROR_NOT_READY);
  f.kernel(ETL_FAKE_KERNEL_COMPLETE, 0);
  CHECK(etlRunAsync(other, nullptr) == ETL_SUCCESS); // waits out the hung one (watchdog)
  CHECK(f.stats().launches == 2);
  CHECK(etlRunWait(other) == ETL_SUCCESS);
  CHECK(etlRunWait(r.prog) == ETL_ERROR_TIMEOUT); // kept for its own wait
  CHECK(std::string(etlGetLastErrorMessage()).find("watchdog") != std::string::npos);
  CHECK(etlProgramDestroy(other) == ETL_SUCCESS);
  r.close(none);
  CHECK(f.stats().reclaimed == 0);
  CHECK_MESSAGE(f.stats().violations == 0, f.violation());
}

TEST_CASE("a failing cuCtxGetDevice is reported and leaves the caller's context as it was") {
  Fake &f = fake();
  Host host(f);
  void *primary = host.primary_current();
  etl_fake_cuda_stats before = f.stats();
  f.fail("cuCtxGetDevice", 999, 1);
  etlContext ctx = nullptr;
  CHECK(etlContextCreate(&ctx, "cuda", nullptr) == ETL_ERROR_CUDA);
  std::string msg = etlGetLastErrorMessage();
  CHECK(msg.find("current context") != std::string::npos);
  CHECK(msg.find("CUresult 999") != std::string::npos);
  CHECK(ctx == nullptr);
  CHECK(host.current() == primary);
  CHECK(f.stats().primary_refs == before.primary_refs);
  CHECK(f.stats().host_allocs == before.host_allocs);
  REQUIRE(etlContextCreate(&ctx, "cuda", nullptr) == ETL_SUCCESS); // the retry works
  CHECK(etlContextDestroy(ctx) == ETL_SUCCESS);
  CHECK(host.current() == primary);
  CHECK(host.set(nullptr) == 0);
  CHECK(host.release(0) == 0);
  CHECK_MESSAGE(f.stats().violations == 0, f.violation());
}

TEST_CASE("a `= zeros` buffer is cleared on the run's stream, before its launch") {
  Fake &f = fake();
  Host host(f);
  host.primary_current();
  void *stream = nullptr;
  REQUIRE(host.stream_create(&stream, 1) == 0);
  etlContext ctx = nullptr;
  etlProgram prog = nullptr;
  REQUIRE(etlContextCreate(&ctx, "cuda", nullptr) == ETL_SUCCESS);
  REQUIRE(etlProgramLoadFile(ctx, artifact("zeros_accumulate").c_str(), &prog) == ETL_SUCCESS);
  int64_t m = 40;
  std::vector<void *> bufs(3, nullptr);
  const char *names[] = {"x", "y", "u"};
  REQUIRE(etlBindDim(prog, "M", m) == ETL_SUCCESS);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(etlMalloc(ctx, m * 4, &bufs[i]) == ETL_SUCCESS);
    REQUIRE(etlBindTensor(prog, names[i], bufs[i], ETL_F32, 1, &m) == ETL_SUCCESS);
  }
  for (int run = 1; run <= 2; ++run) {
    INFO(etlGetLastErrorMessage());
    REQUIRE(etlRunAsync(prog, stream) == ETL_SUCCESS);
    CHECK(f.calls("cuMemsetD8Async") == run);
    CHECK(f.stats().last_memset_stream == reinterpret_cast<uintptr_t>(stream));
    CHECK(f.stats().last_stream == reinterpret_cast<uintptr_t>(stream));
    CHECK(etlRunWait(prog) == ETL_SUCCESS);
  }
  for (void *b : bufs)
    CHECK(etlFree(ctx, b) == ETL_SUCCESS);
  CHECK(etlProgramDestroy(prog) == ETL_SUCCESS);
  CHECK(etlContextDestroy(ctx) == ETL_SUCCESS);
  CHECK(host.stream_destroy(stream) == 0);
  CHECK(host.set(nullptr) == 0);
  CHECK(host.release(0) == 0);
  CHECK_MESSAGE(f.stats().violations == 0, f.violation());
}
