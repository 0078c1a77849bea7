//===- tests/unit/driver/smem_budget_test.cpp - A dot's shared memory ----===//
//
// What this covers: a dot's shared-memory scratch is bounded by the tile
// IR's plan (tile/smem.cpp), not by a formula in sema. A bf16 dot whose
// operands sema's old bound (4 bytes an element of both) refused for sm_86
// compiles within its real need (2 bytes an element, staged for the tensor
// cores); an f32 FMA dot past the budget is an error at the dot
// (SmemOverBudget; the rendered message is tests/diag/fail_dot_too_large.etl).
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"
#include "tile/passes.h"

#include "driver_harness.h"

#include <doctest/doctest.h>

#include <optional>

using namespace etl;
using namespace etl::drivertest;

namespace {

/// [TM, 256] x [256, 64] of `elem` at 256 threads per CTA.
std::string dot_program(const char *elem, int tm) {
  std::string e = elem;
  return "const TM = " + std::to_string(tm) +
         ";\nconst TK = 256;\nconst TN = 64;\n"
         "kernel k<M: dim>(a: tensor<" +
         e + ">[M, TK], w: tensor<" + e +
         ">[TK, TN], y: tensor<f32>[M, TN]) {\n"
         "  task t[i in 0 .. cdiv(M, TM)] {\n"
         "    let x = load(a[i * TM .. +TM, 0 .. +TK]);\n"
         "    let b = load(w[0 .. +TK, 0 .. +TN]);\n"
         "    store(y[i * TM .. +TM, 0 .. +TN], dot(x, b));\n"
         "  }\n}\n";
}

} // namespace

TEST_CASE("smem budget: a bf16 dot within the plan compiles, though 4 bytes an element would not") {
  const std::string text = dot_program("bf16", 64);
  // (64 x 256 + 256 x 64) x 4 bytes = 131072: more than sm_86's 101344.
  Compilation c;
  c.target = target_info({"sm_86", "sim"});
  c.file = c.sm.add("bf16_dot.etl", text);
  REQUIRE(compile_front(c));
  std::string error;
  std::optional<TileModule> m = lowering_tiles(c, 256, error);
  INFO(error);
  REQUIRE(m.has_value());
  const TileFunc &f = m->funcs.at(0);
  CHECK(f.smem_bytes == 65536); // 2 bytes an element of both operands
  CHECK(f.smem_bytes <= f.smem_budget);
  CHECK(f.smem_budget == 101344);

  CompileOptions o;
  o.input = write(temp_dir("smem_budget") / "bf16_dot.etl", text);
  o.targets = {"sm_86", "sim"};
  o.output = (temp_dir("smem_budget") / "bf16_dot.etlb").string();
  Result r = run(o);
  INFO(r.err);
  CHECK(r.code == kExitOk);
  CHECK(r.err.empty());
}

TEST_CASE("smem budget: an f32 dot past the plan's budget is an error at the dot") {
  CompileOptions o;
  o.input = write(temp_dir("smem_budget") / "f32_dot.etl", dot_program("f32", 128));
  o.targets = {"sm_86", "sim"};
  o.output = (temp_dir("smem_budget") / "f32_dot.etlb").string();
  Result r = run(o);
  INFO(r.err);
  CHECK(r.code == kExitProgramError);
  // At the dot (line 8, column 39), naming the task, the need and the budget.
  CHECK(r.err.find("f32_dot.etl:8:39: error: task 't' needs ") != std::string::npos);
  CHECK(r.err.find("more than the 101344 bytes available; the `dot` here stages") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(o.output));
  // --emit=tile still prints the plan, saying it is over the budget.
  o.output.clear();
  o.emit = "tile";
  Result t = run(o);
  CHECK(t.code == kExitOk);
  CHECK(t.out.find("shared memory over the budget") != std::string::npos);
}
