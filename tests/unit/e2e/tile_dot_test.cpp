//===- tests/unit/e2e/tile_dot_test.cpp - The FMA dot on the tile IR path -===//
//
// What this pins (lower/lower_tile_dot.cpp):
//
//   path     f32 dots (the default `precision = ieee`), in K loops, with
//            non-power-of-two tiles and one-row dots, are lowered from the
//            tile IR (tile_lowering_gap says ""), and so are f16 and
//            `precision = tf32` dots of one m16 row block (tensor cores:
//            tile_mma_test.cpp, tile_tf32_test.cpp);
//   sim      ragged GEMMs (M, N, K not multiples of the tiles) with small
//            integer operands, whose sums f32 holds exactly, equal a C
//            reference bit for bit, at 1 and 4 warps and under the race
//            check (the staging barriers are in place).
// The shipped mlp's profile (128-bit bytes, sectors, bank conflicts) and
// PTX (fma, 128-bit shared reads, no spills) are in tile_lowering_test.cpp.
//
//===----------------------------------------------------------------------===//
#include "compile_run.h"
#include "driver/pipeline.h"
#include "lower/plan.h"
#include "tile/passes.h"

#include <doctest/doctest.h>

#include <map>

using namespace etl;
using namespace etl::testing;

namespace {

const char *kGemm = R"(
const TM = 16;
const TN = 32;
const TK = 8;
const RM = 6;
const RN = 7;
const RK = 5;
kernel g<M: dim, N: dim, K: dim>(a: tensor<f32>[M, K], b: tensor<f32>[K, N],
                                 c: tensor<f32>[M, N], r: tensor<f32>[M, N], v: tensor<f32>[N]) {
  // Power-of-two tiles, a K loop with the accumulator in registers.
  task big[i in 0 .. cdiv(M, TM), j in 0 .. cdiv(N, TN)] {
    var acc = zeros<f32>[TM, TN];
    for k in 0 .. cdiv(K, TK) {
      acc += dot(load(a[i * TM .. +TM, k * TK .. +TK]), load(b[k * TK .. +TK, j * TN .. +TN]));
    }
    store(c[i * TM .. +TM, j * TN .. +TN], acc);
  }
  // Padded tiles (6 x 7 of 8 x 8, K steps of 5 of 8), the sum added twice.
  task odd[i in 0 .. cdiv(M, RM), j in 0 .. cdiv(N, RN)] {
    var acc = zeros<f32>[RM, RN];
    for k in 0 .. cdiv(K, RK) {
      let x = load(a[i * RM .. +RM, k * RK .. +RK]);
      acc = acc + dot(x, load(b[k * RK .. +RK, j * RN .. +RN])) * 2.0;
    }
    store(r[i * RM .. +RM, j * RN .. +RN], acc);
  }
  // One row: [K] x [K, N], row 0 of a.
  task row[j in 0 .. cdiv(N, TN)] {
    var acc = zeros<f32>[TN];
    for k in 0 .. cdiv(K, TK) {
      acc += dot(load(a[0, k * TK .. +TK]), load(b[k * TK .. +TK, j * TN .. +TN]));
    }
    store(v[j * TN .. +TN], acc);
  }
}
)";

/// tile_lowering_gap of every task of the first kernel of `text` at `threads`.
std::map<std::string, std::string> paths(const std::string &text, unsigned threads) {
  Compilation c;
  c.file = c.sm.add("t.etl", text);
  REQUIRE_MESSAGE(compile_front(c), c.diag.render());
  const KernelDecl &k = c.program->kernels[0];
  TileModule m = build_tile_ir(k, c.graph, *c.program, threads);
  assign_layouts(m, k, c.graph, c.diag);
  std::vector<std::string> errs = verify_tile(m);
  CHECK_MESSAGE(errs.empty(), (errs.empty() ? "" : errs[0]));
  std::map<std::string, std::string> out;
  for (const TileFunc &f : m.funcs)
    for (const TaskDecl &t : k.tasks)
      if (t.name == f.name)
        out[f.name] = tile_lowering_gap(f, k, t, threads);
  return out;
}

