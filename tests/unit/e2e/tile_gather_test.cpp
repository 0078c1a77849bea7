//===- tests/unit/e2e/tile_gather_test.cpp - Gathers and element reads on the tile IR -===//
//
// What this pins: bodies with element reads of tensor data (`n[0]`,
// `kv_len[b]`) and gathers (`idx[r]`, rows `x[row, ..]`, scatter stores
// `y[row, ..]`) are lowered from the tile IR (lower/lower_tile_memory.cpp):
//
//   sim      right against a reference computed here, on ragged sizes, with
//            out-of-range indexes in masked-off lanes (the sim checks every
//            access: a masked-off lane touching memory fails the run) and
//            out-of-range indexes in live lanes (they read the pad and
//            write nothing);
//   decode   the shipped decode_attention: its `chunk` task takes the tile
//            path, its result matches a reference, and the sim profile shows
//            the gathered K/V rows moved by 128-bit accesses (>= 90 % of the
//            global bytes when every chunk is live) with sector efficiency
//            >= 95 %; ptxas reports no spills on sm_80 and sm_90.
//
//===----------------------------------------------------------------------===//
#include "../target/ptx_programs.h"
#include "compile_run.h"
#include "driver/pipeline.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/MemoryBuffer.h>

#include "../skip.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

using namespace etl;
using namespace etl::testing;

namespace {

std::string example_source(const char *name) {
  std::ifstream in(std::string(ETL_SOURCE_DIR) + "/examples/" + name + "/" + name + ".etl");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// `ETL_TILE_DEBUG=1`'s "lowering GROUP: PATH" lines for `src`, and the PTX.
std::string compile_debug(const std::string &src, const char *target, std::string &ptx) {
  CompileOptions o;
  o.targets = {target};
  o.emit = "ptx";
  std::string err, lines;
  int code = compile_text_tile_debug(src, o, "lowering ", ptx, err, lines);
  INFO(err);
  REQUIRE(code == 0);
  return lines;
}

/// ptxas -v's spill bytes (-1: ptxas is not installed).
long spills(const std::string &ptx, const char *target) {
  return ptxcheck::ptxas_spills(ptx, target);
}

llvm::json::Value read_json(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  REQUIRE(buf);
  auto v = llvm::json::parse((*buf)->getBuffer());
  REQUIRE(bool(v));
  return std::move(*v);
}

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

/// A copy of `v` at a 128-byte aligned address (as etlMalloc / cuMemAlloc
/// give; std::vector's 16 bytes would split rows across sectors).
struct Aligned {
  float *p = nullptr;
  explicit Aligned(const std::vector<float> &v) {
    size_t bytes = (v.size() * sizeof(float) + 127) / 128 * 128;
    p = static_cast<float *>(std::aligned_alloc(128, bytes));
    REQUIRE(p);
    std::copy(v.begin(), v.end(), p);
  }
  ~Aligned() { std::free(p); }
  Aligned(const Aligned &) = delete;
  Aligned &operator=(const Aligned &) = delete;
};

const char *kGather = R"(
kernel gather<N: dim, R: dim, X: dim>(idx: tensor<i32>[N], n: tensor<i32>[1],
                                      x: tensor<f32>[R, X], y: tensor<f32>[R, X],
                                      z: tensor<f32>[N, X], s: tensor<f32>[4, X])
    where X % 4 == 0 {
  task t[i in 0 .. cdiv(N, 16), j in 0 .. cdiv(X, 64)] {
    let r = arange<i32>[16] + i * 16;
    let live = r < n[0];
    let row = load(idx[r], mask = live, pad = 0);
    let v = load(x[row, j * 64 .. +64], mask = expand(live, axis = 1), pad = -1.0);
    store(z[i * 16 .. +16, j * 64 .. +64], v);
    store(y[row, j * 64 .. +64], v * 2.0, mask = expand(live, axis = 1));
  }
  task u[k in 0 .. 1] {
    store(s[0 .. +4, 0 .. +64], load(x[n[0] - 24 .. +4, 0 .. +64], pad = 0.0));
  }
}
)";

} // namespace

