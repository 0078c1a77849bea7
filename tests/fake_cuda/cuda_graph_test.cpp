//===- tests/fake_cuda/cuda_graph_test.cpp - A run captured into a CUDA graph ===//
//
// What this covers: etlRunAsync on a stream that captures a CUDA graph, as
// torch.cuda.graph(...) makes one (fake_graph.c models the capture): the
// run is recorded without a synchronous driver call (the fake refuses one
// and invalidates the capture, as the driver does), and each replay of the
// graph starts the kernel on the argument block of the captured binding,
// with the event counters, the error record and the abort flag reset on the
// stream, whatever direct runs, other bindings and finished kernels did to
// them in between. The fake computes nothing: what is checked is what the
// replayed kernel reads as it starts (etl_fake_cuda_stats.seen_*). Also: a
// steady-state run makes no synchronous upload, and what a capture refuses
// (a binding that never ran, the timeline) is refused with a message
// before anything is recorded, leaving the capture valid, while a run left
// in flight before the capture stays in flight until waited for after it.
//
//===----------------------------------------------------------------------===//
#include "fake_harness.h"

#include <etl/etl.h>

#include <cstring>
#include <functional>
#include <string>
#include <unistd.h>
#include <vector>

#include "etl_abi.h"

using namespace fake_cuda;

namespace {

enum { kCaptureGlobal = 0, kStatusActive = 1 };

/// The Driver API calls a host that captures graphs makes itself.
struct Host {
  Fake &f;
  int (*retain)(void **, int);
  int (*release)(int);
  int (*set)(void *);
  int (*stream_create)(void **, unsigned);
  int (*stream_destroy)(void *);
  int (*begin)(void *, int);
  int (*end)(void *, void **);
  int (*is_capturing)(void *, int *);
  int (*instantiate)(void **, void *, unsigned long long);
  int (*launch)(void *, void *);
  int (*graph_destroy)(void *);
  int (*exec_destroy)(void *);
  int (*htod)(unsigned long long, const void *, size_t);
  void *primary = nullptr, *stream = nullptr;
  explicit Host(Fake &fake)
      : f(fake), retain(sym<int (*)(void **, int)>(f, "cuDevicePrimaryCtxRetain")),
        release(sym<int (*)(int)>(f, "cuDevicePrimaryCtxRelease_v2")),
        set(sym<int (*)(void *)>(f, "cuCtxSetCurrent")),
        stream_create(sym<int (*)(void **, unsigned)>(f, "cuStreamCreate")),
        stream_destroy(sym<int (*)(void *)>(f, "cuStreamDestroy_v2")),
        begin(sym<int (*)(void *, int)>(f, "cuStreamBeginCapture_v2")),
        end(sym<int (*)(void *, void **)>(f, "cuStreamEndCapture")),
        is_capturing(sym<int (*)(void *, int *)>(f, "cuStreamIsCapturing")),
        instantiate(sym<int (*)(void **, void *, unsigned long long)>(
            f, "cuGraphInstantiateWithFlags")),
        launch(sym<int (*)(void *, void *)>(f, "cuGraphLaunch")),
        graph_destroy(sym<int (*)(void *)>(f, "cuGraphDestroy")),
        exec_destroy(sym<int (*)(void *)>(f, "cuGraphExecDestroy")),
        htod(sym<int (*)(unsigned long long, const void *, size_t)>(f, "cuMemcpyHtoD_v2")) {
    REQUIRE(sym<int (*)(unsigned)>(f, "cuInit")(0) == 0);
    // torch's way: the primary context current, and a stream of its own
    // (a blocking one: the NULL stream may not be used while it captures)
    REQUIRE(retain(&primary, 0) == 0);
    REQUIRE(set(primary) == 0);
    REQUIRE(stream_create(&stream, 0) == 0);
  }
  ~Host() {
    stream_destroy(stream);
    set(nullptr);
    release(0);
  }
  /// What a finished kernel and a failed one leave behind: the first event
  /// counter changed, the error record claimed, the abort flag raised.
  void dirty(const etl_fake_cuda_stats &seen) {
    uint32_t junk[8];
    std::memset(junk, 0xAB, sizeof junk);
    uint32_t one = 1;
    REQUIRE(htod(seen.seen_slots[ETL_SLOT_EVENTS], junk, 4) == 0);
    REQUIRE(htod(seen.seen_slots[ETL_SLOT_ERROR], junk, sizeof junk) == 0);
    REQUIRE(htod(seen.seen_slots[ETL_SLOT_ABORT], &one, 4) == 0);
  }
};

/// rowsum.etl (M = 40, N = 300) on the context current (the host's).
struct Rowsum {
  etlContext ctx = nullptr;
  etlProgram prog = nullptr;
  std::vector<void *> bufs;
  Rowsum() {
    REQUIRE(etlContextCreate(&ctx, "cuda", nullptr) == ETL_SUCCESS);
    REQUIRE(etlProgramLoadFile(ctx, artifact("rowsum").c_str(), &prog) == ETL_SUCCESS);
    REQUIRE(etlBindDim(prog, "M", 40) == ETL_SUCCESS);
    REQUIRE(etlBindDim(prog, "N", 300) == ETL_SUCCESS);
  }
  void *alloc(size_t bytes, float value) {
    void *p = nullptr;
    REQUIRE(etlMalloc(ctx, bytes, &p) == ETL_SUCCESS);
    std::vector<float> h(bytes / 4, value);
    REQUIRE(etlMemcpyHtoD(ctx, p, h.data(), bytes) == ETL_SUCCESS);
    bufs.push_back(p);
    return p;
  }
  void bind(void *x, void *y) {
    int64_t sx[2] = {40, 300}, sy[1] = {40};
    REQUIRE(etlBindTensor(prog, "x", x, ETL_F32, 2, sx) == ETL_SUCCESS);
    REQUIRE(etlBindTensor(prog, "y", y, ETL_F32, 1, sy) == ETL_SUCCESS);
  }
  void run(void *stream) {
    INFO(etlGetLastErrorMessage());
    REQUIRE(etlRunAsync(prog, stream) == ETL_SUCCESS);
    REQUIRE(etlRunWait(prog) == ETL_SUCCESS);
  }
  ~Rowsum() {
    for (void *p : bufs)
      etlFree(ctx, p);
    etlProgramDestroy(prog);
    etlContextDestroy(ctx);
  }
};

/// Calls of the synchronous and allocating functions a capture forbids.
int sync_calls(Fake &f) {
  int n = 0;
  for (const char *s : {"cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemAlloc_v2", "cuMemFree_v2",
                        "cuEventQuery", "cuStreamQuery", "cuCtxSynchronize"})
    n += f.calls(s);
  return n;
}

/// What the replayed kernel read as it started: the captured binding's
/// block, a fresh state.
void check_fresh(const etl_fake_cuda_stats &st, const etl_fake_cuda_stats &warm) {
  CHECK(st.seen_args == warm.seen_args); // the block uploaded for binding A
  for (int i = 0; i < 16; ++i) {
    CAPTURE(i);
    CHECK(st.seen_slots[i] == warm.seen_slots[i]);
  }
  CHECK(st.seen_event0 == warm.seen_event0); // the wait count, not 0xABABABAB
  for (unsigned w : st.seen_error)
    CHECK(w == 0u);
  CHECK(st.seen_abort == 0u);
}

} // namespace

