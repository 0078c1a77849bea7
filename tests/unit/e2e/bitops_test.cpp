// End-to-end tests of the bit operators (`& | ^ ~ << >>`) and `popc` on i32
// and i64 tiles on sim, against C references: negative numbers, shift
// amounts outside [0, bits) (taken modulo the width, grammar/REFERENCE.md
// "Bit operations"), the arithmetic `>>`, integer literals and scalars
// mixed with tiles, and the precedence of `&` over `==`. `popc` of i32 and
// i64 tiles takes the tile IR path (ETL_TILE_DEBUG says so) and counts the
// bits C's __builtin_popcount counts.
#include "compile_run.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace etl {
namespace {
using testing::compile_and_run;

constexpr int64_t N = 256;

int32_t shl32(int32_t x, int32_t s) { return int32_t(uint32_t(x) << (uint32_t(s) & 31u)); }
int32_t shr32(int32_t x, int32_t s) { return x >> (uint32_t(s) & 31u); } // arithmetic (gcc, clang)
int64_t shl64(int64_t x, int64_t s) { return int64_t(uint64_t(x) << (uint64_t(s) & 63u)); }
int64_t shr64(int64_t x, int64_t s) { return x >> (uint64_t(s) & 63u); }

} // namespace

TEST_CASE("bit operations: & | ^ ~ << >> popc on i32 tiles match C, shift amounts modulo 32") {
  const char *src = R"(
const TN = 64;
kernel bits<N: dim>(a: tensor<i32>[N], b: tensor<i32>[N], s: tensor<i32>[N],
                    y: tensor<i32>[11, N]) where N % 64 == 0 {
  task t[i in 0 .. N / TN] {
    let x = load(a[i * TN .. +TN]);
    let z = load(b[i * TN .. +TN]);
    let k = load(s[i * TN .. +TN]);
    store(y[0, i * TN .. +TN], x & z);
    store(y[1, i * TN .. +TN], x | z);
    store(y[2, i * TN .. +TN], x ^ z);
    store(y[3, i * TN .. +TN], ~x);
    store(y[4, i * TN .. +TN], x << k);
    store(y[5, i * TN .. +TN], x >> k);
    store(y[6, i * TN .. +TN], popc(x));
    store(y[7, i * TN .. +TN], select(x & 1 == 0, x >> 1, x << 2 | 1));
    store(y[8, i * TN .. +TN], (x ^ 255) & 240 + 3);
    store(y[9, i * TN .. +TN], x >> 40 ^ -1);
    store(y[10, i * TN .. +TN], (x & z | x ^ z) + (x << i));
  }
}
)";
  std::string text = src;
  std::vector<int32_t> a(N), b(N), s(N), y(11 * N, 7);
  const int32_t edge[] = {0, -1, 1, INT32_MIN, INT32_MAX, -2, 0x55555555, -123456789};
  const int32_t shifts[] = {0, 1, 31, 32, 33, 63, 64, 100, -1, -31, -32, -33, 5, 16};
  for (int64_t k = 0; k < N; ++k) {
    a[k] = k < 8 ? edge[k] : int32_t(uint32_t(k) * 2654435761u);
    b[k] = int32_t(uint32_t(k) * 40503u) - 70000;
    s[k] = shifts[k % 14];
  }
  std::string err = compile_and_run(text, "bitops_i32", {{"N", N}},
                                    {{"a", a.data(), ETL_I32, {N}},
                                     {"b", b.data(), ETL_I32, {N}},
                                     {"s", s.data(), ETL_I32, {N}},
                                     {"y", y.data(), ETL_I32, {11, N}}});
  REQUIRE_MESSAGE(err.empty(), err);
  for (int64_t k = 0; k < N; ++k) {
    int32_t x = a[k], z = b[k], i = int32_t(k / 64);
    INFO("k=" << k << " x=" << x << " z=" << z << " s=" << s[k]);
    CHECK(y[0 * N + k] == (x & z));
    CHECK(y[1 * N + k] == (x | z));
    CHECK(y[2 * N + k] == (x ^ z));
    CHECK(y[3 * N + k] == ~x);
    CHECK(y[4 * N + k] == shl32(x, s[k]));
    CHECK(y[5 * N + k] == shr32(x, s[k]));
    CHECK(y[6 * N + k] == __builtin_popcount(uint32_t(x)));
    CHECK(y[7 * N + k] == ((x & 1) == 0 ? x >> 1 : (shl32(x, 2) | 1)));
    CHECK(y[8 * N + k] == ((x ^ 255) & 243));
    CHECK(y[9 * N + k] == (shr32(x, 40) ^ -1));
    CHECK(y[10 * N + k] == int32_t(uint32_t((x & z) | (x ^ z)) + uint32_t(shl32(x, i))));
  }
}