TEST_CASE("tile gather: element reads, row gathers and scatter stores on sim, ragged, with "
          "out-of-range indexes") {
  std::string ptx;
  std::string paths = compile_debug(kGather, "sm_90", ptx);
  CHECK(paths == "lowering t: tile IR\nlowering u: tile IR\n");
  CHECK(ptx.find("ld.global.nc.v4.") != std::string::npos); // the gathered rows, 16 bytes a lane
  // N = 37 indexes, n[0] = 29 live: indexes 29.. are garbage (far out of
  // range; a masked-off lane must not touch them); live index 5 is out of
  // range (R = 23): its row reads the pad and its store is dropped.
  const int64_t N = 37, R = 23, X = 100, live = 29;
  std::vector<int32_t> idx(static_cast<size_t>(N)), n{int32_t(live)};
  std::mt19937 rng(5);
  std::vector<int32_t> perm(static_cast<size_t>(R));
  for (int64_t i = 0; i < R; ++i)
    perm[size_t(i)] = int32_t(i);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (int64_t i = 0; i < N; ++i)
    idx[size_t(i)] = i < live ? perm[size_t(i % R)] : int32_t(1000000 + i * 7919);
  idx[5] = int32_t(R + 3);
  // Live rows must not repeat in the scatter (each is written once): rows
  // 0..R-1 once, then 23..28 would repeat: make them out of range too.
  for (int64_t i = R; i < live; ++i)
    idx[size_t(i)] = i % 2 ? -int32_t(i) : int32_t(R + i);
  std::vector<float> x = random_floats(size_t(R * X), 9);
  std::vector<float> y(size_t(R * X), 7.0f), z(size_t(N * X), 0.0f), sv(size_t(4 * X), 0.0f);
  RunOptions run;
  run.threads_per_cta = 128;
  std::string err = compile_and_run(kGather, "tile_gather", {{"N", N}, {"R", R}, {"X", X}},
                                    {{"idx", idx.data(), ETL_I32, {N}},
                                     {"n", n.data(), ETL_I32, {1}},
                                     {"x", x.data(), ETL_F32, {R, X}},
                                     {"y", y.data(), ETL_F32, {R, X}},
                                     {"z", z.data(), ETL_F32, {N, X}},
                                     {"s", sv.data(), ETL_F32, {4, X}}},
                                    run);
  REQUIRE_MESSAGE(err.empty(), err);
  std::vector<float> want_y(size_t(R * X), 7.0f);
  int bad = 0;
  for (int64_t i = 0; i < N; ++i) {
    int64_t r = idx[size_t(i)];
    bool on = i < live, in = r >= 0 && r < R;
    for (int64_t c = 0; c < X; ++c) {
      float v = on && in ? x[size_t(r * X + c)] : -1.0f; // masked off or out of range: the pad
      if (z[size_t(i * X + c)] != v)
        ++bad;
      if (on && in)
        want_y[size_t(r * X + c)] = 2.0f * v;
    }
  }
  CHECK(bad == 0);
  CHECK(y == want_y);
  // u: a slice whose start reads data (rows n[0] - 24 = 5 .. 8).
  int bad_s = 0;
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < X; ++c)
      if (sv[size_t(r * X + c)] != (c < 64 ? x[size_t((live - 24 + r) * X + c)] : 0.0f))
        ++bad_s;
  CHECK(bad_s == 0);
}

