// The simulator's tensor-core collectives (runtime/src/sim_warp.c): ldmatrix
// (.x4, .x2, .trans) and mma.sync.m16n8k16 (f16, bf16) with PTX's fragment
// layouts, written out here independently of the runtime; the divergence
// reports (a lane that never arrives, a partial warp, a misaligned row
// address); and compiled f16/bf16 dots (programs/mma_dot.etl), which run on
// the rendezvous and must equal an f32 k-order reference bit for bit; and
// cp.async-pipelined K loops (programs/mma_pipeline.etl, mma_pipeline_deep.etl)
// under the race check; dot(a, transpose(b)) with b staged untransposed and
// dots mixing register and cp.async operands (programs/mma_dot_nt.etl); warp
// tiles of a K loop of two dots (programs/mma_warptile.etl).
#include "artifacts.h"
#include "sim_warp.h"

#include "etl_abi.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

/// A sim context with the artifact of tests/unit/runtime/programs/NAME.etl
/// loaded, the race check on when asked; `prog` stays null, after saying
/// why, when the artifact was not built (no etlc in this configuration).
struct SimProgram {
  etlContext ctx = nullptr;
  etlProgram prog = nullptr;
  SimProgram(const std::string &name, bool race_check) {
    std::string path = etl::testartifacts::built(name);
    if (path.empty())
      return;
    REQUIRE(etlContextCreate(&ctx, "sim", nullptr) == ETL_SUCCESS);
    REQUIRE_MESSAGE(etlProgramLoadFile(ctx, path.c_str(), &prog) == ETL_SUCCESS,
                    etlGetLastErrorMessage());
    if (race_check)
      REQUIRE(etlProgramSetRaceCheck(prog, 1) == ETL_SUCCESS);
  }
  ~SimProgram() {
    if (prog)
      etlProgramDestroy(prog);
    if (ctx)
      etlContextDestroy(ctx);
  }
  SimProgram(const SimProgram &) = delete;
  SimProgram &operator=(const SimProgram &) = delete;
};

const std::vector<int> waiting(32, ETL_LANE_WAITING);

int settle(etl_warp &w, uint32_t n, const std::vector<int> &state, std::string &msg) {
  char buf[512] = "";
  uint32_t done = 0;
  int rc = etl_warp_settle(&w, n, state.data(), &done, buf, sizeof buf);
  msg = buf;
  return rc;
}

uint16_t bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return uint16_t(x >> 16); // small integers: exact
}

uint16_t half(float f) { // normal values with at most 11 significant bits: exact
  if (f == 0)
    return 0;
  uint16_t sign = f < 0 ? 0x8000 : 0;
  float a = f < 0 ? -f : f;
  int e = 0;
  while (a >= 2) {
    a /= 2;
    ++e;
  }
  while (a < 1) {
    a *= 2;
    --e;
  }
  return uint16_t(sign | uint16_t((e + 15) << 10) | uint16_t((a - 1) * 1024));
}

uint32_t pack(uint16_t lo, uint16_t hi) { return uint32_t(lo) | uint32_t(hi) << 16; }

} // namespace

