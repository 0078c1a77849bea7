/*===- src/api.c - Contexts, memory, programs, binding and etlRun ----------===
 *
 * The public entry points. Validation lives here: every handle and argument
 * is checked and a failing call changes nothing. etlRun checks all bindings
 * before anything is allocated or launched, then takes the plan for the
 * bound dims from the program's cache (building it and its device memory on
 * a miss), fills the argument block, resets the event counters and hands
 * the launch to the device (sim.c or cuda.c). With the timeline on it also
 * gives the launch a record buffer and writes the Chrome trace afterwards.
 *===----------------------------------------------------------------------===*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define ETL_MAX_CACHED_PLANS 8

/*===-- Handle checks ------------------------------------------------------===*/

static int ctx_ok(etlContext c) { return c && c->magic == ETL_CTX_MAGIC; }
static int prog_ok(etlProgram p) { return p && p->magic == ETL_PROG_MAGIC; }

#define CHECK_CTX(c)                                                                               \
  do {                                                                                             \
    if (!ctx_ok(c))                                                                                \
      return etl_error(ETL_ERROR_INVALID_HANDLE, "%s: invalid or NULL context", __func__);         \
  } while (0)
#define CHECK_PROG(p)                                                                              \
  do {                                                                                             \
    if (!prog_ok(p))                                                                               \
      return etl_error(ETL_ERROR_INVALID_HANDLE, "%s: invalid or NULL program", __func__);         \
  } while (0)

/*===-- Contexts -----------------------------------------------------------===*/

etlContextParams etlContextDefaultParams(void) {
  etlContextParams p;
  memset(&p, 0, sizeof p);
  p.sim_workers = 4;
  p.sim_stack_bytes = 64 * 1024;
  p.watchdog_ms = 10000;
  p.cuda_device = 0;
  return p;
}

etlStatus etlContextCreate(etlContext *out, const char *device, const etlContextParams *params) {
  if (!out)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlContextCreate: ctx is NULL");
  *out = NULL;
  if (!device)
    device = "auto";
  etlContextParams prm = params ? *params : etlContextDefaultParams();
  if (prm.sim_workers < 1 || prm.sim_workers > 1024)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlContextCreate: sim_workers %u not in [1, 1024]",
                     prm.sim_workers);
  if (prm.sim_stack_bytes < 16384)
    prm.sim_stack_bytes = 16384;
  if (prm.watchdog_ms == 0)
    prm.watchdog_ms = 10000;
  int want_sim = strcmp(device, "sim") == 0, want_cuda = strcmp(device, "cuda") == 0;
  int want_auto = strcmp(device, "auto") == 0;
  if (!want_sim && !want_cuda && !want_auto)
    return etl_error(ETL_ERROR_NOT_FOUND,
                     "etlContextCreate: unknown device '%s' (use \"sim\", \"cuda\" or \"auto\")",
                     device);
  etlContext c = calloc(1, sizeof *c);
  if (!c)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory creating a context");
  c->params = prm;
  pthread_mutex_init(&c->mu, NULL);
  pthread_mutex_init(&c->launch_mu, NULL);
  etlStatus st = ETL_SUCCESS;
  if (want_cuda || want_auto) {
    st = etl_cuda_context_create(c, want_auto);
    if (st == ETL_SUCCESS) {
      c->kind = ETL_DEVICE_CUDA;
    } else if (want_cuda) {
      pthread_mutex_destroy(&c->mu);
      pthread_mutex_destroy(&c->launch_mu);
      free(c);
      return st;
    }
  }
  if (!want_cuda && c->kind != ETL_DEVICE_CUDA) {
    c->kind = ETL_DEVICE_SIM;
    c->num_ctas = prm.sim_workers;
    snprintf(c->device_name, sizeof c->device_name, "sim (%u workers)", prm.sim_workers);
    /* the control block (etl_abi.h): abort flag, then a progress word per CTA */
    size_t control = (ETL_CONTROL_BYTES(c->num_ctas) + 63u) / 64u * 64u;
    c->abort_host = aligned_alloc(64, control);
    if (!c->abort_host) {
      pthread_mutex_destroy(&c->mu);
      pthread_mutex_destroy(&c->launch_mu);
      free(c);
      return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory creating a context");
    }
    memset(c->abort_host, 0, control);
    c->abort_dptr = (uint64_t)(uintptr_t)c->abort_host;
  }
  c->magic = ETL_CTX_MAGIC;
  *out = c;
  return ETL_SUCCESS;
}

