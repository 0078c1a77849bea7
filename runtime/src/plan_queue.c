/*===- src/plan_queue.c - The static queues of a per-shape plan ------------===
 *
 * The static groups' tasks dealt round-robin over the CTAs, continuing
 * across groups: groups in the metadata's topological order, each group's
 * tasks in linear order (row-major over its domain, last variable fastest).
 * A layered block (etl_abi.h: a cycle of groups along which the first
 * domain variable never decreases, its groups consecutive in the order) is
 * dealt layer by layer instead: for each value l of the first variable, in
 * increasing order, each static group of the block in order, its tasks
 * whose first variable is l (a contiguous run of its linear order). Either
 * way a task is dealt after every static task it waits on, so with every
 * CTA resident no CTA waits on work queued behind it.
 *===----------------------------------------------------------------------===*/
#include <stdlib.h>

#include "internal.h"

typedef struct dealer {
  etl_plan *p;
  uint32_t *fill; /* per CTA: entries dealt so far */
  uint64_t next;  /* entries dealt so far, all CTAs */
} dealer;

/* Tasks [from, to) of group g, each to the next CTA in turn. */
static void deal(dealer *d, uint32_t g, uint64_t from, uint64_t to) {
  for (uint64_t lin = from; lin < to; ++lin, ++d->next) {
    uint32_t c = (uint32_t)(d->next % d->p->num_ctas);
    uint64_t at = (uint64_t)d->p->queue_offs[c] + d->fill[c]++;
    d->p->queue[2 * at] = g;
    d->p->queue[2 * at + 1] = (uint32_t)lin;
  }
}

static int dealt_static(const etl_meta *m, const etl_plan *p, uint32_t g) {
  return m->groups[g].schedule != ETL_SCHEDULE_DYNAMIC && p->group_tasks[g] > 0;
}

/* The layered block of order positions [first, end). */
static void deal_block(const etl_meta *m, dealer *d, uint32_t first, uint32_t end) {
  const etl_plan *p = d->p;
  int any = 0;
  int64_t l = 0;
  for (uint32_t i = first; i < end; ++i) {
    uint32_t g = m->order[i];
    int64_t lo = p->group_lo[(size_t)g * ETL_MAX_RANK];
    if (dealt_static(m, p, g) && (!any || lo < l))
      l = lo;
    any |= dealt_static(m, p, g);
  }
  while (any) {
    any = 0;
    int64_t next = 0;
    for (uint32_t i = first; i < end; ++i) {
      uint32_t g = m->order[i];
      if (!dealt_static(m, p, g))
        continue;
      int64_t lo = p->group_lo[(size_t)g * ETL_MAX_RANK], hi = p->group_hi[(size_t)g * ETL_MAX_RANK];
      if (l >= lo && l < hi) {
        uint64_t inner = p->group_tasks[g] / (uint64_t)(hi - lo);
        deal(d, g, (uint64_t)(l - lo) * inner, (uint64_t)(l - lo + 1) * inner);
      }
      /* the group's next layer after l, if any */
      int64_t after = l < lo ? lo : l + 1;
      if (after < hi && (!any || after < next))
        next = after;
      any |= after < hi;
    }
    l = next;
  }
}

etlStatus etl_plan_deal_static(const etl_meta *m, etl_plan *p) {
  uint32_t num_ctas = p->num_ctas;
  uint64_t base = p->n_static / num_ctas, extra = p->n_static % num_ctas;
  p->queue_offs[0] = 0;
  for (uint32_t c = 0; c < num_ctas; ++c)
    p->queue_offs[c + 1] = p->queue_offs[c] + (uint32_t)(base + (c < extra ? 1 : 0));
  dealer d = {p, calloc(num_ctas, sizeof(uint32_t)), 0};
  if (!d.fill)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory building a launch plan");
  for (uint32_t oi = 0; oi < m->n_order;) {
    uint32_t g = m->order[oi], block = m->groups[g].layer_block, end = oi + 1;
    if (block == ETL_NO_LAYER_BLOCK) {
      if (dealt_static(m, p, g))
        deal(&d, g, 0, p->group_tasks[g]);
    } else {
      while (end < m->n_order && m->groups[m->order[end]].layer_block == block)
        ++end;
      deal_block(m, &d, oi, end);
    }
    oi = end;
  }
  free(d.fill);
  return ETL_SUCCESS;
}