TEST_CASE("sim ldmatrix: x4, x4.trans and x2.trans give PTX's fragments") {
  // A 16x16 matrix of 16-bit values M[r][c] = r * 16 + c, rows of 32 bytes
  // at a 16-byte aligned base inside the warp's shared memory.
  alignas(16) static uint16_t smem[16 * 16 + 64];
  for (int i = 0; i < 16 * 16; ++i)
    smem[i] = uint16_t(i);
  for (bool trans : {false, true}) {
    etl_warp w;
    std::memset(&w, 0, sizeof w);
    w.smem = reinterpret_cast<const unsigned char *>(smem);
    w.smem_bytes = sizeof smem;
    etl_warp_op op{ETL_WARP_LDMATRIX, 4u | (trans ? ETL_LDMATRIX_TRANS : 0u), 0xFFFFFFFFu, 9};
    // Lane l: row (l & 15), column block (l >> 4) * 8.
    for (uint32_t l = 0; l < 32; ++l)
      etl_warp_arrive_ldmatrix(&w, l, &op, &smem[(l & 15) * 16 + (l >> 4) * 8]);
    std::string msg;
    REQUIRE(settle(w, 32, waiting, msg) == ETL_WARP_DONE);
    // Unswizzled 32-byte rows: the 8 rows of a phase fall in 4 of the 8
    // 16-byte bank groups, two each: 2 wavefronts per phase.
    CHECK(w.ld_phases == 4);
    CHECK(w.ld_wavefronts == 8);
    for (uint32_t l = 0; l < 32; ++l) {
      uint32_t g = l >> 2, t = l & 3;
      for (uint32_t m = 0; m < 4; ++m) { // matrix m: rows 8(m & 1), cols 8(m >> 1)
        uint32_t r0 = 8 * (m & 1), c0 = 8 * (m >> 1);
        uint32_t lo = trans ? (r0 + 2 * t) * 16 + c0 + g : (r0 + g) * 16 + c0 + 2 * t;
        uint32_t hi = trans ? lo + 16 : lo + 1;
        CHECK(w.vout[l][m] == pack(uint16_t(lo), uint16_t(hi)));
      }
    }
  }
  // A misaligned row address is reported, naming the op and its line.
  etl_warp w;
  std::memset(&w, 0, sizeof w);
  w.smem = reinterpret_cast<const unsigned char *>(smem);
  w.smem_bytes = sizeof smem;
  etl_warp_op op{ETL_WARP_LDMATRIX, 2u | ETL_LDMATRIX_TRANS, 0xFFFFFFFFu, 12};
  for (uint32_t l = 0; l < 32; ++l)
    etl_warp_arrive_ldmatrix(&w, l, &op, &smem[(l & 15) * 16 + (l == 3 ? 1 : 0)]);
  std::string msg;
  REQUIRE(settle(w, 32, waiting, msg) == ETL_WARP_DIVERGED);
  CHECK(msg.find("ldmatrix.sync (line 12): lane 3") != std::string::npos);
  CHECK(msg.find("not 16-byte aligned") != std::string::npos);
}

TEST_CASE("sim mma m16n8k16: D = C + A B from PTX's fragments, f16 and bf16") {
  for (uint32_t kind : {uint32_t(ETL_MMA_F16), uint32_t(ETL_MMA_BF16)}) {
    CAPTURE(kind);
    float A[16][16], B[16][8], C[16][8];
    for (int r = 0; r < 16; ++r)
      for (int k = 0; k < 16; ++k)
        A[r][k] = float((r * 7 + k * 3) % 7 - 3);
    for (int k = 0; k < 16; ++k)
      for (int n = 0; n < 8; ++n)
        B[k][n] = float((k * 5 + n * 11) % 9 - 4);
    for (int r = 0; r < 16; ++r)
      for (int n = 0; n < 8; ++n)
        C[r][n] = float(r - n) * 0.5f;
    auto bits = [&](float f) { return kind == ETL_MMA_BF16 ? bf16(f) : half(f); };
    etl_warp w;
    std::memset(&w, 0, sizeof w);
    etl_warp_op op{ETL_WARP_MMA, kind, 0xFFFFFFFFu, 5};
    for (uint32_t l = 0; l < 32; ++l) {
      uint32_t g = l >> 2, t = l & 3, in[10];
      for (uint32_t j = 0; j < 4; ++j) { // A reg j: row g + 8(j & 1), cols 2t + 8(j >> 1), +1
        uint32_t r = g + 8 * (j & 1), c = 2 * t + 8 * (j >> 1);
        in[j] = pack(bits(A[r][c]), bits(A[r][c + 1]));
      }
      for (uint32_t j = 0; j < 2; ++j) // B reg j: k = 2t + 8j, +1 at n = g
        in[4 + j] = pack(bits(B[2 * t + 8 * j][g]), bits(B[2 * t + 8 * j + 1][g]));
      for (uint32_t i = 0; i < 4; ++i)
        std::memcpy(&in[6 + i], &C[g + 8 * (i >> 1)][2 * t + (i & 1)], 4);
      etl_warp_arrive_mma(&w, l, &op, in);
    }
    std::string msg;
    REQUIRE(settle(w, 32, waiting, msg) == ETL_WARP_DONE);
    int bad = 0;
    for (uint32_t l = 0; l < 32; ++l)
      for (uint32_t i = 0; i < 4; ++i) {
        uint32_t r = (l >> 2) + 8 * (i >> 1), n = 2 * (l & 3) + (i & 1);
        double want = C[r][n];
        for (int k = 0; k < 16; ++k)
          want += double(A[r][k]) * B[k][n];
        float got;
        std::memcpy(&got, &w.vout[l][i], 4);
        bad += got != float(want);
      }
    CHECK(bad == 0);
  }
}

