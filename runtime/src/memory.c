/*===- src/memory.c - Device memory, allocations and their checks --------===
 *
 * The context keeps a table of every block etlMalloc returned and every
 * host range etlRegisterHostMemory recorded (etl_alloc: address, size,
 * a never-reused id). Copies and binds that point into one of them must fit
 * inside it; a pointer in none of them is taken on the caller's word (on
 * sim: plain host memory, e.g. a std::vector; on CUDA: device memory the
 * application allocated itself). Sizes are computed with overflow checks.
 * The device's own memory calls go through the context's etl_device table.
 *===----------------------------------------------------------------------===*/
#include <stdlib.h>
#include <string.h>

#include "device.h"

/*===-- The device's memory, untracked (the runtime's own arrays) ---------===*/

etlStatus etl_dev_alloc(etl_context *c, size_t bytes, uint64_t *dptr) {
  return c->dev->alloc(c, bytes, dptr);
}

void etl_dev_free(etl_context *c, uint64_t dptr) {
  if (dptr)
    c->dev->free(c, dptr);
}

etlStatus etl_dev_htod(etl_context *c, uint64_t dst, const void *src, size_t n) {
  return n ? c->dev->htod(c, dst, src, n) : ETL_SUCCESS;
}

etlStatus etl_dev_dtoh(etl_context *c, void *dst, uint64_t src, size_t n) {
  return n ? c->dev->dtoh(c, dst, src, n) : ETL_SUCCESS;
}

/*===-- The allocation table -----------------------------------------------===*/

static int holds(const etl_alloc *a, uint64_t addr) {
  return addr >= a->dptr && addr - a->dptr < (a->bytes ? a->bytes : 1);
}

int etl_alloc_find(etl_context *c, uint64_t addr, etl_alloc *out) {
  int found = 0;
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < c->n_allocs && !found; ++i)
    if (holds(&c->allocs[i], addr)) {
      *out = c->allocs[i];
      found = 1;
    }
  pthread_mutex_unlock(&c->mu);
  return found;
}

int etl_tensor_bytes(uint32_t elem, int rank, const int64_t *shape, uint64_t dptr,
                     uint64_t *bytes) {
  uint64_t n = etl_elem_packed(elem) ? 1 : etl_elem_size(elem);
  for (int k = 0; k < rank; ++k)
    if (shape[k] < 0 || __builtin_mul_overflow(n, (uint64_t)shape[k], &n))
      return -1;
  if (etl_elem_packed(elem)) /* two elements per byte */
    n = etl_elems_bytes(elem, n);
  uint64_t end;
  if (n > (uint64_t)INT64_MAX || __builtin_add_overflow(dptr, n, &end))
    return -1;
  *bytes = n;
  return 0;
}

/* Caller holds c->mu. Room for one more entry. */
static etlStatus reserve(etl_context *c) {
  if (c->n_allocs < c->cap_allocs)
    return ETL_SUCCESS;
  size_t cap = c->cap_allocs ? 2 * c->cap_allocs : 16;
  etl_alloc *a = realloc(c->allocs, cap * sizeof *a);
  if (!a)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory");
  c->allocs = a;
  c->cap_allocs = cap;
  return ETL_SUCCESS;
}

const char *etl_alloc_origin(const etl_alloc *a) {
  return a->host ? "host memory registered with etlRegisterHostMemory" : "etlMalloc";
}

/* [addr, addr + n) fits the allocation holding addr, or addr is in none. */
static etlStatus check_range(etl_context *c, const char *fn, const char *what, uint64_t addr,
                             size_t n) {
  uint64_t end;
  if (__builtin_add_overflow(addr, (uint64_t)n, &end))
    return etl_error(ETL_ERROR_INVALID_VALUE,
                     "%s: %zu bytes at %s %p wrap around the address space", fn, n, what,
                     (void *)(uintptr_t)addr);
  etl_alloc a;
  if (!etl_alloc_find(c, addr, &a))
    return ETL_SUCCESS;
  uint64_t off = addr - a.dptr;
  if (n <= a.bytes && off <= a.bytes - n)
    return ETL_SUCCESS;
  return etl_error(ETL_ERROR_INVALID_VALUE,
                   "%s: %zu bytes at %s %p overrun its allocation: %llu bytes from %s at %p, "
                   "%llu bytes left from offset %llu",
                   fn, n, what, (void *)(uintptr_t)addr, (unsigned long long)a.bytes,
                   etl_alloc_origin(&a), (void *)(uintptr_t)a.dptr,
                   (unsigned long long)(a.bytes - off), (unsigned long long)off);
}

/*===-- Public entry points ------------------------------------------------===*/

etlStatus etlMalloc(etlContext h, size_t bytes, void **dptr) {
  ETL_GET_CTX(c, h);
  if (!dptr)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlMalloc: dptr is NULL");
  *dptr = NULL;
  if (bytes > (size_t)INT64_MAX)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "etlMalloc: %zu bytes is too large", bytes);
  pthread_mutex_lock(&c->mu);
  etlStatus st = reserve(c);
  uint64_t d = 0;
  if (!st)
    st = etl_dev_alloc(c, bytes, &d);
  if (!st) {
    etl_alloc *a = &c->allocs[c->n_allocs++];
    a->dptr = d;
    a->bytes = bytes;
    a->id = c->next_alloc_id++;
    a->host = 0;
    *dptr = (void *)(uintptr_t)d;
  }
  pthread_mutex_unlock(&c->mu);
  return st;
}

