/*===- src/sim_tma.c - mbarriers and TMA copies of the simulator -----------===
 *
 * The per-CTA mbarrier objects and the TMA copies queued on them
 * (sim_tma.h): init, queue, the phase's completion (landing), inval.
 *===----------------------------------------------------------------------===*/
#include "sim_tma.h"

#include <stdlib.h>
#include <string.h>

static void mark(etl_async_smem *sm, uint32_t off, uint32_t bytes, uint16_t who) {
  for (uint32_t w = off / 4; w < (off + bytes + 3) / 4; ++w)
    sm->owner[w] = who;
}

etl_mbar *etl_mbar_find(etl_mbar_set *s, uint32_t off) {
  for (uint32_t i = 0; i < s->n; ++i)
    if (s->b[i].off == off)
      return &s->b[i];
  return NULL;
}

etl_mbar *etl_mbar_init(etl_mbar_set *s, uint32_t off, uint32_t count, int *busy) {
  etl_mbar *b = etl_mbar_find(s, off);
  *busy = b && b->n_copies;
  if (*busy)
    return NULL;
  if (!b) {
    if (s->n == s->cap) {
      uint32_t cap = s->cap ? 2 * s->cap : 8;
      etl_mbar *nb = realloc(s->b, cap * sizeof *nb);
      if (!nb)
        return NULL;
      s->b = nb;
      s->cap = cap;
    }
    b = &s->b[s->n++];
    memset(b, 0, sizeof *b);
  }
  etl_tma_copy *keep = b->copies;
  uint32_t cap = b->cap;
  memset(b, 0, sizeof *b);
  b->copies = keep;
  b->cap = cap;
  b->off = off;
  b->count = b->pending = count;
  return b;
}

int etl_mbar_queue(etl_async_smem *sm, etl_mbar *b, uint32_t off, uint32_t bytes,
                   unsigned char *data) {
  if (!sm->owner && !(sm->owner = calloc(sm->bytes / 4 + 1, sizeof(uint16_t))))
    return -1;
  if (b->n_copies == b->cap) {
    uint32_t cap = b->cap ? 2 * b->cap : 4;
    etl_tma_copy *nc = realloc(b->copies, cap * sizeof *nc);
    if (!nc)
      return -1;
    b->copies = nc;
    b->cap = cap;
  }
  b->copies[b->n_copies++] = (etl_tma_copy){off, bytes, data};
  b->queued += bytes;
  memset(sm->smem + off, 0xFF, bytes);
  mark(sm, off, bytes, ETL_ASYNC_TMA_OWNER);
  sm->pending++;
  return 0;
}

int etl_mbar_complete(etl_async_smem *sm, etl_mbar *b) {
  if (b->pending || b->queued != b->tx)
    return 0;
  for (uint32_t i = 0; i < b->n_copies; ++i) {
    etl_tma_copy *c = &b->copies[i];
    memcpy(sm->smem + c->off, c->data, c->bytes);
    mark(sm, c->off, c->bytes, 0);
    free(c->data);
    sm->pending--;
  }
  b->n_copies = 0;
  b->tx = b->queued = 0;
  b->phase++;
  b->pending = b->count;
  return 1;
}

int etl_mbar_inval(etl_mbar_set *s, etl_mbar *b) {
  if (b->n_copies)
    return -1;
  free(b->copies);
  *b = s->b[--s->n];
  return 0;
}

etl_mbar *etl_mbar_owner(etl_mbar_set *s, uint64_t off) {
  for (uint32_t i = 0; i < s->n; ++i)
    for (uint32_t k = 0; k < s->b[i].n_copies; ++k) {
      const etl_tma_copy *c = &s->b[i].copies[k];
      if (off >= c->off && off < (uint64_t)c->off + c->bytes)
        return &s->b[i];
    }
  return NULL;
}

void etl_mbar_set_free(etl_async_smem *sm, etl_mbar_set *s) {
  for (uint32_t i = 0; i < s->n; ++i) {
    for (uint32_t k = 0; k < s->b[i].n_copies; ++k) {
      etl_tma_copy *c = &s->b[i].copies[k];
      if (sm->owner)
        mark(sm, c->off, c->bytes, 0);
      sm->pending--;
      free(c->data);
    }
    free(s->b[i].copies);
  }
  free(s->b);
  memset(s, 0, sizeof *s);
}
