// The sim's wgmma model (runtime/src/sim_wgmma.h) on its own: descriptors
// decoded as PTX's canonical swizzled layouts (each element's address
// against the closed form the compiler's wgmma_staging_layout writes:
// row r of an 8-row group at r W, its 16-byte chunk XORed with the row's
// phase), one m64n8k16 against the product computed here for every thread
// of the warpgroup, results held back until the wait_group that covers
// them (chained wgmmas on one accumulator, wait_group 1 landing only the
// older group), and the errors: no fence, a bad shape.
#include "sim_wgmma.h"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

namespace {

uint64_t desc(uint64_t start, uint64_t lbo, uint64_t sbo, uint64_t w) {
  const uint64_t swz = w == 128 ? 1 : w == 64 ? 2 : 3;
  return (start >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | swz << 62;
}

/// The staging's closed form: element (r, c) of rows of W bytes, 8-row
/// groups `sbo` apart (W = 128: column blocks of 64 `lbo` apart).
uint64_t staged(uint64_t base, uint32_t r, uint32_t c, uint64_t w, uint64_t sbo, uint64_t lbo) {
  const uint32_t per = uint32_t(w / 2), phase = uint32_t((r % 8) * w / 128 % (w / 16));
  return base + (c / per) * lbo + (r / 8) * sbo + (r % 8) * w + (((c % per) / 8) ^ phase) * 16 +
         (c % 8) * 2;
}

uint16_t bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return uint16_t(x >> 16);
}

} // namespace

TEST_CASE("sim wgmma: descriptors name the swizzled staging, element by element") {
  for (uint64_t w : {128u, 64u, 32u}) {
    CAPTURE(w);
    // K-major: 64 rows, 16 k of one step at byte offset 32 j inside the row.
    for (uint32_t j = 0; j * 32 < w; ++j)
      for (uint32_t r = 0; r < 64; ++r)
        for (uint32_t k = 0; k < 16; ++k)
          CHECK(etl_wgmma_elem(desc(1024 + 32 * j, 16, 8 * w, w), 0, r, k) ==
                staged(1024, r, k + 16 * j, w, 8 * w, 0));
    // MN-major: 16 k rows of 256 columns (blocks of W / 2 columns, 16 rows
    // of W bytes each).
    for (uint32_t k = 0; k < 16; ++k)
      for (uint32_t n = 0; n < 256; ++n)
        CHECK(etl_wgmma_elem(desc(2048, 16 * w, 8 * w, w), 1, k, n) ==
              staged(2048, k, n, w, 8 * w, 16 * w));
  }
}

TEST_CASE("sim wgmma: one m64n8k16 per thread, visible only after the covering wait") {
  std::vector<unsigned char> smem(8192, 0);
  const uint64_t da = desc(0, 16, 256, 32), db = desc(4096, 16, 256, 32); // K-major, 32B rows
  float A[64][16], B[8][16];
  for (uint32_t m = 0; m < 64; ++m)
    for (uint32_t k = 0; k < 16; ++k) {
      A[m][k] = float(int((m * 7 + k * 3) % 9) - 4);
      uint16_t h = bf16(A[m][k]);
      std::memcpy(&smem[etl_wgmma_elem(da, 0, m, k)], &h, 2);
    }
  for (uint32_t n = 0; n < 8; ++n)
    for (uint32_t k = 0; k < 16; ++k) {
      B[n][k] = float(int((n * 5 + k) % 7) - 3);
      uint16_t h = bf16(B[n][k]);
      std::memcpy(&smem[etl_wgmma_elem(db, 0, n, k)], &h, 2);
    }
  char msg[512];
  for (uint32_t tid = 0; tid < 128; ++tid) {
    CAPTURE(tid);
    etl_wgmma_thread t;
    std::memset(&t, 0, sizeof t);
    float acc[4] = {1, 2, 3, 4};
    const uint32_t shape = 8 | ETL_WGMMA_BF16;
    CHECK(etl_wgmma_issue(&t, smem.data(), smem.size(), tid, da, db, acc, shape, 7, msg,
                          sizeof msg) == ETL_WGMMA_NO_FENCE);
    t.fenced = 1;
    // Two chained wgmmas in group 0, one in group 1.
    for (int i = 0; i < 2; ++i)
      REQUIRE(etl_wgmma_issue(&t, smem.data(), smem.size(), tid, da, db, acc, shape, 7, msg,
                              sizeof msg) == ETL_WGMMA_OK);
    etl_wgmma_commit(&t);
    REQUIRE(etl_wgmma_issue(&t, smem.data(), smem.size(), tid, da, db, acc, shape, 8, msg,
                            sizeof msg) == ETL_WGMMA_OK);
    etl_wgmma_commit(&t);
    CHECK(acc[0] == 1.0f); // nothing landed
    REQUIRE(etl_wgmma_busy(&t, acc));
    etl_wgmma_wait(&t, 1); // group 0 lands, group 1 stays
    REQUIRE(etl_wgmma_busy(&t, acc));
    CHECK(etl_wgmma_busy(&t, acc)->line == 8);
    const uint32_t warp = tid / 32, lane = tid % 32;
    float two[4];
    for (uint32_t i = 0; i < 4; ++i) {
      const uint32_t row = 16 * warp + lane / 4 + 8 * (i >> 1), col = 2 * (lane % 4) + (i & 1);
      float d = 0;
      for (uint32_t k = 0; k < 16; ++k)
        d += A[row][k] * B[col][k];
      two[i] = float(i + 1) + 2 * d;
      CHECK(acc[i] == two[i]);
      two[i] += d;
    }
    etl_wgmma_wait(&t, 0);
    CHECK(!etl_wgmma_busy(&t, acc));
    for (uint32_t i = 0; i < 4; ++i)
      CHECK(acc[i] == two[i]);
    CHECK(!t.fenced); // a wait clears the fence
    t.fenced = 1;
    CHECK(etl_wgmma_issue(&t, smem.data(), smem.size(), tid, da, db, acc, 12 | ETL_WGMMA_BF16, 9,
                          msg, sizeof msg) == ETL_WGMMA_BAD_SHAPE);
    etl_wgmma_free(&t);
  }
}
