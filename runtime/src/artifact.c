/*===- src/artifact.c - Artifact reader ------------------------------------===
 *
 * Validates an .etlb file completely before anything uses it: magic,
 * version, size, checksum, section table, then the metadata section with a
 * bounds-checked cursor. Every count is checked against the bytes left
 * before anything is allocated (a corrupt count cannot cause a huge
 * allocation) and every expression is checked by etl_expr_check, so later
 * code only meets well-formed metadata. Any byte string yields either a
 * decoded artifact or ETL_ERROR_INVALID_ARTIFACT / _UNSUPPORTED_VERSION.
 *===----------------------------------------------------------------------===*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*===-- Arena --------------------------------------------------------------===*/

struct etl_arena_block {
  etl_arena_block *next;
  max_align_t align[];
};

void *etl_arena_alloc(etl_arena *a, size_t bytes) {
  if (bytes > ((size_t)1 << 40))
    return NULL;
  etl_arena_block *b = calloc(1, sizeof(etl_arena_block) + (bytes ? bytes : 1));
  if (!b)
    return NULL;
  b->next = a->head;
  a->head = b;
  return b->align;
}

void etl_arena_free(etl_arena *a) {
  etl_arena_block *b = a->head;
  while (b) {
    etl_arena_block *n = b->next;
    free(b);
    b = n;
  }
  a->head = NULL;
}

uint32_t etl_fnv1a(const uint8_t *p, size_t n) {
  uint32_t h = ETL_FNV1A_OFFSET;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= ETL_FNV1A_PRIME;
  }
  return h;
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

/*===-- Metadata cursor ----------------------------------------------------===*/

typedef struct rd {
  const uint8_t *base, *p, *end;
  etl_arena *arena;
  int bad; /* 1 = truncated/insane, 2 = out of memory */
  char why[256];
  char where[160]; /* what was being read */
  char at[160];    /* `where` when the first failure was recorded */
  uint32_t version; /* the artifact's (parse_meta: what it holds) */
} rd;

static void rd_fail(rd *r, const char *why) {
  if (r->bad)
    return;
  r->bad = 1;
  snprintf(r->why, sizeof r->why, "%s at metadata offset %zu", why, (size_t)(r->p - r->base));
  memcpy(r->at, r->where, sizeof r->at);
}

static uint32_t rd_u32(rd *r) {
  if (r->bad)
    return 0;
  if (r->end - r->p < 4) {
    rd_fail(r, "truncated");
    return 0;
  }
  uint32_t v = le32(r->p);
  r->p += 4;
  return v;
}

/* A count of items each needing at least `min_bytes`: refuses counts the
 * remaining bytes cannot hold (so no allocation is ever larger than the
 * file). */
static uint32_t rd_count(rd *r, uint32_t min_bytes) {
  uint32_t n = rd_u32(r);
  if (r->bad)
    return 0;
  if ((uint64_t)n * min_bytes > (uint64_t)(r->end - r->p)) {
    char b[96];
    snprintf(b, sizeof b, "count %u larger than the remaining bytes allow", n);
    rd_fail(r, b);
    return 0;
  }
  return n;
}

static void *rd_alloc(rd *r, size_t n, size_t size) {
  if (r->bad)
    return NULL;
  void *p = etl_arena_alloc(r->arena, n * size);
  if (!p) {
    r->bad = 2;
    snprintf(r->why, sizeof r->why, "out of memory");
  }
  return p;
}

static char *rd_str(rd *r) {
  uint32_t n = rd_count(r, 1);
  char *s = rd_alloc(r, (size_t)n + 1, 1);
  if (!s)
    return NULL;
  memcpy(s, r->p, n);
  s[n] = 0;
  if (memchr(s, 0, n)) {
    rd_fail(r, "string contains a NUL byte");
    return NULL;
  }
  r->p += n;
  return s;
}

