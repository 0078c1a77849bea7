// Buffer lifetimes on the sim: a `buffer ... = zeros` is cleared before
// every run (programs/zeros_accumulate.etl accumulates x into it: y == x on
// each run, never 2x), a plain buffer keeps whatever it held, and the
// poison mode (etlProgramSetPoisonBuffers, ETL_SIM_POISON=1) fills the
// plain ones with NaN so a read before a write shows.
#include "artifacts.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

constexpr int64_t M = 40; // not a multiple of the tile (16): masked edges too

struct Acc {
  etlContext ctx = nullptr;
  etlProgram prog = nullptr;
  void *x = nullptr, *y = nullptr, *u = nullptr;
  std::vector<float> out_y, out_u;
  bool ok = false;

  Acc() {
    std::string path = etl::testartifacts::built("zeros_accumulate");
    if (path.empty())
      return;
    REQUIRE(etlContextCreate(&ctx, "sim", nullptr) == ETL_SUCCESS);
    REQUIRE(etlProgramLoadFile(ctx, path.c_str(), &prog) == ETL_SUCCESS);
    std::vector<float> ones(M, 1.0f);
    for (void **b : {&x, &y, &u})
      REQUIRE(etlMalloc(ctx, M * 4, b) == ETL_SUCCESS);
    REQUIRE(etlMemcpyHtoD(ctx, x, ones.data(), M * 4) == ETL_SUCCESS);
    REQUIRE(etlBindDim(prog, "M", M) == ETL_SUCCESS);
    const char *names[] = {"x", "y", "u"};
    void *bufs[] = {x, y, u};
    for (int i = 0; i < 3; ++i)
      REQUIRE(etlBindTensor(prog, names[i], bufs[i], ETL_F32, 1, &M) == ETL_SUCCESS);
    ok = true;
  }
  void run() {
    INFO(etlGetLastErrorMessage());
    REQUIRE(etlRun(prog) == ETL_SUCCESS);
    out_y.assign(M, 0.0f);
    out_u.assign(M, 0.0f);
    REQUIRE(etlMemcpyDtoH(ctx, out_y.data(), y, M * 4) == ETL_SUCCESS);
    REQUIRE(etlMemcpyDtoH(ctx, out_u.data(), u, M * 4) == ETL_SUCCESS);
  }
  ~Acc() {
    if (!ctx)
      return;
    for (void *b : {x, y, u})
      if (b)
        etlFree(ctx, b);
    if (prog)
      etlProgramDestroy(prog);
    etlContextDestroy(ctx);
  }
};

} // namespace

TEST_CASE("a `= zeros` buffer is cleared before every run; a plain one keeps its contents") {
  Acc a;
  if (!a.ok)
    return;
  for (int run = 1; run <= 3; ++run) {
    CAPTURE(run);
    a.run();
    for (int64_t i = 0; i < M; ++i) {
      CAPTURE(i);
      CHECK(a.out_y[i] == 1.0f); // zeros + x, every run
      // the plain buffer is undefined; the sim keeps it (zeroed at allocation)
      CHECK(a.out_u[i] == float(run));
    }
  }
}

TEST_CASE("the poison mode makes a read of an undefined buffer NaN, not a `= zeros` one") {
  Acc a;
  if (!a.ok)
    return;
  REQUIRE(etlProgramSetPoisonBuffers(a.prog, 1) == ETL_SUCCESS);
  for (int run = 1; run <= 2; ++run) {
    a.run();
    for (int64_t i = 0; i < M; ++i) {
      CHECK(a.out_y[i] == 1.0f);
      CHECK(std::isnan(a.out_u[i]));
    }
  }
  REQUIRE(etlProgramSetPoisonBuffers(a.prog, 0) == ETL_SUCCESS);
  a.run(); // off again: raw holds the poison, NaN + 1 is still NaN; y unaffected
  CHECK(a.out_y[0] == 1.0f);
  CHECK(std::isnan(a.out_u[0]));
}

TEST_CASE("ETL_SIM_POISON=1 turns the poison mode on without the call") {
  Acc a;
  if (!a.ok)
    return;
  a.run();
  CHECK(a.out_u[0] == 1.0f);
  setenv("ETL_SIM_POISON", "1", 1);
  a.run();
  unsetenv("ETL_SIM_POISON");
  CHECK(a.out_y[0] == 1.0f);
  CHECK(std::isnan(a.out_u[0]));
  CHECK(std::isnan(a.out_u[M - 1]));
}