TEST_CASE("bit operations: i64 tiles, shift amounts modulo 64, popc gives i32") {
  const char *src = R"(
const TN = 32;
kernel bits64<N: dim>(a: tensor<i64>[N], s: tensor<i64>[N], y: tensor<i64>[5, N],
                      c: tensor<i32>[N]) where N % 32 == 0 {
  task t[i in 0 .. N / TN] {
    let x = load(a[i * TN .. +TN]);
    let k = load(s[i * TN .. +TN]);
    store(y[0, i * TN .. +TN], x << k);
    store(y[1, i * TN .. +TN], x >> k);
    store(y[2, i * TN .. +TN], ~x & (x | 1) ^ k);
    store(y[3, i * TN .. +TN], x >> 63);
    store(y[4, i * TN .. +TN], 1 << k);
    store(c[i * TN .. +TN], popc(x) + popc(cast<i32>(k)));
  }
}
)";
  std::vector<int64_t> a(N), s(N), y(5 * N, 7);
  std::vector<int32_t> c(N, 7);
  const int64_t edge[] = {0, -1, 1, INT64_MIN, INT64_MAX, -2, 0x5555555555555555, -1234567890123};
  const int64_t shifts[] = {0, 1, 31, 32, 33, 63, 64, 65, 127, -1, -63, -64, -65, 40};
  for (int64_t k = 0; k < N; ++k) {
    a[k] = k < 8 ? edge[k] : int64_t(uint64_t(k) * 0x9E3779B97F4A7C15ull);
    s[k] = shifts[k % 14];
  }
  std::string err = compile_and_run(src, "bitops_i64", {{"N", N}},
                                    {{"a", a.data(), ETL_I64, {N}},
                                     {"s", s.data(), ETL_I64, {N}},
                                     {"y", y.data(), ETL_I64, {5, N}},
                                     {"c", c.data(), ETL_I32, {N}}});
  REQUIRE_MESSAGE(err.empty(), err);
  for (int64_t k = 0; k < N; ++k) {
    int64_t x = a[k], sk = s[k];
    INFO("k=" << k << " x=" << x << " s=" << sk);
    CHECK(y[0 * N + k] == shl64(x, sk));
    CHECK(y[1 * N + k] == shr64(x, sk));
    CHECK(y[2 * N + k] == ((~x & (x | 1)) ^ sk));
    CHECK(y[3 * N + k] == (x < 0 ? -1 : 0));
    CHECK(y[4 * N + k] == shl64(1, sk));
    CHECK(c[k] == __builtin_popcountll(uint64_t(x)) + __builtin_popcount(uint32_t(int32_t(sk))));
  }
}

TEST_CASE("bit operations: popc of i32 and i64 tiles takes the tile IR path, C's counts") {
  const std::string src = R"(
const TN = 64;
kernel pc<N: dim>(a: tensor<i32>[N], b: tensor<i64>[N], y: tensor<i32>[3, N])
    where N % 64 == 0 {
  task t[i in 0 .. N / TN] {
    let x = load(a[i * TN .. +TN]);
    let z = load(b[i * TN .. +TN]);
    store(y[0, i * TN .. +TN], popc(x));
    store(y[1, i * TN .. +TN], popc(z));
    store(y[2, i * TN .. +TN], popc(x ^ cast<i32>(z)) + 1);
  }
}
)";
  CompileOptions o;
  o.targets = {"sim"};
  o.emit = "llvm";
  o.threads_per_cta = 32;
  std::string out, err, lines;
  REQUIRE(testing::compile_text_tile_debug(src, o, "lowering ", out, err, lines) == 0);
  CHECK(lines == "lowering t: tile IR\n");
  std::vector<int32_t> a(N);
  std::vector<int64_t> b(N);
  const int64_t edge[] = {0, -1, 1, INT64_MIN, INT64_MAX, -2, 0x5555555555555555, -128};
  for (int64_t k = 0; k < N; ++k) {
    b[k] = k < 8 ? edge[k] : int64_t(uint64_t(k) * 0x9E3779B97F4A7C15ull);
    a[k] = int32_t(b[k] >> (k % 3 == 0 ? 32 : 0));
  }
  for (unsigned threads : {32u, 128u}) {
    CAPTURE(threads);
    std::vector<int32_t> y(3 * N, 99);
    testing::RunOptions ro;
    ro.threads_per_cta = threads;
    std::string run = compile_and_run(src, "bitops_popc_" + std::to_string(threads), {{"N", N}},
                                      {{"a", a.data(), ETL_I32, {N}},
                                       {"b", b.data(), ETL_I64, {N}},
                                       {"y", y.data(), ETL_I32, {3, N}}},
                                      ro);
    REQUIRE_MESSAGE(run.empty(), run);
    int bad = 0;
    for (int64_t k = 0; k < N; ++k) {
      bad += y[0 * N + k] != __builtin_popcount(uint32_t(a[k]));
      bad += y[1 * N + k] != __builtin_popcountll(uint64_t(b[k]));
      bad += y[2 * N + k] != __builtin_popcount(uint32_t(a[k]) ^ uint32_t(b[k])) + 1;
    }
    CHECK(bad == 0);
  }
}

} // namespace etl
