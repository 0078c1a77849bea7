// End-to-end tests of atomic_add, atomic_max, atomic_min and atomic_cas on
// sim against C references (grammar/REFERENCE.md section 19): a histogram
// with many collisions (inside one tile and across tasks and CTAs), a
// split-K GEMV and a global sum with no join group, max/min of floats and
// integers, compare-and-swap claims, the old values an atomic returns
// (tickets), f16/bf16 adds through the 16-bit cas loop, i64, masks, and the
// sim's race check accepting atomics of unordered tasks. Float data are
// small integers, so every order of the additions gives the same bits.
#include "compile_run.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace etl {
namespace {
using testing::compile_and_run;

/// f16 bits of a small integer-valued float (exact in f16).
uint16_t half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  if ((x & 0x7fffffffu) == 0)
    return uint16_t(sign);
  int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  return uint16_t(sign | uint32_t(exp) << 10 | ((x >> 13) & 0x3ffu));
}
float half_value(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  float m = float(h & 0x3ff);
  float v = exp == 0 ? m / 1024.0f / 16384.0f : (1.0f + m / 1024.0f) * float(1 << exp) / 32768.0f;
  return (h & 0x8000) ? -v : v;
}
uint16_t bf16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return uint16_t(x >> 16); // exact for small integers
}
float bf16_value(uint16_t h) {
  uint32_t x = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

} // namespace

TEST_CASE("atomics: a histogram with colliding bins, weights, max/min and tickets match C") {
  const char *src = R"(
const T = 64;
kernel hist<N: dim, B: dim>(bin: tensor<i32>[N], w: tensor<f32>[N], count: tensor<i32>[B],
                            mass: tensor<f32>[B], top: tensor<f32>[B], low: tensor<i32>[B],
                            ticket: tensor<i32>[N], seen: tensor<i32>[N]) {
  buffer next: tensor<i32>[1] = zeros;
  task t[i in 0 .. cdiv(N, T)] {
    let b = load(bin[i * T .. +T], pad = -1);
    let v = load(w[i * T .. +T]);
    let live = b >= 0 && b < B;
    atomic_add(count[b], 1, mask = live);
    atomic_add(mass[b], v, mask = live);
    atomic_max(top[b], v, mask = live);
    atomic_min(low[b], cast<i32>(v) - i, mask = live && v > 2.0);
    let inside = arange<i32>[T] + i * T < N;
    store(ticket[i * T .. +T], atomic_add(next[arange<i32>[T] * 0], 1, mask = inside));
    // the old values of a masked atomic: 0 where off
    store(seen[i * T .. +T], atomic_max(count[b], 0, mask = live && v > 5.0) * 0
                             + atomic_add(next[arange<i32>[T] * 0], 0, mask = v < 0.0));
  }
}
)";
  constexpr int64_t N = 1000, B = 7; // N is not a multiple of T: a masked tail
  std::vector<int32_t> bin(N), count(B, 0), low(B, 1000), ticket(N, -5), seen(N, -5);
  std::vector<float> w(N), mass(B, 0.0f), top(B, -100.0f);
  for (int64_t k = 0; k < N; ++k) {
    bin[k] = k % 13 == 0 ? -3 : int32_t((k * 7919) % 9); // 7, 8: out of range, -3: off
    w[k] = float((k * 31) % 11) - 2.0f;                  // -2 .. 8
  }
  std::string err = compile_and_run(src, "atomics_hist", {{"N", N}, {"B", B}},
                                    {{"bin", bin.data(), ETL_I32, {N}},
                                     {"w", w.data(), ETL_F32, {N}},
                                     {"count", count.data(), ETL_I32, {B}},
                                     {"mass", mass.data(), ETL_F32, {B}},
                                     {"top", top.data(), ETL_F32, {B}},
                                     {"low", low.data(), ETL_I32, {B}},
                                     {"ticket", ticket.data(), ETL_I32, {N}},
                                     {"seen", seen.data(), ETL_I32, {N}}});
  REQUIRE_MESSAGE(err.empty(), err);
  std::vector<int32_t> rc(B, 0), rl(B, 1000);
  std::vector<float> rm(B, 0.0f), rt(B, -100.0f);
  for (int64_t k = 0; k < N; ++k) {
    int32_t b = bin[k];
    if (b < 0 || b >= B)
      continue;
    rc[b] += 1;
    rm[b] += w[k];
    rt[b] = std::max(rt[b], w[k]);
    if (w[k] > 2.0f)
      rl[b] = std::min(rl[b], int32_t(w[k]) - int32_t(k / 64));
  }
  for (int64_t b = 0; b < B; ++b) {
    INFO("bin " << b);
    CHECK(count[b] == rc[b]);
    CHECK(mass[b] == rm[b]);
    CHECK(top[b] == rt[b]);
    CHECK(low[b] == rl[b]);
  }
  // The old values of the counter: every ticket 0 .. N-1 exactly once.
  std::vector<int32_t> sorted = ticket;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t k = 0; k < N; ++k)
    REQUIRE(sorted[k] == k);
  // Masked-off elements give 0; live ones the counter's value at the time,
  // which is at least the tickets handed out in this task.
  for (int64_t k = 0; k < N; ++k) {
    INFO("k=" << k);
    if (!(w[k] < 0.0f))
      CHECK(seen[k] == 0);
    else
      CHECK(seen[k] > ticket[k]);
  }
}