etlStatus etlContextDestroy(etlContext c) {
  if (!c)
    return ETL_SUCCESS;
  CHECK_CTX(c);
  while (c->programs)
    etlProgramDestroy(c->programs);
  for (size_t i = 0; i < c->n_allocs; ++i)
    etl_dev_free(c, c->allocs[i].dptr);
  free(c->allocs);
  if (c->kind == ETL_DEVICE_CUDA)
    etl_cuda_context_destroy(c);
  else
    free(c->abort_host);
  pthread_mutex_destroy(&c->mu);
  pthread_mutex_destroy(&c->launch_mu);
  c->magic = 0;
  free(c);
  return ETL_SUCCESS;
}

const char *etlContextDeviceName(etlContext c) { return ctx_ok(c) ? c->device_name : NULL; }

int etlContextIsGpu(etlContext c) { return ctx_ok(c) && c->kind == ETL_DEVICE_CUDA; }

/*===-- Device memory ------------------------------------------------------===*/

etlStatus etl_dev_alloc(etlContext c, size_t bytes, uint64_t *dptr) {
  if (c->kind == ETL_DEVICE_CUDA)
    return etl_cuda_malloc(c, bytes ? bytes : 1, dptr);
  size_t rounded = (bytes + 255) & ~(size_t)255;
  if (rounded < bytes)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "allocation too large");
  void *p = aligned_alloc(256, rounded ? rounded : 256);
  if (!p)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory allocating %zu bytes", bytes);
  memset(p, 0, rounded ? rounded : 256);
  *dptr = (uint64_t)(uintptr_t)p;
  return ETL_SUCCESS;
}

void etl_dev_free(etlContext c, uint64_t dptr) {
  if (!dptr)
    return;
  if (c->kind == ETL_DEVICE_CUDA)
    etl_cuda_free(c, dptr);
  else
    free((void *)(uintptr_t)dptr);
}

etlStatus etl_dev_htod(etlContext c, uint64_t dst, const void *src, size_t n) {
  if (n == 0)
    return ETL_SUCCESS;
  if (c->kind == ETL_DEVICE_CUDA)
    return etl_cuda_htod(c, dst, src, n);
  memcpy((void *)(uintptr_t)dst, src, n);
  return ETL_SUCCESS;
}

etlStatus etlMalloc(etlContext c, size_t bytes, void **dptr) {
  CHECK_CTX(c);
  if (!dptr)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlMalloc: dptr is NULL");
  *dptr = NULL;
  pthread_mutex_lock(&c->mu);
  if (c->n_allocs == c->cap_allocs) {
    size_t cap = c->cap_allocs ? 2 * c->cap_allocs : 16;
    etl_alloc *a = realloc(c->allocs, cap * sizeof *a);
    if (!a) {
      pthread_mutex_unlock(&c->mu);
      return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    c->allocs = a;
    c->cap_allocs = cap;
  }
  uint64_t d = 0;
  etlStatus st = etl_dev_alloc(c, bytes, &d);
  if (st == ETL_SUCCESS) {
    c->allocs[c->n_allocs].dptr = d;
    c->allocs[c->n_allocs].bytes = bytes;
    c->n_allocs++;
    *dptr = (void *)(uintptr_t)d;
  }
  pthread_mutex_unlock(&c->mu);
  return st;
}

etlStatus etlFree(etlContext c, void *dptr) {
  CHECK_CTX(c);
  if (!dptr)
    return ETL_SUCCESS;
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < c->n_allocs; ++i) {
    if (c->allocs[i].dptr == (uint64_t)(uintptr_t)dptr) {
      etl_dev_free(c, c->allocs[i].dptr);
      c->allocs[i] = c->allocs[--c->n_allocs];
      pthread_mutex_unlock(&c->mu);
      return ETL_SUCCESS;
    }
  }
  pthread_mutex_unlock(&c->mu);
  return etl_error(ETL_ERROR_INVALID_VALUE,
                   "etlFree: %p was not allocated by etlMalloc in this "
                   "context (or was freed already)",
                   dptr);
}

etlStatus etlMemcpyHtoD(etlContext c, void *dst, const void *src, size_t n) {
  CHECK_CTX(c);
  if (n == 0)
    return ETL_SUCCESS;
  if (!dst || !src)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlMemcpyHtoD: NULL pointer");
  return etl_dev_htod(c, (uint64_t)(uintptr_t)dst, src, n);
}

etlStatus etlMemcpyDtoH(etlContext c, void *dst, const void *src, size_t n) {
  CHECK_CTX(c);
  if (n == 0)
    return ETL_SUCCESS;
  if (!dst || !src)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlMemcpyDtoH: NULL pointer");
  if (c->kind == ETL_DEVICE_CUDA)
    return etl_cuda_dtoh(c, dst, (uint64_t)(uintptr_t)src, n);
  memcpy(dst, src, n);
  return ETL_SUCCESS;
}

/*===-- Programs -----------------------------------------------------------===*/