TEST_CASE("a run captured into a CUDA graph replays its binding on a fresh state") {
  Fake &f = fake();
  etl_fake_cuda_stats before = f.stats();
  {
    Host host(f);
    Rowsum r;
    void *xa = r.alloc(40 * 300 * 4, 1.0f), *ya = r.alloc(40 * 4, 0.0f);
    void *xb = r.alloc(40 * 300 * 4, 2.0f), *yb = r.alloc(40 * 4, 0.0f);
    r.bind(xa, ya);
    r.run(host.stream); // the warm-up run: uploads binding A's block and the state
    etl_fake_cuda_stats warm = f.stats();
    CHECK(warm.seen_event0 != 0xFFFFFFFFu);

    REQUIRE(host.begin(host.stream, kCaptureGlobal) == 0);
    int sync_before = sync_calls(f), launches = f.stats().launches;
    int records = f.calls("cuEventRecord");
    {
      INFO(etlGetLastErrorMessage());
      REQUIRE(etlRunAsync(r.prog, host.stream) == ETL_SUCCESS);
    }
    CHECK(sync_calls(f) == sync_before); // nothing synchronous while capturing
    CHECK(f.calls("cuEventRecord") == records);
    CHECK(f.stats().launches == launches); // recorded, not run
    CHECK(etlRunWait(r.prog) == ETL_SUCCESS); // nothing in flight to wait for
    int status = -1;
    REQUIRE(host.is_capturing(host.stream, &status) == 0);
    CHECK(status == kStatusActive); // still valid
    void *graph = nullptr, *exec = nullptr;
    REQUIRE(host.end(host.stream, &graph) == 0);
    etl_fake_cuda_stats cap = f.stats();
    CHECK(cap.last_graph_kernels == 1);
    CHECK(cap.last_graph_copies == 2); // the run's state, then the abort flag
    CHECK(cap.last_graph_memsets == 0);
    REQUIRE(host.instantiate(&exec, graph, 0) == 0);

    // In between: binding B runs directly, then five more bindings, so every
    // argument block no graph captured is reused; the kernels leave their
    // state changed, and a failed one leaves the error record and abort flag.
    r.bind(xb, yb);
    r.run(host.stream);
    CHECK(f.stats().seen_args != warm.seen_args); // B has a block of its own
    for (int i = 0; i < 5; ++i) {
      r.bind(xb, r.alloc(40 * 4, 0.0f));
      r.run(host.stream);
      CHECK(f.stats().seen_args != warm.seen_args); // never the captured block
    }
    for (int replay = 0; replay < 2; ++replay) {
      CAPTURE(replay);
      host.dirty(warm);
      std::vector<float> h(40 * 300, 3.0f + float(replay)); // new input contents
      REQUIRE(etlMemcpyHtoD(r.ctx, xa, h.data(), h.size() * 4) == ETL_SUCCESS);
      REQUIRE(host.launch(exec, host.stream) == 0);
      etl_fake_cuda_stats st = f.stats();
      CHECK(st.graph_launches == replay + 1);
      check_fresh(st, warm);
    }
    // a direct run of binding A again uses the captured block as it is
    r.bind(xa, ya);
    r.run(host.stream);
    CHECK(f.stats().seen_args == warm.seen_args);
    CHECK(host.exec_destroy(exec) == 0);
    CHECK(host.graph_destroy(graph) == 0);
  }
  etl_fake_cuda_stats s = f.stats();
  CHECK(s.device_allocs == before.device_allocs);
  CHECK(s.graphs == before.graphs);
  CHECK(s.graph_execs == before.graph_execs);
  CHECK(s.reclaimed == 0);
  CHECK_MESSAGE(s.violations == 0, f.violation());
}