TEST_CASE("tile gather: decode_attention's chunk on the tile path: right, 128-bit K/V rows, "
          "sector efficiency, no spills") {
  std::string src = example_source("decode_attention");
  for (const char *target : {"sm_90", "sm_80"}) {
    CAPTURE(target);
    std::string ptx;
    std::string paths = compile_debug(src, target, ptx);
    CHECK(paths.find("lowering chunk: tile IR\n") != std::string::npos);
    CHECK(paths.find("lowering merge: tile IR\n") != std::string::npos);
    long sp = spills(ptx, target);
    if (sp < 0)
      ETL_TEST_SKIP("ptxas not found at configure time: spills not checked");
    else
      CHECK(sp == 0);
  }
  // Every chunk live (kv_len = MP * PS: the done-when numbers of the
  // gathered rows), then ragged lengths (masked tails, dead chunks).
  const int64_t B = 4, NH = 4, NP = 64, MP = 8, PS = 16, DH = 32;
  for (int ragged = 0; ragged < 2; ++ragged) {
    CAPTURE(ragged);
    Aligned q(random_floats(size_t(B * NH * DH), 1));
    Aligned kc(random_floats(size_t(NP * PS * NH * DH), 2));
    Aligned vc(random_floats(size_t(NP * PS * NH * DH), 3));
    std::vector<int32_t> pt(size_t(B * MP)), len(static_cast<size_t>(B));
    std::mt19937 rng(11);
    std::vector<int32_t> pool(static_cast<size_t>(NP));
    for (int64_t i = 0; i < NP; ++i)
      pool[size_t(i)] = int32_t(i);
    std::shuffle(pool.begin(), pool.end(), rng);
    for (int64_t i = 0; i < B * MP; ++i)
      pt[size_t(i)] = pool[size_t(i % NP)];
    for (int64_t b = 0; b < B; ++b)
      len[size_t(b)] = ragged ? int32_t(1 + (b * 37 + 5) % (MP * PS)) : int32_t(MP * PS);
    if (ragged) // pages past a request's end hold garbage: never read
      for (int64_t b = 0; b < B; ++b)
        for (int64_t p = (len[size_t(b)] + PS - 1) / PS; p < MP; ++p)
          pt[size_t(b * MP + p)] = int32_t(1 << 28);
    std::vector<float> out(size_t(B * NH * DH), 0.0f);
    RunOptions run;
    run.threads_per_cta = 0;
    run.profile = std::string(ETL_TEST_BINARY_DIR) + "/e2e_programs/tile_decode_attention.json";
    std::string err = compile_and_run(src, "tile_decode_attention",
                                      {{"B", B}, {"NH", NH}, {"NP", NP}, {"MP", MP}},
                                      {{"q", q.p, ETL_F32, {B, NH, DH}},
                                       {"kcache", kc.p, ETL_F32, {NP * PS, NH, DH}},
                                       {"vcache", vc.p, ETL_F32, {NP * PS, NH, DH}},
                                       {"page_table", pt.data(), ETL_I32, {B, MP}},
                                       {"kv_len", len.data(), ETL_I32, {B}},
                                       {"out", out.data(), ETL_F32, {B, NH, DH}}},
                                      run);
    REQUIRE_MESSAGE(err.empty(), err);
    double worst = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < NH; ++h) {
        int64_t L = len[size_t(b)];
        std::vector<double> s(static_cast<size_t>(L));
        double m = -INFINITY;
        for (int64_t p = 0; p < L; ++p) {
          int64_t row = int64_t(pt[size_t(b * MP + p / PS)]) * PS + p % PS;
          double d = 0;
          for (int64_t e = 0; e < DH; ++e)
            d += double(q.p[size_t((b * NH + h) * DH + e)]) * kc.p[size_t((row * NH + h) * DH + e)];
          s[size_t(p)] = d * 0.17677669529663687;
          m = std::max(m, s[size_t(p)]);
        }
        double l = 0;
        std::vector<double> o(static_cast<size_t>(DH), 0.0);
        for (int64_t p = 0; p < L; ++p) {
          int64_t row = int64_t(pt[size_t(b * MP + p / PS)]) * PS + p % PS;
          double w = std::exp(s[size_t(p)] - m);
          l += w;
          for (int64_t e = 0; e < DH; ++e)
            o[size_t(e)] += w * vc.p[size_t((row * NH + h) * DH + e)];
        }
        for (int64_t e = 0; e < DH; ++e)
          worst = std::max(worst, std::fabs(o[size_t(e)] / l - out[size_t((b * NH + h) * DH + e)]));
      }
    CHECK(worst < 1e-4);
    llvm::json::Value doc = read_json(run.profile);
    const llvm::json::Object *g = doc.getAsObject()->getObject("global");
    REQUIRE(g);
    double bytes = double(*g->getInteger("bytes_requested"));
    double b128 = double(*g->getInteger("bytes_128bit"));
    double eff = *g->getNumber("efficiency");
    MESSAGE("decode_attention (ragged " << ragged << "): " << b128 / bytes * 100
                                        << " % of global bytes by 128-bit accesses, sector "
                                        << eff * 100 << " %, lanes "
                                        << *g->getNumber("lane_utilization") * 100 << " %");
    if (!ragged) {
      CHECK(b128 >= 0.9 * bytes);
      CHECK(eff >= 0.95);
    }
  }
}