TEST_CASE("atomics: split-K GEMV and a global sum with atomic_add, no join, race check on") {
  const char *src = R"(
const TM = 16;
const TK = 32;
kernel gemv<M: dim, K: dim>(a: tensor<f32>[M, K], x: tensor<f32>[K], y: tensor<f32>[M],
                            total: tensor<f32>[1], itotal: tensor<i64>[1])
  where M % TM == 0, K % TK == 0 {
  task part[i in 0 .. M / TM, k in 0 .. K / TK] {
    let p = sum(load(a[i * TM .. +TM, k * TK .. +TK]) * load(x[k * TK .. +TK]), axis = 1);
    atomic_add(y[i * TM .. +TM], p);
    atomic_add(total[0], sum(p, axis = 0));
    atomic_add(itotal[0], cast<i64>(sum(p, axis = 0)) * 1000000000);
  }
  task other[i in 0 .. M / TM] {
    atomic_add(y[i * TM .. +TM], 1.0);
  }
}
)";
  constexpr int64_t M = 64, K = 256;
  std::vector<float> a(M * K), x(K), y(M, 0.0f), total(1, 0.0f);
  std::vector<int64_t> itotal(1, 0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k)
      a[i * K + k] = float((i + 3 * k) % 5) - 2.0f;
  for (int64_t k = 0; k < K; ++k)
    x[k] = float(k % 3);
  testing::RunOptions run;
  run.race_check = true; // atomics of unordered tasks are no race
  std::string err = compile_and_run(src, "atomics_gemv", {{"M", M}, {"K", K}},
                                    {{"a", a.data(), ETL_F32, {M, K}},
                                     {"x", x.data(), ETL_F32, {K}},
                                     {"y", y.data(), ETL_F32, {M}},
                                     {"total", total.data(), ETL_F32, {1}},
                                     {"itotal", itotal.data(), ETL_I64, {1}}},
                                    run);
  REQUIRE_MESSAGE(err.empty(), err);
  double all = 0;
  for (int64_t i = 0; i < M; ++i) {
    double r = 0;
    for (int64_t k = 0; k < K; ++k)
      r += double(a[i * K + k]) * double(x[k]);
    all += r;
    INFO("row " << i);
    CHECK(y[i] == float(r + 1.0));
  }
  CHECK(total[0] == float(all));
  CHECK(itotal[0] == int64_t(all) * 1000000000);
}

