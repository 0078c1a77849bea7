//===- tests/unit/target/all_examples_ptx_test.cpp - Every example's PTX -===//
//
// Every program under examples/ (examples/NAME/NAME.etl), compiled by the
// driver exactly as `etlc compile --emit=ptx` does (imports resolved), for
// sm_90 and sm_80; ptxas must accept the PTX, and `ptxas -v` must report no
// spills (the kernel's .maxntid / .minnctapersm 1 let ptxas use up to 255
// registers a thread). New examples are picked up without touching this file.
//
//===----------------------------------------------------------------------===//
#include "ptx_programs.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace etl;

TEST_CASE("every example compiles for sm_90 and sm_80, and ptxas accepts the PTX") {
  std::vector<fs::path> programs = ptxcheck::programs(/*runtime_programs=*/false);
  REQUIRE(programs.size() >= 4);
  for (const fs::path &p : programs) {
    for (const char *target : {"sm_90", "sm_80"}) {
      CAPTURE(p.string());
      CAPTURE(target);
      std::string ptx = ptxcheck::compile_ptx(p.string(), target);
      REQUIRE(ptx.find(".entry") != std::string::npos);
      if (std::string(ETL_PTXAS).empty()) {
        MESSAGE("ptxas not found at configure time: skipping PTX assembly of " << p.filename());
        continue;
      }
      std::string in = "/tmp/etl-all-" + std::to_string(getpid()) + "-" + target + ".ptx";
      std::ofstream(in) << ptx;
      std::string cmd =
          std::string(ETL_PTXAS) + " -v -arch=" + target + " " + in + " -o /dev/null 2>&1";
      std::string log;
      FILE *pipe = popen(cmd.c_str(), "r");
      REQUIRE(pipe);
      char buf[512];
      while (fgets(buf, sizeof buf, pipe))
        log += buf;
      int rc = pclose(pipe);
      std::remove(in.c_str());
      INFO(log);
      CHECK_MESSAGE(rc == 0, "ptxas rejected the PTX of " << p.filename() << " for " << target);
      // "N bytes spill stores, M bytes spill loads", for each function.
      size_t spills = 0, at = 0;
      while ((at = log.find(" bytes spill ", at)) != std::string::npos) {
        size_t b = log.rfind(' ', at - 1);
        spills += std::stoul(log.substr(b + 1, at - b - 1));
        at += 13;
      }
      CHECK(log.find("bytes spill stores") != std::string::npos);
      CHECK_MESSAGE(spills == 0, p.filename() << " spills on " << target);
    }
  }
}
