/*===- src/plan.c - Per-shape plan: events, wait counts, static queues -----===
 *
 * Everything etlRun needs that depends only on the dim values (and the CTA
 * count), computed on the host and cached per shape binding by api.c:
 *   - event layout: events back to back in one uint32 counter array, the
 *     slot value of event e being the element offset of its first element;
 *   - wait counts: each element starts at the number of notifications it
 *     receives from every task of every group (row-major over the domain,
 *     last variable fastest) over every notify edge (a star component
 *     covers the whole dimension). Counted per projection point of an edge
 *     (ETL_PLAN_FAST, "Fast counting" below), the same numbers as visiting
 *     every element (ETL_PLAN_ENUMERATE, the reference the tests compare
 *     against, and what reports the first error);
 *   - the static queue (plan_queue.c): groups in the metadata's topological
 *     order, tasks in linear order (a layered block's layer by layer), dealt
 *     round-robin over the CTAs continuing across groups; entries are
 *     (group, linear) uint32 pairs, per-CTA offsets count pairs. Only static
 *     groups are in it.
 *   - dynamic groups (schedule dynamic): the initial image of the state
 *     array of etl_abi.h: item ids dense in group order, each item's
 *     dependency counter (waited elements that receive notifications, per
 *     edge, a star covering its dimension), the items with none already in
 *     the queue (groups in topological order), remaining = capacity = the
 *     number of dynamic tasks.
 *===----------------------------------------------------------------------===*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* etl.h's etlDType repeats the codes of abi/etl_elems.def (an installed
 * header cannot include it): every code must be there, equal. */