static void plan_release(etlContext c, etl_plan *pl, const etl_meta *m) {
  for (uint32_t t = 0; t < m->n_tensors; ++t)
    etl_dev_free(c, pl->buffer_dptr[t]);
  etl_dev_free(c, pl->counters_dptr);
  etl_dev_free(c, pl->queue_dptr);
  etl_dev_free(c, pl->offs_dptr);
  etl_dev_free(c, pl->dyn_dptr);
  etl_dev_free(c, pl->args_dptr);
  etl_plan_free_host(pl);
}

etlStatus etlProgramLoadMemory(etlContext c, const void *data, size_t size, etlProgram *out) {
  return etl_program_load(c, data, size, 1, out);
}

etlStatus etl_program_load(etlContext c, const void *data, size_t size, int load_code,
                           etlProgram *out) {
  CHECK_CTX(c);
  if (!out)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramLoadMemory: prog is NULL");
  *out = NULL;
  if (!data)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramLoadMemory: data is NULL");
  etlProgram p = calloc(1, sizeof *p);
  if (!p)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory loading a program");
  p->sim_fd = -1;
  p->ctx = c;
  etlStatus st = etl_artifact_parse(data, size, &p->art);
  if (st) {
    free(p);
    return st;
  }
  const etl_meta *m = &p->art.meta;
  p->dim_values = calloc(m->n_dims + 1, sizeof(int64_t));
  p->dim_bound = calloc(m->n_dims + 1, 1);
  p->tensors = calloc(m->n_tensors + 1, sizeof(etl_tensor_binding));
  if (!p->dim_values || !p->dim_bound || !p->tensors) {
    st = etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory loading a program");
  } else if (load_code) {
    st = c->kind == ETL_DEVICE_CUDA ? etl_cuda_program_load(p) : etl_sim_program_load(p);
  }
  if (st) {
    free(p->dim_values);
    free(p->dim_bound);
    free(p->tensors);
    etl_artifact_free(&p->art);
    free(p);
    return st;
  }
  p->magic = ETL_PROG_MAGIC;
  pthread_mutex_lock(&c->mu);
  p->next = c->programs;
  c->programs = p;
  pthread_mutex_unlock(&c->mu);
  *out = p;
  return ETL_SUCCESS;
}

etlStatus etlProgramLoadFile(etlContext c, const char *path, etlProgram *out) {
  CHECK_CTX(c);
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
  etlStatus st = etlProgramLoadMemory(c, buf ? buf : "", size, out);
  free(buf);
  if (st) {
    char msg[4096];
    snprintf(msg, sizeof msg, "%s: %s", path, etlGetLastErrorMessage());
    etl_error_str(st, msg);
  }
  return st;
}

etlStatus etlProgramDestroy(etlProgram p) {
  if (!p)
    return ETL_SUCCESS;
  CHECK_PROG(p);
  etlContext c = p->ctx;
  pthread_mutex_lock(&c->mu);
  for (etlProgram *pp = &c->programs; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  pthread_mutex_unlock(&c->mu);
  while (p->plans) {
    etl_plan *n = p->plans->next;
    plan_release(c, p->plans, &p->art.meta);
    p->plans = n;
  }
  if (c->kind == ETL_DEVICE_CUDA)
    etl_cuda_program_unload(p);
  else
    etl_sim_program_unload(p);
  free(p->dim_values);
  free(p->dim_bound);
  free(p->tensors);
  free(p->timeline_path);
  free(p->timeline);
  etl_artifact_free(&p->art);
  p->magic = 0;
  free(p);
  return ETL_SUCCESS;
}

etlStatus etlProgramNumDims(etlProgram p, int *count) {
  CHECK_PROG(p);
  if (!count)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramNumDims: count is NULL");
  *count = (int)p->art.meta.n_dims;
  return ETL_SUCCESS;
}

etlStatus etlProgramDimName(etlProgram p, int index, const char **name) {
  CHECK_PROG(p);
  if (!name)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramDimName: name is NULL");
  if (index < 0 || (uint32_t)index >= p->art.meta.n_dims)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramDimName: index %d not in [0, %u)", index,
                     p->art.meta.n_dims);
  *name = p->art.meta.dims[index].name;
  return ETL_SUCCESS;
}

etlStatus etlProgramNumTensors(etlProgram p, int *count) {
  CHECK_PROG(p);
  if (!count)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramNumTensors: count is NULL");
  int n = 0;
  for (uint32_t i = 0; i < p->art.meta.n_tensors; ++i)
    n += !p->art.meta.tensors[i].is_buffer;
  *count = n;
  return ETL_SUCCESS;
}

etlStatus etlProgramTensorName(etlProgram p, int index, const char **name) {
  CHECK_PROG(p);
  if (!name)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramTensorName: name is NULL");
  int n = 0;
  for (uint32_t i = 0; i < p->art.meta.n_tensors; ++i) {
    if (p->art.meta.tensors[i].is_buffer)
      continue;
    if (n++ == index) {
      *name = p->art.meta.tensors[i].name;
      return ETL_SUCCESS;
    }
  }
  return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramTensorName: index %d not in [0, %d)", index,
                   n);
}

