//===- tests/unit/runtime/run_async_test.cpp - etlRunAsync/Wait/Query on sim ===//
//
// What this covers: the asynchronous run API on the sim device, where a
// launch completes inside etlRunAsync: a non-NULL stream is refused with
// nothing run, NULL runs the program (its results are there when the call
// returns), etlRunWait and etlRunQuery then report the run's status, again
// and with its message, until the next run; a failed validation launches
// nothing and leaves the last run's outcome alone; handles are checked. The
// CUDA side (streams, NOT_READY, contexts) is tests/fake_cuda.
//
//===----------------------------------------------------------------------===//
#include "runtime_harness.h"

#include <thread>

using namespace etl_test;

TEST_CASE("run async on sim: NULL stream runs to completion, wait and query report it") {
  std::string a = good_artifact();
  if (a.empty())
    return;
  Loaded l(a);
  // nothing launched yet: nothing to wait for
  CHECK(etlRunWait(l.prog) == ETL_SUCCESS);
  CHECK(etlRunQuery(l.prog) == ETL_SUCCESS);
  Buffers b(l.ctx.ctx, 13);
  b.bind(l.prog);
  etlStatus st = etlRunAsync(l.prog, nullptr);
  INFO(etlGetLastErrorMessage());
  REQUIRE(st == ETL_SUCCESS);
  b.check(); // already complete: sim runs the launch inside the call
  CHECK(etlRunQuery(l.prog) == ETL_SUCCESS);
  CHECK(etlRunWait(l.prog) == ETL_SUCCESS);
  CHECK(etlRunWait(l.prog) == ETL_SUCCESS); // idempotent
  // etlRun is async + wait
  REQUIRE(etlRun(l.prog) == ETL_SUCCESS);
  b.check();
  etlProgramDestroy(l.prog);
}

TEST_CASE("run async on sim: a stream is refused, nothing runs") {
  std::string a = good_artifact();
  if (a.empty())
    return;
  Loaded l(a);
  Buffers b(l.ctx.ctx, 5);
  b.bind(l.prog);
  std::vector<float> before(5, -3.0f), after(5, 0.0f);
  REQUIRE(etlMemcpyHtoD(l.ctx.ctx, b.y, before.data(), 20) == ETL_SUCCESS);
  int not_a_stream = 0;
  CHECK(etlRunAsync(l.prog, &not_a_stream) == ETL_ERROR_INVALID_VALUE);
  std::string msg = etlGetLastErrorMessage();
  CHECK(msg.find("etlRunAsync: a stream was given") != std::string::npos);
  CHECK(msg.find("sim") != std::string::npos);
  CHECK(msg.find("pass NULL") != std::string::npos);
  REQUIRE(etlMemcpyDtoH(l.ctx.ctx, after.data(), b.y, 20) == ETL_SUCCESS);
  CHECK(after == before);                   // not run
  CHECK(etlRunWait(l.prog) == ETL_SUCCESS); // no run was launched
  etlProgramDestroy(l.prog);
}

TEST_CASE("run async on sim: a failed run's status and message stay until the next run") {
  std::string k = kernel("-DDEADLOCK");
  std::string good = good_artifact();
  if (k.empty() || good.empty())
    return;
  std::string dead = artifact(test_meta(), {{"sim", k}});
  Loaded l(dead, 200);
  Buffers b(l.ctx.ctx, 3);
  b.bind(l.prog);
  CHECK(etlRunAsync(l.prog, nullptr) == ETL_ERROR_TIMEOUT);
  etl_error(ETL_SUCCESS, "something else"); // the thread's message moves on
  CHECK(etlRunWait(l.prog) == ETL_ERROR_TIMEOUT);
  std::string msg = etlGetLastErrorMessage();
  CHECK(msg.find("watchdog") != std::string::npos);
  CHECK(msg.find("E[0]=1") != std::string::npos);
  CHECK(etlRunQuery(l.prog) == ETL_ERROR_TIMEOUT);
  CHECK(etlRunWait(l.prog) == ETL_ERROR_TIMEOUT);

  // a validation failure launches nothing and keeps the last run's outcome
  etlProgram fresh = nullptr;
  REQUIRE(etlProgramLoadMemory(l.ctx.ctx, dead.data(), dead.size(), &fresh) == ETL_SUCCESS);
  CHECK(etlRunAsync(fresh, nullptr) == ETL_ERROR_UNBOUND);
  CHECK(etlRunWait(fresh) == ETL_SUCCESS);
  CHECK(etlRunWait(l.prog) == ETL_ERROR_TIMEOUT);
  etlProgramDestroy(fresh);
  etlProgramDestroy(l.prog);

  // a good program on the same context: success replaces nothing of another's
  etlProgram pg = nullptr;
  REQUIRE(etlProgramLoadMemory(l.ctx.ctx, good.data(), good.size(), &pg) == ETL_SUCCESS);
  b.bind(pg);
  CHECK(etlRunAsync(pg, nullptr) == ETL_SUCCESS);
  CHECK(etlRunWait(pg) == ETL_SUCCESS);
  b.check();
  etlProgramDestroy(pg);
}

TEST_CASE("run async: handles and the new status") {
  CHECK(etlRunAsync(nullptr, nullptr) == ETL_ERROR_INVALID_HANDLE);
  CHECK(etlRunWait(nullptr) == ETL_ERROR_INVALID_HANDLE);
  CHECK(etlRunQuery(nullptr) == ETL_ERROR_INVALID_HANDLE);
  CHECK(std::string(etlGetErrorName(ETL_ERROR_NOT_READY)) == "ETL_ERROR_NOT_READY");
  CHECK(std::string(etlGetErrorString(ETL_ERROR_NOT_READY)) == "the run is still in flight");
  std::string a = good_artifact();
  if (a.empty())
    return;
  etlProgram gone = nullptr;
  {
    Loaded l(a);
    gone = l.prog;
    etlProgramDestroy(l.prog);
  }
  CHECK(etlRunAsync(gone, nullptr) == ETL_ERROR_INVALID_HANDLE);
  CHECK(etlRunWait(gone) == ETL_ERROR_INVALID_HANDLE);
  CHECK(etlRunQuery(gone) == ETL_ERROR_INVALID_HANDLE);
}

TEST_CASE("run async on sim: two threads run two programs of one context") {
  std::string a = good_artifact();
  if (a.empty())
    return;
  Ctx ctx(3);
  etlProgram p[2] = {nullptr, nullptr};
  std::deque<Buffers> bufs;
  for (int i = 0; i < 2; ++i) {
    REQUIRE(etlProgramLoadMemory(ctx.ctx, a.data(), a.size(), &p[i]) == ETL_SUCCESS);
    bufs.emplace_back(ctx.ctx, 7 + 4 * i);
    bufs.back().bind(p[i]);
  }
  etlStatus got[2][10];
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < 10; ++k) {
        etlStatus st = etlRunAsync(p[i], nullptr);
        got[i][k] = st ? st : etlRunWait(p[i]);
      }
    });
  for (auto &t : threads)
    t.join();
  for (int i = 0; i < 2; ++i) {
    for (etlStatus st : got[i])
      CHECK(st == ETL_SUCCESS);
    bufs[size_t(i)].check();
    etlProgramDestroy(p[i]);
  }
}
