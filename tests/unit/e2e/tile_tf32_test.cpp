//===- tests/unit/e2e/tile_tf32_test.cpp - tf32 dots on the tile IR -------===//
//
// What this pins (tile/mma.cpp, lower/lower_tile_mma.cpp, issue 28's port
// of `dot(.., precision = tf32)`):
//
//   path     tf32 dots of m16n8k8 shapes take the tile IR (ETL_TILE_DEBUG's
//            lowering lines): single dots, a transposed b, K loops on the
//            cp.async ring, shapes that are not powers of two (layouts of
//            the padded shape, no mma for padding); one-row and off-shape
//            tf32 dots the exact FMA dot with the DotFmaPath remark;
//   sim      operands that are not tf32 values (rounding matters: the sim
//            mma truncates an unrounded operand): every dot equals an f32
//            k-order sum of cvt.rna-rounded products bit for bit, ragged
//            M (the last tile
//            partial), operands off a 16-byte base (cp.async falls back to
//            element copies), under the race check, at 1 and 4 warps.
//
//===----------------------------------------------------------------------===//
#include "../number_refs.h"
#include "compile_run.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>

using namespace etl;
using namespace etl::testing;

namespace {

// plain: a staged from registers (rounded there), b a load copied by
// cp.async (raw, rounded at the fragment loads); nt: b = transpose(load)
// staged as [N, K] rows (ldmatrix); loop: acc += dot(load, load) over K on
// the ring (both raw); regs: b used by two dots (as it is and transposed),
// staged from registers; row: a
// one-row tf32 dot (the FMA path, exact f32).
const char *kTf32 = R"(
kernel tt<M: dim>(a: tensor<f32>[M, 32], b: tensor<f32>[32, 32], k: tensor<f32>[32, 32],
                  c: tensor<f32>[M, 32], ct: tensor<f32>[M, 32], cl: tensor<f32>[M, 32],
                  cw: tensor<f32>[M, 32], cv: tensor<f32>[M, 32], r: tensor<f32>[32]) {
  task plain[i in 0 .. cdiv(M, 64)] {
    store(c[i * 64 .. +64, 0 .. +32],
          dot(load(a[i * 64 .. +64, 0 .. +32]), load(b[0 .. +32, 0 .. +32]), precision = tf32));
  }
  task nt[i in 0 .. cdiv(M, 64)] {
    store(ct[i * 64 .. +64, 0 .. +32],
          dot(load(a[i * 64 .. +64, 0 .. +32]), transpose(load(k[0 .. +32, 0 .. +32])),
              precision = tf32));
  }
  task loop[i in 0 .. cdiv(M, 64)] {
    var acc = zeros<f32>[64, 32];
    for j in 0 .. 4 {
      acc += dot(load(a[i * 64 .. +64, j * 8 .. +8]), load(b[j * 8 .. +8, 0 .. +32]),
                 precision = tf32);
    }
    store(cl[i * 64 .. +64, 0 .. +32], acc);
  }
  task regs[i in 0 .. cdiv(M, 64)] {
    let w = load(b[0 .. +32, 0 .. +32]);
    let x = load(a[i * 64 .. +64, 0 .. +32]);
    store(cw[i * 64 .. +64, 0 .. +32], dot(x, w, precision = tf32));
    store(cv[i * 64 .. +64, 0 .. +32], dot(x, transpose(w), precision = tf32));
  }
  task row[u in 0 .. 1] {
    store(r[0 .. +32], dot(load(a[0, 0 .. +32]), load(b[0 .. +32, 0 .. +32]), precision = tf32));
  }
}
)";


} // namespace

TEST_CASE("tile tf32: tf32 dots take the tile IR, shapes that are not powers of two too") {
  CompileOptions o;
  o.targets = {"sm_90"};
  o.emit = "ptx";
  o.threads_per_cta = 128;
  std::string ptx, err, lines;
  REQUIRE(compile_text_tile_debug(kTf32, o, "lowering ", ptx, err, lines) == 0);
  for (const char *t : {"plain", "nt", "loop", "regs", "row"})
    CHECK_MESSAGE(lines.find(std::string("lowering ") + t + ": tile IR") != std::string::npos,
                  lines);
  CHECK(ptx.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") != std::string::npos);
  CHECK(ptx.find("cvt.rna.tf32.f32") != std::string::npos);
  CHECK(ptx.find("cp.async.wait_group 1;") != std::string::npos); // loop's three-stage ring
  CHECK(ptx.find(".trans") == std::string::npos);                 // .trans would swap b16 halves
  // The one-row dot: the exact FMA path, and the remark says why.
  CHECK(err.find("a one-row (GEMV) dot keeps the memory-bound path") != std::string::npos);

  const char *odd = R"(
kernel od(a: tensor<f32>[32, 24], b: tensor<f32>[24, 16], c: tensor<f32>[32, 16]) {
  task t[u in 0 .. 1] {
    store(c[0 .. +32, 0 .. +16], dot(load(a[0 .. +32, 0 .. +24]), load(b[0 .. +24, 0 .. +16]), precision = tf32));
  }
}
)";
  REQUIRE(compile_text_tile_debug(odd, o, "lowering ", ptx, err, lines) == 0);
  CHECK(lines == "lowering t: tile IR\n");
  // 4 warps over 2 m16 blocks x 2 n8 tiles: a block each, 3 k8 steps (none
  // for the padded k 24 .. 31).
  size_t mmas = 0;
  for (size_t at = 0; (at = ptx.find("mma.sync.aligned.m16n8k8", at)) != std::string::npos; ++at)
    ++mmas;
  CHECK(mmas == 3);
}

