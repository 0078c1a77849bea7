//===- tests/unit/target/ptx_programs.h - Programs compiled to PTX --------===//
//
// Shared by the PTX tests: the programs they sweep (every example, and the
// runtime tests' programs) and the driver call that compiles one to PTX
// exactly as `etlc compile --emit=ptx --target T` does.
//
//===----------------------------------------------------------------------===//
#ifndef ETL_TESTS_PTX_PROGRAMS_H
#define ETL_TESTS_PTX_PROGRAMS_H

#include "driver/pipeline.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace etl::ptxcheck {

inline bool starts_with(const std::string &s, const char *p) { return s.rfind(p, 0) == 0; }
inline bool has(const std::string &s, const char *what) {
  return s.find(what) != std::string::npos;
}

/// examples/NAME/NAME.etl for every example, and with `runtime_programs`
/// tests/unit/runtime/programs/*.etl too; sorted.
inline std::vector<std::filesystem::path> programs(bool runtime_programs = true) {
  namespace fs = std::filesystem;
  std::vector<fs::path> out;
  fs::path root(ETL_SOURCE_DIR);
  for (const auto &d : fs::directory_iterator(root / "examples")) {
    fs::path p = d.path() / (d.path().filename().string() + ".etl");
    if (d.is_directory() && fs::exists(p))
      out.push_back(p);
  }
  if (runtime_programs)
    for (const auto &d : fs::directory_iterator(root / "tests/unit/runtime/programs"))
      if (d.path().extension() == ".etl")
        out.push_back(d.path());
  std::sort(out.begin(), out.end());
  return out;
}

/// The PTX of `src` for `target` (threads 0: the compiler's choice); the
/// compile must succeed.
inline std::string compile_ptx(const std::string &src, const std::string &target = "sm_90",
                               unsigned threads = 0, bool fmad = true) {
  CompileOptions o;
  o.input = src;
  o.targets = {target};
  o.emit = "ptx";
  o.threads_per_cta = threads;
  o.fmad = fmad;
  std::ostringstream out, err;
  int code = compile(o, out, err);
  INFO(err.str());
  REQUIRE(code == 0);
  return out.str();
}

} // namespace etl::ptxcheck

#endif // ETL_TESTS_PTX_PROGRAMS_H
