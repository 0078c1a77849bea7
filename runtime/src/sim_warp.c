/*===- src/sim_warp.c - Warp collectives of the simulator ------------------===
 *
 * The per-warp shuffle rendezvous (sim_warp.h): operands in, PTX's
 * shfl.sync rule out, and the divergence checks in between.
 *===----------------------------------------------------------------------===*/
#include "sim_warp.h"

#include <stdio.h>

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
  if (op->mode > ETL_SHFL_IDX || (op->mask & ~lanes) || !(op->mask & (1u << first))) {
    snprintf(msg, msg_size,
             "%s (line %u): lane %u calls it with mask 0x%08x, which %s (the warp has %u lanes)",
             name, op->line, first, op->mask,
             op->mode > ETL_SHFL_IDX ? "is for an unknown mode"
             : (op->mask & ~lanes)   ? "names lanes that do not exist"
                                     : "does not include the lane itself",
             n_lanes);
    return ETL_WARP_DIVERGED;
  }
  for (uint32_t l = 0; l < n_lanes; ++l) {
    if (!(w->arrived & (1u << l)))
      continue;
    if (!same_op(&w->op[l], op)) {
      snprintf(msg, msg_size,
               "lanes of one warp reached different warp shuffles: lane %u is at %s (line %u, "
               "mask 0x%08x), lane %u at %s (line %u, mask 0x%08x)",
               first, name, op->line, op->mask, l, etl_warp_op_name(w->op[l].mode), w->op[l].line,
               w->op[l].mask);
      return ETL_WARP_DIVERGED;
    }
  }
  for (uint32_t l = 0; l < n_lanes; ++l) {
    if (!(op->mask & (1u << l)) || (w->arrived & (1u << l)))
      continue;
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
  return ETL_WARP_DONE;
}