/*===-- Binding ------------------------------------------------------------===*/

static const char *dtype_name(uint32_t e) {
  switch (e) {
  case ETL_ELEM_F32:
    return "f32";
  case ETL_ELEM_F16:
    return "f16";
  case ETL_ELEM_I32:
    return "i32";
  case ETL_ELEM_I64:
    return "i64";
  case ETL_ELEM_BF16:
    return "bf16";
  default:
    return "?";
  }
}

static void list_names(etlProgram p, int dims, char *buf, size_t n) {
  const etl_meta *m = &p->art.meta;
  size_t len = 0;
  buf[0] = 0;
  uint32_t count = dims ? m->n_dims : m->n_tensors;
  for (uint32_t i = 0; i < count && len < n; ++i) {
    if (!dims && m->tensors[i].is_buffer)
      continue;
    const char *nm = dims ? m->dims[i].name : m->tensors[i].name;
    len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "", nm);
  }
  if (len == 0)
    snprintf(buf, n, "none");
}

etlStatus etlBindDim(etlProgram p, const char *name, int64_t value) {
  CHECK_PROG(p);
  if (!name)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlBindDim: name is NULL");
  const etl_meta *m = &p->art.meta;
  for (uint32_t i = 0; i < m->n_dims; ++i) {
    if (strcmp(m->dims[i].name, name) != 0)
      continue;
    if (value < 1)
      return etl_error(ETL_ERROR_BINDING, "etlBindDim: dimension '%s' = %lld, must be >= 1", name,
                       (long long)value);
    p->dim_values[i] = value;
    p->dim_bound[i] = 1;
    return ETL_SUCCESS;
  }
  char names[1024];
  list_names(p, 1, names, sizeof names);
  return etl_error(ETL_ERROR_NOT_FOUND, "etlBindDim: program has no dimension '%s' (it has: %s)",
                   name, names);
}

etlStatus etlBindTensor(etlProgram p, const char *name, void *dptr, etlDType dtype, int rank,
                        const int64_t *shape) {
  CHECK_PROG(p);
  if (!name)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlBindTensor: name is NULL");
  const etl_meta *m = &p->art.meta;
  for (uint32_t i = 0; i < m->n_tensors; ++i) {
    const etl_tensor_meta *t = &m->tensors[i];
    if (strcmp(t->name, name) != 0)
      continue;
    if (t->is_buffer)
      return etl_error(ETL_ERROR_NOT_FOUND,
                       "etlBindTensor: '%s' is an intermediate buffer the runtime allocates, "
                       "not a parameter",
                       name);
    if (!dptr)
      return etl_error(ETL_ERROR_INVALID_VALUE, "etlBindTensor: '%s': dptr is NULL", name);
    if ((uint32_t)dtype != t->elem)
      return etl_error(ETL_ERROR_BINDING, "etlBindTensor: tensor '%s' has dtype %s, bound as %s",
                       name, dtype_name(t->elem), dtype_name((uint32_t)dtype));
    if (rank < 0 || (uint32_t)rank != t->rank)
      return etl_error(ETL_ERROR_BINDING,
                       "etlBindTensor: tensor '%s' has rank %u, bound with "
                       "rank %d",
                       name, t->rank, rank);
    if (rank > 0 && !shape)
      return etl_error(ETL_ERROR_INVALID_VALUE, "etlBindTensor: '%s': shape is NULL", name);
    for (int k = 0; k < rank; ++k)
      if (shape[k] < 0)
        return etl_error(ETL_ERROR_BINDING, "etlBindTensor: tensor '%s': extent %d is negative",
                         name, k);
    etl_tensor_binding *b = &p->tensors[i];
    b->dptr = (uint64_t)(uintptr_t)dptr;
    for (int k = 0; k < rank; ++k)
      b->shape[k] = shape[k];
    b->bound = 1;
    return ETL_SUCCESS;
  }
  char names[1024];
  list_names(p, 0, names, sizeof names);
  return etl_error(ETL_ERROR_NOT_FOUND, "etlBindTensor: program has no tensor '%s' (it has: %s)",
                   name, names);
}

/*===-- Run ----------------------------------------------------------------===*/

static void dims_text(const etl_meta *m, const int64_t *dims, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  for (uint32_t i = 0; i < m->n_dims && len < n; ++i)
    len += (size_t)snprintf(buf + len, n - len, "%s%s=%lld", i ? ", " : "", m->dims[i].name,
                            (long long)dims[i]);
}

