//===- tests/unit/target/quant_ptx_test.cpp - Narrow integer types in PTX -===//
//
// What this covers: tests/unit/target/quant_ops.etl (u8/i8/u16/u32 tensors,
// packed i4/u4 loads, the logical `>>`, unsigned division and comparisons,
// saturating float-to-integer casts, FP8 in software) compiled for sm_80 and
// sm_90: the PTX has byte loads and stores, unsigned shifts, compares and
// conversions, the FP8 rounding, and
// ptxas accepts it (skipped with a message when ptxas is absent).
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

TEST_CASE("narrow and unsigned integers: PTX has u8 memory ops, unsigned shr/setp/div/cvt; "
          "ptxas accepts") {
  for (const char *target : {"sm_80", "sm_90"}) {
    INFO(target);
    CompileOptions o;
    o.input = std::string(ETL_SOURCE_DIR) + "/tests/unit/target/quant_ops.etl";
    o.targets = {target};
    o.emit = "ptx";
    std::ostringstream out, err;
    REQUIRE_MESSAGE(compile(o, out, err) == 0, err.str());
    std::string ptx = out.str();
    for (const char *re : {
             R"(ld(\.global)?(\.nc)?\.u8\s)",       // u8, i8, i4, u4 tensors: byte loads
             R"(ld(\.global)?(\.nc)?\.u16\s)",      // u16
             R"(st(\.global)?\.u8\s)",              // u8 and i8 stores
             R"(shr\.u(16|32)\s)",                  // logical >> (unsigned types, nibbles)
             R"(setp\.(gt|lt|ge|le|hi|lo)\.u32\s)", // u32 comparisons are unsigned
             R"(cvt\.rzi\.u32\.f32\s)",             // cast<u32>(f32): toward zero, saturating
             R"(cvt\.rn\.f32\.u32\s)",              // cast<f32>(u32): unsigned source
             R"(cvt\.rni\.f32\.f32\s)",             // FP8 encoding: round to nearest even
             R"(cvt\.f32\.f16\s)",                  // f8e5m2 decoding: the top byte of an f16
         })
      CHECK_MESSAGE(std::regex_search(ptx, std::regex(re)), "no match for " << re << " in the PTX");
    if (std::string(ETL_PTXAS).empty()) {
      ETL_TEST_SKIP("ptxas not found at configure time: skipping PTX assembly for " << target);
      continue;
    }
    std::string in = "/tmp/etl-quant-" + std::to_string(getpid()) + "-" + target + ".ptx";
    std::ofstream(in) << ptx;
    std::string cmd = std::string(ETL_PTXAS) + " -arch=" + target + " " + in + " -o /dev/null";
    int rc = std::system(cmd.c_str());
    std::remove(in.c_str());
    CHECK_MESSAGE(rc == 0, "ptxas rejected the PTX for " << target);
  }
}
