/*===- tests/fake_cuda/fake_occupancy.c - Occupancy in the fake driver -----===
 *
 * What this owns: cuOccupancyMaxActiveBlocksPerMultiprocessor of the fake
 * libcuda.so.1 and its test controls (fake_occupancy.h). Kept apart from
 * fake_cuda.c: it reads only what fake_ptx.c recorded of a function
 * (fake_internal.h: .maxntid, static shared memory, the dynamic shared
 * memory cuFuncSetAttribute allowed).
 *===----------------------------------------------------------------------===*/
#include <pthread.h>
#include <stdlib.h>

#include "fake_internal.h"
#include "fake_occupancy.h"

#define EXPORT __attribute__((visibility("default")))

enum { SM_THREADS = 2048, SM_BLOCKS = 32, SM_SMEM = 233472, BLOCK_RESERVED_SMEM = 1024 };

static pthread_mutex_t occ_mu = PTHREAD_MUTEX_INITIALIZER;
static int occ_forced = -1, occ_fail_next, occ_env_read;
static etl_fake_occupancy_stats occ_stats;

EXPORT void etl_fake_cuda_occupancy(int blocks) {
  pthread_mutex_lock(&occ_mu);
  occ_forced = blocks < 0 ? -1 : blocks;
  pthread_mutex_unlock(&occ_mu);
}

EXPORT void etl_fake_cuda_occupancy_fail(int result) {
  pthread_mutex_lock(&occ_mu);
  occ_fail_next = result;
  pthread_mutex_unlock(&occ_mu);
}

EXPORT etl_fake_occupancy_stats etl_fake_cuda_occupancy_stats(void) {
  pthread_mutex_lock(&occ_mu);
  etl_fake_occupancy_stats r = occ_stats;
  pthread_mutex_unlock(&occ_mu);
  return r;
}

static int min_int(int a, int b) { return a < b ? a : b; }

EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, const func *f,
                                                            int block_size, size_t dynamic_smem) {
  pthread_mutex_lock(&occ_mu);
  if (!occ_env_read) {
    occ_env_read = 1;
    const char *e = getenv("ETL_FAKE_CUDA_OCCUPANCY");
    if (e && *e)
      occ_forced = atoi(e);
  }
  occ_stats.calls++;
  occ_stats.last_block_size = block_size;
  occ_stats.last_dynamic_smem = dynamic_smem;
  CUresult r = SUCCESS;
  if (occ_fail_next) {
    r = occ_fail_next;
    occ_fail_next = 0;
  } else if (!blocks || !f || block_size <= 0) {
    r = INVALID_VALUE;
  } else if (occ_forced >= 0) {
    *blocks = occ_forced;
  } else if ((unsigned)block_size > MAX_THREADS ||
             (f->maxntid && (unsigned)block_size > f->maxntid) ||
             dynamic_smem > f->max_dynamic_smem) {
    *blocks = 0; /* the launch itself would fail */
  } else {
    int warps_threads = (block_size + 31) / 32 * 32;
    size_t per_block = f->static_smem + dynamic_smem + BLOCK_RESERVED_SMEM;
    *blocks = min_int(min_int(SM_THREADS / warps_threads, SM_BLOCKS), (int)(SM_SMEM / per_block));
  }
  if (r == SUCCESS)
    occ_stats.last_result_blocks = *blocks;
  pthread_mutex_unlock(&occ_mu);
  return r;
}
