/*===- src/describe.c - What a loaded program takes: dims, tensors, facts -===
 *
 * The introspection entry points bindings in other languages (python/etl)
 * and tools (etlrun) are built on: each dim's name, each tensor
 * parameter's name, dtype, rank and per-axis extent as text in the
 * program's own symbols ("M", "cdiv(N, 128)", "NP * 16"), and the text of
 * each `where` fact. The extents are printed from the artifact's
 * expression bytecode once, at load (etl_describe_init), into the
 * artifact's arena, so the strings live exactly as long as the program.
 *===----------------------------------------------------------------------===*/
#include <stdio.h>
#include <string.h>

#include "device.h"

#define ETL_EXPR_TEXT_MAX 256

const char *etlDTypeName(etlDType dtype) {
  switch ((uint32_t)dtype) {
#define ETL_ELEM_TYPE(K, CODE, SPELLING, BITS)                                                     \
  case ETL_ELEM_##K:                                                                               \
    return SPELLING;
#include "etl_elems.def"
  default:
    return "?";
  }
}

/* Binding strength of an operator's result: higher binds tighter. */
enum { PREC_OR = 1, PREC_AND, PREC_CMP, PREC_ADD, PREC_MUL, PREC_UNARY, PREC_ATOM };

typedef struct text_item {
  char s[ETL_EXPR_TEXT_MAX];
  int prec;
} text_item;

/* Concatenate the NULL-terminated list of strings into `dst` (size
 * ETL_EXPR_TEXT_MAX), truncating; `dst` may not be one of them. */
static void join(char *dst, const char *const *parts) {
  size_t len = 0;
  for (; *parts; ++parts)
    for (const char *c = *parts; *c && len + 1 < ETL_EXPR_TEXT_MAX; ++c)
      dst[len++] = *c;
  dst[len] = 0;
}

/* `t` as an operand of an operator of strength `min_prec`, parenthesised
 * when it binds looser. */
static void wrap(const text_item *t, int min_prec, char *buf) {
  if (t->prec < min_prec)
    join(buf, (const char *[]){"(", t->s, ")", NULL});
  else
    join(buf, (const char *[]){t->s, NULL});
}

/* Print checked bytecode `e` as the language writes it; -1 when it does
 * not fit a stack of ETL_MAX_EXPR_STACK (it always does once checked). */
static int expr_text(const etl_meta *m, const etl_expr *e, char *out, size_t outsz) {
  static _Thread_local text_item st[ETL_MAX_EXPR_STACK];
  int sp = 0;
  for (uint32_t i = 0; i < e->n; ++i) {
    int64_t op = e->code[i];
    if (op == ETL_XOP_CONST || op == ETL_XOP_DIM || op == ETL_XOP_VAR) {
      if (sp >= ETL_MAX_EXPR_STACK || i + 1 >= e->n)
        return -1;
      int64_t imm = e->code[++i];
      if (op == ETL_XOP_CONST)
        snprintf(st[sp].s, sizeof st[sp].s, "%lld", (long long)imm);
      else if (op == ETL_XOP_DIM && imm >= 0 && (uint64_t)imm < m->n_dims)
        snprintf(st[sp].s, sizeof st[sp].s, "%s", m->dims[imm].name);
      else
        snprintf(st[sp].s, sizeof st[sp].s, "v%lld", (long long)imm);
      st[sp++].prec = imm < 0 ? PREC_UNARY : PREC_ATOM;
      continue;
    }
    if (op == ETL_XOP_NEG || op == ETL_XOP_NOT) {
      if (sp < 1)
        return -1;
      char a[ETL_EXPR_TEXT_MAX];
      wrap(&st[sp - 1], PREC_UNARY, a);
      join(st[sp - 1].s, (const char *[]){op == ETL_XOP_NEG ? "-" : "!", a, NULL});
      st[sp - 1].prec = PREC_UNARY;
      continue;
    }
    if (sp < 2)
      return -1;
    text_item *l = &st[sp - 2], *r = &st[sp - 1];
    char a[ETL_EXPR_TEXT_MAX], b[ETL_EXPR_TEXT_MAX];
    const char *fn = op == ETL_XOP_CDIV  ? "cdiv"
                     : op == ETL_XOP_MIN ? "min"
                     : op == ETL_XOP_MAX ? "max"
                                         : NULL;
    if (fn) {
      join(a, (const char *[]){l->s, NULL});
      join(l->s, (const char *[]){fn, "(", a, ", ", r->s, ")", NULL});
      l->prec = PREC_ATOM;
      sp--;
      continue;
    }
    const char *sym;
    int prec;
    switch (op) {
    case ETL_XOP_ADD:
      sym = "+", prec = PREC_ADD;
      break;
    case ETL_XOP_SUB:
      sym = "-", prec = PREC_ADD;
      break;
    case ETL_XOP_MUL:
      sym = "*", prec = PREC_MUL;
      break;
    case ETL_XOP_FLOORDIV:
      sym = "/", prec = PREC_MUL;
      break;
    case ETL_XOP_MOD:
      sym = "%", prec = PREC_MUL;
      break;
    case ETL_XOP_EQ:
      sym = "==", prec = PREC_CMP;
      break;
    case ETL_XOP_NE:
      sym = "!=", prec = PREC_CMP;
      break;
    case ETL_XOP_LT:
      sym = "<", prec = PREC_CMP;
      break;
    case ETL_XOP_LE:
      sym = "<=", prec = PREC_CMP;
      break;
    case ETL_XOP_GT:
      sym = ">", prec = PREC_CMP;
      break;
    case ETL_XOP_GE:
      sym = ">=", prec = PREC_CMP;
      break;
    case ETL_XOP_AND:
      sym = "&&", prec = PREC_AND;
      break;
    case ETL_XOP_OR:
      sym = "||", prec = PREC_OR;
      break;
    default:
      return -1;
    }
    /* left-associative: the right operand needs parentheses at equal
       strength ("a - (b - c)"), the left one does not */
    wrap(l, prec, a);
    wrap(r, prec + 1, b);
    join(l->s, (const char *[]){a, " ", sym, " ", b, NULL});
    l->prec = prec;
    sp--;
  }
  if (sp != 1)
    return -1;
  if (outsz < ETL_EXPR_TEXT_MAX)
    return -1;
  join(out, (const char *[]){st[0].s, NULL});
  return 0;
}

