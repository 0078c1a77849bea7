//===- tests/unit/e2e/prefetch_test.cpp - Loads issued before the waits ---===//
//
// What this pins: the weight prefetch (compiler/lower/prefetch.cpp). In a
// decode-style program, the task that waits for its activations issues the
// load of its weight tile before it waits, and keeps the load of the
// activations (a buffer another task stores) after the wait:
//
//   PTX   read with ptx_cfg.h (sm_90): from each load of the weight tensor
//         a path reaches the wait's spin (`ld.acquire.gpu` of an event
//         counter) with no `bar.sync` between (thread 0 waits after the
//         load was issued); from each load of the activations buffer every
//         path meets a `bar.sync` (the task's end) before any spin; the
//         weight loads are `ld.global.nc`;
//   sim   the results are right (exact sums of small integers) under the
//         race check, which fails a task whose load of `h` ran before the
//         wait ordered it after `act`'s store (ETL_ERROR_RACE);
//   dyn   with `act` dynamic, gemv's wait runs it: the weight load is
//         issued before the wait and again after the item, results exact;
//   rules a load of a written buffer, a load in a loop, a data-dependent
//         index and a task without waits hoist nothing; a load indexed by a
//         local does (the tile IR's slice is the expression itself); the
//         register budget keeps the second and third large tiles after the
//         waits;
//   loops a `for` loop's loads of never-written
//         tensors are issued one iteration ahead (softmax's stats loop; not
//         gemv's reduce loops, which read the partial sums other tasks
//         store), with the right sums on sim for zero, one, and several
//         trips, a partial last tile and a step of 2.
//
//===----------------------------------------------------------------------===//
#include "../target/ptx_cfg.h"
#include "../target/ptx_programs.h"
#include "compile_run.h"
#include "etl_abi.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

using namespace etl;
using namespace etl::ptxcheck;
using etl::testing::Bind;
using etl::testing::compile_and_run;
using etl::testing::compile_text_tile_debug;
using etl::testing::RunOptions;

namespace {

const char *kDecode = R"(
const TN = 8;
const TK = 128;

kernel dec<N: dim>(w: tensor<f16>[N, TK], x: tensor<f32>[TK], y: tensor<f32>[N]) {
  buffer h: tensor<f32>[TK];
  event ready[1];

  task act[s in 0 .. 1] notifies ready[0] {
    store(h[0 .. +TK], load(x[0 .. +TK]) * 2.0);
  }

  task gemv[i in 0 .. cdiv(N, TN)] waits ready[0] {
    let wt = cast<f32>(load(w[i * TN .. +TN, 0 .. +TK]));
    let v = expand(load(h[0 .. +TK]), axis = 0);
    store(y[i * TN .. +TN], sum(wt * v, axis = 1));
  }
}
)";

// Argument slots (taskgraph.h, ArgLayout): one dim, then w, x, y, h.
constexpr long kSlotW = ETL_SLOT_FIRST_PROGRAM + 1 + 0;
constexpr long kSlotH = ETL_SLOT_FIRST_PROGRAM + 1 + 3;

std::string write_temp(const std::string &src, const char *tag) {
  std::filesystem::path p = std::filesystem::temp_directory_path() /
                            ("etl-prefetch-" + std::to_string(getpid()) + "-" + tag + ".etl");
  std::ofstream(p) << src;
  return p.string();
}

/// `ETL_TILE_DEBUG=1`'s lines for `src` that start with `what` ("prefetch
/// GROUP: N load(s) before the waits", "pipeline GROUP: ...").
std::string prefetch_report(const std::string &src, const char *what = "prefetch ") {
  CompileOptions o;
  o.targets = {"sm_90"};
  o.emit = "ptx";
  o.threads_per_cta = 128;
  std::string out, err, lines;
  int code = compile_text_tile_debug(src, o, what, out, err, lines);
  INFO(err);
  REQUIRE(code == 0);
  return lines;
}

struct Memory {
  const Kernel &k;
  bool global_load(const Insn &i) const {
    return starts_with(i.op, "ld.global.") && !i.operands.empty() && i.operands.size() >= 2;
  }
  bool load_of(const Insn &i, long slot) const {
    if (!global_load(i))
      return false;
    std::string r = Kernel::address_reg(i.operands[1]);
    return !r.empty() && !k.is_args_pointer(r) && k.slots_of(r).count(slot);
  }
  bool spin(const Insn &i) const {
    if (!starts_with(i.op, "ld.acquire.gpu.") || i.operands.size() < 2)
      return false;
    std::string r = Kernel::address_reg(i.operands[1]);
    return !r.empty() && k.slots_of(r).count(ETL_SLOT_EVENTS);
  }
  static bool barrier(const Insn &i) {
    return starts_with(i.op, "bar.sync") || starts_with(i.op, "barrier.sync");
  }
};

} // namespace

