/*===- src/sim_async.c - cp.async of the simulator -------------------------===
 *
 * The per-thread queues of copies in flight and the per-CTA shadow of the
 * shared-memory words they will write (sim_async.h): issue (source read,
 * destination poisoned and owned), commit, wait_group (landing) and the
 * owner lookup sim.c runs before every shared-memory access.
 *===----------------------------------------------------------------------===*/
#include "sim_async.h"

#include <stdlib.h>
#include <string.h>

static void set_owner(etl_async_smem *s, uint32_t off, uint32_t bytes, uint16_t who) {
  for (uint32_t w = off / 4; w < (off + bytes) / 4; ++w)
    s->owner[w] = who;
}

int etl_async_issue(etl_async_smem *s, etl_async_queue *q, uint32_t tid, void *dst, const void *src,
                    uint32_t bytes, uint32_t *other) {
  if (bytes != 4 && bytes != 8 && bytes != 16)
    return ETL_ASYNC_MISALIGNED;
  uintptr_t a = (uintptr_t)dst, base = (uintptr_t)s->smem;
  if (a < base || a - base > s->bytes || s->bytes - (a - base) < bytes)
    return ETL_ASYNC_OUTSIDE;
  uint64_t off = a - base;
  if (off % bytes != 0)
    return ETL_ASYNC_MISALIGNED;
  if (!s->owner) {
    s->owner = calloc(s->bytes / 4 + 1, sizeof(uint16_t));
    if (!s->owner)
      return ETL_ASYNC_NO_MEMORY;
  }
  uint64_t at;
  uint32_t who = etl_async_owner(s, off, bytes, &at);
  if (who) {
    *other = who - 1;
    return ETL_ASYNC_OVERLAP;
  }
  if (q->n == q->cap) { /* grow the ring, oldest first again */
    uint32_t cap = q->cap ? 2 * q->cap : 16;
    etl_async_copy *nq = malloc((size_t)cap * sizeof *nq);
    if (!nq)
      return ETL_ASYNC_NO_MEMORY;
    for (uint32_t i = 0; i < q->n; ++i)
      nq[i] = q->q[(q->head + i) % q->cap];
    free(q->q);
    q->q = nq;
    q->cap = cap;
    q->head = 0;
  }
  etl_async_copy *c = &q->q[(q->head + q->n) % q->cap];
  c->off = (uint32_t)off;
  c->bytes = bytes;
  c->group = q->commits;
  memcpy(c->data, src, bytes);
  memset(dst, 0xFF, bytes);
  set_owner(s, c->off, bytes, (uint16_t)(tid + 1));
  q->n++;
  s->pending++;
  return ETL_ASYNC_OK;
}

void etl_async_commit(etl_async_queue *q) { q->commits++; }

uint32_t etl_async_wait(etl_async_smem *s, etl_async_queue *q, uint32_t pending) {
  if (pending >= q->commits)
    return 0;
  uint32_t limit = q->commits - pending, landed = 0; /* groups [0, limit) land */
  while (q->n > 0 && q->q[q->head].group < limit) {
    etl_async_copy *c = &q->q[q->head];
    memcpy(s->smem + c->off, c->data, c->bytes);
    set_owner(s, c->off, c->bytes, 0);
    q->head = (q->head + 1) % q->cap;
    q->n--;
    s->pending--;
    landed++;
  }
  return landed;
}

uint32_t etl_async_owner(const etl_async_smem *s, uint64_t off, uint64_t bytes, uint64_t *at) {
  if (s->pending == 0 || !s->owner || off >= s->bytes)
    return 0;
  uint64_t end = bytes > s->bytes - off ? s->bytes : off + bytes;
  for (uint64_t w = off / 4; w * 4 < end; ++w)
    if (s->owner[w]) {
      *at = w * 4;
      return s->owner[w];
    }
  return 0;
}

void etl_async_queue_free(etl_async_smem *s, etl_async_queue *q) {
  for (uint32_t i = 0; i < q->n; ++i) {
    const etl_async_copy *c = &q->q[(q->head + i) % q->cap];
    if (s->owner)
      set_owner(s, c->off, c->bytes, 0);
    s->pending--;
  }
  free(q->q);
  memset(q, 0, sizeof *q);
}

void etl_async_smem_free(etl_async_smem *s) {
  free(s->owner);
  s->owner = NULL;
  s->pending = 0;
}
