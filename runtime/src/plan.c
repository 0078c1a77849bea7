/*===- src/plan.c - Per-shape plan: events, wait counts, static queues -----===
 *
 * Everything etlRun needs that depends only on the dim values (and the CTA
 * count), computed on the host and cached per shape binding by api.c:
 *   - event layout: events back to back in one uint32 counter array, the
 *     slot value of event e being the element offset of its first element;
 *   - wait counts: each element starts at the number of notifications it
 *     receives, found by enumerating every task of every group (row-major
 *     over the domain, last variable fastest) and every notify edge (a star
 *     component covers the whole dimension);
 *   - the static queue: groups in the metadata's topological order, tasks in
 *     linear order, dealt round-robin over the CTAs continuing across
 *     groups; entries are (group, linear) uint32 pairs, per-CTA offsets
 *     count pairs. Only static groups are in it.
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

size_t etl_elem_size(uint32_t elem) {
  switch (elem) {
  case ETL_ELEM_I8:
  case ETL_ELEM_U8:
  case ETL_ELEM_F8E4M3:
  case ETL_ELEM_F8E5M2:
  case ETL_ELEM_I4: /* packed: the byte that holds two elements */
  case ETL_ELEM_U4:
    return 1;
  case ETL_ELEM_F16:
  case ETL_ELEM_BF16:
  case ETL_ELEM_I16:
  case ETL_ELEM_U16:
    return 2;
  case ETL_ELEM_I64:
    return 8;
  default:
    return 4;
  }
}

int etl_elem_valid(uint32_t elem) { return elem <= ETL_ELEM_LAST && elem != 5; }

int etl_elem_packed(uint32_t elem) { return elem == ETL_ELEM_I4 || elem == ETL_ELEM_U4; }

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

/* Visit every element an edge of task `vars` names; calls `fn` per element
 * offset. Returns a status (message set) on an out-of-range index. */
