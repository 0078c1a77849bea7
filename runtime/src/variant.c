/*===- src/variant.c - Artifacts of several variants -----------------------===
 *
 * An artifact compiled with `etlc compile --variant` holds the program
 * several times, each with its own tunable values and binding range
 * (etl_abi.h). Loading it makes one program per variant (a "sub", with a
 * handle of its own, never handed out) and an outer program without code
 * whose metadata is the interface every variant shares: the caller binds
 * the outer program, and each run copies its bindings into the variant
 * the dims select and runs that one (run.c, timeline.c forward to it).
 *===----------------------------------------------------------------------===*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"

static etl_program *live(etl_program *sub) {
  return sub && etl_prog_of((etlProgram)(uintptr_t)sub->handle) == sub ? sub : NULL;
}

void etl_variants_destroy(etl_program *p) {
  for (uint32_t i = 0; i < p->n_subs; ++i) {
    if (live(p->subs[i])) /* a context's destroy may have destroyed it */
      etlProgramDestroy((etlProgram)(uintptr_t)p->subs[i]->handle);
    if (p->sub_tensor)
      free(p->sub_tensor[i]);
  }
  free(p->subs);
  free(p->sub_tensor);
  p->subs = NULL;
  p->sub_tensor = NULL;
  p->n_subs = 0;
  p->ran = NULL;
}

etlStatus etl_variants_load(etl_program *p, int load_code) {
  uint32_t n = p->art.n_variants;
  const etl_meta *m = &p->art.meta;
  p->subs = calloc(n, sizeof *p->subs);
  p->sub_tensor = calloc(n, sizeof *p->sub_tensor);
  if (!p->subs || !p->sub_tensor)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory loading a program");
  for (uint32_t i = 0; i < n; ++i) {
    p->sub_tensor[i] = calloc(m->n_tensors + 1, sizeof(uint32_t));
    if (!p->sub_tensor[i]) {
      etl_variants_destroy(p);
      return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory loading a program");
    }
    /* The first variant's decoded artifact backs p->art.meta: its sub
       keeps it alive as long as this program. */
    etlStatus st = etl_program_new(p->ctx, p->art.variants[i].art, load_code, &p->subs[i]);
    p->n_subs = i + (st == ETL_SUCCESS);
    if (st) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", etlGetLastErrorMessage());
      etl_variants_destroy(p);
      return etl_error(st, "variant %u ('%s'): %s", i, p->art.variants[i].label, msg);
    }
    const etl_meta *sm = &p->subs[i]->art.meta;
    for (uint32_t t = 0; t < m->n_tensors; ++t)
      for (uint32_t k = 0; k < sm->n_tensors; ++k)
        if (!m->tensors[t].is_buffer && strcmp(sm->tensors[k].name, m->tensors[t].name) == 0)
          p->sub_tensor[i][t] = k;
  }
  return ETL_SUCCESS;
}

/* "'B<=1:TK=64', 'B>1:TK=32'" */
static void labels(const etl_artifact *a, char *buf, size_t n) {
  size_t at = 0;
  buf[0] = 0;
  for (uint32_t i = 0; i < a->n_variants && at < n; ++i)
    at += (size_t)snprintf(buf + at, n - at, "%s'%s'", i ? ", " : "", a->variants[i].label);
}

/* The variant the bound dims select (-1: none) or an unbound dim's status. */
static etlStatus select_variant(etl_program *p, const char *fn, int *index) {
  const etl_artifact *a = &p->art;
  const etl_meta *m = &a->meta;
  for (uint32_t i = 0; i < a->n_variants; ++i) {
    const etl_variant *v = &a->variants[i];
    uint32_t k = 0;
    for (; k < v->n_ranges; ++k) {
      const etl_variant_range *g = &v->ranges[k];
      if (!p->dim_bound[g->dim_index])
        return etl_error(ETL_ERROR_UNBOUND,
                         "%s: dimension '%s' is not bound; variant '%s' of the program is for a "
                         "range of it",
                         fn, m->dims[g->dim_index].name, v->label);
      int64_t d = p->dim_values[g->dim_index];
      if (d < g->lo || d > g->hi)
        break;
    }
    if (k == v->n_ranges) {
      *index = (int)i;
      return ETL_SUCCESS;
    }
  }
  char dims[512], list[1024];
  size_t at = 0;
  dims[0] = 0;
  for (uint32_t d = 0; d < m->n_dims && at < sizeof dims; ++d)
    if (p->dim_bound[d])
      at += (size_t)snprintf(dims + at, sizeof dims - at, "%s%s = %lld", at ? ", " : "",
                             m->dims[d].name, (long long)p->dim_values[d]);
  labels(a, list, sizeof list);
  return etl_error(ETL_ERROR_BINDING,
                   "%s: no variant of the program is for %s (its variants, tried in order: %s); "
                   "compile one for this binding, or a last one for every binding ('*:')",
                   fn, dims, list);
}

etlStatus etl_variant_bind(etl_program *p, etl_program **out, int *index) {
  etlStatus st = select_variant(p, "etlRun", index);
  if (st)
    return st;
  etl_program *s = live(p->subs[*index]);
  if (!s)
    return etl_error(ETL_ERROR_INVALID_HANDLE, "etlRun: the program's variant was destroyed");
  const etl_meta *m = &p->art.meta;
  memcpy(s->dim_values, p->dim_values, m->n_dims * sizeof(int64_t));
  memcpy(s->dim_bound, p->dim_bound, m->n_dims);
  for (uint32_t t = 0; t < m->n_tensors; ++t)
    if (!m->tensors[t].is_buffer)
      s->tensors[p->sub_tensor[*index][t]] = p->tensors[t];
  memcpy(s->scalar_bits, p->scalar_bits, m->n_scalars * sizeof(uint64_t));
  memcpy(s->scalar_bound, p->scalar_bound, m->n_scalars);
  *out = s;
  return ETL_SUCCESS;
}

etlStatus etlProgramNumVariants(etlProgram h, int *count) {
  ETL_GET_PROG(p, h);
  if (!count)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramNumVariants: count is NULL");
  *count = p->art.n_variants ? (int)p->art.n_variants : 1;
  return ETL_SUCCESS;
}

etlStatus etlProgramVariantLabel(etlProgram h, int index, const char **label) {
  ETL_GET_PROG(p, h);
  if (!label)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramVariantLabel: label is NULL");
  int n = p->art.n_variants ? (int)p->art.n_variants : 1;
  if (index < 0 || index >= n)
    return etl_error(ETL_ERROR_INVALID_VALUE,
                     "etlProgramVariantLabel: index %d out of range (%d variant%s)", index, n,
                     n == 1 ? "" : "s");
  *label = p->art.n_variants ? p->art.variants[index].label : "";
  return ETL_SUCCESS;
}

etlStatus etlProgramSelectVariant(etlProgram h, int *index) {
  ETL_GET_PROG(p, h);
  if (!index)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramSelectVariant: index is NULL");
  *index = 0;
  return p->art.n_variants ? select_variant(p, "etlProgramSelectVariant", index) : ETL_SUCCESS;
}

etlStatus etlProgramLastVariant(etlProgram h, int *index) {
  ETL_GET_PROG(p, h);
  if (!index)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramLastVariant: index is NULL");
  *index = p->ran_variant;
  return ETL_SUCCESS;
}