etlStatus etl_describe_init(etl_program *p) {
  const etl_meta *m = &p->art.meta;
  p->axis_text = etl_arena_alloc(&p->art.arena, (m->n_tensors + 1) * sizeof(char **));
  if (!p->axis_text)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory loading a program");
  for (uint32_t i = 0; i < m->n_tensors; ++i) {
    const etl_tensor_meta *t = &m->tensors[i];
    p->axis_text[i] = etl_arena_alloc(&p->art.arena, (t->rank + 1) * sizeof(char *));
    if (!p->axis_text[i])
      return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory loading a program");
    for (uint32_t k = 0; k < t->rank; ++k) {
      char buf[ETL_EXPR_TEXT_MAX];
      if (expr_text(m, &t->shape[k], buf, sizeof buf) != 0)
        snprintf(buf, sizeof buf, "?");
      size_t len = strlen(buf) + 1;
      char *s = etl_arena_alloc(&p->art.arena, len);
      if (!s)
        return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory loading a program");
      memcpy(s, buf, len);
      p->axis_text[i][k] = s;
    }
  }
  return ETL_SUCCESS;
}

etlStatus etlProgramNumDims(etlProgram h, int *count) {
  ETL_GET_PROG(p, h);
  if (!count)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramNumDims: count is NULL");
  *count = (int)p->art.meta.n_dims;
  return ETL_SUCCESS;
}

etlStatus etlProgramDimName(etlProgram h, int index, const char **name) {
  ETL_GET_PROG(p, h);
  if (!name)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramDimName: name is NULL");
  if (index < 0 || (uint32_t)index >= p->art.meta.n_dims)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramDimName: index %d not in [0, %u)", index,
                     p->art.meta.n_dims);
  *name = p->art.meta.dims[index].name;
  return ETL_SUCCESS;
}

etlStatus etlProgramNumTensors(etlProgram h, int *count) {
  ETL_GET_PROG(p, h);
  if (!count)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramNumTensors: count is NULL");
  int n = 0;
  for (uint32_t i = 0; i < p->art.meta.n_tensors; ++i)
    n += !p->art.meta.tensors[i].is_buffer;
  *count = n;
  return ETL_SUCCESS;
}

/* The metadata index of tensor parameter `index`, or -1. */
static int param_index(const etl_meta *m, int index, int *count) {
  int n = 0, found = -1;
  for (uint32_t i = 0; i < m->n_tensors; ++i) {
    if (m->tensors[i].is_buffer)
      continue;
    if (n++ == index)
      found = (int)i;
  }
  *count = n;
  return found;
}

