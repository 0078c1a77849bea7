//===- tests/unit/target/all_examples_ptx_test.cpp - Every example's PTX -===//
//
// Every program under examples/ (examples/NAME/NAME.etl), compiled by the
// driver exactly as `etlc compile --emit=ptx` does (imports resolved), for
// sm_90 and sm_80; ptxas must accept the PTX. New examples are picked up
// without touching this file.
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace etl;

TEST_CASE("every example compiles for sm_90 and sm_80, and ptxas accepts the PTX") {
  std::vector<fs::path> programs;
  for (const auto &d : fs::directory_iterator(fs::path(ETL_SOURCE_DIR) / "examples")) {
    fs::path p = d.path() / (d.path().filename().string() + ".etl");
    if (d.is_directory() && fs::exists(p))
      programs.push_back(p);
  }
  std::sort(programs.begin(), programs.end());
  REQUIRE(programs.size() >= 4);
  for (const fs::path &p : programs) {
    for (const char *target : {"sm_90", "sm_80"}) {
      CAPTURE(p.string());
      CAPTURE(target);
      CompileOptions o;
      o.input = p.string();
      o.targets = {target};
      o.emit = "ptx";
      std::ostringstream out, err;
      int code = compile(o, out, err);
      INFO(err.str());
      REQUIRE(code == 0);
      REQUIRE(out.str().find(".entry") != std::string::npos);
      if (std::string(ETL_PTXAS).empty()) {
        MESSAGE("ptxas not found at configure time: skipping PTX assembly of " << p.filename());
        continue;
      }
      std::string in = "/tmp/etl-all-" + std::to_string(getpid()) + "-" + target + ".ptx";
      std::ofstream(in) << out.str();
      std::string cmd =
          std::string(ETL_PTXAS) + " -arch=" + target + " " + in + " -o /dev/null 2>&1";
      int rc = std::system(cmd.c_str());
      std::remove(in.c_str());
      CHECK_MESSAGE(rc == 0, "ptxas rejected the PTX of " << p.filename() << " for " << target);
    }
  }
}