static void rd_expr(rd *r, etl_expr *e, uint32_t n_dims, uint32_t n_vars) {
  uint32_t n = rd_count(r, 8);
  e->n = n;
  e->code = rd_alloc(r, n ? n : 1, sizeof(int64_t));
  if (!e->code)
    return;
  for (uint32_t i = 0; i < n; ++i)
    e->code[i] = (int64_t)le64(r->p + 8 * (size_t)i);
  r->p += 8 * (size_t)n;
  char err[160];
  if (etl_expr_check(e, n_dims, n_vars, err, sizeof err) != 0) {
    char b[220];
    snprintf(b, sizeof b, "bad expression (%s)", err);
    rd_fail(r, b);
  }
}

static void rd_slot(rd *r, const etl_meta *m, uint32_t slot, uint8_t *used) {
  if (r->bad)
    return;
  if (slot < ETL_SLOT_FIRST_PROGRAM || slot >= m->num_slots) {
    char b[96];
    snprintf(b, sizeof b, "argument slot %u outside [%d, %u)", slot, ETL_SLOT_FIRST_PROGRAM,
             m->num_slots);
    rd_fail(r, b);
    return;
  }
  if (used[slot]) {
    char b[64];
    snprintf(b, sizeof b, "argument slot %u used twice", slot);
    rd_fail(r, b);
    return;
  }
  used[slot] = 1;
}

static void rd_edges(rd *r, const etl_meta *m, uint32_t n_vars, uint32_t *count,
                     etl_edge_meta **out) {
  uint32_t n = rd_count(r, 8);
  *count = n;
  *out = rd_alloc(r, n ? n : 1, sizeof(etl_edge_meta));
  for (uint32_t i = 0; i < n && !r->bad; ++i) {
    etl_edge_meta *e = &(*out)[i];
    e->event = rd_u32(r);
    if (!r->bad && e->event >= m->n_events) {
      rd_fail(r, "edge names an event index out of range");
      return;
    }
    e->n = rd_count(r, 4);
    if (!r->bad && e->n != m->events[e->event].rank) {
      rd_fail(r, "edge index count differs from the event's rank");
      return;
    }
    e->idx = rd_alloc(r, e->n ? e->n : 1, sizeof(etl_index_meta));
    for (uint32_t k = 0; k < e->n && !r->bad; ++k) {
      e->idx[k].star = rd_u32(r);
      if (r->bad)
        return;
      if (e->idx[k].star > ETL_INDEX_DATA) {
        rd_fail(r, "star flag not 0, 1 or 2");
        return;
      }
      if (e->idx[k].star == ETL_INDEX_EXPR)
        rd_expr(r, &e->idx[k].idx, m->n_dims, n_vars);
    }
  }
}

/* v9's tensor maps (none before): each on a tensor of rank 1 or 2 whose
   box fits TMA (etl_abi.h), in 16 free slots, 64-byte aligned. */
static void parse_tma_maps(rd *r, etl_meta *m, uint8_t *used) {
  snprintf(r->where, sizeof r->where, "tensor maps");
  m->n_tma_maps = r->version >= 9 ? rd_count(r, 12) : 0;
  m->tma_maps = rd_alloc(r, m->n_tma_maps + 1, sizeof(etl_tma_meta));
  for (uint32_t i = 0; i < m->n_tma_maps && !r->bad; ++i) {
    etl_tma_meta *t = &m->tma_maps[i];
    snprintf(r->where, sizeof r->where, "tensor map %u", i);
    t->tensor = rd_u32(r);
    t->slot = rd_u32(r);
    t->rank = rd_u32(r);
    if (r->bad)
      return;
    if (t->tensor >= m->n_tensors || t->rank != m->tensors[t->tensor].rank || t->rank < 1 ||
        t->rank > 2) {
      rd_fail(r, "not a tensor of rank 1 or 2, or a rank other than its tensor's");
      return;
    }
    for (uint32_t d = 0; d < t->rank && !r->bad; ++d) {
      t->box[d] = rd_u32(r);
      if (!r->bad && (t->box[d] < 1 || t->box[d] > 256))
        rd_fail(r, "a box dimension not in 1 .. 256");
    }
    uint32_t es = etl_elem_size(m->tensors[t->tensor].elem);
    if (!r->bad && (es == 0 || (uint64_t)t->box[t->rank - 1] * es % 16 != 0))
      rd_fail(r, "a box whose rows are not whole 16-byte multiples");
    if (!r->bad && (t->slot % 8 != 0 || (uint64_t)t->slot + 16 > m->num_slots))
      rd_fail(r, "slots not 64-byte aligned or past num_slots");
    for (uint32_t k = 0; k < 16 && !r->bad; ++k)
      rd_slot(r, m, t->slot + k, used);
  }
}