static void shape_text(const int64_t *s, uint32_t rank, char *buf, size_t n) {
  size_t len = (size_t)snprintf(buf, n, "[");
  for (uint32_t k = 0; k < rank && len < n; ++k)
    len += (size_t)snprintf(buf + len, n - len, "%s%lld", k ? ", " : "", (long long)s[k]);
  if (len < n)
    snprintf(buf + len, n - len, "]");
}

static etlStatus validate(etlProgram p) {
  const etl_meta *m = &p->art.meta;
  char err[160], dt[512];
  for (uint32_t i = 0; i < m->n_dims; ++i)
    if (!p->dim_bound[i])
      return etl_error(ETL_ERROR_UNBOUND, "etlRun: dimension '%s' is not bound (call etlBindDim)",
                       m->dims[i].name);
  for (uint32_t i = 0; i < m->n_tensors; ++i)
    if (!m->tensors[i].is_buffer && !p->tensors[i].bound)
      return etl_error(ETL_ERROR_UNBOUND, "etlRun: tensor '%s' is not bound (call etlBindTensor)",
                       m->tensors[i].name);
  dims_text(m, p->dim_values, dt, sizeof dt);
  for (uint32_t i = 0; i < m->n_constraints; ++i) {
    const etl_constraint_meta *c = &m->constraints[i];
    int64_t v;
    if (etl_expr_eval(&c->cond, p->dim_values, m->n_dims, NULL, 0, &v, err, sizeof err))
      return etl_error(ETL_ERROR_BINDING,
                       "etlRun: constraint '%s' (%s) cannot be evaluated with "
                       "%s: %s",
                       c->text, c->where, dt, err);
    if (!v)
      return etl_error(ETL_ERROR_BINDING,
                       "etlRun: constraint '%s' violated with %s (declared at %s)", c->text, dt,
                       c->where);
  }
  for (uint32_t i = 0; i < m->n_tensors; ++i) {
    const etl_tensor_meta *t = &m->tensors[i];
    if (t->is_buffer)
      continue;
    int64_t want[ETL_MAX_RANK];
    for (uint32_t k = 0; k < t->rank; ++k)
      if (etl_expr_eval(&t->shape[k], p->dim_values, m->n_dims, NULL, 0, &want[k], err, sizeof err))
        return etl_error(ETL_ERROR_BINDING,
                         "etlRun: shape of tensor '%s', dimension %u, with %s: "
                         "%s",
                         t->name, k, dt, err);
    if (memcmp(want, p->tensors[i].shape, t->rank * sizeof(int64_t)) != 0) {
      char ws[256], gs[256];
      shape_text(want, t->rank, ws, sizeof ws);
      shape_text(p->tensors[i].shape, t->rank, gs, sizeof gs);
      return etl_error(ETL_ERROR_BINDING,
                       "etlRun: tensor '%s' is bound with shape %s but the "
                       "program expects %s for %s",
                       t->name, gs, ws, dt);
    }
  }
  return ETL_SUCCESS;
}

/* Cached plan for the current dims, or a new one with its device memory. */
static etlStatus get_plan(etlProgram p, etl_plan **out) {
  etlContext c = p->ctx;
  const etl_meta *m = &p->art.meta;
  etl_plan **pp = &p->plans;
  for (; *pp; pp = &(*pp)->next) {
    if (memcmp((*pp)->dims, p->dim_values, m->n_dims * sizeof(int64_t)) == 0) {
      etl_plan *hit = *pp; /* move to front */
      *pp = hit->next;
      hit->next = p->plans;
      p->plans = hit;
      *out = hit;
      return ETL_SUCCESS;
    }
  }
  etl_plan *pl;
  etlStatus st = etl_plan_build(m, p->dim_values, c->num_ctas, &pl);
  if (st)
    return st;
  for (uint32_t t = 0; t < m->n_tensors && !st; ++t)
    if (m->tensors[t].is_buffer)
      st = etl_dev_alloc(c, pl->buffer_bytes[t], &pl->buffer_dptr[t]);
  if (!st)
    st = etl_dev_alloc(c, (pl->n_counters + 1) * sizeof(uint32_t), &pl->counters_dptr);
  if (!st)
    st = etl_dev_alloc(c, (2 * pl->n_entries + 2) * sizeof(uint32_t), &pl->queue_dptr);
  if (!st)
    st = etl_dev_alloc(c, ((size_t)c->num_ctas + 1) * sizeof(uint32_t), &pl->offs_dptr);
  if (!st && pl->dyn)
    st = etl_dev_alloc(c, pl->dyn_words * sizeof(uint32_t), &pl->dyn_dptr);
  if (!st && c->kind == ETL_DEVICE_CUDA)
    st = etl_dev_alloc(c, ETL_ARGS_BYTES(m), &pl->args_dptr);
  if (!st)
    st = etl_dev_htod(c, pl->queue_dptr, pl->queue, 2 * pl->n_entries * sizeof(uint32_t));
  if (!st)
    st = etl_dev_htod(c, pl->offs_dptr, pl->queue_offs,
                      ((size_t)c->num_ctas + 1) * sizeof(uint32_t));
  if (st) {
    plan_release(c, pl, m);
    return st;
  }
  /* evict beyond the cache size */
  uint32_t n = 0;
  for (etl_plan **q = &p->plans; *q;) {
    if (++n >= ETL_MAX_CACHED_PLANS) {
      etl_plan *victim = *q;
      *q = victim->next;
      plan_release(c, victim, m);
    } else {
      q = &(*q)->next;
    }
  }
  pl->next = p->plans;
  p->plans = pl;
  *out = pl;
  return ETL_SUCCESS;
}

