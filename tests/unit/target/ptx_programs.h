//===- tests/unit/target/ptx_programs.h - Programs compiled to PTX --------===//
//
// Shared by the PTX tests: the programs they sweep (every example, and the
// runtime tests' programs), the driver call that compiles one to PTX
// exactly as `etlc compile --emit=ptx --target T` does, and ptxas -v with
// the spills it reports.
//
//===----------------------------------------------------------------------===//
#ifndef ETL_TESTS_PTX_PROGRAMS_H
#define ETL_TESTS_PTX_PROGRAMS_H

#include "driver/pipeline.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace etl::ptxcheck {

inline bool starts_with(const std::string &s, const char *p) { return s.rfind(p, 0) == 0; }
inline bool has(const std::string &s, const char *what) {
  return s.find(what) != std::string::npos;
}

/// examples/NAME/*.etl for every example (NAME.etl and versions of it such
/// as mlp_bf16.etl), and with `runtime_programs`
/// tests/unit/runtime/programs/*.etl too; sorted.
inline std::vector<std::filesystem::path> programs(bool runtime_programs = true) {
  namespace fs = std::filesystem;
  std::vector<fs::path> out;
  fs::path root(ETL_SOURCE_DIR);
  for (const auto &d : fs::directory_iterator(root / "examples")) // NAME/NAME.etl and versions
    if (d.is_directory())                                         // (mlp/mlp_bf16.etl)
      for (const auto &f : fs::directory_iterator(d.path()))
        if (f.path().extension() == ".etl")
          out.push_back(f.path());
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

/// compile_ptx(src, target) with the compiler's defaults, compiled once per
/// test process: the sweeps over programs() (all_examples, event_protocol,
/// fast_path) read the same PTX, and compiling every program for two
/// targets three times was most of compiler_target's time under ASan.
inline const std::string &program_ptx(const std::string &src, const std::string &target) {
  static std::map<std::pair<std::string, std::string>, std::string> cache;
  auto key = std::make_pair(src, target);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, compile_ptx(src, target)).first;
  return it->second;
}

/// Runs `ptxas -v -arch=target` on `ptx`; returns its exit status, `log`
/// its output (one "N bytes spill stores, M bytes spill loads" line per
/// function). Needs ETL_PTXAS (callers skip when it is empty).
inline int run_ptxas(const std::string &ptx, const std::string &target, std::string &log) {
  std::string in = (std::filesystem::temp_directory_path() /
                    ("etl-ptxas-" + std::to_string(getpid()) + "-" + target + ".ptx"))
                       .string();
  std::ofstream(in) << ptx;
  std::string cmd =
      std::string(ETL_PTXAS) + " -v -arch=" + target + " " + in + " -o /dev/null 2>&1";
  log.clear();
  FILE *pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe);
  char buf[512];
  while (fgets(buf, sizeof buf, pipe))
    log += buf;
  int rc = pclose(pipe);
  std::remove(in.c_str());
  return rc;
}

/// The spilled bytes (stores and loads, every function) a `ptxas -v` log reports.
inline size_t spill_bytes(const std::string &log) {
  size_t spills = 0, at = 0;
  while ((at = log.find(" bytes spill ", at)) != std::string::npos) {
    size_t b = log.rfind(' ', at - 1);
    spills += std::stoul(log.substr(b + 1, at - b - 1));
    at += 13;
  }
  return spills;
}

/// ptxas -v's spilled bytes for `ptx` on `target`, after checking that
/// ptxas accepted it and reported spills at all; -1 when ptxas is not
/// installed (ETL_PTXAS empty: the caller says so).
inline long ptxas_spills(const std::string &ptx, const std::string &target) {
  if (std::string(ETL_PTXAS).empty())
    return -1;
  std::string log;
  int rc = run_ptxas(ptx, target, log);
  INFO(log);
  REQUIRE(rc == 0);
  REQUIRE(log.find("bytes spill stores") != std::string::npos);
  return long(spill_bytes(log));
}

} // namespace etl::ptxcheck

#endif // ETL_TESTS_PTX_PROGRAMS_H