TEST_CASE("what a capture cannot hold is refused with its reason, leaving the capture valid") {
  Fake &f = fake();
  {
    Host host(f);
    Rowsum r;
    void *x = r.alloc(40 * 300 * 4, 1.0f), *y = r.alloc(40 * 4, 0.0f);
    void *y2 = r.alloc(40 * 4, 0.0f);
    r.bind(x, y);
    auto refused = [&](const char *why) {
      int sync_before = sync_calls(f);
      CHECK(etlRunAsync(r.prog, host.stream) == ETL_ERROR_INVALID_VALUE);
      std::string msg = etlGetLastErrorMessage();
      CAPTURE(msg);
      CHECK(msg.find("capturing a CUDA graph") != std::string::npos);
      CHECK(msg.find(why) != std::string::npos);
      CHECK(msg.find("nothing was recorded") != std::string::npos);
      CHECK(sync_calls(f) == sync_before);
      int status = -1;
      REQUIRE(host.is_capturing(host.stream, &status) == 0);
      CHECK(status == kStatusActive);
    };
    REQUIRE(host.begin(host.stream, kCaptureGlobal) == 0);
    refused("has not run yet"); // no plan for these dims yet
    void *graph = nullptr;
    REQUIRE(host.end(host.stream, &graph) == 0);
    CHECK(f.stats().last_graph_nodes == 0);
    CHECK(host.graph_destroy(graph) == 0);

    // a warm-up run left in flight (as torch's warm-up idiom leaves it)
    // stays so: the capture neither waits for it nor disturbs it
    r.run(host.stream);
    REQUIRE(etlRunAsync(r.prog, host.stream) == ETL_SUCCESS);
    REQUIRE(host.begin(host.stream, kCaptureGlobal) == 0);
    int64_t sy[1] = {40};
    REQUIRE(etlBindTensor(r.prog, "y", y2, ETL_F32, 1, sy) == ETL_SUCCESS);
    refused("has not run yet"); // the dims ran, this binding did not
    REQUIRE(etlBindTensor(r.prog, "y", y, ETL_F32, 1, sy) == ETL_SUCCESS);
    std::string trace = "/tmp/etl-fake-graph-" + std::to_string(getpid()) + ".json";
    REQUIRE(etlProgramSetTimeline(r.prog, trace.c_str()) == ETL_SUCCESS);
    refused("timeline");
    REQUIRE(etlProgramSetTimeline(r.prog, nullptr) == ETL_SUCCESS);
    int sync_before = sync_calls(f);
    REQUIRE(etlRunAsync(r.prog, host.stream) == ETL_SUCCESS); // now it records
    CHECK(sync_calls(f) == sync_before);
    REQUIRE(host.end(host.stream, &graph) == 0);
    CHECK(f.stats().last_graph_kernels == 1);
    CHECK(host.graph_destroy(graph) == 0);
    CHECK(etlRunQuery(r.prog) == ETL_SUCCESS); // the warm-up run, finished after the capture
  }
  CHECK_MESSAGE(f.stats().violations == 0, f.violation());
}

