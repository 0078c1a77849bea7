/*===- src/sim_wgmma.c - wgmma.mma_async of the simulator ------------------===
 *
 * The model of sim_wgmma.h: descriptors decoded as the hardware reads them,
 * each thread's accumulators computed at issue in mma.sync's order and
 * written to its registers only by the wait_group that covers them.
 *===----------------------------------------------------------------------===*/
#include "sim_wgmma.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_warp.h"

/* The swizzle's width in bytes (0: none). */
static uint32_t swizzle_bytes(uint64_t desc) {
  static const uint32_t w[4] = {0, 128, 64, 32};
  return w[(desc >> 62) & 3u];
}

uint64_t etl_wgmma_elem(uint64_t desc, int mn_major, uint32_t row, uint32_t col) {
  const uint64_t start = (desc & 0x3FFFu) << 4, lbo = ((desc >> 16) & 0x3FFFu) << 4,
                 sbo = ((desc >> 32) & 0x3FFFu) << 4;
  const uint32_t w = swizzle_bytes(desc);
  uint64_t a;
  if (!mn_major)
    a = start + (row / 8) * sbo + (row % 8) * w + 2u * col;
  else
    a = start + (col / (w / 2)) * lbo + (row / 8) * sbo + (row % 8) * w + 2u * (col % (w / 2));
  const uint32_t bits = w == 128 ? 3u : w == 64 ? 2u : 1u; /* Swizzle<bits, 4, 3> */
  return a ^ (((a >> 7) & ((1u << bits) - 1u)) << 4);
}

static float bf16_value(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

int etl_wgmma_issue(etl_wgmma_thread *t, const unsigned char *smem, uint64_t smem_bytes,
                    uint32_t tid, uint64_t desc_a, uint64_t desc_b, float *acc, uint32_t shape,
                    uint32_t line, char *msg, size_t msg_size) {
  const uint32_t n = shape & ETL_WGMMA_N_MASK, bf16 = (shape & ETL_WGMMA_BF16) != 0,
                 trans_b = (shape & ETL_WGMMA_TRANS_B) != 0;
  if (!t->fenced) {
    snprintf(msg, msg_size,
             "wgmma.mma_async (line %u) without a wgmma.fence since the thread's last "
             "wgmma.wait_group: its accumulator registers may not hold their values",
             line);
    return ETL_WGMMA_NO_FENCE;
  }
  if (n < 8 || n > 256 || n % 8 || !swizzle_bytes(desc_a) || !swizzle_bytes(desc_b)) {
    snprintf(msg, msg_size,
             "wgmma.mma_async (line %u): m64n%uk16 with descriptors %#llx, %#llx: not a "
             "modelled shape or layout (N %% 8 == 0, N <= 256, swizzled operands)",
             line, n, (unsigned long long)desc_a, (unsigned long long)desc_b);
    return ETL_WGMMA_BAD_SHAPE;
  }
  if (t->n == t->cap) {
    uint32_t cap = t->cap ? 2 * t->cap : 8;
    etl_wgmma_result *q = realloc(t->q, cap * sizeof *q);
    if (!q) {
      snprintf(msg, msg_size, "out of memory for the wgmma queue");
      return ETL_WGMMA_NO_MEMORY;
    }
    t->q = q, t->cap = cap;
  }
  /* C: the newest result in flight for these registers, else the registers. */
  const float *c = acc;
  for (uint32_t i = t->n; i-- > 0;)
    if (t->q[i].acc == acc) {
      c = t->q[i].d;
      break;
    }
  etl_wgmma_result *r = &t->q[t->n];
  const uint32_t wtid = tid % 128, warp = wtid / 32, lane = wtid % 32, g = lane >> 2, q = lane & 3;
  float av[2][16]; /* the thread's two rows of A */
  for (uint32_t h = 0; h < 2; ++h)
    for (uint32_t k = 0; k < 16; ++k) {
      uint64_t off = etl_wgmma_elem(desc_a, 0, 16 * warp + g + 8 * h, k);
      if (off + 2 > smem_bytes)
        goto outside;
      uint16_t x;
      memcpy(&x, smem + off, 2);
      av[h][k] = bf16 ? bf16_value(x) : etl_half_to_float(x);
    }
  for (uint32_t i = 0; i < n / 2; ++i) {
    const uint32_t h = (i >> 1) & 1u, col = 8 * (i >> 2) + 2 * q + (i & 1u);
    float d = c[i];
    for (uint32_t k = 0; k < 16; ++k) {
      uint64_t off = trans_b ? etl_wgmma_elem(desc_b, 1, k, col) : etl_wgmma_elem(desc_b, 0, col, k);
      if (off + 2 > smem_bytes)
        goto outside;
      uint16_t x;
      memcpy(&x, smem + off, 2);
      volatile float p = av[h][k] * (bf16 ? bf16_value(x) : etl_half_to_float(x)); /* exact */
      d = d + p;
    }
    r->d[i] = d;
  }
  r->acc = acc, r->n = n / 2, r->group = t->commits, r->line = line;
  t->n++;
  return ETL_WGMMA_OK;
outside:
  snprintf(msg, msg_size,
           "wgmma.mma_async (line %u): descriptors %#llx, %#llx reach past the CTA's %llu bytes "
           "of shared memory",
           line, (unsigned long long)desc_a, (unsigned long long)desc_b,
           (unsigned long long)smem_bytes);
  return ETL_WGMMA_OUTSIDE;
}

void etl_wgmma_commit(etl_wgmma_thread *t) { t->commits++; }

void etl_wgmma_wait(etl_wgmma_thread *t, uint32_t pending) {
  uint32_t landed = 0;
  while (landed < t->n && t->q[landed].group + pending < t->commits) {
    memcpy(t->q[landed].acc, t->q[landed].d, t->q[landed].n * sizeof(float));
    landed++;
  }
  memmove(t->q, t->q + landed, (t->n - landed) * sizeof *t->q);
  t->n -= landed;
  t->fenced = 0;
}

const etl_wgmma_result *etl_wgmma_busy(const etl_wgmma_thread *t, const float *acc) {
  for (uint32_t i = 0; i < t->n; ++i)
    if (t->q[i].acc == acc)
      return &t->q[i];
  return NULL;
}

void etl_wgmma_free(etl_wgmma_thread *t) {
  free(t->q);
  memset(t, 0, sizeof *t);
}