TEST_CASE("sim mma: a lane that never arrives, or a partial warp, is a divergence") {
  uint32_t in[10] = {0};
  std::string msg;
  {
    etl_warp w;
    std::memset(&w, 0, sizeof w);
    etl_warp_op op{ETL_WARP_MMA, ETL_MMA_BF16, 0xFFFFFFFFu, 77};
    for (uint32_t l = 0; l < 32; ++l)
      if (l != 17)
        etl_warp_arrive_mma(&w, l, &op, in);
    std::vector<int> state = waiting;
    state[17] = ETL_LANE_RUNNING;
    REQUIRE(settle(w, 32, state, msg) == ETL_WARP_WAIT); // it may still come
    state[17] = ETL_LANE_GONE;
    REQUIRE(settle(w, 32, state, msg) == ETL_WARP_DIVERGED);
    CHECK(msg.find("mma.sync.m16n8k16 (line 77): lane 17 never arrives") != std::string::npos);
  }
  {
    etl_warp w;
    std::memset(&w, 0, sizeof w);
    etl_warp_op op{ETL_WARP_MMA, ETL_MMA_F16, 0xFFFFFFFFu, 8};
    for (uint32_t l = 0; l < 20; ++l)
      etl_warp_arrive_mma(&w, l, &op, in);
    REQUIRE(settle(w, 20, waiting, msg) == ETL_WARP_DIVERGED);
    CHECK(msg.find("mma.sync.m16n8k16") != std::string::npos);
  }
}

TEST_CASE("sim mma: compiled f16/bf16 dots equal an f32 k-order reference bit for bit") {
  SimProgram sim("mma_dot", false);
  if (!sim.prog)
    return;
  etlProgram prog = sim.prog;
  // Random-ish fractions (not exact sums): the same f32 operations in the
  // same order give the same bits.
  auto val = [](size_t i, int salt) {
    return float(int((i * 2654435761u + salt) % 255) - 127) / 64.0f;
  };
  std::vector<float> af(64 * 48), bfv(48 * 24), xf(16 * 32), yf(32 * 32);
  std::vector<uint16_t> a(af.size()), b(bfv.size()), x(xf.size()), y(yf.size());
  for (size_t i = 0; i < af.size(); ++i)
    a[i] = bf16(af[i] = val(i, 1));
  for (size_t i = 0; i < bfv.size(); ++i)
    b[i] = bf16(bfv[i] = val(i, 2));
  for (size_t i = 0; i < xf.size(); ++i)
    x[i] = half(xf[i] = float(int(val(i, 3) * 8)));
  for (size_t i = 0; i < yf.size(); ++i)
    y[i] = half(yf[i] = float(int(val(i, 4) * 8)) / 4);
  std::vector<float> c(64 * 24, NAN), z(16 * 32, NAN);
  int64_t sa[2] = {64, 48}, sb[2] = {48, 24}, sc[2] = {64, 24}, sx[2] = {16, 32}, sy[2] = {32, 32};
  CHECK(etlBindTensor(prog, "a", a.data(), ETL_BF16, 2, sa) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "b", b.data(), ETL_BF16, 2, sb) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "c", c.data(), ETL_F32, 2, sc) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "x", x.data(), ETL_F16, 2, sx) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "y", y.data(), ETL_F16, 2, sy) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "z", z.data(), ETL_F32, 2, sx) == ETL_SUCCESS);
  REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
  int bad = 0;
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 24; ++n) {
      float acc = 0;
      for (int k = 0; k < 48; ++k) {
        volatile float p = af[size_t(m * 48 + k)] * bfv[size_t(k * 24 + n)];
        acc = acc + p;
      }
      bad += std::memcmp(&acc, &c[size_t(m * 24 + n)], 4) != 0;
    }
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 32; ++n) {
      float acc = 0;
      for (int k = 0; k < 32; ++k) {
        volatile float p = xf[size_t(m * 32 + k)] * yf[size_t(k * 32 + n)];
        acc = acc + p;
      }
      bad += std::memcmp(&acc, &z[size_t(m * 32 + n)], 4) != 0;
    }
  CHECK(bad == 0);
}