static void parse_meta(rd *r, etl_meta *m) {
  snprintf(r->where, sizeof r->where, "header");
  m->threads_per_cta = rd_u32(r);
  m->smem_bytes = rd_u32(r);
  m->kernel_name = rd_str(r);
  m->source_path = rd_str(r);
  m->num_slots = rd_u32(r);
  if (r->bad)
    return;
  if (m->threads_per_cta < 1 || m->threads_per_cta > 1024) {
    rd_fail(r, "threads_per_cta not in [1, 1024]");
    return;
  }
  if (m->smem_bytes > (1u << 20)) {
    rd_fail(r, "smem_bytes larger than 1 MiB");
    return;
  }
  if (m->num_slots < ETL_SLOT_FIRST_PROGRAM || m->num_slots > (1u << 16)) {
    rd_fail(r, "num_slots out of range");
    return;
  }
  uint8_t *used = rd_alloc(r, m->num_slots, 1);
  if (!used)
    return;

  snprintf(r->where, sizeof r->where, "dims");
  m->n_dims = rd_count(r, 8);
  m->dims = rd_alloc(r, m->n_dims + 1, sizeof(etl_dim_meta));
  for (uint32_t i = 0; i < m->n_dims && !r->bad; ++i) {
    m->dims[i].name = rd_str(r);
    m->dims[i].slot = rd_u32(r);
    rd_slot(r, m, m->dims[i].slot, used);
  }

  snprintf(r->where, sizeof r->where, "tensors");
  m->n_tensors = rd_count(r, 20);
  m->tensors = rd_alloc(r, m->n_tensors + 1, sizeof(etl_tensor_meta));
  for (uint32_t i = 0; i < m->n_tensors && !r->bad; ++i) {
    etl_tensor_meta *t = &m->tensors[i];
    t->name = rd_str(r);
    if (!r->bad)
      snprintf(r->where, sizeof r->where, "tensor '%s'", t->name);
    t->elem = rd_u32(r);
    t->is_buffer = rd_u32(r);
    t->rank = rd_u32(r);
    if (r->bad)
      break;
    if (!etl_elem_valid(t->elem))
      rd_fail(r, "unknown element type");
    if (t->is_buffer > ETL_TENSOR_INPUT)
      rd_fail(r, "unknown tensor kind (not a parameter, input, buffer or zeros buffer)");
    t->zeros = t->is_buffer == ETL_TENSOR_BUFFER_ZEROS;
    t->written = t->is_buffer != ETL_TENSOR_INPUT;
    t->is_buffer = t->is_buffer == ETL_TENSOR_BUFFER || t->is_buffer == ETL_TENSOR_BUFFER_ZEROS;
    if (t->rank > ETL_MAX_RANK)
      rd_fail(r, "rank larger than 16");
    t->shape = rd_alloc(r, t->rank + 1, sizeof(etl_expr));
    for (uint32_t k = 0; k < t->rank && !r->bad; ++k)
      rd_expr(r, &t->shape[k], m->n_dims, 0);
    t->slot = rd_u32(r);
    rd_slot(r, m, t->slot, used);
  }

  snprintf(r->where, sizeof r->where, "scalars");
  m->n_scalars = rd_count(r, 12);
  m->scalars = rd_alloc(r, m->n_scalars + 1, sizeof(etl_scalar_meta));
  for (uint32_t i = 0; i < m->n_scalars && !r->bad; ++i) {
    etl_scalar_meta *s = &m->scalars[i];
    s->name = rd_str(r);
    if (!r->bad)
      snprintf(r->where, sizeof r->where, "scalar '%s'", s->name);
    s->elem = rd_u32(r);
    if (!r->bad && (!etl_elem_valid(s->elem) || etl_elem_packed(s->elem) ||
                    s->elem == ETL_ELEM_F8E4M3 || s->elem == ETL_ELEM_F8E5M2))
      rd_fail(r, "unknown element type");
    s->slot = rd_u32(r);
    rd_slot(r, m, s->slot, used);
  }

  snprintf(r->where, sizeof r->where, "constraints");
  m->n_constraints = rd_count(r, 12);
  m->constraints = rd_alloc(r, m->n_constraints + 1, sizeof(etl_constraint_meta));
  for (uint32_t i = 0; i < m->n_constraints && !r->bad; ++i) {
    rd_expr(r, &m->constraints[i].cond, m->n_dims, 0);
    m->constraints[i].text = rd_str(r);
    m->constraints[i].where = rd_str(r);
  }

  snprintf(r->where, sizeof r->where, "events");
  m->n_events = rd_count(r, 12);
  m->events = rd_alloc(r, m->n_events + 1, sizeof(etl_event_meta));
  for (uint32_t i = 0; i < m->n_events && !r->bad; ++i) {
    etl_event_meta *e = &m->events[i];
    e->name = rd_str(r);
    if (!r->bad)
      snprintf(r->where, sizeof r->where, "event '%s'", e->name);
    e->rank = rd_u32(r);
    if (!r->bad && e->rank > ETL_MAX_RANK)
      rd_fail(r, "rank larger than 16");
    e->shape = rd_alloc(r, e->rank + 1, sizeof(etl_expr));
    for (uint32_t k = 0; k < e->rank && !r->bad; ++k)
      rd_expr(r, &e->shape[k], m->n_dims, 0);
    e->slot = rd_u32(r);
    rd_slot(r, m, e->slot, used);
  }

  snprintf(r->where, sizeof r->where, "groups");
  m->n_groups = rd_count(r, 16);
  m->groups = rd_alloc(r, m->n_groups + 1, sizeof(etl_group_meta));
  for (uint32_t i = 0; i < m->n_groups && !r->bad; ++i) {
    etl_group_meta *g = &m->groups[i];
    g->name = rd_str(r);
    if (!r->bad)
      snprintf(r->where, sizeof r->where, "group '%s'", g->name);
    g->rank = rd_u32(r);
    if (!r->bad && g->rank > ETL_MAX_RANK)
      rd_fail(r, "domain rank larger than 16");
    g->lo = rd_alloc(r, g->rank + 1, sizeof(etl_expr));
    g->hi = rd_alloc(r, g->rank + 1, sizeof(etl_expr));
    for (uint32_t k = 0; k < g->rank && !r->bad; ++k) {
      rd_expr(r, &g->lo[k], m->n_dims, 0);
      rd_expr(r, &g->hi[k], m->n_dims, 0);
    }
    rd_edges(r, m, g->rank, &g->n_notifies, &g->notifies);
    rd_edges(r, m, g->rank, &g->n_waits, &g->waits);
    g->schedule = rd_u32(r);
    if (!r->bad && g->schedule > ETL_SCHEDULE_DYNAMIC)
      rd_fail(r, "unknown schedule kind");
    g->data_var = rd_u32(r);
    if (!r->bad && g->data_var != ETL_NO_DATA_VAR &&
        (g->data_var >= g->rank || g->schedule != ETL_SCHEDULE_DYNAMIC))
      rd_fail(r, "data-dependent range on a bad variable or a static group");
    g->layer_block = rd_u32(r);
    if (!r->bad && g->layer_block != ETL_NO_LAYER_BLOCK &&
        (g->layer_block > m->n_groups || g->rank == 0))
      rd_fail(r, "layered block out of range, or a group without a layer variable in one");
  }

  snprintf(r->where, sizeof r->where, "group order");
  m->n_order = rd_count(r, 4);
  if (r->bad)
    return;
  if (m->n_order != m->n_groups) {
    rd_fail(r, "group order does not list every group");
    return;
  }
  m->order = rd_alloc(r, m->n_order + 1, sizeof(uint32_t));
  uint8_t *seen = rd_alloc(r, m->n_groups + 1, 1);
  for (uint32_t i = 0; i < m->n_order && !r->bad; ++i) {
    m->order[i] = rd_u32(r);
    if (r->bad)
      break;
    if (m->order[i] >= m->n_groups || seen[m->order[i]]) {
      rd_fail(r, "group order is not a permutation of the groups");
      break;
    }
    seen[m->order[i]] = 1;
  }
  /* A layered block's groups are consecutive in the order (plan.c deals
     them together). */
  for (uint32_t i = 0; i < m->n_order && !r->bad; ++i) {
    uint32_t b = m->groups[m->order[i]].layer_block;
    if (b == ETL_NO_LAYER_BLOCK || (i > 0 && m->groups[m->order[i - 1]].layer_block == b))
      continue;
    for (uint32_t j = 0; j < i && !r->bad; ++j)
      if (m->groups[m->order[j]].layer_block == b)
        rd_fail(r, "a layered block's groups are not consecutive in the group order");
  }
  parse_tma_maps(r, m, used);
  if (!r->bad && r->p != r->end) {
    snprintf(r->where, sizeof r->where, "end of metadata");
    rd_fail(r, "trailing bytes");
  }
}

