//===- tests/unit/e2e/tile_lowering_test.cpp - Bodies lowered from the tile IR -===//
//
// What this pins: the shipped rowsum, softmax and gemv examples carry the
// `where` facts that let tile/memory.cpp prove 128-bit accesses (N % 4, K % 8
// for f16) and are lowered from the tile IR (lower/lower_tile_*.cpp):
//
//   sim      the results are right (rowsum, also under the race check, which
//            sees 16-byte accesses, and with a base address off 16 bytes,
//            which takes the scalar fallback); the profile shows >= 90 % of global
//            bytes moved by 128-bit lane accesses (rowsum, softmax, gemv:
//            its weights all, x loaded 16 bytes a lane), sector efficiency
//            >= 90 %, lane utilisation >= 90 % (row sums and statistics go
//            to the coalesced layout of their store before it: one request
//            of a warp, not one single-lane store per warp and register),
//            shared bank-conflict factor <= 1.1 (softmax, gemv);
//   PTX      by default (no option, the examples as shipped) the weights
//            and inputs load with `ld.global.nc.v4`, no 128-bit load of a
//            read-only tensor skips the .nc path, reductions use shfl.sync,
//            and ptxas reports no spills on sm_80 and sm_90;
//   stale    a tensor another task stores under an `if` is never read
//            through ld.global.nc;
//   mlp      (`where D % 4 == 0, F % 4 == 0`; FMA dots, lower_tile_dot.cpp)
//            128-bit loads and stores, fma, 128-bit shared reads of b, no
//            spills on sm_80 and sm_90; on sim >= 95 % of global bytes by
//            128-bit accesses, sector efficiency and lanes >= 95 %, bank
//            factor <= 1.1, results against double precision.
//
//===----------------------------------------------------------------------===//
#include "../target/ptx_programs.h"
#include "compile_run.h"
#include "driver/pipeline.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/MemoryBuffer.h>

#include "../skip.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <unistd.h>

using namespace etl;
using namespace etl::testing;

namespace {

/// The shipped example's source; its kernel header carries `where FACT`.
std::string shipped(const char *example, const std::string &fact) {
  std::ifstream in(std::string(ETL_SOURCE_DIR) + "/examples/" + example + "/" + example + ".etl");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  size_t k = s.find("\nkernel ");
  REQUIRE(k != std::string::npos);
  size_t brace = s.find(" {\n", k);
  REQUIRE(brace != std::string::npos);
  CAPTURE(example);
  CHECK(s.substr(k, brace - k).find("where " + fact) != std::string::npos);
  return s;
}

std::string ptx_of(const std::string &src, const char *target) {
  std::string in = "/tmp/etl-tile-" + std::to_string(getpid()) + ".etl";
  std::ofstream(in) << src;
  CompileOptions o;
  o.input = in;
  o.targets = {target};
  o.emit = "ptx";
  std::ostringstream out, err;
  int code = compile(o, out, err);
  std::remove(in.c_str());
  INFO(err.str());
  REQUIRE(code == 0);
  return out.str();
}

/// ptxas -v's spill bytes (-1: ptxas is not installed).
long spills(const std::string &ptx, const char *target) {
  return ptxcheck::ptxas_spills(ptx, target);
}

/// Count of lines of `ptx` containing `what`.
size_t count(const std::string &ptx, const char *what) {
  size_t n = 0, at = 0;
  while ((at = ptx.find(what, at)) != std::string::npos) {
    ++n;
    ++at;
  }
  return n;
}

llvm::json::Value read_json(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  REQUIRE(buf);
  auto v = llvm::json::parse((*buf)->getBuffer());
  REQUIRE(bool(v));
  return std::move(*v);
}

struct Global {
  double bytes = 0, bytes128 = 0, efficiency = 0, lanes = 0;
};

Global global_of(const llvm::json::Object &o) {
  const llvm::json::Object *g = o.getObject("global");
  REQUIRE(g);
  return {double(*g->getInteger("bytes_requested")), double(*g->getInteger("bytes_128bit")),
          *g->getNumber("efficiency"), *g->getNumber("lane_utilization")};
}

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

} // namespace