#define ETL_ELEM_TYPE(K, CODE, SPELLING, BITS)                                                     \
  _Static_assert((int)ETL_##K == ETL_ELEM_##K, "etl.h's ETL_" #K " is not etl_elems.def's code");
#include "etl_elems.def"

/* Bits of one element in memory (etl_elems.def); 0: not a code. */
static unsigned elem_bits(uint32_t elem) {
  switch (elem) {
#define ETL_ELEM_TYPE(K, CODE, SPELLING, BITS)                                                     \
  case ETL_ELEM_##K:                                                                               \
    return BITS;
#include "etl_elems.def"
  default:
    return 0;
  }
}

size_t etl_elem_size(uint32_t elem) {
  unsigned bits = elem_bits(elem);
  if (bits == 0)
    return 4;
  return bits < 8 ? 1 : bits / 8; /* packed: the byte that holds two elements */
}

int etl_elem_valid(uint32_t elem) { return elem_bits(elem) != 0; }

int etl_elem_packed(uint32_t elem) { return elem_bits(elem) == 4; }

uint64_t etl_elems_bytes(uint32_t elem, uint64_t n) {
  return etl_elem_packed(elem) ? n / 2 + n % 2 : n * etl_elem_size(elem);
}

void etl_plan_free_host(etl_plan *p) {
  if (!p)
    return;
  free(p->dims);
  free(p->event_offset);
  free(p->event_elems);
  free(p->event_shape);
  free(p->wait_counts);
  free(p->group_lo);
  free(p->group_hi);
  free(p->group_tasks);
  free(p->group_prefix);
  free(p->queue);
  free(p->queue_offs);
  free(p->dyn);
  free(p->buffer_bytes);
  free(p->buffer_dptr);
  free(p->args_host);
  free(p);
}

/* Variables of prefix task `plin` of a group whose variable k's range reads
 * data: row-major over the variables before k; k and later at their lo. */
static void prefix_vars(const etl_plan *p, uint32_t g, uint32_t rank, uint32_t k, uint64_t plin,
                        int64_t *vars) {
  for (uint32_t j = k; j < rank; ++j)
    vars[j] = p->group_lo[(size_t)g * ETL_MAX_RANK + j];
  for (int j = (int)k - 1; j >= 0; --j) {
    int64_t lo = p->group_lo[(size_t)g * ETL_MAX_RANK + j];
    int64_t ext = p->group_hi[(size_t)g * ETL_MAX_RANK + j] - lo;
    vars[j] = lo + (int64_t)(plin % (uint64_t)ext);
    plin /= (uint64_t)ext;
  }
}

static void task_vars(const etl_plan *p, uint32_t g, uint32_t rank, uint64_t linear,
                      int64_t *vars) {
  for (int k = (int)rank - 1; k >= 0; --k) {
    int64_t lo = p->group_lo[(size_t)g * ETL_MAX_RANK + k];
    int64_t ext = p->group_hi[(size_t)g * ETL_MAX_RANK + k] - lo;
    vars[k] = lo + (int64_t)(linear % (uint64_t)ext);
    linear /= (uint64_t)ext;
  }
}

void etl_plan_task_name(const etl_meta *m, const etl_plan *p, uint32_t g, uint32_t linear,
                        char *buf, size_t n) {
  if (g >= m->n_groups || linear >= p->group_tasks[g]) {
    snprintf(buf, n, "<task %u of group %u>", linear, g);
    return;
  }
  const etl_group_meta *gm = &m->groups[g];
  int64_t vars[ETL_MAX_RANK];
  task_vars(p, g, gm->rank, linear, vars);
  size_t len = (size_t)snprintf(buf, n, "%s[", gm->name);
  for (uint32_t k = 0; k < gm->rank && len < n; ++k)
    len += (size_t)snprintf(buf + len, n - len, "%s%lld", k ? ", " : "", (long long)vars[k]);
  if (len < n)
    snprintf(buf + len, n - len, "]");
}

void etl_plan_counter_name(const etl_meta *m, const etl_plan *p, uint64_t offset, char *buf,
                           size_t n) {
  for (uint32_t e = 0; e < m->n_events; ++e) {
    if (offset < p->event_offset[e] || offset - p->event_offset[e] >= p->event_elems[e])
      continue;
    uint64_t rel = offset - p->event_offset[e];
    int64_t idx[ETL_MAX_RANK];
    const int64_t *shape = &p->event_shape[(size_t)e * ETL_MAX_RANK];
    for (int k = (int)m->events[e].rank - 1; k >= 0; --k) {
      idx[k] = (int64_t)(rel % (uint64_t)shape[k]);
      rel /= (uint64_t)shape[k];
    }
    size_t len = (size_t)snprintf(buf, n, "%s[", m->events[e].name);
    for (uint32_t k = 0; k < m->events[e].rank && len < n; ++k)
      len += (size_t)snprintf(buf + len, n - len, "%s%lld", k ? ", " : "", (long long)idx[k]);
    if (len < n)
      snprintf(buf + len, n - len, "]");
    return;
  }
  snprintf(buf, n, "<counter %llu>", (unsigned long long)offset);
}

/* Product of extents with overflow and cap checks. */
static int shape_elems(const int64_t *shape, uint32_t rank, uint64_t cap, uint64_t *out) {
  uint64_t n = 1;
  for (uint32_t k = 0; k < rank; ++k) {
    if (shape[k] < 0)
      return -1;
    if (__builtin_mul_overflow(n, (uint64_t)shape[k], &n) || n > cap)
      return -1;
  }
  *out = n;
  return 0;
}

/* Advances `idx` to the next element an edge covers: an odometer over its
 * star components (last fastest). Returns 0 after the last one. */
static int next_star_element(const etl_edge_meta *edge, const int64_t *shape, int64_t *idx) {
  for (int k = (int)edge->n - 1; k >= 0; --k) {
    if (edge->idx[k].star == ETL_INDEX_EXPR)
      continue;
    if (++idx[k] < shape[k])
      return 1;
    idx[k] = 0;
  }
  return 0;
}

/* What an edge of one task names, found by edge_resolve. */
enum { EDGE_NONE = 0, EDGE_BOX = 1, EDGE_WHOLE = 2 };

/* Evaluate and range-check the indices an edge of task `vars` names, in
 * component order: EDGE_BOX with idx set (a star component at 0, covering
 * its dimension), EDGE_NONE when a star covers an empty dimension (the
 * later components are not looked at) or, for a wait, when an index reads
 * data (the device checks it), EDGE_WHOLE for a notify whose index reads
 * data (one token on every element of the event). Returns a status
 * (message set) on an out-of-range index. */
static etlStatus edge_resolve(const etl_meta *m, const etl_plan *p, uint32_t g,
                              const etl_edge_meta *edge, const int64_t *vars, const char *kind,
                              uint64_t linear, int notify, int64_t *idx, int *what) {
  const etl_event_meta *ev = &m->events[edge->event];
  const int64_t *shape = &p->event_shape[(size_t)edge->event * ETL_MAX_RANK];
  char err[160];
  *what = EDGE_NONE;
  for (uint32_t k = 0; k < edge->n; ++k) {
    if (edge->idx[k].star == ETL_INDEX_DATA) { /* reads tensor data: the device checks it */
      if (!notify)
        return ETL_SUCCESS;
      /* A notify whose target is read from data: one token on every element
         of the event, which the task hands back once it knows its target
         (lower_kernel.cpp, emit_data_notify_release). */
      for (uint32_t d = 0; d < edge->n; ++d)
        if (edge->idx[d].star == ETL_INDEX_STAR)
          return etl_error(ETL_ERROR_INVALID_ARTIFACT,
                           "group '%s' %s event '%s' with `*` beside an index that reads data",
                           m->groups[g].name, kind, ev->name);
      *what = EDGE_WHOLE;
      return ETL_SUCCESS;
    }
    if (edge->idx[k].star == ETL_INDEX_STAR) {
      if (shape[k] == 0)
        return ETL_SUCCESS; /* no elements */
      idx[k] = 0;
      continue;
    }
    if (etl_expr_eval(&edge->idx[k].idx, p->dims, m->n_dims, vars, m->groups[g].rank, &idx[k], err,
                      sizeof err) != 0) {
      char task[256];
      etl_plan_task_name(m, p, g, (uint32_t)linear, task, sizeof task);
      return etl_error(ETL_ERROR_BINDING, "task %s: index %u of its %s of event '%s': %s", task, k,
                       kind, ev->name, err);
    }
    if (idx[k] < 0 || idx[k] >= shape[k]) {
      char task[256];
      etl_plan_task_name(m, p, g, (uint32_t)linear, task, sizeof task);
      return etl_error(ETL_ERROR_BINDING,
                       "group '%s': task %s %s event '%s' at index %lld along dimension %u, "
                       "outside [0, %lld)",
                       m->groups[g].name, task, kind, ev->name, (long long)idx[k], k,
                       (long long)shape[k]);
    }
  }
  *what = EDGE_BOX;
  return ETL_SUCCESS;
}

static etlStatus too_many(const etl_meta *m, uint32_t event) {
  return etl_error(ETL_ERROR_BINDING, "event '%s': more than 2^32-1 notifications",
                   m->events[event].name);
}

/* Enumeration (ETL_PLAN_ENUMERATE): visit every element an edge of task
 * `vars` names, adding 1 to its count when `counts` is set. */
static etlStatus edge_elements(const etl_meta *m, const etl_plan *p, uint32_t g,
                               const etl_edge_meta *edge, const int64_t *vars, const char *kind,
                               uint64_t linear, uint32_t *counts) {
  const int64_t *shape = &p->event_shape[(size_t)edge->event * ETL_MAX_RANK];
  int64_t idx[ETL_MAX_RANK];
  int what;
  etlStatus st = edge_resolve(m, p, g, edge, vars, kind, linear, counts != NULL, idx, &what);
  if (st || !counts || what == EDGE_NONE)
    return st;
  if (what == EDGE_WHOLE) {
    uint32_t *c = &counts[p->event_offset[edge->event]];
    for (uint64_t e = 0; e < p->event_elems[edge->event]; ++e) {
      if (c[e] == UINT32_MAX)
        return too_many(m, edge->event);
      c[e] += 1;
    }
    return ETL_SUCCESS;
  }
  for (;;) {
    uint64_t off = 0;
    for (uint32_t k = 0; k < edge->n; ++k)
      off = off * (uint64_t)shape[k] + (uint64_t)idx[k];
    uint32_t *c = &counts[p->event_offset[edge->event] + off];
    if (*c == UINT32_MAX)
      return too_many(m, edge->event);
    *c += 1;
    if (!next_star_element(edge, shape, idx))
      break;
  }
  return ETL_SUCCESS;
}

/* Enumeration: waited elements of `edge` for task `vars` whose wait count
 * is not zero (indices already range-checked). */
static uint32_t edge_pending(const etl_meta *m, const etl_plan *p, uint32_t g,
                             const etl_edge_meta *edge, const int64_t *vars) {
  const int64_t *shape = &p->event_shape[(size_t)edge->event * ETL_MAX_RANK];
  int64_t idx[ETL_MAX_RANK];
  int what;
  if (edge_resolve(m, p, g, edge, vars, "waits on", 0, 0, idx, &what) || what != EDGE_BOX)
    return 0; /* never in a dynamic group (etlc rejects it) */
  uint32_t n = 0;
  for (;;) {
    uint64_t off = 0;
    for (uint32_t k = 0; k < edge->n; ++k)
      off = off * (uint64_t)shape[k] + (uint64_t)idx[k];
    n += p->wait_counts[p->event_offset[edge->event] + off] != 0;
    if (!next_star_element(edge, shape, idx))
      break;
  }
  return n;
}

/*===-- Fast counting (ETL_PLAN_FAST) --------------------------------------===
 * The same results without visiting an edge's star elements per task. A
 * notify edge with star components adds 1 to every element of a box whose
 * non-star indices the task fixes; the tasks' hits are counted per point of
 * the projection onto the non-star dimensions (a scratch array no larger
 * than the event) and spread over the event in one pass afterwards. A data
 * notify (one token on every element) is counted per edge and spread the
 * same way. A dynamic group's dependency counter sums, per wait edge, the
 * elements of the box with a non-zero count: counted once per projection
 * point, then looked up per task. What is still per task: the variables
 * (an odometer) and the evaluation and range check of each non-star index.
 * Edges are walked one at a time (task order inside), so on any error the
 * enumeration reruns to report exactly the error it would have reported.
 *===----------------------------------------------------------------------===*/

/* Projection of an edge's event onto its non-star dimensions (row-major). */
typedef struct edge_proj {
  uint64_t stride[ETL_MAX_RANK]; /* 0 along a star dimension */
  uint64_t size;                 /* points of the projection */
  uint32_t stars;
} edge_proj;

static void proj_of(const etl_plan *p, const etl_edge_meta *edge, edge_proj *pr) {
  const int64_t *shape = &p->event_shape[(size_t)edge->event * ETL_MAX_RANK];
  pr->size = 1;
  pr->stars = 0;
  for (int k = (int)edge->n - 1; k >= 0; --k) {
    if (edge->idx[k].star == ETL_INDEX_STAR) {
      pr->stride[k] = 0;
      pr->stars += 1;
    } else {
      pr->stride[k] = pr->size;
      pr->size *= (uint64_t)shape[k];
    }
  }
}

/* Next element of a row-major walk over the whole event: `idx` and the
 * projection point `at` advance together. */
static void proj_step(const int64_t *shape, uint32_t n, const edge_proj *pr, int64_t *idx,
                      uint64_t *at) {
  for (int k = (int)n - 1; k >= 0; --k) {
    *at += pr->stride[k];
    if (++idx[k] < shape[k])
      return;
    *at -= pr->stride[k] * (uint64_t)shape[k];
    idx[k] = 0;
  }
}

/* Scratch of at least `n` zeroed words. */
static uint32_t *scratch_zeroed(uint32_t **buf, uint64_t *cap, uint64_t n) {
  if (n == 0)
    n = 1;
  if (n > *cap) {
    uint32_t *b = realloc(*buf, (size_t)n * sizeof(uint32_t));
    if (!b)
      return NULL;
    *buf = b;
    *cap = n;
  }
  memset(*buf, 0, (size_t)n * sizeof(uint32_t));
  return *buf;
}

/* Tasks a group's edges are evaluated for: expanders (the variables before
 * the data-dependent one) or every task; variables of the first at lo. */
static uint64_t edge_tasks(const etl_plan *p, uint32_t g, const etl_group_meta *gm, uint32_t *nvars,
                           int64_t *vars) {
  int dd = gm->data_var != ETL_NO_DATA_VAR;
  *nvars = dd ? gm->data_var : gm->rank;
  for (uint32_t k = 0; k < gm->rank; ++k)
    vars[k] = p->group_lo[(size_t)g * ETL_MAX_RANK + k];
  return dd ? p->group_prefix[g] : p->group_tasks[g];
}

/* The next task's variables (row-major over the first `nvars`). */
static void next_vars(const etl_plan *p, uint32_t g, uint32_t nvars, int64_t *vars) {
  for (int k = (int)nvars - 1; k >= 0; --k) {
    if (++vars[k] < p->group_hi[(size_t)g * ETL_MAX_RANK + k])
      return;
    vars[k] = p->group_lo[(size_t)g * ETL_MAX_RANK + k];
  }
}

/* Adds one notify edge of group g to the wait counts. */
static etlStatus notify_fast(const etl_meta *m, etl_plan *p, uint32_t g, const etl_edge_meta *edge,
                             uint32_t **scratch, uint64_t *cap) {
  const etl_group_meta *gm = &m->groups[g];
  const int64_t *shape = &p->event_shape[(size_t)edge->event * ETL_MAX_RANK];
  uint32_t *c = &p->wait_counts[p->event_offset[edge->event]];
  edge_proj pr;
  proj_of(p, edge, &pr);
  uint32_t *hit = NULL;
  if (pr.stars && !(hit = scratch_zeroed(scratch, cap, pr.size)))
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory building a launch plan");
  int64_t vars[ETL_MAX_RANK], idx[ETL_MAX_RANK];
  uint32_t nvars;
  uint64_t n = edge_tasks(p, g, gm, &nvars, vars);
  uint64_t per = gm->data_var != ETL_NO_DATA_VAR && n ? p->group_tasks[g] / n : 1;
  uint64_t whole = 0, hits = 0;
  for (uint64_t lin = 0; lin < n; ++lin, next_vars(p, g, nvars, vars)) {
    int what;
    etlStatus st = edge_resolve(m, p, g, edge, vars, "notifies", lin * per, 1, idx, &what);
    if (st)
      return st;
    if (what == EDGE_WHOLE) {
      whole += 1;
    } else if (what == EDGE_BOX) {
      uint64_t at = 0;
      for (uint32_t k = 0; k < edge->n; ++k)
        at += (uint64_t)idx[k] * pr.stride[k];
      if (hit) { /* at most one hit per task: fits */
        hit[at] += 1;
        hits += 1;
      } else if (c[at] == UINT32_MAX) {
        return too_many(m, edge->event);
      } else {
        c[at] += 1;
      }
    }
  }
  uint64_t elems = p->event_elems[edge->event];
  for (uint64_t e = 0; whole && e < elems; ++e) {
    if (c[e] > UINT32_MAX - whole)
      return too_many(m, edge->event);
    c[e] += (uint32_t)whole;
  }
  if (!hits)
    return ETL_SUCCESS;
  uint64_t at = 0;
  memset(idx, 0, sizeof idx);
  for (uint64_t e = 0; e < elems; ++e, proj_step(shape, edge->n, &pr, idx, &at)) {
    if (c[e] > UINT32_MAX - hit[at])
      return too_many(m, edge->event);
    c[e] += hit[at];
  }
  return ETL_SUCCESS;
}

/* Range checks of one wait edge of group g. */
static etlStatus wait_check(const etl_meta *m, const etl_plan *p, uint32_t g,
                            const etl_edge_meta *edge) {
  const etl_group_meta *gm = &m->groups[g];
  int64_t vars[ETL_MAX_RANK], idx[ETL_MAX_RANK];
  uint32_t nvars;
  uint64_t n = edge_tasks(p, g, gm, &nvars, vars);
  uint64_t per = gm->data_var != ETL_NO_DATA_VAR && n ? p->group_tasks[g] / n : 1;
  for (uint64_t lin = 0; lin < n; ++lin, next_vars(p, g, nvars, vars)) {
    int what;
    etlStatus st = edge_resolve(m, p, g, edge, vars, "waits on", lin * per, 0, idx, &what);
    if (st)
      return st;
  }
  return ETL_SUCCESS;
}

static etlStatus counts_fast(const etl_meta *m, etl_plan *p, uint32_t **scratch, uint64_t *cap) {
  for (uint32_t g = 0; g < m->n_groups; ++g) {
    const etl_group_meta *gm = &m->groups[g];
    for (uint32_t i = 0; i < gm->n_notifies; ++i) {
      etlStatus st = notify_fast(m, p, g, &gm->notifies[i], scratch, cap);
      if (st)
        return st;
    }
    for (uint32_t i = 0; i < gm->n_waits; ++i) {
      etlStatus st = wait_check(m, p, g, &gm->waits[i]);
      if (st)
        return st;
    }
  }
  return ETL_SUCCESS;
}

/* The enumeration: every task of every group, every edge, every element. */
static etlStatus counts_enumerate(const etl_meta *m, etl_plan *p) {
  for (uint32_t g = 0; g < m->n_groups; ++g) {
    const etl_group_meta *gm = &m->groups[g];
    if (gm->n_notifies == 0 && gm->n_waits == 0)
      continue;
    int64_t vars[ETL_MAX_RANK];
    /* a data-dependent range: its edges use only the prefix variables, and
       each element holds one token per expander (settled when it runs) */
    int dd = gm->data_var != ETL_NO_DATA_VAR;
    uint64_t n = dd ? p->group_prefix[g] : p->group_tasks[g];
    uint64_t per = dd && n ? p->group_tasks[g] / n : 1;
    for (uint64_t lin = 0; lin < n; ++lin) {
      if (dd)
        prefix_vars(p, g, gm->rank, gm->data_var, lin, vars);
      else
        task_vars(p, g, gm->rank, lin, vars);
      for (uint32_t i = 0; i < gm->n_notifies; ++i) {
        etlStatus st =
            edge_elements(m, p, g, &gm->notifies[i], vars, "notifies", lin * per, p->wait_counts);
        if (st)
          return st;
      }
      for (uint32_t i = 0; i < gm->n_waits; ++i) {
        etlStatus st = edge_elements(m, p, g, &gm->waits[i], vars, "waits on", lin * per, NULL);
        if (st)
          return st;
      }
    }
  }
  return ETL_SUCCESS;
}

/* Dependency counters of dynamic group g's first `n` items (fast path):
 * per wait edge, the box's elements with a non-zero count per projection
 * point, then one look-up per task. Sums wrap as the enumeration's do. */
static etlStatus deps_fast(const etl_meta *m, const etl_plan *p, uint32_t g, uint32_t *deps,
                           uint32_t **scratch, uint64_t *cap) {
  const etl_group_meta *gm = &m->groups[g];
  for (uint32_t i = 0; i < gm->n_waits; ++i) {
    const etl_edge_meta *edge = &gm->waits[i];
    const int64_t *shape = &p->event_shape[(size_t)edge->event * ETL_MAX_RANK];
    const uint32_t *c = &p->wait_counts[p->event_offset[edge->event]];
    edge_proj pr;
    proj_of(p, edge, &pr);
    int64_t vars[ETL_MAX_RANK], idx[ETL_MAX_RANK];
    uint32_t *nz = NULL;
    if (pr.stars) {
      if (!(nz = scratch_zeroed(scratch, cap, pr.size)))
        return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory building a launch plan");
      uint64_t at = 0;
      memset(idx, 0, sizeof idx);
      for (uint64_t e = 0; e < p->event_elems[edge->event];
           ++e, proj_step(shape, edge->n, &pr, idx, &at))
        nz[at] += c[e] != 0;
    }
    uint32_t nvars;
    uint64_t n = edge_tasks(p, g, gm, &nvars, vars);
    for (uint64_t lin = 0; lin < n; ++lin, next_vars(p, g, nvars, vars)) {
      int what;
      /* checked by counts_fast: never fails here */
      if (edge_resolve(m, p, g, edge, vars, "waits on", 0, 0, idx, &what) || what != EDGE_BOX)
        continue;
      uint64_t at = 0;
      for (uint32_t k = 0; k < edge->n; ++k)
        at += (uint64_t)idx[k] * pr.stride[k];
      deps[lin] += nz ? nz[at] : c[at] != 0;
    }
  }
  return ETL_SUCCESS;
}

/* The initial state array for the dynamic groups (NULL when none). */
static etlStatus build_dynamic(const etl_meta *m, etl_plan *p, etl_plan_mode mode,
                               uint32_t **scratch, uint64_t *cap) {
  int any = 0;
  for (uint32_t g = 0; g < m->n_groups; ++g)
    any |= m->groups[g].schedule == ETL_SCHEDULE_DYNAMIC;
  if (!any)
    return ETL_SUCCESS;
  uint64_t slots = ETL_DYN_GROUP_OFF + 2 * (uint64_t)m->n_groups;
  p->dyn_words = slots + 2 * p->n_dynamic;
  p->dyn = calloc(p->dyn_words, sizeof(uint32_t));
  if (!p->dyn)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory building a launch plan");
  uint32_t *d = p->dyn, *deps = p->dyn + slots + p->n_dynamic;
  uint64_t id = 0;
  for (uint32_t g = 0; g < m->n_groups; ++g) {
    d[ETL_DYN_GROUP_OFF + g] = (uint32_t)id;
    d[ETL_DYN_GROUP_OFF + m->n_groups + g] = (uint32_t)p->group_prefix[g];
    if (m->groups[g].schedule != ETL_SCHEDULE_DYNAMIC)
      continue;
    const etl_group_meta *gm = &m->groups[g];
    int dd = gm->data_var != ETL_NO_DATA_VAR;
    /* data-dependent: the expanders wait; the tasks are pushed by them
       (deps stay 0) */
    uint64_t n = dd ? p->group_prefix[g] : p->group_tasks[g];
    if (mode == ETL_PLAN_FAST) {
      etlStatus st = deps_fast(m, p, g, &deps[id], scratch, cap);
      if (st)
        return st;
    } else {
      int64_t vars[ETL_MAX_RANK];
      for (uint64_t lin = 0; lin < n; ++lin) {
        if (dd)
          prefix_vars(p, g, gm->rank, gm->data_var, lin, vars);
        else
          task_vars(p, g, gm->rank, lin, vars);
        uint32_t c = 0;
        for (uint32_t i = 0; i < gm->n_waits; ++i)
          c += edge_pending(m, p, g, &gm->waits[i], vars);
        deps[id + lin] = c;
      }
    }
    id += n + (dd ? p->group_tasks[g] : 0);
  }
  uint32_t tail = 0;
  uint64_t remaining = 0;
  for (uint32_t oi = 0; oi < m->n_order; ++oi) {
    uint32_t g = m->order[oi];
    if (m->groups[g].schedule != ETL_SCHEDULE_DYNAMIC)
      continue;
    uint32_t base = d[ETL_DYN_GROUP_OFF + g];
    int dd = m->groups[g].data_var != ETL_NO_DATA_VAR;
    uint64_t n = dd ? p->group_prefix[g] : p->group_tasks[g]; /* expanders add the rest */
    remaining += n;
    for (uint64_t lin = 0; lin < n; ++lin)
      if (deps[base + lin] == 0)
        d[slots + tail++] = base + (uint32_t)lin + 1;
  }
  d[ETL_DYN_TAIL] = tail;
  d[ETL_DYN_HEAD] = 0;
  d[ETL_DYN_REMAINING] = (uint32_t)remaining;
  d[ETL_DYN_CAPACITY] = (uint32_t)p->n_dynamic;
  d[ETL_DYN_NSTATIC] = (uint32_t)p->n_static;
  return ETL_SUCCESS;
}

etlStatus etl_plan_build(const etl_meta *m, const int64_t *dims, uint32_t num_ctas,
                         etl_plan **out) {
  return etl_plan_build_mode(m, dims, num_ctas, ETL_PLAN_FAST, out);
}

etlStatus etl_plan_build_mode(const etl_meta *m, const int64_t *dims, uint32_t num_ctas,
                              etl_plan_mode mode, etl_plan **out) {
  *out = NULL;
  uint32_t *scratch = NULL; /* counting scratch of the fast path */
  uint64_t cap = 0;
  if (num_ctas == 0)
    return etl_error(ETL_ERROR_INVALID_VALUE, "num_ctas is 0");
  etl_plan *p = calloc(1, sizeof *p);
  if (!p)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory building a launch plan");
  size_t ne = m->n_events + 1, ng = m->n_groups + 1, nt = m->n_tensors + 1;
  p->num_ctas = num_ctas;
  p->dims = calloc(m->n_dims + 1, sizeof(int64_t));
  p->event_offset = calloc(ne, sizeof(uint64_t));
  p->event_elems = calloc(ne, sizeof(uint64_t));
  p->event_shape = calloc(ne * ETL_MAX_RANK, sizeof(int64_t));
  p->group_lo = calloc(ng * ETL_MAX_RANK, sizeof(int64_t));
  p->group_hi = calloc(ng * ETL_MAX_RANK, sizeof(int64_t));
  p->group_tasks = calloc(ng, sizeof(uint64_t));
  p->group_prefix = calloc(ng, sizeof(uint64_t));
  p->buffer_bytes = calloc(nt, sizeof(uint64_t));
  p->buffer_dptr = calloc(nt, sizeof(uint64_t));
  p->args_host = calloc(1, ETL_ARGS_BYTES(m));
  p->queue_offs = calloc((size_t)num_ctas + 1, sizeof(uint32_t));
  etlStatus st = ETL_SUCCESS;
  char err[160];
  if (!p->dims || !p->event_offset || !p->event_elems || !p->event_shape || !p->group_lo ||
      !p->group_hi || !p->group_tasks || !p->group_prefix || !p->buffer_bytes || !p->buffer_dptr ||
      !p->args_host || !p->queue_offs) {
    st = etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory building a launch plan");
    goto fail;
  }
  if (m->n_dims) /* dims may be null when the program has none */
    memcpy(p->dims, dims, m->n_dims * sizeof(int64_t));

  /* runtime buffers */
  for (uint32_t t = 0; t < m->n_tensors; ++t) {
    const etl_tensor_meta *tm = &m->tensors[t];
    if (!tm->is_buffer)
      continue;
    int64_t shape[ETL_MAX_RANK];
    for (uint32_t k = 0; k < tm->rank; ++k)
      if (etl_expr_eval(&tm->shape[k], dims, m->n_dims, NULL, 0, &shape[k], err, sizeof err)) {
        st = etl_error(ETL_ERROR_BINDING, "shape of buffer '%s', dimension %u: %s", tm->name, k,
                       err);
        goto fail;
      }
    uint64_t elems;
    if (shape_elems(shape, tm->rank, ((uint64_t)1 << 40) / etl_elem_size(tm->elem), &elems)) {
      st = etl_error(ETL_ERROR_BINDING, "buffer '%s' has a negative or too large shape", tm->name);
      goto fail;
    }
    p->buffer_bytes[t] = etl_elems_bytes(tm->elem, elems);
  }

  /* events */
  for (uint32_t e = 0; e < m->n_events; ++e) {
    const etl_event_meta *em = &m->events[e];
    int64_t *shape = &p->event_shape[(size_t)e * ETL_MAX_RANK];
    for (uint32_t k = 0; k < em->rank; ++k)
      if (etl_expr_eval(&em->shape[k], dims, m->n_dims, NULL, 0, &shape[k], err, sizeof err)) {
        st =
            etl_error(ETL_ERROR_BINDING, "shape of event '%s', dimension %u: %s", em->name, k, err);
        goto fail;
      }
    if (shape_elems(shape, em->rank, ETL_MAX_COUNTERS, &p->event_elems[e]) ||
        p->n_counters + p->event_elems[e] > ETL_MAX_COUNTERS) {
      st = etl_error(ETL_ERROR_BINDING, "event '%s' has a negative or too large shape", em->name);
      goto fail;
    }
    p->event_offset[e] = p->n_counters;
    p->n_counters += p->event_elems[e];
  }

  /* group domains */
  for (uint32_t g = 0; g < m->n_groups; ++g) {
    const etl_group_meta *gm = &m->groups[g];
    uint64_t tasks = 1;
    for (uint32_t k = 0; k < gm->rank; ++k) {
      int64_t *lo = &p->group_lo[(size_t)g * ETL_MAX_RANK + k];
      int64_t *hi = &p->group_hi[(size_t)g * ETL_MAX_RANK + k];
      if (etl_expr_eval(&gm->lo[k], dims, m->n_dims, NULL, 0, lo, err, sizeof err) ||
          etl_expr_eval(&gm->hi[k], dims, m->n_dims, NULL, 0, hi, err, sizeof err)) {
        st =
            etl_error(ETL_ERROR_BINDING, "domain of group '%s', variable %u: %s", gm->name, k, err);
        goto fail;
      }
      int64_t ext;
      if (*hi < *lo)
        *hi = *lo; /* empty range */
      if (__builtin_sub_overflow(*hi, *lo, &ext) ||
          __builtin_mul_overflow(tasks, (uint64_t)ext, &tasks) || tasks > ETL_MAX_TASKS) {
        st = etl_error(ETL_ERROR_BINDING, "group '%s' has more than %u tasks", gm->name,
                       ETL_MAX_TASKS);
        goto fail;
      }
    }
    p->group_tasks[g] = tasks;
    if (gm->data_var != ETL_NO_DATA_VAR) {
      uint64_t pre = 1;
      for (uint32_t k = 0; k < gm->data_var; ++k)
        pre *= (uint64_t)(p->group_hi[(size_t)g * ETL_MAX_RANK + k] -
                          p->group_lo[(size_t)g * ETL_MAX_RANK + k]);
      p->group_prefix[g] = pre; /* <= tasks, or tasks == 0 */
      tasks += pre;             /* items: expanders, then the largest domain */
    }
    p->n_entries += tasks;
    if (gm->schedule == ETL_SCHEDULE_DYNAMIC)
      p->n_dynamic += tasks;
    else
      p->n_static += tasks;
    if (p->n_entries > ETL_MAX_TASKS) {
      st = etl_error(ETL_ERROR_BINDING, "program has more than %u tasks for this binding",
                     ETL_MAX_TASKS);
      goto fail;
    }
  }

  /* wait counts (and range checks of every notify and wait) */
  p->wait_counts = calloc(p->n_counters + 1, sizeof(uint32_t));
  p->queue = calloc(2 * p->n_entries + 2, sizeof(uint32_t));
  if (!p->wait_counts || !p->queue) {
    st = etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory building a launch plan");
    goto fail;
  }
  if (mode == ETL_PLAN_FAST)
    st = counts_fast(m, p, &scratch, &cap);
  if (mode != ETL_PLAN_FAST || st) { /* the enumeration, or its exact first error */
    memset(p->wait_counts, 0, (size_t)(p->n_counters + 1) * sizeof(uint32_t));
    st = counts_enumerate(m, p);
    if (st)
      goto fail;
  }

  st = build_dynamic(m, p, mode, &scratch, &cap);
  if (st)
    goto fail;

  st = etl_plan_deal_static(m, p); /* plan_queue.c */
  if (st)
    goto fail;
  free(scratch);
  *out = p;
  return ETL_SUCCESS;
fail:
  free(scratch);
  etl_plan_free_host(p);
  return st;
}
