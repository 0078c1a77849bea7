//===- tests/unit/target/if_facts_ptx_test.cpp - Branch facts in the PTX --===//
//
// An `if` condition is a fact inside its branch (sema/hazards.h): with
// `if i > 0` the load of y[i * 64 .. +64] cannot touch the task's earlier
// store to y[0 .. +64], so the PTX has one bar.sync fewer than the same
// program under `if i >= 0`, where the two may overlap (i == 0).
//
//===----------------------------------------------------------------------===//
#include "ptx_programs.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

std::string program(const std::string &condition) {
  std::string text = "kernel k<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N], z: tensor<f32>[N])\n"
                     "  where N % 64 == 0 {\n"
                     "  task t[i in 0 .. N / 64] {\n"
                     "    store(y[0 .. +64], load(x[0 .. +64]));\n"
                     "    if " +
                     condition +
                     " {\n"
                     "      store(z[i * 64 .. +64], load(y[i * 64 .. +64]));\n"
                     "    }\n"
                     "  }\n"
                     "}\n";
  fs::path p =
      fs::temp_directory_path() / ("etl-iffacts-" + std::to_string(getpid()) + "-" +
                                   std::to_string(std::hash<std::string>()(condition)) + ".etl");
  std::ofstream(p) << text;
  return p.string();
}

size_t count(const std::string &s, const char *what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1))
    ++n;
  return n;
}

} // namespace

TEST_CASE("an if condition removes the hazard barrier it makes unnecessary") {
  std::string proven = program("i > 0"), unproven = program("i >= 0");
  for (const char *target : {"sm_90", "sm_80"}) {
    CAPTURE(target);
    size_t with_fact = count(etl::ptxcheck::compile_ptx(proven, target), "bar.sync");
    size_t without = count(etl::ptxcheck::compile_ptx(unproven, target), "bar.sync");
    CHECK(with_fact + 1 == without);
  }
  fs::remove(proven);
  fs::remove(unproven);
}