TEST_CASE("sim mma: dot(a, transpose(b)) with b staged untransposed (plain ldmatrix), and a "
          "register operand beside a cp.async one, equal an f32 k-order reference bit for bit") {
  SimProgram sim("mma_dot_nt", true);
  if (!sim.prog)
    return;
  etlProgram prog = sim.prog;
  auto val = [](size_t i, int salt) {
    return float(int((i * 2654435761u + salt) % 255) - 127) / 64.0f;
  };
  // a [64, 48], b [24, 48] (bf16), x, y (f16), p [32, 16] (f32, bf16-exact), v [16, 24] (bf16).
  std::vector<float> af(64 * 48), bfv(24 * 48), xf(16 * 32), yf(32 * 32), pf(32 * 16), vf(16 * 24);
  std::vector<uint16_t> a(af.size()), b(bfv.size()), x(xf.size()), y(yf.size()), v(vf.size());
  for (size_t i = 0; i < af.size(); ++i)
    a[i] = bf16(af[i] = val(i, 5));
  for (size_t i = 0; i < bfv.size(); ++i)
    b[i] = bf16(bfv[i] = val(i, 6));
  for (size_t i = 0; i < xf.size(); ++i)
    x[i] = half(xf[i] = float(int(val(i, 7) * 8)));
  for (size_t i = 0; i < yf.size(); ++i)
    y[i] = half(yf[i] = float(int(val(i, 8) * 8)) / 4);
  for (size_t i = 0; i < pf.size(); ++i)
    pf[i] = val(i, 9);
  for (size_t i = 0; i < vf.size(); ++i)
    v[i] = bf16(vf[i] = val(i, 10));
  std::vector<float> c(64 * 24, NAN), z(16 * 32, NAN), w(32 * 24, NAN);
  int64_t sa[2] = {64, 48}, sb[2] = {24, 48}, sc[2] = {64, 24}, sx[2] = {16, 32}, sy[2] = {32, 32},
          sp[2] = {32, 16}, sv[2] = {16, 24}, sw[2] = {32, 24};
  CHECK(etlBindTensor(prog, "a", a.data(), ETL_BF16, 2, sa) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "b", b.data(), ETL_BF16, 2, sb) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "c", c.data(), ETL_F32, 2, sc) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "x", x.data(), ETL_F16, 2, sx) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "y", y.data(), ETL_F16, 2, sy) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "z", z.data(), ETL_F32, 2, sx) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "p", pf.data(), ETL_F32, 2, sp) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "v", v.data(), ETL_BF16, 2, sv) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "w", w.data(), ETL_F32, 2, sw) == ETL_SUCCESS);
  REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
  // out[m, n] = sum over k, in k order, of lhs(m, k) * rhs(k, n).
  auto bad_in = [](const std::vector<float> &out, int M, int N, int K, auto lhs, auto rhs) {
    int bad = 0;
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        float acc = 0;
        for (int k = 0; k < K; ++k) {
          volatile float prod = lhs(m, k) * rhs(k, n);
          acc = acc + prod;
        }
        bad += std::memcmp(&acc, &out[size_t(m * N + n)], 4) != 0;
      }
    return bad;
  };
  CHECK(bad_in(
            c, 64, 24, 48, [&](int m, int k) { return af[size_t(m * 48 + k)]; },
            [&](int k, int n) { return bfv[size_t(n * 48 + k)]; }) == 0);
  CHECK(bad_in(
            z, 16, 32, 32, [&](int m, int k) { return xf[size_t(m * 32 + k)]; },
            [&](int k, int n) { return yf[size_t(n * 32 + k)]; }) == 0);
  CHECK(bad_in(
            w, 32, 24, 16, [&](int m, int k) { return pf[size_t(m * 16 + k)]; },
            [&](int k, int n) { return vf[size_t(k * 24 + n)]; }) == 0);
}