/*===-- Timeline -----------------------------------------------------------===*/

static etlStatus dev_dtoh(etlContext c, void *dst, uint64_t src, size_t n) {
  if (n == 0)
    return ETL_SUCCESS;
  if (c->kind == ETL_DEVICE_CUDA)
    return etl_cuda_dtoh(c, dst, src, n);
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return ETL_SUCCESS;
}

/* Directory part of `path` ("." when it has none) is writable. */
static int dir_writable(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    return access(".", W_OK | X_OK) == 0;
  if (slash == path)
    return access("/", W_OK | X_OK) == 0;
  size_t n = (size_t)(slash - path);
  char *dir = malloc(n + 1);
  if (!dir)
    return 0;
  memcpy(dir, path, n);
  dir[n] = 0;
  int ok = access(dir, W_OK | X_OK) == 0;
  free(dir);
  return ok;
}

etlStatus etlProgramSetTimeline(etlProgram p, const char *json_path) {
  CHECK_PROG(p);
  if (json_path && !json_path[0])
    return etl_error(ETL_ERROR_INVALID_VALUE,
                     "etlProgramSetTimeline: json_path is empty (pass NULL to turn it off)");
  if (json_path && !dir_writable(json_path))
    return etl_error(ETL_ERROR_IO, "etlProgramSetTimeline: cannot write '%s': %s", json_path,
                     strerror(errno));
  char *copy = NULL;
  if (json_path) {
    copy = malloc(strlen(json_path) + 1);
    if (!copy)
      return etl_error(ETL_ERROR_OUT_OF_MEMORY, "etlProgramSetTimeline: out of memory");
    strcpy(copy, json_path);
  }
  free(p->timeline_path);
  p->timeline_path = copy;
  if (!copy) {
    free(p->timeline);
    p->timeline = NULL;
    p->timeline_count = 0;
  }
  return ETL_SUCCESS;
}

etlStatus etlProgramGetTimeline(etlProgram p, etlTimelineRecord *records, size_t capacity,
                                size_t *count) {
  CHECK_PROG(p);
  if (!count)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramGetTimeline: count is NULL");
  if (capacity && !records)
    return etl_error(ETL_ERROR_INVALID_VALUE,
                     "etlProgramGetTimeline: records is NULL with capacity %zu", capacity);
  *count = p->timeline_count;
  size_t n = capacity < p->timeline_count ? capacity : p->timeline_count;
  if (n)
    memcpy(records, p->timeline, n * sizeof *records);
  return ETL_SUCCESS;
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; ++s) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(f, "\\u%04x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

/* Chrome trace JSON of the recorded tasks, written to a temporary file in
 * the same directory and renamed over `path`. */
static etlStatus write_trace(etlProgram p, const etl_plan *pl, const char *path) {
  const etl_meta *m = &p->art.meta;
  const etlTimelineRecord *r = p->timeline;
  uint64_t t0 = UINT64_MAX;
  for (size_t i = 0; i < p->timeline_count; ++i)
    if (r[i].start_ns && r[i].start_ns < t0)
      t0 = r[i].start_ns;
  size_t n = strlen(path) + 32;
  char *tmp = malloc(n);
  if (!tmp)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "etlRun: out of memory writing the timeline");
  snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) {
    etlStatus st = etl_error(ETL_ERROR_IO, "etlRun: cannot write the timeline to '%s': %s", tmp,
                             strerror(errno));
    free(tmp);
    return st;
  }
  fputs("{\"traceEvents\":[", f);
  int first = 1;
  for (size_t i = 0; i < p->timeline_count; ++i) {
    if (!r[i].start_ns)
      continue; /* not run */
    char name[256];
    etl_plan_task_name(m, pl, r[i].group, r[i].linear, name, sizeof name);
    uint64_t dur = r[i].end_ns > r[i].start_ns ? r[i].end_ns - r[i].start_ns : 0;
    fputs(first ? "\n{\"name\":" : ",\n{\"name\":", f);
    first = 0;
    json_string(f, name);
    fprintf(f, ",\"ph\":\"X\",\"pid\":0,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"group\":",
            r[i].sm, (double)(r[i].start_ns - t0) / 1000.0, (double)dur / 1000.0);
    json_string(f, r[i].group < m->n_groups ? m->groups[r[i].group].name : "?");
    fprintf(f, ",\"linear\":%u,\"cta\":%u}}", r[i].linear, r[i].cta);
  }
  fputs("\n],\"displayTimeUnit\":\"ns\"}\n", f);
  int bad = ferror(f);
  int err = errno;
  if (fclose(f) != 0 && !bad) {
    bad = 1;
    err = errno;
  }
  if (!bad && rename(tmp, path) != 0) {
    bad = 1;
    err = errno;
  }
  etlStatus st = ETL_SUCCESS;
  if (bad) {
    remove(tmp);
    st = etl_error(ETL_ERROR_IO, "etlRun: cannot write the timeline to '%s': %s", path,
                   strerror(err));
  }
  free(tmp);
  return st;
}