static etlStatus edge_elements(const etl_meta *m, const etl_plan *p, uint32_t g,
                               const etl_edge_meta *edge, const int64_t *vars, const char *kind,
                               uint64_t linear, uint32_t *counts) {
  const etl_event_meta *ev = &m->events[edge->event];
  const int64_t *shape = &p->event_shape[(size_t)edge->event * ETL_MAX_RANK];
  int64_t idx[ETL_MAX_RANK];
  char err[160];
  for (uint32_t k = 0; k < edge->n; ++k) {
    if (edge->idx[k].star == ETL_INDEX_DATA) { /* reads tensor data: the device checks it */
      if (!counts)
        return ETL_SUCCESS;
      /* A notify whose target is read from data: one token on every element
         of the event, which the task hands back once it knows its target
         (lower_kernel.cpp, emit_data_notify_release). */
      uint64_t numel = 1;
      for (uint32_t d = 0; d < edge->n; ++d) {
        if (edge->idx[d].star == ETL_INDEX_STAR)
          return etl_error(ETL_ERROR_INVALID_ARTIFACT,
                           "group '%s' %s event '%s' with `*` beside an index that reads data",
                           m->groups[g].name, kind, ev->name);
        numel *= (uint64_t)shape[d];
      }
      uint32_t *c = &counts[p->event_offset[edge->event]];
      for (uint64_t e = 0; e < numel; ++e) {
        if (c[e] == UINT32_MAX)
          return etl_error(ETL_ERROR_BINDING, "event '%s': more than 2^32-1 notifications",
                           ev->name);
        c[e] += 1;
      }
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
  if (!counts)
    return ETL_SUCCESS;
  for (;;) {
    uint64_t off = 0;
    for (uint32_t k = 0; k < edge->n; ++k)
      off = off * (uint64_t)shape[k] + (uint64_t)idx[k];
    uint32_t *c = &counts[p->event_offset[edge->event] + off];
    if (*c == UINT32_MAX)
      return etl_error(ETL_ERROR_BINDING, "event '%s': more than 2^32-1 notifications", ev->name);
    *c += 1;
    if (!next_star_element(edge, shape, idx))
      break;
  }
  return ETL_SUCCESS;
}

/* Waited elements of `edge` for task `vars` whose wait count is not zero
 * (indices already range-checked). */
static uint32_t edge_pending(const etl_meta *m, const etl_plan *p, uint32_t g,
                             const etl_edge_meta *edge, const int64_t *vars) {
  const int64_t *shape = &p->event_shape[(size_t)edge->event * ETL_MAX_RANK];
  int64_t idx[ETL_MAX_RANK];
  char err[160];
  for (uint32_t k = 0; k < edge->n; ++k) {
    if (edge->idx[k].star == ETL_INDEX_DATA)
      return 0; /* never in a dynamic group (etlc rejects it) */
    if (edge->idx[k].star == ETL_INDEX_STAR) {
      if (shape[k] == 0)
        return 0;
      idx[k] = 0;
    } else if (etl_expr_eval(&edge->idx[k].idx, p->dims, m->n_dims, vars, m->groups[g].rank,
                             &idx[k], err, sizeof err) != 0) {
      return 0;
    }
  }
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

/* The initial state array for the dynamic groups (NULL when none). */
static etlStatus build_dynamic(const etl_meta *m, etl_plan *p) {
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
    int64_t vars[ETL_MAX_RANK];
    if (gm->data_var != ETL_NO_DATA_VAR) {
      /* expanders wait; the tasks are pushed by them (deps stay 0) */
      for (uint64_t lin = 0; lin < p->group_prefix[g]; ++lin) {
        prefix_vars(p, g, gm->rank, gm->data_var, lin, vars);
        uint32_t n = 0;
        for (uint32_t i = 0; i < gm->n_waits; ++i)
          n += edge_pending(m, p, g, &gm->waits[i], vars);
        deps[id + lin] = n;
      }
      id += p->group_prefix[g] + p->group_tasks[g];
      continue;
    }
    for (uint64_t lin = 0; lin < p->group_tasks[g]; ++lin) {
      task_vars(p, g, gm->rank, lin, vars);
      uint32_t n = 0;
      for (uint32_t i = 0; i < gm->n_waits; ++i)
        n += edge_pending(m, p, g, &gm->waits[i], vars);
      deps[id + lin] = n;
    }
    id += p->group_tasks[g];
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
  *out = NULL;
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
        st = edge_elements(m, p, g, &gm->notifies[i], vars, "notifies", lin * per, p->wait_counts);
        if (st)
          goto fail;
      }
      for (uint32_t i = 0; i < gm->n_waits; ++i) {
        st = edge_elements(m, p, g, &gm->waits[i], vars, "waits on", lin * per, NULL);
        if (st)
          goto fail;
      }
    }
  }

  st = build_dynamic(m, p);
  if (st)
    goto fail;

  /* static queue: round-robin over CTAs, continuing across groups */
  {
    uint64_t base = p->n_static / num_ctas, extra = p->n_static % num_ctas;
    p->queue_offs[0] = 0;
    for (uint32_t c = 0; c < num_ctas; ++c)
      p->queue_offs[c + 1] = p->queue_offs[c] + (uint32_t)(base + (c < extra ? 1 : 0));
    uint32_t *fill = calloc(num_ctas, sizeof(uint32_t));
    if (!fill) {
      st = etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory building a launch plan");
      goto fail;
    }
    uint64_t t = 0;
    for (uint32_t oi = 0; oi < m->n_order; ++oi) {
      uint32_t g = m->order[oi];
      if (m->groups[g].schedule == ETL_SCHEDULE_DYNAMIC)
        continue;
      for (uint64_t lin = 0; lin < p->group_tasks[g]; ++lin, ++t) {
        uint32_t c = (uint32_t)(t % num_ctas);
        uint64_t at = (uint64_t)p->queue_offs[c] + fill[c]++;
        p->queue[2 * at] = g;
        p->queue[2 * at + 1] = (uint32_t)lin;
      }
    }
    free(fill);
  }
  *out = p;
  return ETL_SUCCESS;
fail:
  etl_plan_free_host(p);
  return st;
}
