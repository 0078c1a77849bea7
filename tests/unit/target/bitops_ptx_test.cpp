//===- tests/unit/target/bitops_ptx_test.cpp - Bit operators in PTX -------===//
//
// What this covers: tests/unit/target/bit_ops.etl (`& | ^ ~ << >>` and popc
// on i32 and i64) compiled for sm_80 and sm_90: the PTX has the logic,
// shift (arithmetic `shr.s`, the amount masked to the width) and popc
// instructions, and ptxas accepts it (skipped with a message when ptxas is
// absent).
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"

#include "../skip.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <unistd.h>

using namespace etl;

TEST_CASE("bit operators: PTX uses and/or/xor/not/shl/shr.s/popc, ptxas accepts") {
  for (const char *target : {"sm_80", "sm_90"}) {
    INFO(target);
    CompileOptions o;
    o.input = std::string(ETL_SOURCE_DIR) + "/tests/unit/target/bit_ops.etl";
    o.targets = {target};
    o.emit = "ptx";
    std::ostringstream out, err;
    REQUIRE_MESSAGE(compile(o, out, err) == 0, err.str());
    std::string ptx = out.str();
    for (const char *insn : {"and.b32", "or.b32", "xor.b32", "not.b32", "shl.b32", "shr.s32",
                             "popc.b32", "popc.b64", "shl.b64", "shr.s64", "and.b64"})
      CHECK_MESSAGE(ptx.find(insn) != std::string::npos, "no " << insn << " in the PTX");
    // The shift amount is masked to the width (PTX would clamp it instead;
    // sim on x86 masks by itself, so only the PTX shows the mask is there).
    CHECK_MESSAGE(std::regex_search(ptx, std::regex(R"(and\.b32\s+%r\d+, %r\d+, 31;)")),
                  "no i32 shift-amount mask in the PTX");
    CHECK_MESSAGE(
        std::regex_search(ptx, std::regex(R"(and\.b(32|64)\s+%r[d]?\d+, %r[d]?\d+, 63;)")),
        "no i64 shift-amount mask in the PTX");
    if (std::string(ETL_PTXAS).empty()) {
      ETL_TEST_SKIP("ptxas not found at configure time: skipping PTX assembly for " << target);
      continue;
    }
    std::string in = "/tmp/etl-bitops-" + std::to_string(getpid()) + "-" + target + ".ptx";
    std::ofstream(in) << ptx;
    std::string cmd = std::string(ETL_PTXAS) + " -arch=" + target + " " + in + " -o /dev/null";
    int rc = std::system(cmd.c_str());
    std::remove(in.c_str());
    CHECK_MESSAGE(rc == 0, "ptxas rejected the PTX for " << target);
  }
}
