//===- tests/unit/lower/registers_test.cpp - Tile registers and spills ----===//
//
// What this covers (lower/registers.h): the estimate of the registers a
// task's tiles keep busy per thread (live `let`/`var` values, values
// defined outside a loop live through it, 8-byte elements twice), the
// RegisterSpill warning at the task when the estimate exceeds a GPU
// target's budget (target/target.h, register_limit; never for sim), that
// no example or runtime test program warns, and that a program the
// compiler warns about does spill in ptxas.
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"
#include "lower/registers.h"
#include "target/target.h"

#include "../driver/driver_harness.h"
#include "../target/ptx_programs.h"

#include "../skip.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace etl;

namespace {

/// Five [128, 128] f32 tiles (64 registers each at 256 threads) live at once.
const char *kSpill = R"(const T = 128;
kernel wide<N: dim>(a: tensor<f32>[N, T], b: tensor<f32>[N, T], y: tensor<f32>[N, T])
  where N % T == 0 {
  task spill[i in 0 .. N / T] {
    let p = load(a[i * T .. +T, 0 .. +T]);
    let q = load(b[i * T .. +T, 0 .. +T]);
    let r = p * q;
    let s = p + q;
    store(y[i * T .. +T, 0 .. +T], r * s + p);
  }
}
)";

/// Four [128, 128] f32 tiles loaded and all read by the one store: more
/// than a thread's 255 registers hold at 256 threads, also lowered from the
/// tile IR (one address per 128-bit vector), where kSpill fits. The rows
/// are bounds-checked (no `where N % T == 0`): with tiles proven inside,
/// ptxas streams the element-wise store without spilling.
const char *kSpillTile = R"(const T = 128;
kernel wide4<N: dim>(a: tensor<f32>[N, T], b: tensor<f32>[N, T], c: tensor<f32>[N, T],
                     d: tensor<f32>[N, T], y: tensor<f32>[N, T]) {
  task spill[i in 0 .. cdiv(N, T)] {
    let p = load(a[i * T .. +T, 0 .. +T]);
    let q = load(b[i * T .. +T, 0 .. +T]);
    let u = load(c[i * T .. +T, 0 .. +T]);
    let v = load(d[i * T .. +T, 0 .. +T]);
    let r = p * q;
    let s = u + v;
    store(y[i * T .. +T, 0 .. +T], r * s + p * u + q * v);
  }
}
)";

/// `w` is defined before the loop and read in it: live through all of it.
const char *kLoop = R"(const T = 64;
kernel acc<N: dim>(x: tensor<f32>[N, T], w: tensor<f32>[T, T], y: tensor<f32>[T, T])
  where N % T == 0 {
  task t[u in 0 .. 1] {
    let wt = load(w[0 .. +T, 0 .. +T]);
    var acc = zeros<f32>[T, T];
    for j in 0 .. N / T {
      let xj = load(x[j * T .. +T, 0 .. +T]);
      acc += xj * wt;
    }
    store(y[0 .. +T, 0 .. +T], acc);
  }
}
)";

const char *kI64 = R"(const T = 128;
kernel k<N: dim>(a: tensor<i64>[N, T], y: tensor<i64>[N, T]) where N % T == 0 {
  task t[i in 0 .. N / T] {
    let p = load(a[i * T .. +T, 0 .. +T]);
    store(y[i * T .. +T, 0 .. +T], p + p);
  }
}
)";

struct Front {
  Compilation c;
  explicit Front(const std::string &text) {
    c.file = c.sm.add("test.etl", text);
    bool ok = compile_front(c);
    INFO(c.diag.render());
    REQUIRE(ok);
  }
  const TaskDecl &task(size_t i = 0) const { return c.program->kernels[0].tasks.at(i); }
};

std::string write_program(const std::string &name, const std::string &text) {
  fs::path p = fs::temp_directory_path() / ("etl-regs-" + std::to_string(getpid()) + name);
  std::ofstream(p) << text;
  return p.string();
}

/// etlc compile FILE --emit=taskgraph with `targets` (and --threads): its
/// diagnostics.
std::string diagnostics(const std::string &file, std::vector<std::string> targets,
                        unsigned threads = 0) {
  CompileOptions o;
  o.input = file;
  o.targets = std::move(targets);
  o.emit = "taskgraph";
  o.threads_per_cta = threads;
  drivertest::Result r = drivertest::run(o);
  INFO(r.err);
  CHECK(r.code == 0);
  return r.err;
}

} // namespace

TEST_CASE("registers: live tiles at the busiest statement, per thread") {
  Front f(kSpill);
  CHECK(register_need(f.task(), 256) == 560);
  // r, s and p live at the store, with r * s and the sum: 3 x 64 + 2 x 64.
  CHECK(tile_registers(f.task(), 256) == 320);
  CHECK(tile_registers(f.task(), 512) == 160);
  CHECK(tile_registers(f.task(), 1024) == 80);

  Front loop(kLoop);
  // In the loop: wt and acc live throughout, xj, and xj * wt: 4 x 32 at 128.
  CHECK(tile_registers(loop.task(), 128) == 128);

  Front wide(kI64);
  // 64 elements a thread at 256 threads, two registers each; p and p + p.
  CHECK(tile_registers(wide.task(), 256) == 256);
}