/*===-- Variants (v8) -------------------------------------------------------===*/

static int64_t rd_i64(rd *r) {
  if (r->bad)
    return 0;
  if (r->end - r->p < 8) {
    rd_fail(r, "truncated");
    return 0;
  }
  int64_t v = (int64_t)le64(r->p);
  r->p += 8;
  return v;
}

static int same_expr(const etl_expr *a, const etl_expr *b) {
  return a->n == b->n && (a->n == 0 || memcmp(a->code, b->code, a->n * sizeof(int64_t)) == 0);
}

/* Whether variant `v` takes what variant 0 takes (etl_abi.h): NULL, or what
   differs. */
static const char *interface_differs(const etl_meta *a, const etl_meta *v) {
  if (a->n_dims != v->n_dims)
    return "its dims differ from the first variant's";
  for (uint32_t i = 0; i < a->n_dims; ++i)
    if (strcmp(a->dims[i].name, v->dims[i].name) != 0)
      return "its dims differ from the first variant's";
  if (a->n_scalars != v->n_scalars)
    return "its scalar parameters differ from the first variant's";
  for (uint32_t i = 0; i < a->n_scalars; ++i)
    if (strcmp(a->scalars[i].name, v->scalars[i].name) != 0 ||
        a->scalars[i].elem != v->scalars[i].elem)
      return "its scalar parameters differ from the first variant's";
  uint32_t i = 0, j = 0;
  for (;;) {
    while (i < a->n_tensors && a->tensors[i].is_buffer)
      ++i;
    while (j < v->n_tensors && v->tensors[j].is_buffer)
      ++j;
    if (i == a->n_tensors || j == v->n_tensors)
      break;
    const etl_tensor_meta *x = &a->tensors[i++], *y = &v->tensors[j++];
    if (strcmp(x->name, y->name) != 0 || x->elem != y->elem || x->rank != y->rank ||
        x->written != y->written)
      return "its tensor parameters differ from the first variant's";
    for (uint32_t k = 0; k < x->rank; ++k)
      if (!same_expr(&x->shape[k], &y->shape[k]))
        return "the shape of a tensor parameter differs from the first variant's";
  }
  if (i != a->n_tensors || j != v->n_tensors)
    return "its tensor parameters differ from the first variant's";
  return NULL;
}

