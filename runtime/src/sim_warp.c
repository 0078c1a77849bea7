/*===- src/sim_warp.c - Warp collectives of the simulator ------------------===
 *
 * The per-warp rendezvous (sim_warp.h): operands in, PTX's shfl.sync rule
 * (or mma / ldmatrix fragment semantics) out, and the divergence checks in
 * between.
 *===----------------------------------------------------------------------===*/
#include "sim_warp.h"

#include <stdio.h>
#include <string.h>

#include "etl_abi.h"

const char *etl_warp_op_name(uint32_t mode) {
  switch (mode) {
  case ETL_SHFL_UP:
    return "shfl.sync.up";
  case ETL_SHFL_DOWN:
    return "shfl.sync.down";
  case ETL_SHFL_BFLY:
    return "shfl.sync.bfly";
  case ETL_SHFL_IDX:
    return "shfl.sync.idx";
  case ETL_WARP_MMA:
    return "mma.sync.m16n8k16";
  case ETL_WARP_LDMATRIX:
    return "ldmatrix.sync";
  default:
    return "shfl.sync.<bad mode>";
  }
}

uint32_t etl_shfl_source(uint32_t mode, uint32_t lane, uint32_t b, uint32_t c, int *valid) {
  uint32_t segmask = (c >> 8) & 31u;
  uint32_t max_lane = (lane & segmask) | (c & 31u & ~segmask);
  uint32_t min_lane = lane & segmask;
  int64_t j;
  switch (mode) {
  case ETL_SHFL_UP:
    j = (int64_t)lane - (int64_t)b;
    *valid = j >= (int64_t)max_lane;
    break;
  case ETL_SHFL_DOWN:
    j = (int64_t)lane + (int64_t)b;
    *valid = j <= (int64_t)max_lane;
    break;
  case ETL_SHFL_BFLY:
    j = (int64_t)(lane ^ b);
    *valid = j <= (int64_t)max_lane;
    break;
  default:
    j = (int64_t)(min_lane | (b & 31u & ~segmask));
    *valid = j <= (int64_t)max_lane;
    break;
  }
  if (!*valid || j < 0 || j > 31) {
    *valid = 0;
    return lane;
  }
  return (uint32_t)j;
}

void etl_warp_arrive(etl_warp *w, uint32_t lane, uint32_t value, const etl_warp_op *op,
                     uint32_t b) {
  w->in[lane] = value;
  w->b[lane] = b;
  w->op[lane] = *op;
  w->arrived |= 1u << lane;
}

void etl_warp_arrive_mma(etl_warp *w, uint32_t lane, const etl_warp_op *op, const uint32_t in[10]) {
  memcpy(w->vin[lane], in, sizeof w->vin[lane]);
  w->op[lane] = *op;
  w->arrived |= 1u << lane;
}

void etl_warp_arrive_ldmatrix(etl_warp *w, uint32_t lane, const etl_warp_op *op, const void *addr) {
  w->addr[lane] = addr;
  w->op[lane] = *op;
  w->arrived |= 1u << lane;
}

float etl_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31u, m = h & 0x3FFu, bits;
  if (e == 31)
    bits = sign | 0x7F800000u | (m << 13); /* inf, NaN */
  else if (e != 0)
    bits = sign | ((e + 112u) << 23) | (m << 13);
  else if (m == 0)
    bits = sign;
  else { /* subnormal: m * 2^-24, exact in f32 */
    float v = (float)m * 0x1p-24f;
    memcpy(&bits, &v, 4);
    bits |= sign;
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static float bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

void etl_mma_m16n8k16_ref(const float A[16][16], const float B[16][8], const float C[16][8],
                          float D[16][8]) {
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n) {
      float d = C[r][n];
      for (int k = 0; k < 16; ++k) {
        volatile float p = A[r][k] * B[k][n]; /* exact: no contraction changes it */
        d = d + p;
      }
      D[r][n] = d;
    }
}

float etl_tf32_rna(float x) {
  uint32_t bits;
  memcpy(&bits, &x, 4);
  if (x != x)
    bits = 0x7FFFE000u;
  else /* ties away from zero on the magnitude; a carry rounds up the exponent */
    bits = (bits + 0x1000u) & 0xFFFFE000u;
  memcpy(&x, &bits, 4);
  return x;
}

void etl_mma_m16n8k8_tf32_ref(const float A[16][8], const float B[8][8], const float C[16][8],
                              float D[16][8]) {
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n) {
      float d = C[r][n];
      for (int k = 0; k < 8; ++k) {
        volatile float p = etl_tf32_rna(A[r][k]) * etl_tf32_rna(B[k][n]); /* exact */
        d = d + p;
      }
      D[r][n] = d;
    }
}

/* m16n8k8 tf32: one f32 bit pattern per register (etl_abi.h). The tensor
 * core reads only the top 19 bits of an A or B register (PTX: the 13 low
 * bits of a non-tf32 operand are truncated), so they are cleared here: an
 * operand that was not rounded by cvt.rna.tf32 first gives the truncated,
 * not the rounded, product, as on the hardware. */
