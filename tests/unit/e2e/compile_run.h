//===- tests/unit/e2e/compile_run.h - Compile a program and run it on sim -===//
//
// For end-to-end tests: compile ETL text with the driver for sim (32 threads
// per CTA unless RunOptions says otherwise, so tiles span several registers
// per thread and have dead elements), bind dims and host tensors, run once on a 2-worker sim
// context (RunOptions::sim_workers).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "driver/pipeline.h"

#include <etl/etl.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

namespace etl::testing {

/// One tensor binding: host data (sim runs on host memory) and its shape.
struct Bind {
  const char *name;
  void *data;
  etlDType dtype;
  std::vector<int64_t> shape;
};

/// One scalar parameter's binding: `value` points to a value of `dtype`
/// (etlBindScalar).
struct ScalarArg {
  const char *name;
  etlDType dtype;
  const void *value;
};

/// What else a run does: the sim's race check, and where the sim profile and
/// the timeline go (none when empty).
struct RunOptions {
  bool race_check = false;
  std::string profile, timeline;
  unsigned threads_per_cta = 32;         ///< of the compiled kernel
  bool barrier_events = false;           ///< compile with --events=barrier
  MachineWrapper wrap_machine = nullptr; ///< a decorator around the sim machine (backend.h)
  unsigned sim_workers = 2;              ///< CTAs of the sim launch (one pthread each)
  /// The compilation's targets (the run is sim's section): {"sm_90a", "sim"}
  /// makes sim lower as sm_90a does (wgmma, TargetInfo::wgmma).
  std::vector<std::string> targets = {"sim"};
};

/// f16 bits of a float that f16 represents exactly (small multiples of 1/4).
inline uint16_t half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  if ((x & 0x7fffffffu) == 0)
    return uint16_t(sign);
  int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  return uint16_t(sign | uint32_t(exp) << 10 | ((x >> 13) & 0x3ffu));
}
inline float half_value(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  float m = float(h & 0x3ff);
  float v = exp == 0 ? std::ldexp(m, -24) : std::ldexp(1024.0f + m, exp - 25);
  return (h & 0x8000) ? -v : v;
}
/// bf16 bits of a float bf16 represents exactly: its top 16 bits.
inline uint16_t bf16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return uint16_t(x >> 16);
}
inline float bf16_value(uint16_t h) {
  uint32_t x = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

/// Compiles with `o` under ETL_TILE_DEBUG=1 (the driver prints its lines on
/// std::cerr): compile's exit code, its output in `out`, its diagnostics in
/// `err`, and in `lines` the debug lines that start with `prefix`
/// ("lowering ", "prefetch ", "pipeline "), each ending in a newline.
inline int compile_tile_debug(const CompileOptions &o, const char *prefix, std::string &out,
                              std::string &err, std::string &lines) {
  std::ostringstream os, es, debug;
  setenv("ETL_TILE_DEBUG", "1", 1);
  std::streambuf *cerr_buf = std::cerr.rdbuf(debug.rdbuf());
  int code = compile(o, os, es);
  std::cerr.rdbuf(cerr_buf);
  unsetenv("ETL_TILE_DEBUG");
  out = os.str();
  err = es.str();
  lines.clear();
  std::istringstream is(debug.str());
  for (std::string l; std::getline(is, l);)
    if (l.rfind(prefix, 0) == 0)
      lines += l + "\n";
  return code;
}

/// compile_tile_debug of source text: writes `text` to a file of its own
/// under the test binary directory (o.input), compiles it with `o` and
/// removes it again.
inline int compile_text_tile_debug(const std::string &text, CompileOptions o, const char *prefix,
                                   std::string &out, std::string &err, std::string &lines) {
  static int serial = 0;
  std::filesystem::path dir = std::filesystem::path(ETL_TEST_BINARY_DIR) / "e2e_programs";
  std::filesystem::create_directories(dir);
  std::filesystem::path in =
      dir / ("tile-debug-" + std::to_string(getpid()) + "-" + std::to_string(serial++) + ".etl");
  std::ofstream(in) << text;
  o.input = in.string();
  int code = compile_tile_debug(o, prefix, out, err, lines);
  std::filesystem::remove(in);
  return code;
}

/// Compiles `text` for sim and runs it once with `dims`, `binds` and
/// `scalars`; returns
/// "" on success, else the compiler's diagnostics or the runtime's error.
inline std::string compile_and_run(const std::string &text, const std::string &stem,
                                   const std::vector<std::pair<const char *, int64_t>> &dims,
                                   const std::vector<Bind> &binds, const RunOptions &run = {},
                                   const std::vector<ScalarArg> &scalars = {}) {
  std::filesystem::path dir = std::filesystem::path(ETL_TEST_BINARY_DIR) / "e2e_programs";
  std::filesystem::create_directories(dir);
  std::filesystem::path in = dir / (stem + ".etl"), art = dir / (stem + ".etlb");
  std::ofstream(in) << text;
  CompileOptions o;
  o.input = in.string();
  o.output = art.string();
  o.targets = run.targets;
  o.threads_per_cta = run.threads_per_cta;
  o.barrier_events = run.barrier_events;
  o.wrap_machine = run.wrap_machine;
  std::ostringstream out, err;
  if (compile(o, out, err) != 0)
    return "compile failed:\n" + err.str();
  etlContextParams params = etlContextDefaultParams();
  params.sim_workers = run.sim_workers;
  params.watchdog_ms = 5000;
  etlContext ctx = nullptr;
  if (etlContextCreate(&ctx, "sim", &params) != ETL_SUCCESS)
    return "no sim context";
  etlProgram prog = nullptr;
  std::string msg;
  if (etlProgramLoadFile(ctx, art.string().c_str(), &prog) != ETL_SUCCESS) {
    msg = std::string("load: ") + etlGetLastErrorMessage();
  } else {
    for (auto &[name, v] : dims)
      if (msg.empty() && etlBindDim(prog, name, v) != ETL_SUCCESS)
        msg = std::string("bind dim: ") + etlGetLastErrorMessage();
    for (const Bind &b : binds)
      if (msg.empty() && etlBindTensor(prog, b.name, b.data, b.dtype, int(b.shape.size()),
                                       b.shape.data()) != ETL_SUCCESS)
        msg = std::string("bind ") + b.name + ": " + etlGetLastErrorMessage();
    for (const ScalarArg &a : scalars)
      if (msg.empty() && etlBindScalar(prog, a.name, a.dtype, a.value) != ETL_SUCCESS)
        msg = std::string("bind ") + a.name + ": " + etlGetLastErrorMessage();
    if (msg.empty() && !run.timeline.empty() &&
        etlProgramSetTimeline(prog, run.timeline.c_str()) != ETL_SUCCESS)
      msg = std::string("timeline: ") + etlGetLastErrorMessage();
    if (msg.empty() && !run.profile.empty() &&
        etlProgramSetProfile(prog, run.profile.c_str()) != ETL_SUCCESS)
      msg = std::string("profile: ") + etlGetLastErrorMessage();
    if (msg.empty() && run.race_check && etlProgramSetRaceCheck(prog, 1) != ETL_SUCCESS)
      msg = std::string("race check: ") + etlGetLastErrorMessage();
    if (msg.empty()) {
      etlStatus st = etlRun(prog);
      if (st != ETL_SUCCESS)
        msg = std::string("etlRun: ") + etlGetErrorName(st) + ": " + etlGetLastErrorMessage();
    }
  }
  etlContextDestroy(ctx);
  return msg;
}

} // namespace etl::testing