TEST_CASE("tile lowering: the shipped rowsum, softmax and gemv PTX loads with ld.global.nc.v4 "
          "by default") {
  struct Case {
    const char *example, *fact;
  } cases[] = {{"rowsum", "N % 4 == 0"}, {"softmax", "N % 4 == 0"}, {"gemv", "K % 8 == 0"}};
  for (const Case &c : cases)
    for (const char *target : {"sm_90", "sm_80"}) {
      CAPTURE(c.example);
      CAPTURE(target);
      std::string ptx = ptx_of(shipped(c.example, c.fact), target);
      size_t nc4 = count(ptx, "ld.global.nc.v4.");
      CHECK(nc4 >= 1);
      CHECK(count(ptx, "ld.global.v4.") == 0); // read-only data takes the .nc path
      CHECK(count(ptx, "shfl.sync.") >= 1);    // the row reductions
      long sp = spills(ptx, target);
      if (sp < 0)
        ETL_TEST_SKIP("ptxas not found at configure time: spills not checked");
      else
        CHECK(sp == 0);
    }
}

TEST_CASE("tile lowering: a tensor another task stores only under an `if` is not read through "
          "ld.global.nc") {
  // `w` stores t only when n > 0, inside an `if` op. The reader `r` waits
  // for `w`: reading t through the non-coherent cache could return stale
  // data. The same reader of the never-written x takes .nc (the control:
  // the fact is not just off everywhere). `w` loads nothing, so every
  // ld.global.nc is r's.
  const char *tmpl = R"(
const T = 128;
kernel k<N: dim>(x: tensor<f32>[N], t: tensor<f32>[N], y: tensor<f32>[N], n: i32) where N % 4 == 0 {
  event done[1];
  task w[i in 0 .. 1] notifies done[0] {
    if n > 0 {
      store(t[0 .. +T], full<f32>[T](1.0) + cast<f32>(n));
    }
  }
  task r[i in 0 .. 1] waits done[0] {
    store(y[0 .. +T], load(SRC[0 .. +T]) * 2.0);
  }
}
)";
  for (const char *src : {"t", "x"}) {
    CAPTURE(src);
    std::string s = tmpl;
    s.replace(s.find("SRC"), 3, src);
    std::string ptx = ptx_of(s, "sm_90");
    if (std::string(src) == "t")
      CHECK(count(ptx, "ld.global.nc") == 0);
    else
      CHECK(count(ptx, "ld.global.nc") >= 1);
  }
}

TEST_CASE("tile lowering: rowsum on sim with 128-bit loads is right, also under the race check "
          "and with a tensor base off 16 bytes (the scalar fallback)") {
  std::string src = shipped("rowsum", "N % 4 == 0");
  for (int mode = 0; mode < 3; ++mode) {
    bool race = mode == 1, offset = mode == 2;
    CAPTURE(race);
    CAPTURE(offset);
    const int64_t M = 40, N = 388; // ragged: neither is a multiple of the tile
    std::vector<float> buf = random_floats(size_t(M * N) + 1, 7), y(static_cast<size_t>(M), 0.0f);
    float *x = buf.data() + (offset ? 1 : 0);
    RunOptions run;
    run.threads_per_cta = 0; // as etlc picks
    run.race_check = race;
    std::string err =
        compile_and_run(src, "tile_rowsum", {{"M", M}, {"N", N}},
                        {{"x", x, ETL_F32, {M, N}}, {"y", y.data(), ETL_F32, {M}}}, run);
    REQUIRE_MESSAGE(err.empty(), err);
    double worst = 0;
    for (int64_t m = 0; m < M; ++m) {
      double s = 0;
      for (int64_t n = 0; n < N; ++n)
        s += x[size_t(m * N + n)];
      worst = std::max(worst, std::fabs(s - y[size_t(m)]));
    }
    CHECK(worst < 1e-4);
  }
}

