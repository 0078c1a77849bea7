/*===- src/program.c - Loading and destroying programs --------------------===
 *
 * A program is a decoded artifact (artifact.c) plus its bindings, its
 * per-shape plan cache and the code its context's device loaded from it.
 * Loading validates the whole artifact before the device sees it. What a
 * program takes (dims, tensors, facts) is described by describe.c.
 *===----------------------------------------------------------------------===*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"

static void free_program(etl_program *p) {
  etl_variants_destroy(p);
  free(p->dim_values);
  free(p->dim_bound);
  free(p->tensors);
  free(p->scalar_bits);
  free(p->scalar_bound);
  free(p->timeline_path);
  free(p->profile_path);
  free(p->profile_samples);
  free(p->timeline);
  free(p->run_message);
  etl_artifact_free(&p->art);
  free(p);
}

etlStatus etlProgramLoadMemory(etlContext h, const void *data, size_t size, etlProgram *out) {
  return etl_program_load(h, data, size, 1, out);
}

etlStatus etl_program_new(etl_context *c, etl_artifact *art, int load_code, etl_program **out) {
  *out = NULL;
  etl_program *p = calloc(1, sizeof *p);
  if (!p) {
    etl_artifact_free(art);
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory loading a program");
  }
  p->ctx = c;
  p->art = *art;
  memset(art, 0, sizeof *art);
  p->ran_variant = -1;
  const etl_meta *m = &p->art.meta;
  etlStatus st = ETL_SUCCESS;
  p->dim_values = calloc(m->n_dims + 1, sizeof(int64_t));
  p->dim_bound = calloc(m->n_dims + 1, 1);
  p->tensors = calloc(m->n_tensors + 1, sizeof(etl_tensor_binding));
  p->scalar_bits = calloc(m->n_scalars + 1, sizeof(uint64_t));
  p->scalar_bound = calloc(m->n_scalars + 1, 1);
  if (!p->dim_values || !p->dim_bound || !p->tensors || !p->scalar_bits || !p->scalar_bound)
    st = etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory loading a program");
  else if ((st = etl_describe_init(p)) == ETL_SUCCESS && p->art.n_variants)
    st = etl_variants_load(p, load_code); /* the subs load the code */
  else if (st == ETL_SUCCESS && load_code)
    st = c->dev->program_load(p);
  if (st) {
    free_program(p);
    return st;
  }
  p->handle = etl_handle_new(ETL_HANDLE_PROGRAM, p);
  if (!p->handle) {
    if (load_code && !p->art.n_variants)
      c->dev->program_unload(p);
    free_program(p);
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory loading a program");
  }
  pthread_mutex_lock(&c->mu);
  p->next = c->programs;
  c->programs = p;
  pthread_mutex_unlock(&c->mu);
  *out = p;
  return ETL_SUCCESS;
}

etlStatus etl_program_load(etlContext h, const void *data, size_t size, int load_code,
                           etlProgram *out) {
  ETL_GET_CTX(c, h);
  if (!out)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramLoadMemory: prog is NULL");
  *out = NULL;
  if (!data)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramLoadMemory: data is NULL");
  etl_artifact art;
  etlStatus st = etl_artifact_parse(data, size, &art);
  if (st)
    return st;
  etl_program *p = NULL;
  if ((st = etl_program_new(c, &art, load_code, &p)))
    return st;
  *out = (etlProgram)(uintptr_t)p->handle;
  return ETL_SUCCESS;
}

etlStatus etlProgramLoadFile(etlContext h, const char *path, etlProgram *out) {
  ETL_GET_CTX(c, h);
  (void)c;
  if (!out)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramLoadFile: prog is NULL");
  *out = NULL;
  if (!path)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramLoadFile: path is NULL");
  FILE *f = fopen(path, "rb");
  if (!f)
    return etl_error(ETL_ERROR_NOT_FOUND, "cannot open '%s': %s", path, strerror(errno));
  char *buf = NULL;
  size_t size = 0, cap = 0;
  for (;;) {
    if (size == cap) {
      cap = cap ? 2 * cap : 65536;
      char *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        fclose(f);
        return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory reading '%s'", path);
      }
      buf = nb;
    }
    size_t got = fread(buf + size, 1, cap - size, f);
    size += got;
    if (got == 0)
      break;
  }
  int read_err = ferror(f);
  fclose(f);
  if (read_err) {
    free(buf);
    return etl_error(ETL_ERROR_INVALID_ARTIFACT, "error reading '%s'", path);
  }
  etlStatus st = etlProgramLoadMemory(h, buf ? buf : "", size, out);
  free(buf);
  if (st) {
    char msg[4096];
    snprintf(msg, sizeof msg, "%s: %s", path, etlGetLastErrorMessage());
    etl_error_str(st, msg);
  }
  return st;
}

etlStatus etlProgramDestroy(etlProgram h) {
  if (!h)
    return ETL_SUCCESS;
  ETL_GET_PROG(p, h);
  etl_handle_drop(p->handle); /* from here on the handle is refused */
  etl_context *c = p->ctx;
  pthread_mutex_lock(&c->mu);
  for (etl_program **pp = &c->programs; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  pthread_mutex_unlock(&c->mu);
  etl_run_drain(p); /* its run in flight uses the plans freed below */
  while (p->plans) {
    etl_plan *n = p->plans->next;
    etl_plan_release(c, p->plans, &p->art.meta);
    p->plans = n;
  }
  if (!p->art.n_variants) /* with variants, the subs hold the code */
    c->dev->program_unload(p);
  free_program(p);
  return ETL_SUCCESS;
}