TEST_CASE("prefetch: a decode task loads its weight tile before it waits, its input after") {
  {
    CHECK(prefetch_report(kDecode) == "prefetch gemv: 1 load(s) before the waits\n");
    std::string in = write_temp(kDecode, "ptx");
    std::string ptx = compile_ptx(in, "sm_90");
    std::filesystem::remove(in);
    Kernel k = parse_kernel(ptx);
    Memory m{k};
    int spins = 0, w_loads = 0, w_nc = 0, h_loads = 0;
    for (size_t n = 0; n < k.insns.size(); ++n) {
      const Insn &i = k.insns[n];
      spins += m.spin(i);
      std::string why;
      auto spin = [&](const Insn &x) { return m.spin(x); };
      if (m.load_of(i, kSlotW)) {
        ++w_loads;
        w_nc += starts_with(i.op, "ld.global.nc.");
        // From the weight load, thread 0 reaches the wait's spin with no
        // bar.sync between: the load is issued before the task waits.
        INFO("weight load at line " << i.line << ": " << i.text);
        CHECK_FALSE(k.every_path_forward(int(n), Memory::barrier, spin, why));
        CHECK(why.find("ld.acquire.gpu") != std::string::npos);
      }
      if (m.load_of(i, kSlotH)) {
        ++h_loads;
        // The activations' load: every path meets a bar.sync (the end of
        // the task) before any spin: it stays after the wait.
        INFO("activation load at line " << i.line << ": " << i.text);
        CHECK(k.every_path_forward(int(n), Memory::barrier, spin, why));
        INFO(why);
      }
    }
    CHECK(h_loads >= 1);
    CHECK(spins >= 1);
    CHECK(w_loads >= 1);
    CHECK(w_nc == w_loads); // the never-written weights take the read-only path
  }
}

TEST_CASE("prefetch: the decode program's results on sim, under the race check") {
  const int64_t N = 20, TK = 128; // N not a multiple of TN: the last tile is partial
  std::vector<uint16_t> w(size_t(N * TK));
  std::vector<float> x(static_cast<size_t>(TK)), y(static_cast<size_t>(N), -1.0f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < TK; ++k)
      w[size_t(n * TK + k)] = testing::half_bits(float((n + k) % 5) - 2.0f);
  for (int64_t k = 0; k < TK; ++k)
    x[size_t(k)] = float(k % 7) - 3.0f;
  for (unsigned threads : {128u, 32u}) {
    CAPTURE(threads);
    std::fill(y.begin(), y.end(), -1.0f);
    std::string err = compile_and_run(kDecode, "prefetch_dec_" + std::to_string(threads), {{"N", N}},
                                      {{"w", w.data(), ETL_F16, {N, TK}},
                                       {"x", x.data(), ETL_F32, {TK}},
                                       {"y", y.data(), ETL_F32, {N}}},
                                      RunOptions{true, "", "", threads});
    INFO(err);
    REQUIRE(err == "");
    for (int64_t n = 0; n < N; ++n) {
      // Products of small integers (|w| <= 2, |2x| <= 6), 128 of them: every
      // partial sum is an integer below 2^24, so f32 adds them exactly in
      // any order and the result equals the integer sum.
      int64_t want = 0;
      for (int64_t k = 0; k < TK; ++k)
        want += ((n + k) % 5 - 2) * 2 * (k % 7 - 3);
      CAPTURE(n);
      CHECK(y[size_t(n)] == float(want));
    }
  }
}

// The same program with `act` dynamic: gemv's wait runs ready dynamic items
// (lower_dynamic.cpp's emit_static_wait_loop). The weight load is still
// issued before the wait, and again after each item the wait runs (the
// item's registers replaced it), so the PTX holds it twice; on one CTA
// gemv[0] is dealt first and runs act from its wait, the path that re-issues.
const char *kDecodeDyn = R"(
const TN = 8;
const TK = 128;