TEST_CASE("tile lowering: sim profile of rowsum, softmax and gemv: 128-bit bytes, sectors") {
  std::string dir = std::string(ETL_TEST_BINARY_DIR) + "/e2e_programs/";
  RunOptions run;
  run.threads_per_cta = 0;
  {
    const int64_t M = 256, N = 4096; // the bench shape
    std::vector<float> x = random_floats(size_t(M * N), 1), y(static_cast<size_t>(M));
    run.profile = dir + "tile_rowsum_prof.json";
    std::string err =
        compile_and_run(shipped("rowsum", "N % 4 == 0"), "tile_rowsum_prof", {{"M", M}, {"N", N}},
                        {{"x", x.data(), ETL_F32, {M, N}}, {"y", y.data(), ETL_F32, {M}}}, run);
    REQUIRE_MESSAGE(err.empty(), err);
    Global g = global_of(*read_json(run.profile).getAsObject());
    MESSAGE("rowsum: " << g.bytes128 / g.bytes * 100 << " % of global bytes by 128-bit accesses, "
                       << g.lanes * 100 << " % lanes");
    CHECK(g.bytes128 >= 0.9 * g.bytes);
    CHECK(g.efficiency >= 0.9);
    // The [16] row sums (rows w and w + 8 in warp w) go through scratch to
    // 16 lanes of one warp: one store request, not 16 single-lane ones.
    CHECK(g.lanes >= 0.9);
    // Into scratch, lanes 0 and 1 of each warp write its two rows in one
    // request: as many shared store requests as warps, not twice that.
    llvm::json::Value doc = read_json(run.profile);
    int64_t st = 0, tasks = 0, warps = 0;
    if (const llvm::json::Object *cfg = doc.getAsObject())
      warps = *cfg->getInteger("threads_per_cta") / 32;
    for (const llvm::json::Value &gv : *doc.getAsObject()->getArray("groups")) {
      const llvm::json::Object &go = *gv.getAsObject();
      if (go.getString("name") != "partial")
        continue;
      tasks = *go.getObject("sync")->getInteger("tasks");
      for (const llvm::json::Value &sv : *go.getArray("sites")) {
        const llvm::json::Object &so = *sv.getAsObject();
        if (so.getString("space") == "shared" && so.getString("kind") == "store")
          st += *so.getObject("shared")->getInteger("requests");
      }
    }
    CHECK(tasks == (M / 16) * (N / 128));
    CHECK(st == tasks * warps);
  }
  {
    const int64_t B = 32, N = 1024;
    std::vector<float> x = random_floats(size_t(B * N), 2), y(static_cast<size_t>(B * N));
    run.profile = dir + "tile_softmax_prof.json";
    std::string err =
        compile_and_run(shipped("softmax", "N % 4 == 0"), "tile_softmax_prof", {{"B", B}, {"N", N}},
                        {{"x", x.data(), ETL_F32, {B, N}}, {"y", y.data(), ETL_F32, {B, N}}}, run);
    REQUIRE_MESSAGE(err.empty(), err);
    llvm::json::Value doc = read_json(run.profile);
    Global g = global_of(*doc.getAsObject());
    MESSAGE("softmax: " << g.bytes128 / g.bytes * 100 << " % of global bytes by 128-bit accesses");
    CHECK(g.bytes128 >= 0.9 * g.bytes);
    CHECK(g.efficiency >= 0.9);
    CHECK(g.lanes >= 0.9);
    const llvm::json::Object *sh = doc.getAsObject()->getObject("shared");
    REQUIRE(sh);
    if (*sh->getInteger("requests") > 0)
      CHECK(*sh->getNumber("bank_conflict_factor") <= 1.1);
  }
  {
    const int64_t N = 128, K = 1024;
    std::vector<float> w32 = random_floats(size_t(N * K), 3), x = random_floats(size_t(K), 4);
    std::vector<uint16_t> w16(size_t(N * K), 0x3C00); // 1.0 in f16
    std::vector<float> y16(static_cast<size_t>(N)), y32(static_cast<size_t>(N));
    run.profile = dir + "tile_gemv_prof.json";
    std::string err =
        compile_and_run(shipped("gemv", "K % 8 == 0"), "tile_gemv_prof", {{"N", N}, {"K", K}},
                        {{"w16", w16.data(), ETL_F16, {N, K}},
                         {"w32", w32.data(), ETL_F32, {N, K}},
                         {"x", x.data(), ETL_F32, {K}},
                         {"y16", y16.data(), ETL_F32, {N}},
                         {"y32", y32.data(), ETL_F32, {N}}},
                        run);
    REQUIRE_MESSAGE(err.empty(), err);
    llvm::json::Value doc = read_json(run.profile);
    Global g = global_of(*doc.getAsObject());
    MESSAGE("gemv: " << g.bytes128 / g.bytes * 100 << " % of global bytes by 128-bit accesses, "
                     << g.lanes * 100 << " % lanes");
    CHECK(g.bytes128 >= 0.9 * g.bytes);
    CHECK(g.lanes >= 0.9);
    // The weights (the 2-D loads of the partial groups) move entirely by 128-bit accesses.
    double wbytes = 0, w128 = 0;
    for (const llvm::json::Value &gv : *doc.getAsObject()->getArray("groups")) {
      const llvm::json::Object &go = *gv.getAsObject();
      if (!go.getString("name")->starts_with("partial"))
        continue;
      for (const llvm::json::Value &sv : *go.getArray("sites")) {
        const llvm::json::Object &so = *sv.getAsObject();
        if (so.getString("kind") != "load" || !so.getObject("global"))
          continue;
        Global s = global_of(so);
        if (s.bytes128 > 0) {
          wbytes += s.bytes;
          w128 += s.bytes128;
        }
      }
    }
    CHECK(wbytes >= double(N * K * 6)); // f16 + f32 weights
    CHECK(w128 == wbytes);
    // x is loaded straight into the weights' broadcast layout (f32) or
    // shuffled there (f16): no shared memory; the row sums' re-layout
    // writes one word per lane and reads them back conflict-free.
    const llvm::json::Object *sh = doc.getAsObject()->getObject("shared");
    REQUIRE(sh);
    MESSAGE("gemv: shared bank-conflict factor " << *sh->getNumber("bank_conflict_factor"));
    CHECK(*sh->getNumber("bank_conflict_factor") <= 1.1);
    double worst = 0;
    for (int64_t n = 0; n < N; ++n) {
      double s16 = 0, s32 = 0;
      for (int64_t k = 0; k < K; ++k) {
        s16 += x[size_t(k)];
        s32 += double(w32[size_t(n * K + k)]) * x[size_t(k)];
      }
      worst = std::max({worst, std::fabs(s16 - y16[size_t(n)]), std::fabs(s32 - y32[size_t(n)])});
    }
    CHECK(worst < 1e-3);
  }
}