/* Removes the entry starting at `ptr` whose `host` flag is `host`. */
static etlStatus drop_alloc(etl_context *c, const char *fn, void *ptr, int host) {
  uint64_t d = (uint64_t)(uintptr_t)ptr;
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < c->n_allocs; ++i) {
    etl_alloc a = c->allocs[i];
    if (a.dptr != d || a.host != host)
      continue;
    c->allocs[i] = c->allocs[--c->n_allocs];
    pthread_mutex_unlock(&c->mu);
    if (!host)
      etl_dev_free(c, a.dptr);
    return ETL_SUCCESS;
  }
  pthread_mutex_unlock(&c->mu);
  if (host)
    return etl_error(ETL_ERROR_INVALID_VALUE,
                     "%s: %p was not registered with etlRegisterHostMemory in this context (or "
                     "was unregistered already)",
                     fn, ptr);
  return etl_error(ETL_ERROR_INVALID_VALUE,
                   "%s: %p was not allocated by etlMalloc in this context (or was freed already)",
                   fn, ptr);
}

etlStatus etlFree(etlContext h, void *dptr) {
  ETL_GET_CTX(c, h);
  if (!dptr)
    return ETL_SUCCESS;
  return drop_alloc(c, "etlFree", dptr, 0);
}

etlStatus etlRegisterHostMemory(etlContext h, void *ptr, size_t bytes) {
  ETL_GET_CTX(c, h);
  if (!c->dev->host_addressable)
    return etl_error(ETL_ERROR_INVALID_VALUE,
                     "etlRegisterHostMemory: device '%s' cannot address host memory; copy it "
                     "into etlMalloc memory with etlMemcpyHtoD",
                     c->dev->name);
  if (!ptr || !bytes)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlRegisterHostMemory: %s",
                     ptr ? "bytes is 0" : "ptr is NULL");
  uint64_t d = (uint64_t)(uintptr_t)ptr, end;
  if (bytes > (size_t)INT64_MAX || __builtin_add_overflow(d, (uint64_t)bytes, &end))
    return etl_error(ETL_ERROR_INVALID_VALUE,
                     "etlRegisterHostMemory: %zu bytes at %p wrap around the address space", bytes,
                     ptr);
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < c->n_allocs; ++i) {
    etl_alloc a = c->allocs[i];
    if (d < a.dptr + (a.bytes ? a.bytes : 1) && a.dptr < end) {
      pthread_mutex_unlock(&c->mu);
      return etl_error(ETL_ERROR_INVALID_VALUE,
                       "etlRegisterHostMemory: [%p, +%zu) overlaps %llu bytes from %s at %p", ptr,
                       bytes, (unsigned long long)a.bytes, etl_alloc_origin(&a),
                       (void *)(uintptr_t)a.dptr);
    }
  }
  etlStatus st = reserve(c);
  if (!st) {
    etl_alloc *a = &c->allocs[c->n_allocs++];
    a->dptr = d;
    a->bytes = bytes;
    a->id = c->next_alloc_id++;
    a->host = 1;
  }
  pthread_mutex_unlock(&c->mu);
  return st;
}

etlStatus etlUnregisterHostMemory(etlContext h, void *ptr) {
  ETL_GET_CTX(c, h);
  if (!ptr)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlUnregisterHostMemory: ptr is NULL");
  return drop_alloc(c, "etlUnregisterHostMemory", ptr, 1);
}

etlStatus etlMemcpyHtoD(etlContext h, void *dst, const void *src, size_t n) {
  ETL_GET_CTX(c, h);
  if (n == 0)
    return ETL_SUCCESS;
  if (!dst || !src)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlMemcpyHtoD: NULL pointer");
  etlStatus st = check_range(c, "etlMemcpyHtoD", "destination", (uint64_t)(uintptr_t)dst, n);
  if (!st && c->dev->host_addressable)
    st = check_range(c, "etlMemcpyHtoD", "source", (uint64_t)(uintptr_t)src, n);
  return st ? st : etl_dev_htod(c, (uint64_t)(uintptr_t)dst, src, n);
}

etlStatus etlMemcpyDtoH(etlContext h, void *dst, const void *src, size_t n) {
  ETL_GET_CTX(c, h);
  if (n == 0)
    return ETL_SUCCESS;
  if (!dst || !src)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlMemcpyDtoH: NULL pointer");
  etlStatus st = check_range(c, "etlMemcpyDtoH", "source", (uint64_t)(uintptr_t)src, n);
  if (!st && c->dev->host_addressable)
    st = check_range(c, "etlMemcpyDtoH", "destination", (uint64_t)(uintptr_t)dst, n);
  return st ? st : etl_dev_dtoh(c, dst, (uint64_t)(uintptr_t)src, n);
}
