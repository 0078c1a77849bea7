// Scalar parameters in the runtime alone (a hand-written artifact, see
// runtime_harness.h): the reader's checks of the scalar table, the
// introspection calls, etlBindScalar's checks and etlRun's refusal of an
// unbound scalar (nothing launched), then a successful run.
#include "runtime_harness.h"

using namespace etl_test;

TEST_CASE("artifact reader: the scalar table's element type and slot are checked") {
  std::string k = kernel("");
  if (k.empty())
    return;
  Ctx ctx;
  etlProgram prog = nullptr;
  // 5 (the compiler's bool), past the last code, and a packed type (tensor-only)
  for (uint32_t code : {5u, 99u, uint32_t(ETL_ELEM_U4)}) {
    INFO("element code " << code);
    std::string bad_elem = artifact(test_meta(0, code), {{"sim", k}});
    CHECK(etlProgramLoadMemory(ctx.ctx, bad_elem.data(), bad_elem.size(), &prog) ==
          ETL_ERROR_INVALID_ARTIFACT);
    CHECK(has(last_error(), "scalar 'eps'"));
    CHECK(has(last_error(), "unknown element type"));
  }
  std::string clash = artifact(test_meta(0, ETL_ELEM_F32, 9), {{"sim", k}}); // x's slot
  CHECK(etlProgramLoadMemory(ctx.ctx, clash.data(), clash.size(), &prog) ==
        ETL_ERROR_INVALID_ARTIFACT);
  CHECK(has(last_error(), "argument slot 9 used twice"));
  std::string outside = artifact(test_meta(0, ETL_ELEM_F32, 16), {{"sim", k}});
  CHECK(etlProgramLoadMemory(ctx.ctx, outside.data(), outside.size(), &prog) ==
        ETL_ERROR_INVALID_ARTIFACT);
  CHECK(has(last_error(), "argument slot 16 outside"));
}

TEST_CASE("etlBindScalar: dtype, names, NULLs; unbound at etlRun; then a run") {
  std::string k = kernel("");
  if (k.empty())
    return;
  Ctx ctx;
  etlProgram prog = nullptr;
  std::string a = artifact(test_meta(0, ETL_ELEM_I64), {{"sim", k}});
  REQUIRE(etlProgramLoadMemory(ctx.ctx, a.data(), a.size(), &prog) == ETL_SUCCESS);
  int n = -1;
  REQUIRE(etlProgramNumScalars(prog, &n) == ETL_SUCCESS);
  CHECK(n == 1);
  etlScalarInfo info{};
  REQUIRE(etlProgramScalarInfo(prog, 0, &info) == ETL_SUCCESS);
  CHECK(std::string(info.name) == "eps");
  CHECK(info.dtype == ETL_I64);
  CHECK(etlProgramScalarInfo(prog, -1, &info) == ETL_ERROR_INVALID_VALUE);
  CHECK(has(last_error(), "index -1 not in [0, 1)"));

  Buffers b(ctx.ctx, 4);
  b.bind(prog);
  CHECK(etlRun(prog) == ETL_ERROR_UNBOUND);
  CHECK(has(last_error(), "etlRun: scalar 'eps' (i64) is not bound (call etlBindScalar)"));

  int32_t small = 3;
  CHECK(etlBindScalar(prog, "eps", ETL_I32, &small) == ETL_ERROR_BINDING);
  CHECK(has(last_error(), "scalar 'eps' has dtype i64, bound as i32"));
  CHECK(has(last_error(), "ETL_I64"));
  CHECK(etlBindScalar(prog, "eps", (etlDType)42, &small) == ETL_ERROR_BINDING);
  CHECK(has(last_error(), "bound as ?"));
  CHECK(etlBindScalar(prog, "epsilon", ETL_I64, &small) == ETL_ERROR_NOT_FOUND);
  CHECK(has(last_error(), "no scalar parameter 'epsilon' (it has: eps (i64))"));
  CHECK(etlBindScalar(prog, "N", ETL_I64, &small) == ETL_ERROR_NOT_FOUND);
  CHECK(has(last_error(), "'N' is a dimension"));
  CHECK(etlBindScalar(prog, "total", ETL_I64, &small) == ETL_ERROR_NOT_FOUND);
  CHECK(has(last_error(), "'total' is a tensor"));
  CHECK(etlBindScalar(prog, "partial", ETL_I64, &small) == ETL_ERROR_NOT_FOUND);
  CHECK(etlBindScalar(prog, "eps", ETL_I64, nullptr) == ETL_ERROR_INVALID_VALUE);
  CHECK(etlBindScalar(prog, nullptr, ETL_I64, &small) == ETL_ERROR_INVALID_VALUE);
  CHECK(etlRun(prog) == ETL_ERROR_UNBOUND); // nothing above bound it

  int64_t v = -5;
  REQUIRE(etlBindScalar(prog, "eps", ETL_I64, &v) == ETL_SUCCESS);
  REQUIRE(etlRun(prog) == ETL_SUCCESS);
  b.check();
  etlProgramDestroy(prog);
  CHECK(etlBindScalar(prog, "eps", ETL_I64, &v) == ETL_ERROR_INVALID_HANDLE);
}

TEST_CASE("a program without scalars has none to describe or bind") {
  std::string a = good_artifact();
  if (a.empty())
    return;
  Loaded l(a);
  int n = -1;
  REQUIRE(etlProgramNumScalars(l.prog, &n) == ETL_SUCCESS);
  CHECK(n == 0);
  float f = 1;
  CHECK(etlBindScalar(l.prog, "eps", ETL_F32, &f) == ETL_ERROR_NOT_FOUND);
  CHECK(has(last_error(), "(it has: none)"));
  etlProgramDestroy(l.prog);
}