TEST_CASE("tile lowering: reductions across warps, padded tiles, rank-0 stores") {
  // [4, 96] over 128 threads: rows on warps, the padded 128 columns on lanes
  // and registers; sum(.., axis = 0) crosses the warps (scratch step), the
  // full sum reaches a rank-0 store, max sees padded elements as -inf.
  const char *src = R"(
kernel k<N: dim>(x: tensor<f32>[4, 96], c: tensor<f32>[96], s: tensor<f32>[1], m: tensor<f32>[4]) {
  task t[u in 0 .. 1] {
    let a = load(x[0 .. +4, 0 .. +96]);
    store(c[0 .. +96], sum(a, axis = 0));
    store(s[0], sum(sum(a, axis = 1), axis = 0));
    store(m[0 .. +4], max(a - 10.0, axis = 1));
  }
}
)";
  std::vector<float> x = random_floats(4 * 96, 11), c(96), s(1), m(4);
  RunOptions run;
  run.threads_per_cta = 128;
  std::string err = compile_and_run(src, "tile_reduce", {{"N", 1}},
                                    {{"x", x.data(), ETL_F32, {4, 96}},
                                     {"c", c.data(), ETL_F32, {96}},
                                     {"s", s.data(), ETL_F32, {1}},
                                     {"m", m.data(), ETL_F32, {4}}},
                                    run);
  REQUIRE_MESSAGE(err.empty(), err);
  double total = 0;
  for (int j = 0; j < 96; ++j) {
    double col = 0;
    for (int i = 0; i < 4; ++i)
      col += x[size_t(i * 96 + j)];
    CHECK(std::fabs(col - c[size_t(j)]) < 1e-5);
    total += col;
  }
  CHECK(std::fabs(total - s[0]) < 1e-4);
  for (int i = 0; i < 4; ++i) {
    float best = -INFINITY;
    for (int j = 0; j < 96; ++j)
      best = std::max(best, x[size_t(i * 96 + j)] - 10.0f);
    CHECK(m[size_t(i)] == best);
  }
}

