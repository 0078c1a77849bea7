//===- tests/unit/driver/driver_harness.h - Running the driver in a test --===//
//
// Shared by the driver tests: compile() with options, or the whole `etlc`
// command line (run_cli), capturing the exit code and both streams; a
// scratch folder per test file under the build tree, and writing a file
// into it.
//
//===----------------------------------------------------------------------===//
#ifndef ETL_TESTS_DRIVER_HARNESS_H
#define ETL_TESTS_DRIVER_HARNESS_H

#include "driver/cli.h"
#include "driver/pipeline.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace etl::drivertest {

/// What a compile or an etlc run gave: its exit code, stdout and stderr.
struct Result {
  int code;
  std::string out, err;
};

/// compile(o) as `etlc compile` runs it.
inline Result run(const CompileOptions &o) {
  std::ostringstream out, err;
  int code = compile(o, out, err);
  return {code, out.str(), err.str()};
}

/// The whole command line (`args` without the program name), `stdin_text`
/// on stdin; `terminal`: stderr is a terminal (--color=auto).
inline Result etlc(const std::vector<std::string> &args, const std::string &stdin_text = "",
                   bool terminal = false) {
  std::istringstream in(stdin_text);
  std::ostringstream out, err;
  int code = run_cli(args, in, out, err, terminal);
  return {code, out.str(), err.str()};
}

/// ETL_TEST_BINARY_DIR/name, created.
inline std::filesystem::path temp_dir(const std::string &name) {
  std::filesystem::path d = std::filesystem::path(ETL_TEST_BINARY_DIR) / name;
  std::filesystem::create_directories(d);
  return d;
}

/// Writes `text` to `p` (creating its folder); returns the path.
inline std::string write(const std::filesystem::path &p, const std::string &text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
  return p.string();
}

} // namespace etl::drivertest

#endif // ETL_TESTS_DRIVER_HARNESS_H