kernel dec<N: dim>(w: tensor<f16>[N, TK], x: tensor<f32>[TK], y: tensor<f32>[N]) {
  buffer h: tensor<f32>[TK];
  event ready[1];

  task act[s in 0 .. 1] schedule dynamic notifies ready[0] {
    store(h[0 .. +TK], load(x[0 .. +TK]) * 2.0);
  }

  task gemv[i in 0 .. cdiv(N, TN)] waits ready[0] {
    let wt = cast<f32>(load(w[i * TN .. +TN, 0 .. +TK]));
    let v = expand(load(h[0 .. +TK]), axis = 0);
    store(y[i * TN .. +TN], sum(wt * v, axis = 1));
  }
}
)";

TEST_CASE("prefetch: in a kernel with dynamic groups, before the wait and after each item it runs") {
  CHECK(prefetch_report(kDecodeDyn) == "prefetch gemv: 1 load(s) before the waits\n");
  std::string in = write_temp(kDecodeDyn, "dyn-ptx");
  std::string ptx = compile_ptx(in, "sm_90");
  std::filesystem::remove(in);
  Kernel k = parse_kernel(ptx);
  Memory m{k};
  int w_loads = 0, before_spin = 0;
  for (size_t n = 0; n < k.insns.size(); ++n) {
    const Insn &i = k.insns[n];
    if (!m.load_of(i, kSlotW))
      continue;
    ++w_loads;
    std::string why;
    auto spin = [&](const Insn &x) { return m.spin(x); };
    before_spin += !k.every_path_forward(int(n), Memory::barrier, spin, why);
  }
  CHECK(before_spin >= 1); // issued before the wait's first look
  CHECK(w_loads >= 2);     // and issued again after a dynamic item
  const int64_t N = 20, TK = 128;
  std::vector<uint16_t> w(size_t(N * TK));
  std::vector<float> x(static_cast<size_t>(TK)), y(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t kk = 0; kk < TK; ++kk)
      w[size_t(n * TK + kk)] = testing::half_bits(float((n + kk) % 5) - 2.0f);
  for (int64_t kk = 0; kk < TK; ++kk)
    x[size_t(kk)] = float(kk % 7) - 3.0f;
  for (unsigned workers : {1u, 3u}) {
    CAPTURE(workers);
    std::fill(y.begin(), y.end(), -1.0f);
    RunOptions ro{true, "", "", 128};
    ro.sim_workers = workers;
    std::string err = compile_and_run(kDecodeDyn, "prefetch_dyn_" + std::to_string(workers),
                                      {{"N", N}},
                                      {{"w", w.data(), ETL_F16, {N, TK}},
                                       {"x", x.data(), ETL_F32, {TK}},
                                       {"y", y.data(), ETL_F32, {N}}},
                                      ro);
    INFO(err);
    REQUIRE(err == "");
    for (int64_t n = 0; n < N; ++n) {
      int64_t want = 0; // exact, as in the static program's test above
      for (int64_t kk = 0; kk < TK; ++kk)
        want += ((n + kk) % 5 - 2) * 2 * (kk % 7 - 3);
      CAPTURE(n);
      CHECK(y[size_t(n)] == float(want));
    }
  }
}