TEST_CASE("registers: the loads a tensor-core dot reads take none (cp.async to shared)") {
  // examples/gemm at 256 threads: acc and the dot's result, 64 each; the
  // 128 x 32 and 32 x 128 bf16 loads (16 each) are staged by cp.async.
  std::ifstream in(std::string(ETL_SOURCE_DIR) + "/examples/gemm/gemm.etl");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(text.find("const BN = 128;") != std::string::npos);
  Front f(text);
  CHECK(tile_registers(f.task(), 256) == 128);
  // The same loop on f32 (FMA path: the operands are registers): 160.
  std::string f32 = text;
  for (size_t at; (at = f32.find("bf16")) != std::string::npos;)
    f32.replace(at, 4, "f32");
  Front g(f32);
  CHECK(tile_registers(g.task(), 256) == 160);
}

TEST_CASE("registers: the budget per thread of each target") {
  const TargetDesc *sm90 = find_target("sm_90");
  const TargetDesc *sm80 = find_target("sm_80");
  const TargetDesc *sim = find_target("sim");
  REQUIRE((sm90 && sm80 && sim));
  CHECK(register_limit(*sm90, 128) == 255);
  CHECK(register_limit(*sm90, 256) == 255);
  CHECK(register_limit(*sm80, 384) == 168);
  CHECK(register_limit(*sm80, 512) == 128);
  CHECK(register_limit(*sm90, 1024) == 64);
  CHECK(register_limit(*sim, 256) == 0);
}

TEST_CASE("registers: a task that would spill is warned about on GPU targets only") {
  std::string src = write_program("spill.etl", kSpill);
  std::string gpu = diagnostics(src, {"sm_90", "sim"});
  CHECK(gpu.find("warning: task 'spill' needs about 560 registers per thread (320 for the tile "
                 "elements it keeps live, plus their addresses; 256 threads per CTA), more than "
                 "the 255 a thread has on sm_90") != std::string::npos);
  CHECK(gpu.find(":4:8:") != std::string::npos); // at the task's name
  CHECK(diagnostics(src, {"sim"}).empty());
  // 512 threads: 280 registers needed, 128 available.
  CHECK(diagnostics(src, {"sm_80"}, 512)
            .find("needs about 280 registers per thread (160 for the tile elements it keeps "
                  "live, plus their addresses; 512 threads per CTA), more than the 128 a thread "
                  "has on sm_80") != std::string::npos);
  std::string loop = write_program("loop.etl", kLoop);
  CHECK(diagnostics(loop, {"sm_90"}).empty());
  fs::remove(src);
  fs::remove(loop);
}

TEST_CASE("registers: no example or runtime test program warns") {
  std::vector<fs::path> list = ptxcheck::programs();
  REQUIRE(list.size() >= 6);
  for (const fs::path &p : list) {
    CAPTURE(p.string());
    std::string err = diagnostics(p.string(), {"sm_90", "sm_80", "sm_86", "sim"});
    CHECK(err.find("registers per thread") == std::string::npos);
  }
}

TEST_CASE("registers: a program the compiler warns about spills in ptxas") {
  if (std::string(ETL_PTXAS).empty()) {
    ETL_TEST_SKIP("ptxas not found at configure time: skipping the spill check");
    return;
  }
  // The estimate keeps an address per element, so it errs high on the tile
  // IR's lowering (128-bit accesses, one address per vector): kSpill fits
  // there in 216 registers without a spill. Four such tiles live at once
  // spill all the same.
  std::string src = write_program("spill_ptx.etl", kSpillTile);
  CHECK(diagnostics(src, {"sm_90"}).find("registers per thread") != std::string::npos);
  std::string log;
  CHECK(ptxcheck::run_ptxas(ptxcheck::compile_ptx(src, "sm_90"), "sm_90", log) == 0);
  INFO(log);
  size_t spills = ptxcheck::spill_bytes(log);
  CHECK(spills > 0);
  fs::remove(src);

  // Half the tile side at 256 threads: 140 registers needed, no warning,
  // and ptxas does not spill.
  std::string small_text = kSpill;
  small_text.replace(small_text.find("T = 128"), 7, "T = 64");
  std::string small = write_program("nospill_ptx.etl", small_text);
  CHECK(diagnostics(small, {"sm_90"}, 256).empty());
  CHECK(ptxcheck::run_ptxas(ptxcheck::compile_ptx(small, "sm_90", 256), "sm_90", log) == 0);
  CHECK(ptxcheck::spill_bytes(log) == 0);
  fs::remove(small);
}