TEST_CASE("sim mma: cp.async-pipelined K loops (programs/mma_pipeline.etl, three stages; "
          "mma_pipeline_deep.etl, two stages, n8 units, 48 x 24 tiles in padded layouts) are exact and "
          "race-free") {
  for (const char *name : {"mma_pipeline", "mma_pipeline_deep"}) {
    CAPTURE(name);
    SimProgram sim(name, true);
    if (!sim.prog)
      return;
    etlProgram prog = sim.prog;
    // K = 72: 16-byte aligned rows, the last K step half outside; K = 37:
    // unaligned rows (every chunk by the element path); one K step; K = 500:
    // three of mma_pipeline_deep's 240-wide steps (its ring wraps).
    const int64_t shapes[][3] = {{40, 24, 72}, {33, 17, 37}, {32, 16, 16}, {50, 30, 500}};
    for (const auto &sh : shapes) {
      const int64_t M = sh[0], N = sh[1], K = sh[2];
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      std::vector<float> af(size_t(M * K)), bfv(size_t(K * N));
      std::vector<uint16_t> a(af.size()), b(bfv.size());
      for (size_t i = 0; i < af.size(); ++i) // small integers: exact sums
        a[i] = bf16(af[i] = float(int((i * 2654435761u) % 7) - 3));
      for (size_t i = 0; i < bfv.size(); ++i)
        b[i] = bf16(bfv[i] = float(int((i * 40503u + 11) % 7) - 3));
      std::vector<float> c(size_t(M * N), NAN);
      int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
      CHECK(etlBindDim(prog, "M", M) == ETL_SUCCESS);
      CHECK(etlBindDim(prog, "N", N) == ETL_SUCCESS);
      CHECK(etlBindDim(prog, "K", K) == ETL_SUCCESS);
      CHECK(etlBindTensor(prog, "a", a.data(), ETL_BF16, 2, sa) == ETL_SUCCESS);
      CHECK(etlBindTensor(prog, "b", b.data(), ETL_BF16, 2, sb) == ETL_SUCCESS);
      CHECK(etlBindTensor(prog, "c", c.data(), ETL_F32, 2, sc) == ETL_SUCCESS);
      REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
      int bad = 0;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          float acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += af[size_t(m * K + k)] * bfv[size_t(k * N + n)];
          bad += std::memcmp(&acc, &c[size_t(m * N + n)], 4) != 0;
        }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("sim mma: a K loop of three dots with a computed A operand and a shared let operand "
          "(programs/mma_pipeline_multi.etl, tile/pipeline.cpp) is exact on ragged K and "
          "race-free") {
  SimProgram sim("mma_pipeline_multi", true);
  if (!sim.prog)
    return;
  etlProgram prog = sim.prog;
  // K = 72: aligned rows, the last K step half outside the tensor (zero
  // fill); K = 37: unaligned rows (the element path); K = 16: one step;
  // K = 100 with ragged M and N: the ring wraps several times.
  const int64_t shapes[][3] = {{40, 40, 72}, {33, 17, 37}, {16, 32, 16}, {20, 50, 100}};
  for (const auto &sh : shapes) {
    const int64_t M = sh[0], N = sh[1], K = sh[2];
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    std::vector<float> af(size_t(M * K)), sf(static_cast<size_t>(K)), b0f(size_t(K * N)),
        b1f(size_t(K * N));
    std::vector<uint16_t> a(af.size()), s(sf.size()), b0(b0f.size()), b1(b1f.size());
    for (size_t i = 0; i < af.size(); ++i) // small integers: exact sums
      a[i] = bf16(af[i] = float(int((i * 2654435761u) % 7) - 3));
    for (size_t i = 0; i < sf.size(); ++i)
      s[i] = bf16(sf[i] = float(int(i % 3) - 1) * 2);
    for (size_t i = 0; i < b0f.size(); ++i) {
      b0[i] = bf16(b0f[i] = float(int((i * 40503u + 11) % 7) - 3));
      b1[i] = bf16(b1f[i] = float(int((i * 97u + 5) % 5) - 2));
    }
    std::vector<float> c0(size_t(M * N), NAN), c1(c0), c2(c0);
    int64_t sa[2] = {M, K}, ss[1] = {K}, sb[2] = {K, N}, sc[2] = {M, N};
    CHECK(etlBindDim(prog, "M", M) == ETL_SUCCESS);
    CHECK(etlBindDim(prog, "N", N) == ETL_SUCCESS);
    CHECK(etlBindDim(prog, "K", K) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "a", a.data(), ETL_BF16, 2, sa) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "s", s.data(), ETL_BF16, 1, ss) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "b0", b0.data(), ETL_BF16, 2, sb) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "b1", b1.data(), ETL_BF16, 2, sb) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "c0", c0.data(), ETL_F32, 2, sc) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "c1", c1.data(), ETL_F32, 2, sc) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "c2", c2.data(), ETL_F32, 2, sc) == ETL_SUCCESS);
    REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
    int bad = 0;
    for (int64_t m = 0; m < M; ++m) {
      float rs = 0;
      for (int64_t k = 0; k < K; ++k)
        rs += af[size_t(m * K + k)];
      for (int64_t n = 0; n < N; ++n) {
        float lo = 0, hi = 0, raw = 0;
        for (int64_t k = 0; k < K; ++k) {
          float xa = af[size_t(m * K + k)] * sf[size_t(k)];
          lo += xa * b0f[size_t(k * N + n)];
          hi += xa * b1f[size_t(k * N + n)];
          raw += af[size_t(m * K + k)] * b1f[size_t(k * N + n)];
        }
        lo += rs;
        size_t at = size_t(m * N + n);
        bad += std::memcmp(&lo, &c0[at], 4) != 0;
        bad += std::memcmp(&hi, &c1[at], 4) != 0;
        bad += std::memcmp(&raw, &c2[at], 4) != 0;
      }
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("sim mma: chained dots (programs/mma_chain.etl, P in the A layout): P handed over "
          "in registers equals P through shared memory bit for bit, and the reference, also in a "
          "loop with the inner dot's a hoisted") {
  SimProgram sim("mma_chain", true);
  if (!sim.prog)
    return;
  etlProgram prog = sim.prog;
  auto val = [](size_t i, int salt) {
    return float(int((i * 2654435761u + salt) % 255) - 127) / 256.0f;
  };
  std::vector<float> qf(64 * 32), kf(32 * 32), vf(32 * 24), xf(64 * 16), yf(16 * 32), zf(32 * 32);
  std::vector<uint16_t> q(qf.size()), k(kf.size()), v(vf.size()), y(yf.size()), z(zf.size());
  for (size_t i = 0; i < qf.size(); ++i)
    q[i] = bf16(qf[i] = val(i, 1));
  for (size_t i = 0; i < kf.size(); ++i)
    k[i] = bf16(kf[i] = val(i, 2));
  for (size_t i = 0; i < vf.size(); ++i)
    v[i] = bf16(vf[i] = val(i, 3));
  for (size_t i = 0; i < xf.size(); ++i) // small integers: every sum of h is exact
    xf[i] = float(int((i * 2654435761u) % 17) - 8);
  for (size_t i = 0; i < yf.size(); ++i)
    y[i] = half(yf[i] = float(int((i * 40503u + 11) % 7) - 3));
  for (size_t i = 0; i < zf.size(); ++i)
    z[i] = half(zf[i] = float(int((i * 97u + 5) % 7) - 3));
  std::vector<float> o(64 * 24, NAN), o_split(o), ol(o), ol_split(o), w(64 * 32, NAN);
  int64_t sq[2] = {64, 32}, sk[2] = {32, 32}, sv[2] = {32, 24}, so[2] = {64, 24}, sx[2] = {64, 16},
          sy[2] = {16, 32}, sz[2] = {32, 32}, sw[2] = {64, 32};
  CHECK(etlBindTensor(prog, "q", q.data(), ETL_BF16, 2, sq) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "k", k.data(), ETL_BF16, 2, sk) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "v", v.data(), ETL_BF16, 2, sv) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "o", o.data(), ETL_F32, 2, so) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "o_split", o_split.data(), ETL_F32, 2, so) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "x", xf.data(), ETL_F32, 2, sx) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "y", y.data(), ETL_F16, 2, sy) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "z", z.data(), ETL_F16, 2, sz) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "w", w.data(), ETL_F32, 2, sw) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "ol", ol.data(), ETL_F32, 2, so) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "ol_split", ol_split.data(), ETL_F32, 2, so) == ETL_SUCCESS);
  REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
  // The same products summed in the same order: identical bits.
  CHECK(std::memcmp(o.data(), o_split.data(), o.size() * 4) == 0);
  CHECK(std::memcmp(ol.data(), ol_split.data(), ol.size() * 4) == 0);
  // P = bf16(exp(s / 8 - 2)) against double precision, within bf16's
  // rounding of P (one ulp, 2^-8 relative, of each term).
  int bad = 0;
  for (int m = 0; m < 64; ++m) {
    std::vector<double> p(32);
    for (int j = 0; j < 32; ++j) {
      double s = 0;
      for (int c = 0; c < 32; ++c)
        s += double(qf[size_t(m * 32 + c)]) * kf[size_t(j * 32 + c)];
      p[size_t(j)] = std::exp(s * 0.125 - 2.0);
    }
    for (int n = 0; n < 24; ++n) {
      double ref = 0, mag = 0;
      for (int j = 0; j < 32; ++j) {
        ref += p[size_t(j)] * vf[size_t(j * 24 + n)];
        mag += std::fabs(p[size_t(j)] * vf[size_t(j * 24 + n)]);
      }
      bad += !(std::fabs(o[size_t(m * 24 + n)] - ref) <= mag / 128 + 1e-6);
      // loop: exp(s / 8) = e^2 exp(s / 8 - 2), over the same 32 keys.
      bad += !(std::fabs(ol[size_t(m * 24 + n)] - ref * std::exp(2.0)) <=
               mag * std::exp(2.0) / 128 + 1e-6);
    }
  }
  CHECK(bad == 0);
  // h: w = f16(max(x y, 0) / 2) z, exact.
  bad = 0;
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 32; ++n) {
      double ref = 0;
      for (int j = 0; j < 32; ++j) {
        double s = 0;
        for (int c = 0; c < 16; ++c)
          s += double(xf[size_t(m * 16 + c)]) * yf[size_t(c * 32 + j)];
        ref += std::max(s, 0.0) * 0.5 * zf[size_t(j * 32 + n)];
      }
      bad += double(w[size_t(m * 32 + n)]) != ref;
    }
  CHECK(bad == 0);
}