TEST_CASE("prefetch: what stays after the waits") {
  auto kernel = [](const std::string &body, const std::string &clause) {
    return R"(
const TN = 32;
const TK = 128;
kernel k<N: dim>(w: tensor<f32>[N, TK], w2: tensor<f32>[N, TK], idx: tensor<i32>[4],
                 y: tensor<f32>[N]) {
  buffer h: tensor<f32>[TK];
  event ready[1];
  task act[s in 0 .. 1] notifies ready[0] {
    store(h[0 .. +TK], load(w[0, 0 .. +TK]));
  }
  task use[i in 0 .. cdiv(N, TN)] )" +
           clause + " {\n" + body + "\n  }\n}\n";
  };
  const char *store = "    store(y[i * TN .. +TN], sum(a, axis = 1));";
  struct Case {
    const char *what, *body, *clause, *want;
  } cases[] = {
      {"a written buffer",
       "    let hv = expand(load(h[0 .. +TK]), axis = 0);\n    let a = hv + zeros<f32>[TN, TK];",
       "waits ready[0]", ""},
      {"no waits", "    let a = load(w[i * TN .. +TN, 0 .. +TK]);", "", ""},
      {"a load in a loop",
       "    var a = zeros<f32>[TN, TK];\n    for j in 0 .. 2 {\n"
       "      a += load(w[i * TN .. +TN, 0 .. +TK]);\n    }",
       "waits ready[0]", ""},
      // The tile IR's slices are symbolic expressions with locals
      // substituted, so an index from a `let` of domain variables is as
      // good as the expression itself.
      {"an index from a local", "    let r = i * TN;\n    let a = load(w[r .. +TN, 0 .. +TK]);",
       "waits ready[0]", "prefetch use: 1 load(s) before the waits\n"},
      {"an index read from data", "    let a = load(w[idx[0] .. +TN, 0 .. +TK]);", "waits ready[0]",
       ""},
      {"a weight tile", "    let a = load(w[i * TN .. +TN, 0 .. +TK]);", "waits ready[0]",
       "prefetch use: 1 load(s) before the waits\n"},
      // 32 x 128 f32 over 128 threads: 32 registers per thread, the whole
      // budget; the second and third tiles stay after the waits.
      {"three tiles over the budget",
       "    let a0 = load(w[i * TN .. +TN, 0 .. +TK]);\n"
       "    let a1 = load(w2[i * TN .. +TN, 0 .. +TK]);\n"
       "    let a2 = load(w[(i + 1) % cdiv(N, TN) * TN .. +TN, 0 .. +TK]);\n"
       "    let a = a0 + a1 + a2;",
       "waits ready[0]", "prefetch use: 1 load(s) before the waits\n"},
  };
  for (const Case &c : cases) {
    CAPTURE(std::string(c.what));
    std::string src = kernel(std::string(c.body) + "\n" + store, c.clause);
    CHECK(prefetch_report(src) == std::string(c.want));
  }
}

TEST_CASE("prefetch: loops issue their next iteration's loads of read-only tensors first") {
  auto shipped = [](const char *name) {
    std::ifstream in(std::string(ETL_SOURCE_DIR) + "/examples/" + name + "/" + name + ".etl");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  CHECK(prefetch_report(shipped("softmax"), "pipeline ") ==
        "pipeline stats: 1 load(s) one iteration ahead\n");
  CHECK(prefetch_report(shipped("gemv"), "pipeline ") == "");

  const char *src = R"(
const TB = 4;
const TN = 32;
kernel cols<B: dim, N: dim>(x: tensor<f32>[B, N], y1: tensor<f32>[B], y2: tensor<f32>[B]) {
  task tail[b in 0 .. cdiv(B, TB)] {
    var acc = zeros<f32>[TB];
    for j in 1 .. cdiv(N, TN) {
      acc += sum(load(x[b * TB .. +TB, j * TN .. +TN]), axis = 1);
    }
    store(y1[b * TB .. +TB], acc);
  }
  task even[b in 0 .. cdiv(B, TB)] {
    var acc = zeros<f32>[TB];
    for j in 0 .. cdiv(N, TN) step 2 {
      acc += sum(load(x[b * TB .. +TB, j * TN .. +TN]), axis = 1);
    }
    store(y2[b * TB .. +TB], acc);
  }
}
)";
  CHECK(prefetch_report(src, "pipeline ") ==
        "pipeline tail: 1 load(s) one iteration ahead\n"
        "pipeline even: 1 load(s) one iteration ahead\n");
  const int64_t B = 10;
  for (int64_t N : {20, 32, 50, 100, 200}) { // 0, 0, 1, 3 and 6 trips of `tail`
    CAPTURE(N);
    std::vector<float> x(static_cast<size_t>(B * N)), y1(static_cast<size_t>(B), -1.0f),
        y2(static_cast<size_t>(B), -1.0f);
    for (int64_t i = 0; i < B * N; ++i)
      x[size_t(i)] = float(i % 9) - 4.0f;
    std::string err = compile_and_run(src, "prefetch_cols", {{"B", B}, {"N", N}},
                                      {{"x", x.data(), ETL_F32, {B, N}},
                                       {"y1", y1.data(), ETL_F32, {B}},
                                       {"y2", y2.data(), ETL_F32, {B}}},
                                      RunOptions{true, "", "", 128});
    INFO(err);
    REQUIRE(err == "");
    for (int64_t r = 0; r < B; ++r) {
      double tail = 0, even = 0;
      for (int64_t c = 0; c < N; ++c) {
        double v = double(x[size_t(r * N + c)]);
        tail += c >= 32 ? v : 0.0;
        even += (c / 32) % 2 == 0 ? v : 0.0;
      }
      CAPTURE(r);
      CHECK(y1[size_t(r)] == float(tail)); // integers below 2^24: exact in any order
      CHECK(y2[size_t(r)] == float(even));
    }
  }
}