static etlStatus artifact_parse(const void *data, size_t size, etl_artifact *out, int inner);

/* The variant table and the variants' artifacts (`secs`, `n` of them). */
static etlStatus parse_variants(etl_artifact *out, const uint8_t *table, uint64_t table_size,
                                const uint8_t **secs, const uint64_t *sizes, uint32_t n) {
  rd r;
  memset(&r, 0, sizeof r);
  r.base = r.p = table;
  r.end = table + table_size;
  r.arena = &out->arena;
  snprintf(r.where, sizeof r.where, "the variant table");
  uint32_t nv = rd_count(&r, 8);
  if (!r.bad && (nv == 0 || nv > ETL_MAX_VARIANTS))
    rd_fail(&r, "variant count not in 1 .. ETL_MAX_VARIANTS");
  if (!r.bad && nv != n)
    rd_fail(&r, "variant count differs from the number of variant sections");
  etl_variant *vs = rd_alloc(&r, nv ? nv : 1, sizeof(etl_variant));
  for (uint32_t i = 0; i < nv && !r.bad; ++i) {
    snprintf(r.where, sizeof r.where, "variant %u", i);
    vs[i].label = rd_str(&r);
    vs[i].n_ranges = rd_count(&r, 20);
    vs[i].ranges = rd_alloc(&r, vs[i].n_ranges ? vs[i].n_ranges : 1, sizeof(etl_variant_range));
    for (uint32_t k = 0; k < vs[i].n_ranges && !r.bad; ++k) {
      vs[i].ranges[k].dim = rd_str(&r);
      vs[i].ranges[k].lo = rd_i64(&r);
      vs[i].ranges[k].hi = rd_i64(&r);
      if (!r.bad && vs[i].ranges[k].lo > vs[i].ranges[k].hi)
        rd_fail(&r, "a range whose lo is above its hi");
    }
  }
  if (!r.bad && r.p != r.end)
    rd_fail(&r, "trailing bytes");
  if (r.bad == 2)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory decoding the variant table");
  if (r.bad)
    return etl_error(ETL_ERROR_INVALID_ARTIFACT, "artifact variant table is malformed: %s (in %s)",
                     r.why, r.at);
  out->variants = vs;
  for (uint32_t i = 0; i < nv; ++i) {
    etl_artifact *a = calloc(1, sizeof *a);
    if (!a)
      return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory reading variant %u", i);
    out->n_variants = i + 1; /* freed with `out` from here on */
    vs[i].art = a;
    etlStatus st = artifact_parse(secs[i], sizes[i], a, 1);
    const char *why = !st && i > 0 ? interface_differs(&vs[0].art->meta, &a->meta) : NULL;
    if (st || why) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", why ? why : etlGetLastErrorMessage());
      return etl_error(st ? st : ETL_ERROR_INVALID_ARTIFACT, "artifact variant %u ('%s'): %s", i,
                       vs[i].label, msg);
    }
  }
  const etl_meta *m = &vs[0].art->meta;
  for (uint32_t i = 0; i < nv; ++i)
    for (uint32_t k = 0; k < vs[i].n_ranges; ++k) {
      etl_variant_range *g = &vs[i].ranges[k];
      uint32_t d = 0;
      while (d < m->n_dims && strcmp(m->dims[d].name, g->dim) != 0)
        ++d;
      if (d == m->n_dims)
        return etl_error(ETL_ERROR_INVALID_ARTIFACT,
                         "artifact variant %u ('%s'): its range names '%s', not a dim of the "
                         "program",
                         i, vs[i].label, g->dim);
      for (uint32_t j = 0; j < k; ++j)
        if (vs[i].ranges[j].dim_index == d)
          return etl_error(ETL_ERROR_INVALID_ARTIFACT,
                           "artifact variant %u ('%s'): two ranges of dim '%s'", i, vs[i].label,
                           g->dim);
      g->dim_index = d;
    }
  out->meta = *m;
  return ETL_SUCCESS;
}

