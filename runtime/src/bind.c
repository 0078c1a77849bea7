/*===- src/bind.c - Binding dims and tensors, and checking the bindings --===
 *
 * etlBindDim, etlBindTensor and etlBindScalar check what they can at once (name, value,
 * dtype, rank, the byte size without overflow, and that a tensor fits the
 * allocation it points into) and change nothing when a check fails.
 * etl_bindings_validate, run by etlRun before anything is allocated or
 * launched, checks the rest: everything bound, every constraint, every
 * shape against the program's shape expressions for the bound dims, and
 * that no tensor's allocation was freed since it was bound.
 *===----------------------------------------------------------------------===*/
#include <stdio.h>
#include <string.h>

#include "device.h"

static void list_names(etl_program *p, int dims, char *buf, size_t n) {
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

/* Tensor `t` bound as `shape` (`bytes` bytes) at `dptr` fits the allocation
 * dptr points into; *alloc_id receives that allocation's id (0: none). */
static etlStatus check_fit(etl_program *p, const char *fn, const etl_tensor_meta *t,
                           const int64_t *shape, uint64_t dptr, uint64_t bytes,
                           uint64_t *alloc_id) {
  etl_alloc a;
  *alloc_id = 0;
  if (!etl_alloc_find(p->ctx, dptr, &a))
    return ETL_SUCCESS;
  uint64_t off = dptr - a.dptr;
  if (bytes <= a.bytes && off <= a.bytes - bytes) {
    *alloc_id = a.id;
    return ETL_SUCCESS;
  }
  char s[256];
  shape_text(shape, t->rank, s, sizeof s);
  return etl_error(ETL_ERROR_BINDING,
                   "%s: tensor '%s' bound as %s%s needs %llu bytes, but %p is at offset %llu of "
                   "a %llu-byte allocation (%s at %p): %llu bytes left",
                   fn, t->name, etlDTypeName((etlDType)t->elem), s, (unsigned long long)bytes,
                   (void *)(uintptr_t)dptr, (unsigned long long)off, (unsigned long long)a.bytes,
                   etl_alloc_origin(&a), (void *)(uintptr_t)a.dptr,
                   (unsigned long long)(a.bytes - off));
}

etlStatus etlBindDim(etlProgram h, const char *name, int64_t value) {
  ETL_GET_PROG(p, h);
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

etlStatus etlBindTensor(etlProgram h, const char *name, void *dptr, etlDType dtype, int rank,
                        const int64_t *shape) {
  ETL_GET_PROG(p, h);
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
                       name, etlDTypeName((etlDType)t->elem), etlDTypeName(dtype));
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
    uint64_t d = (uint64_t)(uintptr_t)dptr, bytes = 0, alloc_id = 0;
    if (etl_tensor_bytes(t->elem, rank, shape, d, &bytes) != 0) {
      char s[256];
      shape_text(shape, t->rank, s, sizeof s);
      return etl_error(ETL_ERROR_BINDING,
                       "etlBindTensor: tensor '%s' bound as %s%s at %p: its byte size overflows "
                       "64 bits or runs past the end of the address space",
                       name, etlDTypeName((etlDType)t->elem), s, dptr);
    }
    etlStatus st = check_fit(p, "etlBindTensor", t, shape, d, bytes, &alloc_id);
    if (st)
      return st;
    etl_tensor_binding *b = &p->tensors[i];
    b->dptr = d;
    b->bytes = bytes;
    b->alloc_id = alloc_id;
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

/* "eps (f32), n (i32)" or "none". */
/* The etlDType enumerator of an element code, e.g. "ETL_U8". */
static const char *dtype_enum_name(uint32_t elem) {
  switch (elem) {
#define ETL_ELEM_TYPE(K, CODE, SPELLING, BITS)                                                     \
  case ETL_ELEM_##K:                                                                               \
    return "ETL_" #K;
#include "etl_elems.def"
  default:
    return "?";
  }
}

static void list_scalars(const etl_meta *m, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  for (uint32_t i = 0; i < m->n_scalars && len < n; ++i)
    len += (size_t)snprintf(buf + len, n - len, "%s%s (%s)", len ? ", " : "", m->scalars[i].name,
                            etlDTypeName((etlDType)m->scalars[i].elem));
  if (len == 0)
    snprintf(buf, n, "none");
}

etlStatus etlBindScalar(etlProgram h, const char *name, etlDType dtype, const void *value) {
  ETL_GET_PROG(p, h);
  if (!name)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlBindScalar: name is NULL");
  const etl_meta *m = &p->art.meta;
  for (uint32_t i = 0; i < m->n_scalars; ++i) {
    const etl_scalar_meta *s = &m->scalars[i];
    if (strcmp(s->name, name) != 0)
      continue;
    if (!value)
      return etl_error(ETL_ERROR_INVALID_VALUE, "etlBindScalar: '%s': value is NULL", name);
    if ((uint32_t)dtype != s->elem)
      return etl_error(ETL_ERROR_BINDING,
                       "etlBindScalar: scalar '%s' has dtype %s, bound as %s (pass a pointer "
                       "to a %s value with dtype %s)",
                       name, etlDTypeName((etlDType)s->elem), etlDTypeName(dtype),
                       etlDTypeName((etlDType)s->elem), dtype_enum_name(s->elem));
    uint64_t bits = 0;
    memcpy(&bits, value, etl_elem_size(s->elem)); /* little-endian: the low bytes */
    p->scalar_bits[i] = bits;
    p->scalar_bound[i] = 1;
    return ETL_SUCCESS;
  }
  for (uint32_t i = 0; i < m->n_dims; ++i)
    if (strcmp(m->dims[i].name, name) == 0)
      return etl_error(ETL_ERROR_NOT_FOUND,
                       "etlBindScalar: '%s' is a dimension, not a scalar; bind it with etlBindDim",
                       name);
  for (uint32_t i = 0; i < m->n_tensors; ++i)
    if (strcmp(m->tensors[i].name, name) == 0)
      return etl_error(ETL_ERROR_NOT_FOUND,
                       "etlBindScalar: '%s' is a tensor, not a scalar; bind it with etlBindTensor",
                       name);
  char names[1024];
  list_scalars(m, names, sizeof names);
  return etl_error(ETL_ERROR_NOT_FOUND,
                   "etlBindScalar: program has no scalar parameter '%s' (it has: %s)", name, names);
}

/* The allocation tensor `i` was bound into still exists; a pointer that was
 * in none when bound but is in one now (registered since) must fit it. */
static etlStatus check_allocation(etl_program *p, uint32_t i) {
  const etl_tensor_meta *t = &p->art.meta.tensors[i];
  etl_tensor_binding *b = &p->tensors[i];
  etl_alloc a;
  int in = etl_alloc_find(p->ctx, b->dptr, &a);
  if (b->alloc_id && (!in || a.id != b->alloc_id)) {
    char s[256];
    shape_text(b->shape, t->rank, s, sizeof s);
    return etl_error(ETL_ERROR_BINDING,
                     "etlRun: tensor '%s' (%s%s) is bound to %p, inside an allocation that was "
                     "freed with etlFree (or unregistered) after etlBindTensor; bind it again",
                     t->name, etlDTypeName((etlDType)t->elem), s, (void *)(uintptr_t)b->dptr);
  }
  if (in && !b->alloc_id) {
    uint64_t id = 0;
    etlStatus st = check_fit(p, "etlRun", t, b->shape, b->dptr, b->bytes, &id);
    if (st)
      return st;
    b->alloc_id = id;
  }
  return ETL_SUCCESS;
}

etlStatus etl_bindings_validate(etl_program *p) {
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
  for (uint32_t i = 0; i < m->n_scalars; ++i)
    if (!p->scalar_bound[i])
      return etl_error(ETL_ERROR_UNBOUND,
                       "etlRun: scalar '%s' (%s) is not bound (call etlBindScalar)",
                       m->scalars[i].name, etlDTypeName((etlDType)m->scalars[i].elem));
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
    etlStatus st = check_allocation(p, i);
    if (st)
      return st;
  }
  return ETL_SUCCESS;
}