static void settle_mma_tf32(etl_warp *w) {
  float A[16][8], B[8][8], C[16][8], D[16][8];
  for (uint32_t l = 0; l < 32; ++l) {
    uint32_t g = l >> 2, t = l & 3, x;
    for (uint32_t j = 0; j < 4; ++j) {
      x = w->vin[l][j] & 0xFFFFE000u;
      memcpy(&A[g + 8 * (j & 1)][t + 4 * (j >> 1)], &x, 4);
    }
    for (uint32_t j = 0; j < 2; ++j) {
      x = w->vin[l][4 + j] & 0xFFFFE000u;
      memcpy(&B[t + 4 * j][g], &x, 4);
    }
    for (uint32_t i = 0; i < 4; ++i)
      memcpy(&C[g + 8 * (i >> 1)][2 * t + (i & 1)], &w->vin[l][6 + i], 4);
  }
  etl_mma_m16n8k8_tf32_ref((const float(*)[8])A, (const float(*)[8])B, (const float(*)[8])C, D);
  for (uint32_t l = 0; l < 32; ++l)
    for (uint32_t i = 0; i < 4; ++i)
      memcpy(&w->vout[l][i], &D[(l >> 2) + 8 * (i >> 1)][2 * (l & 3) + (i & 1)], 4);
}

static void settle_mma(etl_warp *w, uint32_t kind) {
  if (kind == ETL_MMA_TF32) {
    settle_mma_tf32(w);
    return;
  }
  float A[16][16], B[16][8], C[16][8], D[16][8];
  for (uint32_t l = 0; l < 32; ++l) {
    uint32_t g = l >> 2, t = l & 3;
    for (uint32_t i = 0; i < 8; ++i) { /* a_i: reg i>>1, half i&1 */
      uint16_t h = (uint16_t)(w->vin[l][i >> 1] >> (16 * (i & 1)));
      A[g + 8 * ((i >> 1) & 1)][2 * t + (i & 1) + 8 * (i >> 2)] =
          kind == ETL_MMA_BF16 ? bf16_to_float(h) : etl_half_to_float(h);
    }
    for (uint32_t i = 0; i < 4; ++i) { /* b_i: reg 4 + (i>>1), half i&1 */
      uint16_t h = (uint16_t)(w->vin[l][4 + (i >> 1)] >> (16 * (i & 1)));
      B[2 * t + (i & 1) + 8 * (i >> 1)][g] =
          kind == ETL_MMA_BF16 ? bf16_to_float(h) : etl_half_to_float(h);
    }
    for (uint32_t i = 0; i < 4; ++i)
      memcpy(&C[g + 8 * (i >> 1)][2 * t + (i & 1)], &w->vin[l][6 + i], 4);
  }
  etl_mma_m16n8k16_ref((const float(*)[16])A, (const float(*)[8])B, (const float(*)[8])C, D);
  for (uint32_t l = 0; l < 32; ++l)
    for (uint32_t i = 0; i < 4; ++i)
      memcpy(&w->vout[l][i], &D[(l >> 2) + 8 * (i >> 1)][2 * (l & 3) + (i & 1)], 4);
}

/* ldmatrix: checks the row addresses, then fills vout; 0 or -1 with msg. */
static int settle_ldmatrix(etl_warp *w, uint32_t variant, uint32_t line, char *msg,
                           size_t msg_size) {
  uint32_t n = variant & 7u, trans = (variant & ETL_LDMATRIX_TRANS) != 0;
  if (n != 1 && n != 2 && n != 4) {
    snprintf(msg, msg_size, "ldmatrix.sync (line %u): .x%u is not a matrix count", line, n);
    return -1;
  }
  for (uint32_t l = 0; l < 8 * n; ++l) {
    const unsigned char *a = w->addr[l];
    if (!w->smem || a < w->smem || a + 16 > w->smem + w->smem_bytes ||
        ((uintptr_t)(a - w->smem) & 15u)) {
      snprintf(msg, msg_size,
               "ldmatrix.sync (line %u): lane %u gives a row address %s (shared memory is %llu "
               "bytes)",
               line, l,
               !w->smem || a < w->smem || a + 16 > w->smem + w->smem_bytes
                   ? "outside shared memory"
                   : "that is not 16-byte aligned",
               (unsigned long long)w->smem_bytes);
      return -1;
    }
  }
  w->ld_phases = n;
  w->ld_wavefronts = 0;
  for (uint32_t m = 0; m < n; ++m) { /* bank conflicts of phase m */
    uint32_t worst = 1;
    for (uint32_t i = 0; i < 8; ++i) {
      uint64_t off = (uint64_t)(w->addr[8 * m + i] - w->smem), same = 0;
      for (uint32_t j = 0; j < 8; ++j) {
        uint64_t o2 = (uint64_t)(w->addr[8 * m + j] - w->smem);
        int dup = 0; /* count each distinct row once */
        for (uint32_t k = 0; k < j; ++k)
          dup |= w->addr[8 * m + k] == w->addr[8 * m + j];
        same += !dup && ((o2 >> 4) & 7) == ((off >> 4) & 7);
      }
      if (same > worst)
        worst = (uint32_t)same;
    }
    w->ld_wavefronts += worst;
  }
  for (uint32_t l = 0; l < 32; ++l) {
    uint32_t g = l >> 2, t = l & 3;
    for (uint32_t m = 0; m < n; ++m) {
      uint16_t lo, hi;
      if (!trans) {
        memcpy(&lo, w->addr[8 * m + g] + 4 * t, 2);
        memcpy(&hi, w->addr[8 * m + g] + 4 * t + 2, 2);
      } else {
        memcpy(&lo, w->addr[8 * m + 2 * t] + 2 * g, 2);
        memcpy(&hi, w->addr[8 * m + 2 * t + 1] + 2 * g, 2);
      }
      w->vout[l][m] = (uint32_t)lo | (uint32_t)hi << 16;
    }
  }
  return 0;
}

