// The simulator's tf32 tensor-core op (runtime/src/sim_warp.c, ETL_MMA_TF32:
// mma.sync.m16n8k8 .tf32 with PTX's fragment layouts, operands read by
// their top 19 bits as the hardware does, so an operand the compiler forgot
// to round by cvt.rna.tf32.f32 gives a different sum) against a reference
// written here independently (rounding by frexp/std::round, not by bit
// tricks), and the compiled f32 dots of programs/mma_tf32.etl and
// programs/mma_tf32_loop.etl (K loops on the cp.async ring, operands copied
// raw and rounded at the fragment loads): `precision = tf32` equals an f32 k-order
// sum of tf32-rounded products bit for bit (ties rounded away from zero
// included), the default precision stays the exact f32 product, and the
// profile counts 2 M N K tensor FLOPs for the tf32 dots and no shared-memory
// bank conflict where the rows are XOR-swizzled.
#include "../number_refs.h"
#include "artifacts.h"
#include "sim_warp.h"

#include "etl_abi.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using etl::testing::float_bits;
using etl::testing::frac_not_tf32;
using etl::testing::tf32_ref;

namespace {

/// The sum of every `"key": N` in a profile's JSON.
long long sum_of(const std::string &json, const std::string &key) {
  const std::string k = "\"" + key + "\": ";
  long long n = 0;
  for (size_t at = 0; (at = json.find(k, at)) != std::string::npos; at += k.size())
    n += std::stoll(json.substr(at + k.size()));
  return n;
}


const float kTie = 1.0f + 0x1p-11f; // halfway between two tf32 values

} // namespace

TEST_CASE("sim tf32 rounding: nearest, ties away from zero, inf and NaN kept") {
  CHECK(etl_tf32_rna(kTie) == 1.0f + 0x1p-10f);
  CHECK(etl_tf32_rna(-kTie) == -(1.0f + 0x1p-10f));
  CHECK(etl_tf32_rna(1.0f + 0x1p-11f - 0x1p-20f) == 1.0f);
  CHECK(etl_tf32_rna(3.0f) == 3.0f);
  CHECK(etl_tf32_rna(INFINITY) == INFINITY);
  CHECK(std::isnan(etl_tf32_rna(NAN)));
  CHECK(etl_tf32_rna(0x1.fffffep127f) == INFINITY); // rounds up past the largest tf32
  for (size_t i = 0; i < 1000; ++i) {
    float x = frac_not_tf32(i, 9) * 1e3f;
    CHECK(float_bits(etl_tf32_rna(x)) == float_bits(tf32_ref(x)));
    CHECK((float_bits(etl_tf32_rna(x)) & 0x1FFFu) == 0);
  }
}

/// What the tensor core reads of an operand register: its top 19 bits.
static float trunc19(float x) {
  uint32_t u = float_bits(x) & 0xFFFFE000u;
  std::memcpy(&x, &u, 4);
  return x;
}