/// `runs` more runs of what `run` runs: prints the driver calls per run and
/// checks that none uploads synchronously.
void count_calls(Fake &f, const char *what, const std::function<void()> &run) {
  run(); // the first run of a binding uploads its plan and block
  f.reset();
  const int runs = 10;
  for (int i = 0; i < runs; ++i)
    run();
  int total = 0;
  std::string per;
  auto symbol = sym<etl_fake_cuda_symbol_fn>(f, "etl_fake_cuda_symbol");
  for (int i = 0; const char *s = symbol(i); ++i)
    if (int n = f.calls(s)) {
      total += n;
      per += " " + std::string(s) + "=" + std::to_string(n / runs);
    }
  MESSAGE("driver calls per etlRunAsync + etlRunWait of " << std::string(what) << " on a stream: "
                                                          << total / runs << " (" << per << " )");
  CHECK(f.calls("cuMemcpyHtoD_v2") == 0);            // the block and state are device-resident
  CHECK(f.calls("cuMemcpyDtoH_v2") == runs);         // the error record (and queue's), in one
  CHECK(f.calls("cuMemcpyAsync") == runs);           // the state's reset, on the stream
  CHECK(f.calls("cuCtxPushCurrent_v2") == 2 * runs); // one entry per call, not per step
  CHECK(f.calls("cuLaunchKernel") == runs);
  CHECK_MESSAGE(f.stats().violations == 0, f.violation());
}

TEST_CASE("a steady-state run makes no synchronous upload (driver calls per run)") {
  Fake &f = fake();
  Host host(f);
  {
    Rowsum r;
    r.bind(r.alloc(40 * 300 * 4, 1.0f), r.alloc(40 * 4, 0.0f));
    count_calls(f, "rowsum", [&] { r.run(host.stream); });
  }
  etlContext ctx = nullptr;
  etlProgram prog = nullptr;
  REQUIRE(etlContextCreate(&ctx, "cuda", nullptr) == ETL_SUCCESS);
  REQUIRE(etlProgramLoadFile(ctx, artifact("dynamic_mixed").c_str(), &prog) == ETL_SUCCESS);
  std::vector<void *> bufs;
  for (const char *t : {"x", "y", "z", "w", "o"}) {
    int64_t n = 2 * 3 * 16;
    bufs.push_back(nullptr);
    REQUIRE(etlMalloc(ctx, size_t(n) * 4, &bufs.back()) == ETL_SUCCESS);
    REQUIRE(etlBindTensor(prog, t, bufs.back(), ETL_F32, 1, &n) == ETL_SUCCESS);
  }
  REQUIRE(etlBindDim(prog, "NB", 3) == ETL_SUCCESS);
  count_calls(f, "dynamic_mixed (dynamic queue)", [&] {
    INFO(etlGetLastErrorMessage());
    REQUIRE(etlRunAsync(prog, host.stream) == ETL_SUCCESS);
    REQUIRE(etlRunWait(prog) == ETL_SUCCESS);
  });
  for (void *b : bufs)
    CHECK(etlFree(ctx, b) == ETL_SUCCESS);
  CHECK(etlContextDestroy(ctx) == ETL_SUCCESS);
}

TEST_CASE("a failing cuStreamIsCapturing launches nothing and names the call") {
  Fake &f = fake();
  Host host(f);
  Rowsum r;
  r.bind(r.alloc(40 * 300 * 4, 1.0f), r.alloc(40 * 4, 0.0f));
  REQUIRE(f.fail("cuStreamIsCapturing", 999, 1) == 0);
  CHECK(etlRunAsync(r.prog, host.stream) == ETL_ERROR_CUDA);
  std::string msg = etlGetLastErrorMessage();
  CHECK(msg.find("cuStreamIsCapturing") != std::string::npos);
  CHECK(msg.find("CUresult 999") != std::string::npos);
  CHECK(f.stats().launches == 0);
  r.run(host.stream); // the context is usable
  CHECK(f.stats().launches == 1);
  CHECK_MESSAGE(f.stats().violations == 0, f.violation());
}