/*===-- File ---------------------------------------------------------------===*/

void etl_artifact_free(etl_artifact *a) {
  for (uint32_t i = 0; i < a->n_variants; ++i)
    if (a->variants[i].art) {
      etl_artifact_free(a->variants[i].art);
      free(a->variants[i].art);
    }
  etl_arena_free(&a->arena);
  free(a->bytes);
  free(a->code);
  memset(a, 0, sizeof *a);
}

etlStatus etl_artifact_parse(const void *data, size_t size, etl_artifact *out) {
  return artifact_parse(data, size, out, 0);
}

/* `inner`: a variant's own artifact, which may not hold variants (so the
   recursion is one level deep). */
static etlStatus artifact_parse(const void *data, size_t size, etl_artifact *out, int inner) {
  memset(out, 0, sizeof *out);
  if (!data)
    return etl_error(ETL_ERROR_INVALID_VALUE, "artifact data is NULL");
  const uint8_t *b = data;
  if (size < sizeof(etl_artifact_header))
    return etl_error(ETL_ERROR_INVALID_ARTIFACT,
                     "not an ETL artifact: %zu bytes, smaller than the 32-byte header", size);
  if (memcmp(b, ETL_ARTIFACT_MAGIC, 4) != 0)
    return etl_error(ETL_ERROR_INVALID_ARTIFACT, "not an ETL artifact (bad magic)");
  uint32_t version = le32(b + 4);
  if (version < ETL_ARTIFACT_VERSION_MIN || version > ETL_ARTIFACT_VERSION)
    return etl_error(ETL_ERROR_UNSUPPORTED_VERSION,
                     "artifact version %u, this runtime reads %u .. %u (recompile with a "
                     "matching etlc)",
                     version, ETL_ARTIFACT_VERSION_MIN, ETL_ARTIFACT_VERSION);
  uint64_t file_size = le64(b + 8);
  uint32_t n_sections = le32(b + 16), checksum = le32(b + 20);
  if (file_size != size)
    return etl_error(ETL_ERROR_INVALID_ARTIFACT,
                     "artifact is truncated or padded: header says %llu bytes, got %zu",
                     (unsigned long long)file_size, size);
  uint32_t actual = etl_fnv1a(b + 32, size - 32);
  if (actual != checksum)
    return etl_error(ETL_ERROR_INVALID_ARTIFACT,
                     "artifact checksum mismatch (stored 0x%08x, computed 0x%08x): the file "
                     "is corrupted",
                     checksum, actual);
  if (le64(b + 24) != 0)
    return etl_error(ETL_ERROR_INVALID_ARTIFACT, "artifact header: reserved field not zero");
  uint64_t table_end = 32 + (uint64_t)n_sections * sizeof(etl_section_entry);
  if (n_sections == 0 || n_sections > 4096 || table_end > size)
    return etl_error(ETL_ERROR_INVALID_ARTIFACT,
                     "artifact section table out of bounds (%u "
                     "sections)",
                     n_sections);

  out->bytes = malloc(size);
  out->code = calloc(n_sections, sizeof(etl_code_section));
  if (!out->bytes || !out->code) {
    free(out->bytes);
    free(out->code);
    memset(out, 0, sizeof *out);
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory reading a %zu-byte artifact", size);
  }
  memcpy(out->bytes, data, size);
  out->size = size;
  b = out->bytes;

  const uint8_t *meta = NULL, *table = NULL;
  uint64_t meta_size = 0, table_size = 0;
  const uint8_t **var_secs = calloc(n_sections, sizeof *var_secs);
  uint64_t *var_sizes = calloc(n_sections, sizeof *var_sizes);
  uint32_t n_var = 0;
  etlStatus st = ETL_SUCCESS;
  if (!var_secs || !var_sizes)
    st = etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory reading a %zu-byte artifact", size);
  for (uint32_t i = 0; i < n_sections && st == ETL_SUCCESS; ++i) {
    const uint8_t *e = b + 32 + (size_t)i * sizeof(etl_section_entry);
    uint32_t kind = le32(e);
    char target[13];
    memcpy(target, e + 4, 12);
    target[12] = 0;
    uint64_t off = le64(e + 16), sz = le64(e + 24);
    if (memchr(e + 4, 0, 12) == NULL) {
      st = etl_error(ETL_ERROR_INVALID_ARTIFACT, "section %u: target name not NUL-terminated", i);
    } else if (off < table_end || off > size || sz > size - off) {
      st = etl_error(ETL_ERROR_INVALID_ARTIFACT,
                     "section %u (%s) out of bounds: offset %llu size %llu, file %zu bytes", i,
                     target, (unsigned long long)off, (unsigned long long)sz, size);
    } else if (kind == ETL_SECTION_META) {
      if (meta)
        st = etl_error(ETL_ERROR_INVALID_ARTIFACT, "artifact has two metadata sections");
      meta = b + off;
      meta_size = sz;
    } else if (kind == ETL_SECTION_CODE) {
      if (target[0] == 0) {
        st = etl_error(ETL_ERROR_INVALID_ARTIFACT, "code section %u has no target name", i);
        break;
      }
      for (uint32_t k = 0; k < out->n_code; ++k)
        if (strcmp(out->code[k].target, target) == 0)
          st = etl_error(ETL_ERROR_INVALID_ARTIFACT, "two code sections for target '%s'", target);
      etl_code_section *c = &out->code[out->n_code++];
      memcpy(c->target, target, sizeof target);
      c->data = b + off;
      c->size = sz;
    } else if (inner && (kind == ETL_SECTION_VARIANTS || kind == ETL_SECTION_VARIANT)) {
      st = etl_error(ETL_ERROR_INVALID_ARTIFACT, "it holds variants itself");
    } else if (kind == ETL_SECTION_VARIANTS && target[0] == 0) {
      if (table)
        st = etl_error(ETL_ERROR_INVALID_ARTIFACT, "artifact has two variant tables");
      table = b + off;
      table_size = sz;
    } else if (kind == ETL_SECTION_VARIANT && target[0] == 0) {
      var_secs[n_var] = b + off;
      var_sizes[n_var++] = sz;
    } else {
      st = etl_error(ETL_ERROR_INVALID_ARTIFACT, "section %u has unknown kind %u", i, kind);
    }
  }
  if (st == ETL_SUCCESS && (table || n_var) && (meta || out->n_code))
    st = etl_error(ETL_ERROR_INVALID_ARTIFACT,
                   "artifact has both variants and a metadata or code section of its own");
  else if (st == ETL_SUCCESS && n_var && !table)
    st = etl_error(ETL_ERROR_INVALID_ARTIFACT, "artifact has variant sections but no variant table");
  else if (st == ETL_SUCCESS && table)
    st = parse_variants(out, table, table_size, var_secs, var_sizes, n_var);
  else if (st == ETL_SUCCESS && !meta)
    st = etl_error(ETL_ERROR_INVALID_ARTIFACT, "artifact has no metadata section");
  free(var_secs);
  free(var_sizes);
  if (st == ETL_SUCCESS && !table) {
    rd r;
    memset(&r, 0, sizeof r);
    r.base = r.p = meta;
    r.end = meta + meta_size;
    r.arena = &out->arena;
    r.version = version;
    parse_meta(&r, &out->meta);
    if (r.bad == 2)
      st = etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory decoding artifact metadata");
    else if (r.bad)
      st = etl_error(ETL_ERROR_INVALID_ARTIFACT, "artifact metadata is malformed: %s (in %s)",
                     r.why, r.at);
  }
  if (st != ETL_SUCCESS)
    etl_artifact_free(out);
  return st;
}