etlStatus etlProgramTensorName(etlProgram h, int index, const char **name) {
  ETL_GET_PROG(p, h);
  if (!name)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramTensorName: name is NULL");
  int n, i = param_index(&p->art.meta, index, &n);
  if (i < 0)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramTensorName: index %d not in [0, %d)",
                     index, n);
  *name = p->art.meta.tensors[i].name;
  return ETL_SUCCESS;
}

etlStatus etlProgramTensorInfo(etlProgram h, int index, etlTensorInfo *info) {
  ETL_GET_PROG(p, h);
  if (!info)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramTensorInfo: info is NULL");
  int n, i = param_index(&p->art.meta, index, &n);
  if (i < 0)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramTensorInfo: index %d not in [0, %d)",
                     index, n);
  const etl_tensor_meta *t = &p->art.meta.tensors[i];
  info->name = t->name;
  info->dtype = (etlDType)t->elem;
  info->rank = (int)t->rank;
  info->dims = (const char *const *)p->axis_text[i];
  return ETL_SUCCESS;
}

etlStatus etlProgramTensorWritten(etlProgram h, int index, int *written) {
  ETL_GET_PROG(p, h);
  if (!written)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramTensorWritten: written is NULL");
  int n, i = param_index(&p->art.meta, index, &n);
  if (i < 0)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramTensorWritten: index %d not in [0, %d)",
                     index, n);
  *written = (int)p->art.meta.tensors[i].written;
  return ETL_SUCCESS;
}

etlStatus etlProgramTensorShape(etlProgram h, int index, int64_t *shape) {
  ETL_GET_PROG(p, h);
  const etl_meta *m = &p->art.meta;
  int n, i = param_index(m, index, &n);
  if (i < 0)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramTensorShape: index %d not in [0, %d)",
                     index, n);
  const etl_tensor_meta *t = &m->tensors[i];
  if (t->rank > 0 && !shape)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramTensorShape: shape is NULL");
  for (uint32_t d = 0; d < m->n_dims; ++d)
    if (!p->dim_bound[d])
      return etl_error(ETL_ERROR_UNBOUND,
                       "etlProgramTensorShape: shape of tensor '%s': dimension '%s' is not "
                       "bound (call etlBindDim; shapes are evaluated with every dim bound)",
                       t->name, m->dims[d].name);
  for (uint32_t k = 0; k < t->rank; ++k) {
    char err[160];
    if (etl_expr_eval(&t->shape[k], p->dim_values, m->n_dims, NULL, 0, &shape[k], err, sizeof err))
      return etl_error(ETL_ERROR_BINDING, "etlProgramTensorShape: tensor '%s', axis %u (%s): %s",
                       t->name, k, p->axis_text[i][k], err);
  }
  return ETL_SUCCESS;
}

etlStatus etlProgramNumScalars(etlProgram h, int *count) {
  ETL_GET_PROG(p, h);
  if (!count)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramNumScalars: count is NULL");
  *count = (int)p->art.meta.n_scalars;
  return ETL_SUCCESS;
}

etlStatus etlProgramScalarInfo(etlProgram h, int index, etlScalarInfo *info) {
  ETL_GET_PROG(p, h);
  if (!info)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramScalarInfo: info is NULL");
  if (index < 0 || (uint32_t)index >= p->art.meta.n_scalars)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramScalarInfo: index %d not in [0, %u)",
                     index, p->art.meta.n_scalars);
  info->name = p->art.meta.scalars[index].name;
  info->dtype = (etlDType)p->art.meta.scalars[index].elem;
  return ETL_SUCCESS;
}

etlStatus etlProgramNumConstraints(etlProgram h, int *count) {
  ETL_GET_PROG(p, h);
  if (!count)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramNumConstraints: count is NULL");
  *count = (int)p->art.meta.n_constraints;
  return ETL_SUCCESS;
}

etlStatus etlProgramConstraint(etlProgram h, int index, const char **text, const char **where) {
  ETL_GET_PROG(p, h);
  if (!text)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramConstraint: text is NULL");
  if (index < 0 || (uint32_t)index >= p->art.meta.n_constraints)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramConstraint: index %d not in [0, %u)",
                     index, p->art.meta.n_constraints);
  *text = p->art.meta.constraints[index].text;
  if (where)
    *where = p->art.meta.constraints[index].where;
  return ETL_SUCCESS;
}