float small(int64_t i, int64_t salt) { return float((i * 7 + salt) % 7 - 3); }

} // namespace

TEST_CASE("tile dot: f32, f16 and tf32 dots of mma shapes take the tile IR path") {
  std::map<std::string, std::string> p = paths(kGemm, 128);
  CHECK(p["big"] == "");
  CHECK(p["odd"] == "");
  CHECK(p["row"] == "");
  std::map<std::string, std::string> q = paths(R"(
kernel h(a: tensor<f16>[16, 16], b: tensor<f32>[16, 16], c: tensor<f32>[3, 16, 16]) {
  task half[u in 0 .. 1] {
    let x = load(a[0 .. +16, 0 .. +16]);
    store(c[0, 0 .. +16, 0 .. +16], dot(x, x));
  }
  task tf[u in 0 .. 1] {
    let y = load(b[0 .. +16, 0 .. +16]);
    store(c[1, 0 .. +16, 0 .. +16], dot(y, y, precision = tf32));
  }
  task ieee[u in 0 .. 1] {
    let y = load(b[0 .. +16, 0 .. +16]);
    store(c[2, 0 .. +16, 0 .. +16], dot(y, y, precision = ieee));
  }
}
)",
                                               128);
  // A tensor-core dot of one m16 row block at 4 warps: the warps split its
  // columns (tile_mma_test.cpp).
  CHECK(q["half"] == "");
  CHECK(q["tf"] == ""); // a tf32 tensor-core dot (tile_tf32_test.cpp)
  CHECK(q["ieee"] == "");
}

TEST_CASE("tile dot: ragged GEMMs with small integers equal a C reference bit for bit") {
  const int64_t M = 37, N = 45, K = 29; // no tile divides them
  std::vector<float> a(M * K), b(K * N);
  for (int64_t i = 0; i < M * K; ++i)
    a[size_t(i)] = small(i, 1);
  for (int64_t i = 0; i < K * N; ++i)
    b[size_t(i)] = small(i, 4);
  std::vector<float> ref(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      int64_t s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += int64_t(a[size_t(i * K + k)]) * int64_t(b[size_t(k * N + j)]);
      ref[size_t(i * N + j)] = float(s);
    }
  struct Run {
    unsigned threads;
    bool race;
  } runs[] = {{32, false}, {128, false}, {128, true}};
  for (const Run &rn : runs) {
    CAPTURE(rn.threads);
    CAPTURE(rn.race);
    std::vector<float> c(M * N, -1.f), r(M * N, -1.f), v(N, -1.f);
    RunOptions run;
    run.threads_per_cta = rn.threads;
    run.race_check = rn.race;
    std::string err = compile_and_run(kGemm, "tile_dot_ragged", {{"M", M}, {"N", N}, {"K", K}},
                                      {{"a", a.data(), ETL_F32, {M, K}},
                                       {"b", b.data(), ETL_F32, {K, N}},
                                       {"c", c.data(), ETL_F32, {M, N}},
                                       {"r", r.data(), ETL_F32, {M, N}},
                                       {"v", v.data(), ETL_F32, {N}}},
                                      run);
    REQUIRE_MESSAGE(err.empty(), err);
    int bad_c = 0, bad_r = 0, bad_v = 0;
    for (int64_t i = 0; i < M * N; ++i) {
      bad_c += c[size_t(i)] != ref[size_t(i)];
      bad_r += r[size_t(i)] != 2 * ref[size_t(i)];
    }
    for (int64_t j = 0; j < N; ++j)
      bad_v += v[size_t(j)] != ref[size_t(j)];
    CHECK(bad_c == 0);
    CHECK(bad_r == 0);
    CHECK(bad_v == 0);
  }
}