TEST_CASE("tile lowering: the shipped mlp's FMA dots: fma, 128-bit shared reads, no spills") {
  for (const char *target : {"sm_90", "sm_80"}) {
    CAPTURE(target);
    std::string ptx = ptx_of(shipped("mlp", "D % 4 == 0, F % 4 == 0"), target);
    CHECK(count(ptx, "ld.global.nc.v4.f32") >= 3); // x, wg, wu, wd
    CHECK(count(ptx, "st.global.v4.f32") >= 2);    // h, out
    CHECK(count(ptx, "fma.rn.f32") >= 1);
    CHECK(count(ptx, "ld.shared.v4.f32") >= 1); // b's columns, 4 per thread and k
    long sp = spills(ptx, target);
    if (sp < 0)
      ETL_TEST_SKIP("ptxas not found at configure time: spills not checked");
    else
      CHECK(sp == 0);
  }
}

TEST_CASE("tile lowering: sim profile of mlp (FMA dots): 128-bit bytes, sectors, banks") {
  const int64_t T = 64, D = 256, F = 512; // the bench shape
  // Each tensor starts on a 128-byte line, as etlMalloc's do (a vector's
  // 16-byte alignment would split 32-byte sectors, which is not the code's
  // doing); sim reads the host memory in place.
  std::vector<std::vector<float>> store;
  auto aligned = [&](int64_t n, unsigned seed) {
    store.push_back(random_floats(size_t(n) + 32, seed));
    float *p = store.back().data();
    while (reinterpret_cast<uintptr_t>(p) % 128)
      ++p;
    return p;
  };
  float *x = aligned(T * D, 5), *wg = aligned(D * F, 6), *wu = aligned(D * F, 7),
        *wd = aligned(F * D, 8), *out = aligned(T * D, 9);
  RunOptions run;
  run.threads_per_cta = 0;
  run.profile = std::string(ETL_TEST_BINARY_DIR) + "/e2e_programs/tile_mlp_prof.json";
  std::string err = compile_and_run(shipped("mlp", "D % 4 == 0, F % 4 == 0"), "tile_mlp_prof",
                                    {{"T", T}, {"D", D}, {"F", F}},
                                    {{"x", x, ETL_F32, {T, D}},
                                     {"wg", wg, ETL_F32, {D, F}},
                                     {"wu", wu, ETL_F32, {D, F}},
                                     {"wd", wd, ETL_F32, {F, D}},
                                     {"out", out, ETL_F32, {T, D}}},
                                    run);
  REQUIRE_MESSAGE(err.empty(), err);
  llvm::json::Value doc = read_json(run.profile);
  Global g = global_of(*doc.getAsObject());
  const llvm::json::Object *sh = doc.getAsObject()->getObject("shared");
  REQUIRE(sh);
  double bank = *sh->getNumber("bank_conflict_factor");
  MESSAGE("mlp: " << g.bytes128 / g.bytes * 100 << " % of global bytes by 128-bit accesses, "
                  << g.efficiency * 100 << " % sector efficiency, bank factor " << bank);
  CHECK(g.bytes128 >= 0.95 * g.bytes);
  CHECK(g.efficiency >= 0.95);
  CHECK(g.lanes >= 0.95);
  CHECK(bank <= 1.1);
  // Against double precision: K = 256 and 512 products of values in [-1, 1].
  double worst = 0;
  std::vector<double> h(size_t(T * F));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t f = 0; f < F; ++f) {
      double sg = 0, su = 0;
      for (int64_t d = 0; d < D; ++d) {
        sg += double(x[size_t(t * D + d)]) * wg[size_t(d * F + f)];
        su += double(x[size_t(t * D + d)]) * wu[size_t(d * F + f)];
      }
      h[size_t(t * F + f)] = sg / (1 + std::exp(-sg)) * su;
    }
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < D; d += 7) {
      double s = 0;
      for (int64_t f = 0; f < F; ++f)
        s += h[size_t(t * F + f)] * wd[size_t(f * D + d)];
      worst = std::max(worst, std::fabs(s - out[size_t(t * D + d)]) / (1 + std::fabs(s)));
    }
  CHECK(worst < 1e-3);
}
