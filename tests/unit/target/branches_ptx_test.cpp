//===- tests/unit/target/branches_ptx_test.cpp - Uniform branches in PTX --===//
//
// What this covers: tests/unit/target/branches.etl (if / else if / else on
// per-task scalars, a hazard barrier inside a branch, a `for` from 1)
// compiled for sm_80 and sm_90: the PTX branches on a predicate, keeps the
// barrier, and ptxas accepts it (skipped with a message when ptxas is
// absent).
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

TEST_CASE("branches: uniform if/else and nonzero-start for in PTX, ptxas accepts") {
  for (const char *target : {"sm_80", "sm_90"}) {
    INFO(target);
    CompileOptions o;
    o.input = std::string(ETL_SOURCE_DIR) + "/tests/unit/target/branches.etl";
    o.targets = {target};
    o.emit = "ptx";
    std::ostringstream out, err;
    REQUIRE_MESSAGE(compile(o, out, err) == 0, err.str());
    std::string ptx = out.str();
    CHECK_MESSAGE(ptx.find("bra") != std::string::npos, "no branch in the PTX");
    CHECK_MESSAGE(ptx.find("bar.sync") != std::string::npos, "no barrier in the PTX");
    if (std::string(ETL_PTXAS).empty()) {
      ETL_TEST_SKIP("ptxas not found at configure time: skipping PTX assembly for " << target);
      continue;
    }
    std::string in = "/tmp/etl-branches-" + std::to_string(getpid()) + "-" + target + ".ptx";
    std::ofstream(in) << ptx;
    std::string cmd = std::string(ETL_PTXAS) + " -arch=" + target + " " + in + " -o /dev/null";
    int rc = std::system(cmd.c_str());
    std::remove(in.c_str());
    CHECK_MESSAGE(rc == 0, "ptxas rejected the PTX for " << target);
  }
}