static int same_op(const etl_warp_op *x, const etl_warp_op *y) {
  return x->mode == y->mode && x->c == y->c && x->mask == y->mask && x->line == y->line;
}

int etl_warp_settle(etl_warp *w, uint32_t n_lanes, const int *state, uint32_t *done_mask, char *msg,
                    size_t msg_size) {
  if (!w->arrived)
    return ETL_WARP_WAIT;
  uint32_t first = (uint32_t)__builtin_ctz(w->arrived);
  const etl_warp_op *op = &w->op[first];
  const char *name = etl_warp_op_name(op->mode);
  uint32_t lanes = n_lanes >= 32 ? 0xFFFFFFFFu : (1u << n_lanes) - 1u;
  int tensor = op->mode == ETL_WARP_MMA || op->mode == ETL_WARP_LDMATRIX;
  int bad_mode = op->mode > ETL_SHFL_IDX && !tensor;
  if (bad_mode || (op->mask & ~lanes) || !(op->mask & (1u << first)) ||
      (tensor && op->mask != 0xFFFFFFFFu)) {
    snprintf(msg, msg_size,
             "%s (line %u): lane %u calls it with mask 0x%08x, which %s (the warp has %u lanes)",
             name, op->line, first, op->mask,
             bad_mode              ? "is for an unknown mode"
             : (op->mask & ~lanes) ? "names lanes that do not exist"
             : tensor              ? "is not the full warp this collective needs"
                                   : "does not include the lane itself",
             n_lanes);
    return ETL_WARP_DIVERGED;
  }
  /* The lanes of w->agreed hold one op. With `first` among them only the
   * newer arrivals need comparing, lowest first: the same lane fails as
   * when all are compared (settle runs after each arrival, so this keeps
   * a warp's checks linear in its lanes, not quadratic). */
  uint32_t check = (w->agreed >> first) & 1u ? w->arrived & ~w->agreed : w->arrived;
  for (; check; check &= check - 1) {
    uint32_t l = (uint32_t)__builtin_ctz(check);
    if (!same_op(&w->op[l], op)) {
      snprintf(msg, msg_size,
               "lanes of one warp reached different warp shuffles: lane %u is at %s (line %u, "
               "mask 0x%08x), lane %u at %s (line %u, mask 0x%08x)",
               first, name, op->line, op->mask, l, etl_warp_op_name(w->op[l].mode), w->op[l].line,
               w->op[l].mask);
      return ETL_WARP_DIVERGED;
    }
  }
  w->agreed = w->arrived;
  uint32_t missing = op->mask & ~w->arrived; /* the mask is within the warp (checked above) */
  if (missing) {
    uint32_t l = (uint32_t)__builtin_ctz(missing);
    if (state[l] == ETL_LANE_GONE) {
      snprintf(msg, msg_size,
               "%s (line %u): lane %u never arrives (it has exited or waits at a CTA barrier) "
               "while lane %u waits for it",
               name, op->line, l, first);
      return ETL_WARP_DIVERGED;
    }
    return ETL_WARP_WAIT; /* a running lane of the mask may still come */
  }
  if (w->arrived & ~op->mask) {
    uint32_t l = (uint32_t)__builtin_ctz(w->arrived & ~op->mask);
    snprintf(msg, msg_size, "%s (line %u): lane %u arrived but is not in the mask 0x%08x", name,
             op->line, l, op->mask);
    return ETL_WARP_DIVERGED;
  }
  if (op->mode == ETL_WARP_MMA) {
    settle_mma(w, op->c);
  } else if (op->mode == ETL_WARP_LDMATRIX) {
    if (settle_ldmatrix(w, op->c, op->line, msg, msg_size) != 0)
      return ETL_WARP_DIVERGED;
  } else
    for (uint32_t l = 0; l < n_lanes; ++l) {
      if (!(op->mask & (1u << l)))
        continue;
      int valid;
      uint32_t j = etl_shfl_source(op->mode, l, w->b[l], op->c, &valid);
      /* a source outside the mask (undefined in PTX) reads the lane's own value */
      w->out[l] = valid && (op->mask & (1u << j)) ? w->in[j] : w->in[l];
    }
  *done_mask = w->arrived;
  w->arrived = 0;
  w->agreed = 0;
  return ETL_WARP_DONE;
}
