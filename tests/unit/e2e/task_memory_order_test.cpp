// Program order for global memory inside one task (sema/hazards.h): a task
// that loads back what it stored, in another element-to-thread order, or
// overwrites what it loaded, must see its own accesses in program order. On
// sim the fibers of a CTA run from barrier to barrier one after the other,
// so a missing barrier shows as stale data for the elements another thread
// stores (these tests fail without the barriers the pass places; checked by
// disabling the lowering's `barrier_before`).
#include "compile_run.h"

#include <doctest/doctest.h>

#include <vector>

namespace etl {
using testing::compile_and_run;

TEST_CASE("task memory order: a task loads back its own stores in reversed order (RAW)") {
  // The reproducer of the trust issue, item 0.
  const char *src = R"(
const TB = 256;
kernel reverse_blocks<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N], z: tensor<f32>[N])
  where N % TB == 0
{
  task t[i in 0 .. N / TB] {
    store(y[i * TB .. +TB], load(x[i * TB .. +TB]) * 2.0);
    let rev = (TB - 1) - arange<i32>[TB] + i * TB;
    store(z[i * TB .. +TB], load(y[rev]));
  }
}
)";
  const int64_t N = 1024, TB = 256;
  std::vector<float> x(N), y(N, -1), z(N, -1);
  for (int64_t k = 0; k < N; ++k)
    x[k] = float(k);
  std::string err = compile_and_run(src, "mo_raw", {{"N", N}},
                                    {{"x", x.data(), ETL_F32, {N}},
                                     {"y", y.data(), ETL_F32, {N}},
                                     {"z", z.data(), ETL_F32, {N}}});
  REQUIRE_MESSAGE(err.empty(), err);
  int wrong = 0;
  for (int64_t k = 0; k < N; ++k) {
    int64_t blk = k / TB, r = blk * TB + (TB - 1 - k % TB);
    CHECK(y[k] == 2.0f * x[k]);
    wrong += z[k] != 2.0f * x[r];
  }
  CHECK(wrong == 0);
}

TEST_CASE("task memory order: in-place reversal (WAR) repeated in a loop (loop-carried RAW)") {
  // Each iteration reads the block reversed and writes it back in order plus
  // one: the store must wait for every thread's load (WAR), and the next
  // iteration's load for every thread's store (carried over the loop).
  const char *src = R"(
const TB = 128;
kernel flip<N: dim>(y: tensor<f32>[N]) where N % TB == 0 {
  task t[i in 0 .. N / TB] {
    let rev = (TB - 1) - arange<i32>[TB] + i * TB;
    for r in 0 .. 3 {
      let v = load(y[rev]);
      store(y[i * TB .. +TB], v + 1.0);
    }
  }
}
)";
  const int64_t N = 256, TB = 128;
  std::vector<float> y(N), want(N);
  for (int64_t k = 0; k < N; ++k)
    y[k] = float(k);
  want = y;
  for (int r = 0; r < 3; ++r) {
    std::vector<float> next(N);
    for (int64_t k = 0; k < N; ++k)
      next[k] = want[k / TB * TB + (TB - 1 - k % TB)] + 1.0f;
    want = next;
  }
  std::string err = compile_and_run(src, "mo_war", {{"N", N}}, {{"y", y.data(), ETL_F32, {N}}});
  REQUIRE_MESSAGE(err.empty(), err);
  int wrong = 0;
  for (int64_t k = 0; k < N; ++k)
    wrong += y[k] != want[k];
  CHECK(wrong == 0);
}

TEST_CASE("task memory order: rank-0 accesses (thread 0 stores, every thread loads)") {
  // Every thread reads acc[i], then thread 0 overwrites it (WAR: sim runs
  // thread 0 first, so without the barrier the others read the new value).
  // Thread 0 then stores the block's total and every thread reads it back
  // (as a tile operand and as an element read in an index expression); sim
  // cannot show that RAW order (thread 0 always runs first there), the GPU
  // can.
  const char *src = R"(
const TB = 64;
kernel norm<N: dim>(x: tensor<f32>[N], tot: tensor<f32>[N], cnt: tensor<i32>[N],
                    y: tensor<f32>[N], w: tensor<f32>[N], acc: tensor<f32>[N],
                    old: tensor<f32>[N]) where N % TB == 0 {
  task t[i in 0 .. N / TB] {
    let a = load(x[i * TB .. +TB]);
    let p = load(acc[i]);
    store(acc[i], load(x[i * TB]));
    store(old[i * TB .. +TB], a * 0.0 + p);
    store(tot[i], sum(a, axis = 0));
    store(cnt[i], sum(full<i32>[2](1), axis = 0) + cast<i32>(i) - 1);
    store(y[i * TB .. +TB], a / load(tot[i]));
    store(w[i * TB .. +TB], select(arange<i32>[TB] < cnt[i], 1.0, 0.0));
  }
}
)";
  const int64_t N = 128, TB = 64;
  std::vector<float> x(N), tot(N, 0), y(N, -1), w(N, -1), acc(N, 5), old(N, -1);
  std::vector<int32_t> cnt(N, 0);
  for (int64_t k = 0; k < N; ++k)
    x[k] = float(k % 7 + 1);
  std::string err = compile_and_run(src, "mo_rank0", {{"N", N}},
                                    {{"x", x.data(), ETL_F32, {N}},
                                     {"tot", tot.data(), ETL_F32, {N}},
                                     {"cnt", cnt.data(), ETL_I32, {N}},
                                     {"y", y.data(), ETL_F32, {N}},
                                     {"w", w.data(), ETL_F32, {N}},
                                     {"acc", acc.data(), ETL_F32, {N}},
                                     {"old", old.data(), ETL_F32, {N}}});
  REQUIRE_MESSAGE(err.empty(), err);
  int wrong = 0;
  for (int64_t b = 0; b < N / TB; ++b) {
    float s = 0;
    for (int64_t k = 0; k < TB; ++k)
      s += x[b * TB + k];
    for (int64_t k = 0; k < TB; ++k) {
      wrong += y[b * TB + k] != x[b * TB + k] / s;
      wrong += w[b * TB + k] != (k < b + 1 ? 1.0f : 0.0f);
      wrong += old[b * TB + k] != 5.0f;
    }
    CHECK(acc[b] == x[b * TB]);
  }
  CHECK(wrong == 0);
}

} // namespace etl