TEST_CASE("sim mma m16n8k8 tf32: D = C + A B from PTX's fragments, operands truncated") {
  float A[16][8], B[8][8], C[16][8];
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 8; ++k)
      A[r][k] = frac_not_tf32(size_t(r * 8 + k), 1);
  for (int k = 0; k < 8; ++k)
    for (int n = 0; n < 8; ++n)
      B[k][n] = frac_not_tf32(size_t(k * 8 + n), 2);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n)
      C[r][n] = float(r - n) * 0.5f;
  A[0][0] = kTie, A[1][1] = -kTie;
  etl_warp w;
  std::memset(&w, 0, sizeof w);
  etl_warp_op op{ETL_WARP_MMA, ETL_MMA_TF32, 0xFFFFFFFFu, 6};
  for (uint32_t l = 0; l < 32; ++l) {
    uint32_t g = l >> 2, t = l & 3, in[10];
    for (uint32_t j = 0; j < 4; ++j) // A reg j: row g + 8(j & 1), col t + 4(j >> 1)
      in[j] = float_bits(A[g + 8 * (j & 1)][t + 4 * (j >> 1)]);
    for (uint32_t j = 0; j < 2; ++j) // B reg j: k = t + 4j, n = g
      in[4 + j] = float_bits(B[t + 4 * j][g]);
    for (uint32_t i = 0; i < 4; ++i)
      in[6 + i] = float_bits(C[g + 8 * (i >> 1)][2 * t + (i & 1)]);
    etl_warp_arrive_mma(&w, l, &op, in);
  }
  std::vector<int> waiting(32, ETL_LANE_WAITING);
  char msg[512] = "";
  uint32_t done = 0;
  REQUIRE(etl_warp_settle(&w, 32, waiting.data(), &done, msg, sizeof msg) == ETL_WARP_DONE);
  int bad = 0, rounded_differs = 0, unrounded_differs = 0;
  for (uint32_t l = 0; l < 32; ++l)
    for (uint32_t i = 0; i < 4; ++i) {
      uint32_t r = (l >> 2) + 8 * (i >> 1), n = 2 * (l & 3) + (i & 1);
      float want = C[r][n], plain = C[r][n], rounded = C[r][n];
      for (int k = 0; k < 8; ++k) {
        volatile float p = trunc19(A[r][k]) * trunc19(B[k][n]), q = A[r][k] * B[k][n],
                       o = tf32_ref(A[r][k]) * tf32_ref(B[k][n]);
        want = want + p;
        plain = plain + q;
        rounded = rounded + o;
      }
      bad += float_bits(want) != w.vout[l][i];
      unrounded_differs += float_bits(plain) != w.vout[l][i];
      rounded_differs += float_bits(rounded) != w.vout[l][i];
    }
  CHECK(bad == 0);
  CHECK(unrounded_differs > 0); // the low bits are dropped
  // An operand not rounded by cvt.rna first is truncated, as on the
  // hardware: the compiled dots must round (they do: the test below).
  CHECK(rounded_differs > 0);
}

