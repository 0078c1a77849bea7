//===- tests/unit/target/all_examples_ptx_test.cpp - Every example's PTX -===//
//
// Every program under examples/ (examples/NAME/*.etl), compiled by the
// driver exactly as `etlc compile --emit=ptx` does (imports resolved), for
// sm_90 and sm_80; ptxas must accept the PTX, and `ptxas -v` must report no
// spills (the kernel's .maxntid / .minnctapersm 1 let ptxas use up to 255
// registers a thread). New examples are picked up without touching this file.
//
//===----------------------------------------------------------------------===//
#include "ptx_programs.h"

#include "../skip.h"

#include <doctest/doctest.h>

#include <filesystem>

namespace fs = std::filesystem;
using namespace etl;

TEST_CASE("every example compiles for sm_90 and sm_80, and ptxas accepts the PTX") {
  std::vector<fs::path> programs = ptxcheck::programs(/*runtime_programs=*/false);
  REQUIRE(programs.size() >= 4);
  for (const fs::path &p : programs) {
    for (const char *target : {"sm_90", "sm_80"}) {
      CAPTURE(p.string());
      CAPTURE(target);
      const std::string &ptx = ptxcheck::program_ptx(p.string(), target);
      REQUIRE(ptx.find(".entry") != std::string::npos);
      if (std::string(ETL_PTXAS).empty()) {
        ETL_TEST_SKIP("ptxas not found at configure time: skipping PTX assembly of "
                      << p.filename());
        continue;
      }
      std::string log;
      int rc = ptxcheck::run_ptxas(ptx, target, log);
      INFO(log);
      CHECK_MESSAGE(rc == 0, "ptxas rejected the PTX of " << p.filename() << " for " << target);
      size_t spills = ptxcheck::spill_bytes(log);
      CHECK(log.find("bytes spill stores") != std::string::npos);
      CHECK_MESSAGE(spills == 0, p.filename() << " spills on " << target);
    }
  }
}