TEST_CASE("sim mma: warp tiles of a K loop of two dots (programs/mma_warptile.etl, "
          "mma_dot_col_warps) are exact on ragged shapes and race-free") {
  SimProgram sim("mma_warptile", true);
  if (!sim.prog)
    return;
  etlProgram prog = sim.prog;
  // One whole tile; ragged M, N and unaligned K (the element path); several
  // tiles with the ring wrapping.
  const int64_t shapes[][3] = {{64, 64, 64}, {70, 33, 37}, {130, 100, 160}};
  for (const auto &sh : shapes) {
    const int64_t M = sh[0], N = sh[1], K = sh[2];
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    std::vector<float> af(size_t(M * K)), sf(static_cast<size_t>(K)), bfv(size_t(K * N));
    std::vector<uint16_t> a(af.size()), s(sf.size()), b(bfv.size());
    for (size_t i = 0; i < af.size(); ++i) // small integers: exact sums
      a[i] = bf16(af[i] = float(int((i * 2654435761u) % 7) - 3));
    for (size_t i = 0; i < sf.size(); ++i)
      s[i] = bf16(sf[i] = float(int(i % 3) - 1) * 2);
    for (size_t i = 0; i < bfv.size(); ++i)
      b[i] = bf16(bfv[i] = float(int((i * 40503u + 11) % 7) - 3));
    std::vector<float> c0(size_t(M * N), NAN), c1(c0);
    int64_t sa[2] = {M, K}, ss[1] = {K}, sb[2] = {K, N}, sc[2] = {M, N};
    CHECK(etlBindDim(prog, "M", M) == ETL_SUCCESS);
    CHECK(etlBindDim(prog, "N", N) == ETL_SUCCESS);
    CHECK(etlBindDim(prog, "K", K) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "a", a.data(), ETL_BF16, 2, sa) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "s", s.data(), ETL_BF16, 1, ss) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "b", b.data(), ETL_BF16, 2, sb) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "c0", c0.data(), ETL_F32, 2, sc) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "c1", c1.data(), ETL_F32, 2, sc) == ETL_SUCCESS);
    REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
    int bad = 0;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        float lo = 0, raw = 0;
        for (int64_t k = 0; k < K; ++k) {
          float x = af[size_t(m * K + k)], y = bfv[size_t(k * N + n)];
          lo += x * sf[size_t(k)] * y;
          raw += x * y;
        }
        bad += std::memcmp(&lo, &c0[size_t(m * N + n)], 4) != 0;
        bad += std::memcmp(&raw, &c1[size_t(m * N + n)], 4) != 0;
      }
    CHECK(bad == 0);
  }
}