TEST_CASE("sim: compiled tf32 dots equal an f32 k-order sum of tf32 products bit for bit") {
  std::string path = etl::testartifacts::built("mma_tf32");
  if (path.empty())
    return;
  etlContext ctx = nullptr;
  REQUIRE(etlContextCreate(&ctx, "sim", nullptr) == ETL_SUCCESS);
  etlProgram prog = nullptr;
  REQUIRE_MESSAGE(etlProgramLoadFile(ctx, path.c_str(), &prog) == ETL_SUCCESS,
                  etlGetLastErrorMessage());
  std::string profile = std::string(ETL_TEST_BINARY_DIR) + "/sim_tf32_test.profile.json";
  REQUIRE(etlProgramSetProfile(prog, profile.c_str()) == ETL_SUCCESS);
  std::vector<float> a(64 * 24), b(24 * 16), x(16 * 16), y(16 * 40);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = frac_not_tf32(i, 3);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = frac_not_tf32(i, 4);
  for (size_t i = 0; i < x.size(); ++i) // small integers: every path is exact
    x[i] = float(int(i * 7 % 11) - 5);
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = float(int(i * 5 % 13) - 6);
  a[0] = kTie, a[1] = -kTie, b[0] = 1.0f, b[16] = 1.0f; // c[0][0] sees two ties
  std::vector<float> f(32 * 64), g(64 * 32);
  for (size_t i = 0; i < f.size(); ++i)
    f[i] = frac_not_tf32(i, 5);
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = frac_not_tf32(i, 6);
  std::vector<float> c(64 * 16, NAN), e(64 * 16, NAN), z(16 * 40, NAN), w(16 * 16, NAN),
      o(32 * 32, NAN);
  int64_t sa[2] = {64, 24}, sb[2] = {24, 16}, sc[2] = {64, 16}, sx[2] = {16, 16}, sy[2] = {16, 40};
  CHECK(etlBindTensor(prog, "a", a.data(), ETL_F32, 2, sa) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "b", b.data(), ETL_F32, 2, sb) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "c", c.data(), ETL_F32, 2, sc) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "e", e.data(), ETL_F32, 2, sc) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "x", x.data(), ETL_F32, 2, sx) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "y", y.data(), ETL_F32, 2, sy) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "z", z.data(), ETL_F32, 2, sy) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "w", w.data(), ETL_F32, 2, sx) == ETL_SUCCESS);
  int64_t sf[2] = {32, 64}, sg[2] = {64, 32}, so[2] = {32, 32};
  CHECK(etlBindTensor(prog, "f", f.data(), ETL_F32, 2, sf) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "g", g.data(), ETL_F32, 2, sg) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "o", o.data(), ETL_F32, 2, so) == ETL_SUCCESS);
  REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
  // sum_{k in [k0, k1)} of (round(a) * round(b)) from `init`, in k order.
  auto ksum = [](const float *p, const float *q, int64_t K, int64_t N, int64_t m, int64_t n,
                 int64_t k0, int64_t k1, bool round) {
    float acc = 0;
    for (int64_t k = k0; k < k1; ++k) {
      float u = p[m * K + k], v = q[k * N + n];
      volatile float prod = round ? tf32_ref(u) * tf32_ref(v) : u * v;
      acc = acc + prod;
    }
    return acc;
  };
  int bad_c = 0, bad_e = 0, differs = 0, far = 0;
  for (int64_t m = 0; m < 64; ++m)
    for (int64_t n = 0; n < 16; ++n) {
      float want = ksum(a.data(), b.data(), 24, 16, m, n, 0, 24, true);
      float exact = ksum(a.data(), b.data(), 24, 16, m, n, 0, 24, false);
      float got = c[size_t(m * 16 + n)];
      bad_c += float_bits(want) != float_bits(got);
      bad_e += float_bits(exact) != float_bits(e[size_t(m * 16 + n)]);
      differs += float_bits(got) != float_bits(exact);
      // tf32 keeps 11 bits: each product within 2^-10 relative of the exact one.
      double mag = 0, ref = 0;
      for (int64_t k = 0; k < 24; ++k) {
        ref += double(a[size_t(m * 24 + k)]) * b[size_t(k * 16 + n)];
        mag += std::fabs(double(a[size_t(m * 24 + k)]) * b[size_t(k * 16 + n)]);
      }
      far += std::fabs(got - ref) > 0x1p-9 * mag + 1e-6;
    }
  CHECK(bad_c == 0);
  CHECK(bad_e == 0); // the default precision: exact f32 products, no tf32
  CHECK(differs > 0);
  CHECK(far == 0);
  // The two ties in c[0][0]: a[0] and -a[1] round away from zero to 1 + 2^-10.
  CHECK(float_bits(c[0]) == float_bits(ksum(a.data(), b.data(), 24, 16, 0, 0, 0, 24, true)));
  int bad_z = 0, bad_w = 0;
  for (int64_t m = 0; m < 16; ++m)
    for (int64_t n = 0; n < 40; ++n)
      bad_z +=
          float_bits(z[size_t(m * 40 + n)]) != float_bits(ksum(x.data(), y.data(), 16, 40, m, n, 0, 16, false));
  for (int64_t m = 0; m < 16; ++m)
    for (int64_t n = 0; n < 16; ++n) {
      // acc += dot(..) per k8 step on the cp.async ring: the accumulators
      // stay in registers across the loop, so one k-order sum over K = 24,
      // then added to acc's 0 once.
      float acc = 0.0f + ksum(a.data(), b.data(), 24, 16, m, n, 0, 24, true);
      bad_w += float_bits(w[size_t(m * 16 + n)]) != float_bits(acc);
    }
  int bad_o = 0;
  for (int64_t m = 0; m < 32; ++m)
    for (int64_t n = 0; n < 32; ++n)
      bad_o +=
          float_bits(o[size_t(m * 32 + n)]) != float_bits(ksum(f.data(), g.data(), 64, 32, m, n, 0, 64, true));
  CHECK(bad_z == 0);
  CHECK(bad_w == 0);
  CHECK(bad_o == 0);
  etlProgramDestroy(prog);
  etlContextDestroy(ctx);
  // Every tf32 dot ran on tensor cores: 2 M N K FLOPs each, 2048 per mma;
  // task s's 16 x 16 accumulator (the tile IR's mma layout, 8 warps: two
  // split its n8 columns, the other bits are replicas) is computed by 4
  // warps each, task t's 32 x 16 by 2; K = 24 is 3 k8 steps (none for the
  // padded 24 .. 31) and h's N = 40 5 n8 tiles (warps 5 .. 7 hold padding
  // only and issue none).
  std::ifstream in(profile);
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string json = ss.str();
  long long flops = 0, mma = 0;
  for (size_t at = 0; (at = json.find("\"tensor_flops\": ", at)) != std::string::npos; ++at)
    flops += std::stoll(json.substr(at + 16));
  for (size_t at = 0; (at = json.find("\"mma\": ", at)) != std::string::npos; ++at)
    mma += std::stoll(json.substr(at + 7));
  const long long want =
      2LL * (2 * 2 * 32 * 16 * 24 + 16 * 40 * 16 + 4 * 3 * 16 * 16 * 8 + 32 * 32 * 64);
  CHECK(flops == want);
  CHECK(mma * 2048 == want);
  // Task r (rows of 32 and 64 floats: the XOR-swizzled staging): no shared
  // access of it, staging stores, fragment loads or write-back, conflicts.
  size_t group_r = json.find("\"name\": \"r\"");
  REQUIRE(group_r != std::string::npos);
  size_t factor = json.find("\"bank_conflict_factor\": ", json.find("\"shared\": ", group_r));
  REQUIRE(factor != std::string::npos);
  CHECK(std::stod(json.substr(factor + 24)) <= 1.0);
  // A's fragments by ldmatrix.x4: each phase's 8 row addresses in distinct
  // 16-byte bank groups (tile_tf32_ptr's phases: rows of 24 floats in runs
  // of 4, of 16 in runs of 2, of 64 one a phase).
  long long phases = sum_of(json, "ldmatrix_phases"), ldm_wf = sum_of(json, "ldmatrix_wavefronts");
  CHECK(phases > 0);
  CHECK(ldm_wf == phases);
}