TEST_CASE("atomics: compare-and-swap claims (one winner per slot) and returned old values") {
  const char *src = R"(
kernel claim<N: dim, S: dim>(owner: tensor<i32>[S], wins: tensor<i32>[S], big: tensor<i64>[S],
                             y: tensor<i32>[2, 64], old: tensor<i32>[2, 64]) {
  task t[i in 0 .. N] {
    let o = atomic_cas(owner[i % S], 0, i + 1);
    atomic_add(wins[i % S], select(o == 0, 1, 0));
    atomic_cas(big[i % S], 0, cast<i64>(i) * 4294967296 + 7);
  }
  task u[j in 0 .. 1] {
    store(old[0, 0 .. +64], atomic_cas(y[0, 0 .. +64], 5, arange<i32>[64]));
    store(old[1, 0 .. +64], atomic_cas(y[1, 0 .. +64], arange<i32>[64] % 2, 9));
  }
}
)";
  constexpr int64_t N = 300, S = 7;
  std::vector<int32_t> owner(S, 0), wins(S, 0), y(2 * 64), old(2 * 64, -1);
  std::vector<int64_t> big(S, 0);
  for (int64_t k = 0; k < 64; ++k) {
    y[k] = k % 3 == 0 ? 5 : 6;
    y[64 + k] = int32_t(k % 4);
  }
  std::vector<int32_t> y0 = y;
  std::string err = compile_and_run(src, "atomics_cas", {{"N", N}, {"S", S}},
                                    {{"owner", owner.data(), ETL_I32, {S}},
                                     {"wins", wins.data(), ETL_I32, {S}},
                                     {"big", big.data(), ETL_I64, {S}},
                                     {"y", y.data(), ETL_I32, {2, 64}},
                                     {"old", old.data(), ETL_I32, {2, 64}}});
  REQUIRE_MESSAGE(err.empty(), err);
  for (int64_t s = 0; s < S; ++s) {
    INFO("slot " << s);
    CHECK(wins[s] == 1);
    CHECK(owner[s] >= 1);
    CHECK((owner[s] - 1) % S == s); // one of the tasks i with i % S == s
    int64_t hi = big[s] >> 32;
    CHECK((big[s] & 0xffffffff) == 7);
    CHECK(hi % S == s);
  }
  for (int64_t k = 0; k < 64; ++k) {
    INFO("k=" << k);
    CHECK(old[k] == y0[k]);
    CHECK(y[k] == (y0[k] == 5 ? int32_t(k) : y0[k]));
    CHECK(old[64 + k] == y0[64 + k]);
    CHECK(y[64 + k] == (y0[64 + k] == k % 2 ? 9 : y0[64 + k]));
  }
}

TEST_CASE("atomics: f16 and bf16 add, max and min, and single elements, match C") {
  const char *src = R"(
const T = 32;
kernel half<N: dim, B: dim>(bin: tensor<i32>[N], h: tensor<f16>[B], g: tensor<bf16>[B],
                            hm: tensor<f16>[B], gm: tensor<bf16>[B], first: tensor<f16>[N],
                            one: tensor<f16>[1]) {
  task t[i in 0 .. cdiv(N, T)] {
    let b = load(bin[i * T .. +T], pad = -1);
    let v = cast<f16>(b + 1);
    atomic_add(h[b], v);
    atomic_add(g[b], cast<bf16>(b) - 1.0);
    atomic_max(hm[b], v * cast<f16>(i));
    atomic_min(gm[b], cast<bf16>(b) - cast<bf16>(i));
    store(first[i * T .. +T], atomic_add(one[0], 1.0) + cast<f16>(arange<i32>[T]) * 0.0);
  }
}
)";
  constexpr int64_t N = 256, B = 5;
  std::vector<int32_t> bin(N);
  std::vector<uint16_t> h(B, half_bits(0.0f)), g(B, bf16_bits(0.0f)), hm(B, half_bits(-1.0f)),
      gm(B, bf16_bits(100.0f)), first(N, 0), one(1, half_bits(0.0f));
  for (int64_t k = 0; k < N; ++k)
    bin[k] = int32_t((k * 3) % B);
  std::string err = compile_and_run(src, "atomics_half", {{"N", N}, {"B", B}},
                                    {{"bin", bin.data(), ETL_I32, {N}},
                                     {"h", h.data(), ETL_F16, {B}},
                                     {"g", g.data(), ETL_BF16, {B}},
                                     {"hm", hm.data(), ETL_F16, {B}},
                                     {"gm", gm.data(), ETL_BF16, {B}},
                                     {"first", first.data(), ETL_F16, {N}},
                                     {"one", one.data(), ETL_F16, {1}}});
  REQUIRE_MESSAGE(err.empty(), err);
  std::vector<float> rh(B, 0), rg(B, 0), rhm(B, -1), rgm(B, 100);
  for (int64_t k = 0; k < N; ++k) {
    int32_t b = bin[k], i = int32_t(k / 32);
    rh[b] += float(b + 1);
    rg[b] += float(b) - 1.0f;
    rhm[b] = std::max(rhm[b], float((b + 1) * i));
    rgm[b] = std::min(rgm[b], float(b - i));
  }
  for (int64_t b = 0; b < B; ++b) {
    INFO("bin " << b);
    CHECK(half_value(h[b]) == rh[b]);
    CHECK(bf16_value(g[b]) == rg[b]);
    CHECK(half_value(hm[b]) == rhm[b]);
    CHECK(bf16_value(gm[b]) == rgm[b]);
  }
  // The rank-0 atomic runs once per task (thread 0); every element of the
  // task's tile holds its old value: 0 .. tasks-1, each once.
  CHECK(half_value(one[0]) == float(N / 32));
  std::vector<float> olds;
  for (int64_t i = 0; i < N / 32; ++i) {
    for (int64_t k = 1; k < 32; ++k)
      CHECK(first[i * 32 + k] == first[i * 32]);
    olds.push_back(half_value(first[i * 32]));
  }
  std::sort(olds.begin(), olds.end());
  for (size_t i = 0; i < olds.size(); ++i)
    CHECK(olds[i] == float(i));
}

