/*===- src/expr.c - Checker and evaluator for the expression bytecode ------===
 *
 * Postfix bytecode over int64 (etl_abi.h section 2). The checker runs once at
 * load time so the evaluator only meets well-formed programs; the evaluator
 * still refuses overflow and divisors <= 0, which depend on bound values.
 *===----------------------------------------------------------------------===*/
#include <stdio.h>

#include "internal.h"

static int has_imm(int64_t op) {
  return op == ETL_XOP_CONST || op == ETL_XOP_DIM || op == ETL_XOP_VAR;
}

/* Stack effect: pops, or -1 for an unknown op. */
static int pops(int64_t op) {
  switch (op) {
  case ETL_XOP_CONST:
  case ETL_XOP_DIM:
  case ETL_XOP_VAR:
    return 0;
  case ETL_XOP_NEG:
  case ETL_XOP_NOT:
    return 1;
  case ETL_XOP_ADD:
  case ETL_XOP_SUB:
  case ETL_XOP_MUL:
  case ETL_XOP_FLOORDIV:
  case ETL_XOP_MOD:
  case ETL_XOP_CDIV:
  case ETL_XOP_MIN:
  case ETL_XOP_MAX:
  case ETL_XOP_EQ:
  case ETL_XOP_NE:
  case ETL_XOP_LT:
  case ETL_XOP_LE:
  case ETL_XOP_GT:
  case ETL_XOP_GE:
  case ETL_XOP_AND:
  case ETL_XOP_OR:
    return 2;
  default:
    return -1;
  }
}

int etl_expr_check(const etl_expr *e, uint32_t n_dims, uint32_t n_vars, char *err, size_t errsz) {
  int depth = 0;
  if (e->n == 0) {
    snprintf(err, errsz, "empty expression");
    return -1;
  }
  for (uint32_t i = 0; i < e->n; ++i) {
    int64_t op = e->code[i];
    int np = pops(op);
    if (np < 0) {
      snprintf(err, errsz, "unknown opcode %lld at word %u", (long long)op, i);
      return -1;
    }
    if (depth < np) {
      snprintf(err, errsz, "stack underflow at word %u", i);
      return -1;
    }
    if (has_imm(op)) {
      if (i + 1 >= e->n) {
        snprintf(err, errsz, "missing immediate at word %u", i);
        return -1;
      }
      int64_t imm = e->code[++i];
      if (op == ETL_XOP_DIM && (imm < 0 || imm >= (int64_t)n_dims)) {
        snprintf(err, errsz, "dim index %lld out of range (%u dims)", (long long)imm, n_dims);
        return -1;
      }
      if (op == ETL_XOP_VAR && (imm < 0 || imm >= (int64_t)n_vars)) {
        snprintf(err, errsz, "variable index %lld out of range (%u variables here)", (long long)imm,
                 n_vars);
        return -1;
      }
      depth += 1;
    } else {
      depth += 1 - np;
    }
    if (depth > ETL_MAX_EXPR_STACK) {
      snprintf(err, errsz, "expression stack deeper than %d", ETL_MAX_EXPR_STACK);
      return -1;
    }
  }
  if (depth != 1) {
    snprintf(err, errsz, "expression leaves %d values on the stack (expected 1)", depth);
    return -1;
  }
  return 0;
}

static int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && (a < 0))
    q -= 1;
  return q;
}

int etl_expr_eval(const etl_expr *e, const int64_t *dims, uint32_t n_dims, const int64_t *vars,
                  uint32_t n_vars, int64_t *out, char *err, size_t errsz) {
  int64_t st[ETL_MAX_EXPR_STACK];
  int sp = 0;
  for (uint32_t i = 0; i < e->n; ++i) {
    int64_t op = e->code[i];
    int np = pops(op);
    if (np < 0 || sp < np || sp >= ETL_MAX_EXPR_STACK) {
      snprintf(err, errsz, "malformed expression at word %u", i);
      return -1;
    }
    if (has_imm(op)) {
      if (i + 1 >= e->n) {
        snprintf(err, errsz, "malformed expression at word %u", i);
        return -1;
      }
      int64_t imm = e->code[++i];
      if (op == ETL_XOP_CONST) {
        st[sp++] = imm;
      } else if (op == ETL_XOP_DIM) {
        if (imm < 0 || imm >= (int64_t)n_dims) {
          snprintf(err, errsz, "dim index %lld out of range", (long long)imm);
          return -1;
        }
        st[sp++] = dims[imm];
      } else {
        if (imm < 0 || imm >= (int64_t)n_vars) {
          snprintf(err, errsz, "variable index %lld out of range", (long long)imm);
          return -1;
        }
        st[sp++] = vars[imm];
      }
      continue;
    }
    if (np == 1) {
      int64_t a = st[sp - 1];
      if (op == ETL_XOP_NEG) {
        if (a == INT64_MIN) {
          snprintf(err, errsz, "integer overflow in negation");
          return -1;
        }
        st[sp - 1] = -a;
      } else {
        st[sp - 1] = !a;
      }
      continue;
    }
    int64_t a = st[sp - 2], b = st[sp - 1], r = 0;
    int ovf = 0;
    switch (op) {
    case ETL_XOP_ADD:
      ovf = __builtin_add_overflow(a, b, &r);
      break;
    case ETL_XOP_SUB:
      ovf = __builtin_sub_overflow(a, b, &r);
      break;
    case ETL_XOP_MUL:
      ovf = __builtin_mul_overflow(a, b, &r);
      break;
    case ETL_XOP_FLOORDIV:
    case ETL_XOP_MOD:
    case ETL_XOP_CDIV:
      if (b <= 0) {
        snprintf(err, errsz, "%s by %lld (divisor must be > 0)",
                 op == ETL_XOP_MOD ? "modulo" : "division", (long long)b);
        return -1;
      }
      if (op == ETL_XOP_FLOORDIV) {
        r = floordiv(a, b);
      } else if (op == ETL_XOP_MOD) {
        r = a - floordiv(a, b) * b;
      } else {
        r = a / b;
        if (a % b != 0 && a > 0)
          r += 1;
      }
      break;
    case ETL_XOP_MIN:
      r = a < b ? a : b;
      break;
    case ETL_XOP_MAX:
      r = a > b ? a : b;
      break;
    case ETL_XOP_EQ:
      r = a == b;
      break;
    case ETL_XOP_NE:
      r = a != b;
      break;
    case ETL_XOP_LT:
      r = a < b;
      break;
    case ETL_XOP_LE:
      r = a <= b;
      break;
    case ETL_XOP_GT:
      r = a > b;
      break;
    case ETL_XOP_GE:
      r = a >= b;
      break;
    case ETL_XOP_AND:
      r = (a != 0) && (b != 0);
      break;
    case ETL_XOP_OR:
      r = (a != 0) || (b != 0);
      break;
    default:
      snprintf(err, errsz, "malformed expression at word %u", i);
      return -1;
    }
    if (ovf) {
      snprintf(err, errsz, "integer overflow evaluating %lld and %lld", (long long)a, (long long)b);
      return -1;
    }
    sp -= 1;
    st[sp - 1] = r;
  }
  if (sp != 1) {
    snprintf(err, errsz, "malformed expression (stack depth %d at end)", sp);
    return -1;
  }
  *out = st[0];
  return 0;
}