TEST_CASE("sim: tf32 K loops on the cp.async ring equal the one-dot form bit for bit, ragged too") {
  std::string path = etl::testartifacts::built("mma_tf32_loop");
  if (path.empty())
    return;
  etlContext ctx = nullptr;
  REQUIRE(etlContextCreate(&ctx, "sim", nullptr) == ETL_SUCCESS);
  etlProgram prog = nullptr;
  REQUIRE_MESSAGE(etlProgramLoadFile(ctx, path.c_str(), &prog) == ETL_SUCCESS,
                  etlGetLastErrorMessage());
  std::vector<float> a(64 * 64), b(64 * 32), x(32 * 45), y(45 * 24);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = frac_not_tf32(i, 11);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = frac_not_tf32(i, 12);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = frac_not_tf32(i, 13);
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = frac_not_tf32(i, 14);
  a[0] = kTie, b[0] = -kTie; // ties: rounded away from zero, not truncated
  std::vector<float> c(64 * 32, NAN), d(64 * 32, NAN), z(32 * 24, NAN), e(32 * 32, NAN),
      f(32 * 32, NAN);
  int64_t sa[2] = {64, 64}, sb[2] = {64, 32}, sx[2] = {32, 45}, sy[2] = {45, 24}, sz[2] = {32, 24};
  CHECK(etlBindTensor(prog, "a", a.data(), ETL_F32, 2, sa) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "b", b.data(), ETL_F32, 2, sb) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "c", c.data(), ETL_F32, 2, sb) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "d", d.data(), ETL_F32, 2, sb) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "x", x.data(), ETL_F32, 2, sx) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "y", y.data(), ETL_F32, 2, sy) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "z", z.data(), ETL_F32, 2, sz) == ETL_SUCCESS);
  int64_t se[2] = {32, 32};
  CHECK(etlBindTensor(prog, "e", e.data(), ETL_F32, 2, se) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "f", f.data(), ETL_F32, 2, se) == ETL_SUCCESS);
  std::string profile = std::string(ETL_TEST_BINARY_DIR) + "/sim_tf32_loop_test.profile.json";
  REQUIRE(etlProgramSetProfile(prog, profile.c_str()) == ETL_SUCCESS);
  REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
  etlProgramDestroy(prog);
  etlContextDestroy(ctx);
  {
    // The rings' A fragments (raw f32, rounded after the load) by
    // ldmatrix.x4, one wavefront a phase.
    std::ifstream in(profile);
    REQUIRE(in);
    std::stringstream ss;
    ss << in.rdbuf();
    long long phases = sum_of(ss.str(), "ldmatrix_phases");
    CHECK(phases > 0);
    CHECK(sum_of(ss.str(), "ldmatrix_wavefronts") == phases);
  }
  // An f32 k-order sum of products of rounded (or truncated) operands.
  auto ksum = [](const float *p, const float *q, int64_t K, int64_t N, int64_t m, int64_t n,
                 float (*op)(float)) {
    float acc = 0;
    for (int64_t k = 0; k < K; ++k) {
      volatile float prod = op(p[m * K + k]) * op(q[k * N + n]);
      acc = acc + prod;
    }
    return acc;
  };
  int bad_c = 0, bad_d = 0, cd = 0, trunc_differs = 0, bad_z = 0;
  for (int64_t m = 0; m < 64; ++m)
    for (int64_t n = 0; n < 32; ++n) {
      size_t i = size_t(m * 32 + n);
      float want = ksum(a.data(), b.data(), 64, 32, m, n, tf32_ref);
      bad_c += float_bits(c[i]) != float_bits(want);
      bad_d += float_bits(d[i]) != float_bits(want);
      cd += float_bits(c[i]) != float_bits(d[i]);
      trunc_differs += float_bits(c[i]) != float_bits(ksum(a.data(), b.data(), 64, 32, m, n, trunc19));
    }
  for (int64_t m = 0; m < 32; ++m)
    for (int64_t n = 0; n < 24; ++n)
      bad_z += float_bits(z[size_t(m * 24 + n)]) != float_bits(ksum(x.data(), y.data(), 45, 24, m, n, tf32_ref));
  CHECK(cd == 0);    // the ring's loop and the one-dot form (cp.async, one stage)
  CHECK(bad_c == 0); // both rounded by cvt.rna at the fragment loads
  CHECK(bad_d == 0);
  CHECK(bad_z == 0);        // the ragged loop: 0 past K = 45, unaligned rows copied per element
  CHECK(trunc_differs > 0); // operands not rounded would give other sums
  // Task p (the general loop): a's first 32 rows and K = 64 against b;
  // acc2's operand is 2 a, whose rounding and sums are 2 times a's exactly.
  std::vector<float> a2(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    a2[i] = 2.0f * a[i];
  int bad_e = 0, bad_f = 0;
  for (int64_t m = 0; m < 32; ++m)
    for (int64_t n = 0; n < 32; ++n) {
      bad_e += float_bits(e[size_t(m * 32 + n)]) != float_bits(ksum(a.data(), b.data(), 64, 32, m, n, tf32_ref));
      bad_f += float_bits(f[size_t(m * 32 + n)]) != float_bits(ksum(a2.data(), b.data(), 64, 32, m, n, tf32_ref));
    }
  CHECK(bad_e == 0);
  CHECK(bad_f == 0);
  CHECK(float_bits(c[0]) == float_bits(ksum(a.data(), b.data(), 64, 32, 0, 0, tf32_ref)));
}
