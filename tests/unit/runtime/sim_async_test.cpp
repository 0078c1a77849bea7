// The simulator's cp.async queues (runtime/src/sim_async.c) on their own:
// a copy writes nothing but poison until a wait_group covers its group;
// wait_group N lands all but the newest N committed groups, oldest first,
// never the open group; the source is read at issue; the destination words
// belong to the issuing thread until the copy lands, so reads (and a second
// copy there) are found; a bad destination is refused without a change.
#include "sim_async.h"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

namespace {

struct Smem {
  alignas(16) unsigned char bytes[256];
  etl_async_smem s;
  Smem() {
    std::memset(bytes, 0, sizeof bytes);
    std::memset(&s, 0, sizeof s);
    s.smem = bytes;
    s.bytes = sizeof bytes;
  }
  ~Smem() { etl_async_smem_free(&s); }
};

bool all(const unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != v)
      return false;
  return true;
}

} // namespace

TEST_CASE("sim cp.async: data lands only at the wait_group that covers its group") {
  Smem m;
  etl_async_queue q;
  std::memset(&q, 0, sizeof q);
  unsigned char src[48];
  for (int i = 0; i < 48; ++i)
    src[i] = (unsigned char)(i + 1);
  uint32_t other = 99;
  // group 0: 16 bytes to offset 0; group 1: 16 to 16; open: 8 to 32.
  REQUIRE(etl_async_issue(&m.s, &q, 5, m.bytes, src, 16, &other) == ETL_ASYNC_OK);
  etl_async_commit(&q);
  REQUIRE(etl_async_issue(&m.s, &q, 5, m.bytes + 16, src + 16, 16, &other) == ETL_ASYNC_OK);
  etl_async_commit(&q);
  REQUIRE(etl_async_issue(&m.s, &q, 5, m.bytes + 32, src + 32, 8, &other) == ETL_ASYNC_OK);
  src[0] = 0; // the source was read at issue
  CHECK(m.s.pending == 3);
  CHECK(all(m.bytes, 40, 0xFF)); // poisoned until landed
  uint64_t at = 0;
  CHECK(etl_async_owner(&m.s, 20, 4, &at) == 6); // tid 5
  CHECK(at == 20);
  CHECK(etl_async_owner(&m.s, 40, 100, &at) == 0);
  CHECK(etl_async_owner(&m.s, 36, 8, &at) == 6);
  CHECK(at == 36);

  CHECK(etl_async_wait(&m.s, &q, 2) == 0); // both committed groups may stay in flight
  CHECK(etl_async_wait(&m.s, &q, 1) == 1); // group 0 only
  CHECK(m.bytes[0] == 1);
  CHECK(m.bytes[15] == 16);
  CHECK(etl_async_owner(&m.s, 0, 16, &at) == 0);
  CHECK(all(m.bytes + 16, 16, 0xFF));
  CHECK(etl_async_wait(&m.s, &q, 0) == 1); // group 1; the open group never lands by a wait
  CHECK(m.bytes[16] == 17);
  CHECK(all(m.bytes + 32, 8, 0xFF));
  CHECK(q.n == 1);
  etl_async_commit(&q);
  CHECK(etl_async_wait(&m.s, &q, 0) == 1);
  CHECK(m.bytes[32] == 33);
  CHECK(m.bytes[39] == 40);
  CHECK(q.n == 0);
  CHECK(m.s.pending == 0);
  CHECK(etl_async_owner(&m.s, 0, 256, &at) == 0);
  etl_async_queue_free(&m.s, &q);
}

TEST_CASE("sim cp.async: a second copy to bytes in flight, and bad destinations, are refused") {
  Smem m;
  etl_async_queue q, r;
  std::memset(&q, 0, sizeof q);
  std::memset(&r, 0, sizeof r);
  unsigned char src[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  uint32_t other = 0;
  REQUIRE(etl_async_issue(&m.s, &q, 3, m.bytes + 64, src, 16, &other) == ETL_ASYNC_OK);
  CHECK(etl_async_issue(&m.s, &r, 7, m.bytes + 72, src, 8, &other) == ETL_ASYNC_OVERLAP);
  CHECK(other == 3);
  CHECK(etl_async_issue(&m.s, &r, 7, m.bytes + 4, src, 16, &other) == ETL_ASYNC_MISALIGNED);
  CHECK(etl_async_issue(&m.s, &r, 7, m.bytes + 4, src, 12, &other) == ETL_ASYNC_MISALIGNED);
  CHECK(etl_async_issue(&m.s, &r, 7, m.bytes + 256, src, 4, &other) == ETL_ASYNC_OUTSIDE);
  CHECK(etl_async_issue(&m.s, &r, 7, m.bytes + 248, src, 16, &other) == ETL_ASYNC_OUTSIDE);
  CHECK(r.n == 0);
  CHECK(m.s.pending == 1);
  CHECK(m.bytes[4] == 0); // nothing written by a refused copy
  // Forgetting a queue (a stopped CTA) releases its words.
  etl_async_queue_free(&m.s, &q);
  uint64_t at;
  CHECK(m.s.pending == 0);
  CHECK(etl_async_owner(&m.s, 64, 16, &at) == 0);
  etl_async_queue_free(&m.s, &r);
}

TEST_CASE("sim cp.async: many copies in many groups land in issue order") {
  Smem m;
  etl_async_queue q;
  std::memset(&q, 0, sizeof q);
  std::vector<uint32_t> src(64);
  for (uint32_t i = 0; i < 64; ++i) {
    src[i] = 1000 + i;
    REQUIRE(etl_async_issue(&m.s, &q, 0, m.bytes + 4 * i, &src[i], 4, nullptr) == ETL_ASYNC_OK);
    if (i % 8 == 7)
      etl_async_commit(&q); // 8 groups of 8 copies (the ring grows past 16)
    if (i == 40)
      CHECK(etl_async_wait(&m.s, &q, 3) == 16); // groups 0, 1 of the 5 committed
  }
  CHECK(etl_async_wait(&m.s, &q, 0) == 48);
  for (uint32_t i = 0; i < 64; ++i) {
    uint32_t v;
    std::memcpy(&v, m.bytes + 4 * i, 4);
    CHECK(v == 1000 + i);
  }
  etl_async_queue_free(&m.s, &q);
}
