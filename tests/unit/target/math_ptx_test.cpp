//===- tests/unit/target/math_ptx_test.cpp - Math builtins in PTX ---------===//
//
// What this covers: tests/unit/target/math_ops.etl (every float math
// builtin, f32 and f16) compiled for sm_80 and sm_90: the PTX uses the
// hardware's approximate instructions where the PTX ISA has them, fma
// polynomials for erf, and ptxas accepts it (skipped with a message when
// ptxas is absent).
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"

#include "../skip.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

using namespace etl;

TEST_CASE(
    "math builtins: PTX uses sin/cos/tanh/ex2/lg2.approx and cvt.rmi/rpi/rni, ptxas accepts") {
  for (const char *target : {"sm_80", "sm_90"}) {
    INFO(target);
    CompileOptions o;
    o.input = std::string(ETL_SOURCE_DIR) + "/tests/unit/target/math_ops.etl";
    o.targets = {target};
    o.emit = "ptx";
    std::ostringstream out, err;
    REQUIRE_MESSAGE(compile(o, out, err) == 0, err.str());
    std::string ptx = out.str();
    for (const char *insn : {"sin.approx.f32", "cos.approx.f32", "tanh.approx.f32",
                             "ex2.approx.f32", "lg2.approx.f32", "rsqrt.approx.f32",
                             "cvt.rmi.f32.f32", "cvt.rpi.f32.f32", "cvt.rni.f32.f32", "fma.rn.f32"})
      CHECK_MESSAGE(ptx.find(insn) != std::string::npos, "no " << insn << " in the PTX");
    if (std::string(ETL_PTXAS).empty()) {
      ETL_TEST_SKIP("ptxas not found at configure time: skipping PTX assembly for " << target);
      continue;
    }
    std::string in = "/tmp/etl-math-" + std::to_string(getpid()) + "-" + target + ".ptx";
    std::ofstream(in) << ptx;
    std::string cmd = std::string(ETL_PTXAS) + " -arch=" + target + " " + in + " -o /dev/null";
    int rc = std::system(cmd.c_str());
    std::remove(in.c_str());
    CHECK_MESSAGE(rc == 0, "ptxas rejected the PTX for " << target);
  }
}