TEST_CASE("atomics: an atomic racing with a plain load of another group is still caught") {
  // Compile-time: the race is certain; a masked store makes it a warning and
  // the sim's race check then finds it at run time.
  const char *src = R"(
kernel r<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N], z: tensor<f32>[N]) where N % 16 == 0 {
  task a[i in 0 .. N / 16] {
    atomic_add(y[i * 16 .. +16], load(x[i * 16 .. +16]));
  }
  task b[i in 0 .. N / 16] {
    store(z[i * 16 .. +16], load(y[i * 16 .. +16]));
  }
}
)";
  constexpr int64_t N = 64;
  std::vector<float> x(N, 1.0f), y(N, 0.0f), z(N, 0.0f);
  std::string err = compile_and_run(src, "atomics_race", {{"N", N}},
                                    {{"x", x.data(), ETL_F32, {N}},
                                     {"y", y.data(), ETL_F32, {N}},
                                     {"z", z.data(), ETL_F32, {N}}});
  CHECK(err.find("compile failed") != std::string::npos);
  CHECK(err.find("no chain of events orders") != std::string::npos);
}

TEST_CASE("atomics: the sim's race check still finds an atomic racing with a plain load") {
  // Through a gather the compiler can only warn (GroupMayRace); the run with
  // the race check fails whichever group touches y first.
  const char *src = R"(
kernel r<N: dim>(idx: tensor<i32>[N], y: tensor<f32>[N], z: tensor<f32>[N])
  where N % 16 == 0 {
  task a[i in 0 .. N / 16] {
    atomic_add(y[load(idx[i * 16 .. +16])], 1.0);
  }
  task b[i in 0 .. N / 16] {
    store(z[i * 16 .. +16], load(y[i * 16 .. +16]));
  }
}
)";
  constexpr int64_t N = 64;
  std::vector<int32_t> idx(N);
  for (int64_t k = 0; k < N; ++k)
    idx[k] = int32_t(k);
  std::vector<float> y(N, 0.0f), z(N, 0.0f);
  testing::RunOptions run;
  run.race_check = true;
  std::string err = compile_and_run(src, "atomics_race_run", {{"N", N}},
                                    {{"idx", idx.data(), ETL_I32, {N}},
                                     {"y", y.data(), ETL_F32, {N}},
                                     {"z", z.data(), ETL_F32, {N}}},
                                    run);
  CHECK(err.find("ETL_ERROR_RACE") != std::string::npos);
  CHECK(err.find("sim race check") != std::string::npos);
  CHECK(err.find("of 'y'") != std::string::npos);
}

} // namespace etl