TEST_CASE("tile tf32: dots equal a k-order sum of rounded products bit for bit") {
  const int64_t M = 100;
  std::vector<float> a(M * 32), b(32 * 32), k(32 * 32);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = frac_not_tf32(i, 21);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = frac_not_tf32(i, 22);
  for (size_t i = 0; i < k.size(); ++i)
    k[i] = frac_not_tf32(i, 23);
  a[0] = 1.0f + 0x1p-11f, b[0] = -(1.0f + 0x1p-11f); // ties: away from zero
  // sum over k of round(x[m, k]) * round(y(k, n)) in k order (products exact in f32).
  auto ksum = [&](int64_t m, const std::function<float(int64_t)> &y, bool round) {
    float acc = 0;
    for (int64_t q = 0; q < 32; ++q) {
      float u = a[size_t(m * 32 + q)], v = y(q);
      volatile float prod = round ? tf32_ref(u) * tf32_ref(v) : u * v;
      acc = acc + prod;
    }
    return acc;
  };
  std::vector<float> rc(M * 32), rt(M * 32), rv(M * 32), rr(32);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < 32; ++n) {
      rc[size_t(m * 32 + n)] = ksum(
          m, [&](int64_t q) { return b[size_t(q * 32 + n)]; }, true);
      rt[size_t(m * 32 + n)] = ksum(
          m, [&](int64_t q) { return k[size_t(n * 32 + q)]; }, true);
      rv[size_t(m * 32 + n)] = ksum(
          m, [&](int64_t q) { return b[size_t(n * 32 + q)]; }, true);
    }
  for (int64_t n = 0; n < 32; ++n) // row: the exact FMA dot (products rounded to f32)
    rr[size_t(n)] = ksum(
        0, [&](int64_t q) { return b[size_t(q * 32 + n)]; }, false);
  struct Run {
    unsigned threads;
    bool race;
    size_t shift; // b and k this many floats past a 16-byte boundary
  } runs[] = {{32, false, 0}, {128, false, 0}, {128, true, 0}, {128, false, 1}};
  for (const Run &rn : runs) {
    CAPTURE(rn.threads);
    CAPTURE(rn.race);
    CAPTURE(rn.shift);
    std::vector<float> bs(b.size() + 4), ks(k.size() + 4);
    std::copy(b.begin(), b.end(), bs.begin() + long(rn.shift));
    std::copy(k.begin(), k.end(), ks.begin() + long(rn.shift));
    std::vector<float> c(M * 32, NAN), ct(M * 32, NAN), cl(M * 32, NAN), cw(M * 32, NAN),
        cv(M * 32, NAN), r(32, NAN);
    RunOptions ro;
    ro.threads_per_cta = rn.threads;
    ro.race_check = rn.race;
    std::string err = compile_and_run(kTf32, "tile_tf32", {{"M", M}},
                                      {{"a", a.data(), ETL_F32, {M, 32}},
                                       {"b", bs.data() + rn.shift, ETL_F32, {32, 32}},
                                       {"k", ks.data() + rn.shift, ETL_F32, {32, 32}},
                                       {"c", c.data(), ETL_F32, {M, 32}},
                                       {"ct", ct.data(), ETL_F32, {M, 32}},
                                       {"cl", cl.data(), ETL_F32, {M, 32}},
                                       {"cw", cw.data(), ETL_F32, {M, 32}},
                                       {"cv", cv.data(), ETL_F32, {M, 32}},
                                       {"r", r.data(), ETL_F32, {32}}},
                                      ro);
    REQUIRE_MESSAGE(err.empty(), err);
    int bad_c = 0, bad_t = 0, bad_l = 0, bad_w = 0, bad_v = 0, bad_r = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      bad_c += float_bits(c[i]) != float_bits(rc[i]);
      bad_t += float_bits(ct[i]) != float_bits(rt[i]);
      bad_l += float_bits(cl[i]) != float_bits(0.0f + rc[i]); // acc's 0 + the k-order sum
      bad_w += float_bits(cw[i]) != float_bits(rc[i]);
      bad_v += float_bits(cv[i]) != float_bits(rv[i]);
    }
    for (size_t i = 0; i < r.size(); ++i)
      bad_r += float_bits(r[i]) != float_bits(rr[i]);
    CHECK(bad_c == 0);
    CHECK(bad_t == 0);
    CHECK(bad_l == 0);
    CHECK(bad_w == 0);
    CHECK(bad_v == 0);
    CHECK(bad_r == 0);
  }
}
