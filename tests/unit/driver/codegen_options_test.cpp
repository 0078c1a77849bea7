//===- tests/unit/driver/codegen_options_test.cpp - --threads and --fmad -===//
//
// The code-generation options of `etlc compile`, through the etlc binary (the
// command line's own validation lives in driver/main.cpp): `--threads N` is a
// power-of-two number of warps in 32 .. 1024 or a usage error (exit 2) that
// says so, and
// sets the kernel's .maxntid; `--fmad=false` turns off multiply-add
// contraction on NVPTX; sim code is the same either way (it never fuses).
//
//===----------------------------------------------------------------------===//
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace {

struct Run {
  int code = -1;
  std::string out; ///< stdout and stderr
};

Run etlc(const std::string &args) {
  std::string cmd = std::string(ETL_ETLC_PATH) + " compile " + ETL_SOURCE_DIR +
                    "/examples/rmsnorm_rope/rmsnorm_rope.etl " + args + " 2>&1";
  Run r;
  FILE *f = popen(cmd.c_str(), "r");
  REQUIRE(f);
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, f))
    r.out.append(buf, n);
  int st = pclose(f);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

bool has(const std::string &s, const char *what) { return s.find(what) != std::string::npos; }

} // namespace

TEST_CASE("etlc --threads: a power-of-two number of warps in 32 .. 1024, else a usage error") {
  for (const char *bad : {"48", "0", "16", "2048", "1056", "96", "160"}) {
    CAPTURE(bad);
    Run r = etlc(std::string("--emit=ptx --target sm_90 --threads ") + bad);
    CHECK(r.code == 2);
    CHECK(has(r.out, (std::string("--threads ") + bad).c_str()));
    CHECK(has(r.out, "must be 32, 64, 128, 256, 512 or 1024"));
    CHECK(!has(r.out, ".entry"));
  }
  Run neg = etlc("--emit=ptx --target sm_90 --threads -32");
  CHECK(neg.code == 2);
  for (const char *good : {"32", "64", "1024"}) {
    CAPTURE(good);
    Run r = etlc(std::string("--emit=ptx --target sm_90 --threads ") + good);
    CHECK(r.code == 0);
    CHECK(has(r.out, (std::string(".maxntid ") + good + ",").c_str()));
  }
}

TEST_CASE("etlc --fmad: contraction on NVPTX by default, off with false; sim never fuses") {
  Run fused = etlc("--emit=ptx --target sm_80");
  REQUIRE(fused.code == 0);
  CHECK(has(fused.out, "fma.rn.f32"));
  Run exact = etlc("--emit=ptx --target sm_80 --fmad=false");
  REQUIRE(exact.code == 0);
  CHECK(!has(exact.out, "fma.rn.f32"));
  CHECK(has(exact.out, "mul.rn.f32"));
  CHECK(etlc("--emit=ptx --target sm_80 --fmad=true").out == fused.out);
  Run bad = etlc("--emit=ptx --target sm_80 --fmad=maybe");
  CHECK(bad.code == 2);
  CHECK(has(bad.out, "--fmad"));
  // sim: the same module with or without --fmad, and nothing in it may fuse.
  Run sim = etlc("--emit=llvm --target sim");
  REQUIRE(sim.code == 0);
  CHECK(etlc("--emit=llvm --target sim --fmad=false").out == sim.out);
  CHECK(!has(sim.out, "fmuladd"));
  CHECK(!has(sim.out, "llvm.fma"));
  CHECK(!has(sim.out, " contract "));
  CHECK(!has(sim.out, " fast "));
}