/* Copies the launch's records back and pairs them with the queue: static
 * entries first, then one per dynamic queue slot (the slot names the item). */
static etlStatus collect_timeline(etlProgram p, const etl_plan *pl, uint64_t dptr) {
  size_t n = (size_t)pl->n_entries;
  etl_timeline_record *raw = calloc(n ? n : 1, sizeof *raw);
  etlTimelineRecord *out = calloc(n ? n : 1, sizeof *out);
  etlStatus st = ETL_SUCCESS;
  if (!raw || !out)
    st = etl_error(ETL_ERROR_OUT_OF_MEMORY, "etlRun: out of memory reading the timeline");
  if (!st)
    st = dev_dtoh(p->ctx, raw, dptr, n * sizeof *raw);
  if (st) {
    free(raw);
    free(out);
    return st;
  }
  uint32_t *slots = NULL;
  uint64_t slot0 = ETL_DYN_GROUP_OFF + 2 * (uint64_t)p->art.meta.n_groups;
  if (pl->dyn && pl->n_dynamic) {
    slots = calloc(pl->n_dynamic, sizeof(uint32_t));
    st = slots ? dev_dtoh(p->ctx, slots, pl->dyn_dptr + slot0 * 4, pl->n_dynamic * 4)
               : etl_error(ETL_ERROR_OUT_OF_MEMORY, "etlRun: out of memory reading the timeline");
    if (st) {
      free(slots);
      free(raw);
      free(out);
      return st;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    out[i].start_ns = raw[i].start_ns;
    out[i].end_ns = raw[i].end_ns;
    out[i].sm = raw[i].sm;
    out[i].cta = raw[i].cta;
    if (i < pl->n_static) {
      out[i].group = pl->queue[2 * i];
      out[i].linear = pl->queue[2 * i + 1];
      continue;
    }
    uint32_t item = slots ? slots[i - pl->n_static] : 0;
    if (item == 0) {
      out[i].start_ns = out[i].end_ns = 0; /* slot never filled: not run */
      continue;
    }
    uint32_t id = item - 1, g = 0;
    for (uint32_t k = 0; k < p->art.meta.n_groups; ++k)
      if (p->art.meta.groups[k].schedule == ETL_SCHEDULE_DYNAMIC &&
          pl->dyn[ETL_DYN_GROUP_OFF + k] <= id)
        g = k;
    uint32_t lin = id - pl->dyn[ETL_DYN_GROUP_OFF + g];
    uint32_t pre = (uint32_t)pl->group_prefix[g];
    if (lin < pre) { /* an expander: not a task, no record */
      out[i].start_ns = out[i].end_ns = 0;
      continue;
    }
    out[i].group = g;
    out[i].linear = lin - pre;
  }
  free(slots);
  free(raw);
  free(p->timeline);
  p->timeline = out;
  p->timeline_count = n;
  return ETL_SUCCESS;
}

/* The device error record (etl_abi.h) as a message naming task, event and
 * the index value the task read from tensor data. */
static etlStatus device_error(etlProgram p, const etl_plan *pl, const uint32_t *rec) {
  const etl_meta *m = &p->art.meta;
  char task[256];
  etl_plan_task_name(m, pl, rec[ETL_ERR_GROUP], rec[ETL_ERR_LINEAR], task, sizeof task);
  int64_t v = (int64_t)(((uint64_t)rec[ETL_ERR_VALUE_HI] << 32) | rec[ETL_ERR_VALUE_LO]);
  const char *ev = rec[ETL_ERR_EVENT] < m->n_events ? m->events[rec[ETL_ERR_EVENT]].name : "?";
  return etl_error(ETL_ERROR_BINDING,
                   "etlRun: task %s waits on event '%s' at index %lld along dimension %u, "
                   "outside [0, %u): the index is read from tensor data",
                   task, ev, (long long)v, rec[ETL_ERR_DIM], rec[ETL_ERR_EXTENT]);
}

etlStatus etl_program_prepare(etlProgram p) {
  CHECK_PROG(p);
  etlStatus st = validate(p);
  if (st)
    return st;
  etl_plan *pl = NULL;
  pthread_mutex_lock(&p->ctx->launch_mu);
  st = get_plan(p, &pl);
  pthread_mutex_unlock(&p->ctx->launch_mu);
  return st;
}

etlStatus etlRun(etlProgram p) {
  CHECK_PROG(p);
  etlContext c = p->ctx;
  const etl_meta *m = &p->art.meta;
  etlStatus st = validate(p);
  if (st)
    return st;
  pthread_mutex_lock(&c->launch_mu);
  etl_plan *pl = NULL;
  uint64_t tl_dptr = 0;
  int traced = 0;
  st = get_plan(p, &pl);
  if (!st && p->timeline_path) {
    /* per launch: zeroed records, one per queue entry */
    size_t bytes = (size_t)pl->n_entries * sizeof(etl_timeline_record);
    st = etl_dev_alloc(c, bytes, &tl_dptr);
    if (!st && c->kind == ETL_DEVICE_CUDA && bytes) {
      void *zero = calloc(1, bytes);
      st = zero ? etl_dev_htod(c, tl_dptr, zero, bytes)
                : etl_error(ETL_ERROR_OUT_OF_MEMORY, "etlRun: out of memory for the timeline");
      free(zero);
    }
  }
  if (!st) {
    uint64_t *a = pl->args_host;
    memset(a, 0, ETL_ARGS_BYTES(m)); /* the error record after the slots too */
    pl->err_dptr = (c->kind == ETL_DEVICE_CUDA ? pl->args_dptr : (uint64_t)(uintptr_t)a) +
                   m->num_slots * sizeof(uint64_t);
    a[ETL_SLOT_EVENTS] = pl->counters_dptr;
    a[ETL_SLOT_QUEUE] = pl->queue_dptr;
    a[ETL_SLOT_QUEUE_OFFS] = pl->offs_dptr;
    a[ETL_SLOT_ABORT] = c->abort_dptr;
    a[ETL_SLOT_NUM_CTAS] = c->num_ctas;
    a[ETL_SLOT_TIMELINE] = tl_dptr;
    a[ETL_SLOT_DYN] = pl->dyn_dptr;
    a[ETL_SLOT_ERROR] = pl->err_dptr;
    for (uint32_t i = 0; i < m->n_dims; ++i)
      a[m->dims[i].slot] = (uint64_t)p->dim_values[i];
    for (uint32_t i = 0; i < m->n_tensors; ++i)
      a[m->tensors[i].slot] = m->tensors[i].is_buffer ? pl->buffer_dptr[i] : p->tensors[i].dptr;
    for (uint32_t i = 0; i < m->n_events; ++i)
      a[m->events[i].slot] = pl->event_offset[i];
    if (c->kind == ETL_DEVICE_CUDA)
      st = etl_dev_htod(c, pl->args_dptr, a, ETL_ARGS_BYTES(m));
    if (!st)
      st = etl_dev_htod(c, pl->counters_dptr, pl->wait_counts, pl->n_counters * sizeof(uint32_t));
    if (!st && pl->dyn)
      st = etl_dev_htod(c, pl->dyn_dptr, pl->dyn, pl->dyn_words * sizeof(uint32_t));
    uint32_t err_rec[ETL_ERR_WORDS] = {0};
    if (!st) {
      __atomic_store_n(c->abort_host, 0u, __ATOMIC_SEQ_CST);
      st = c->kind == ETL_DEVICE_CUDA ? etl_cuda_launch(p, pl) : etl_sim_launch(p, pl);
    }
    if ((!st || st == ETL_ERROR_TIMEOUT) &&
        dev_dtoh(c, err_rec, pl->err_dptr, sizeof err_rec) == ETL_SUCCESS && err_rec[ETL_ERR_SET])
      st = device_error(p, pl, err_rec);
    if (pl->dyn && (!st || st == ETL_ERROR_TIMEOUT)) {
      uint32_t err = 0;
      if (dev_dtoh(c, &err, pl->dyn_dptr + ETL_DYN_ERROR * 4, 4) == ETL_SUCCESS && err)
        st = etl_error(ETL_ERROR_LAUNCH_FAILED,
                       "etlRun: the dynamic task queue overflowed (capacity %llu)",
                       (unsigned long long)pl->n_dynamic);
    }
    if (!st && tl_dptr) {
      st = collect_timeline(p, pl, tl_dptr);
      traced = !st;
    }
  }
  etl_dev_free(c, tl_dptr);
  if (traced)
    st = write_trace(p, pl, p->timeline_path);
  pthread_mutex_unlock(&c->launch_mu);
  return st;
}
