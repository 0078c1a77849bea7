/*===- tests/fake_cuda/fake_occupancy.h - The fake driver's occupancy API --===
 *
 * fake_occupancy.c adds cuOccupancyMaxActiveBlocksPerMultiprocessor to the
 * fake libcuda.so.1 (fake_cuda.h): the CTAs of a kernel one SM of the
 * modelled H100 holds at once, from its block size (2048 threads an SM, at
 * most .maxntid a block), its static plus dynamic shared memory (228 KiB an
 * SM, 1 KiB reserved per block, dynamic within what cuFuncSetAttribute
 * allowed) and 32 blocks an SM. Registers are not modelled (the fake runs no
 * ptxas -v). Tests steer it with the functions below (dlsym them), or with
 * the environment variable ETL_FAKE_CUDA_OCCUPANCY=N (every call answers N
 * blocks).
 *===----------------------------------------------------------------------===*/
#ifndef ETL_FAKE_OCCUPANCY_H
#define ETL_FAKE_OCCUPANCY_H

#ifdef __cplusplus
extern "C" {
#endif

/// Every later call answers `blocks` (-1: computed again).
void etl_fake_cuda_occupancy(int blocks);
/// The next call returns `result` and does nothing else (0: no failure).
void etl_fake_cuda_occupancy_fail(int result);
/// Calls since the library was loaded, and the arguments of the last one.
typedef struct etl_fake_occupancy_stats {
  int calls;
  int last_block_size;
  unsigned long long last_dynamic_smem;
  int last_result_blocks;
} etl_fake_occupancy_stats;
etl_fake_occupancy_stats etl_fake_cuda_occupancy_stats(void);

typedef void (*etl_fake_cuda_occupancy_fn)(int);
typedef void (*etl_fake_cuda_occupancy_fail_fn)(int);
typedef etl_fake_occupancy_stats (*etl_fake_cuda_occupancy_stats_fn)(void);

#ifdef __cplusplus
}
#endif
#endif /* ETL_FAKE_OCCUPANCY_H */
