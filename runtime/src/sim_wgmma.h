/*===- src/sim_wgmma.h - wgmma.mma_async of the simulator ------------------===
 *
 * What this owns: the sim's model of Hopper's warpgroup MMA (PTX
 * `wgmma.fence`, `wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}` with
 * both operands in shared memory, `wgmma.commit_group`, `wgmma.wait_group
 * N`; the wgmma_* ops of etl_abi.h). The 128 threads of a warpgroup issue
 * one wgmma together; thread t of the warpgroup holds the accumulators of
 * rows 16 (t / 32) + g and + 8, columns 8j + 2q and + 1 (g = lane / 4,
 * q = lane % 4, register 4j + i: row + 8 (i >> 1), column + (i & 1)): the
 * m16n8 accumulator of mma.sync, per warp, for each n8 tile j. Each
 * thread's D depends only on A, B (read through the descriptors) and its
 * own C, so each thread computes its part at issue, from shared memory as
 * it is then (a program that writes the operands before the wait that
 * covers the wgmma is wrong on the GPU, and the operands of a correct one
 * do not change until then):
 *
 *   - issue: the thread must have executed wgmma.fence since its last
 *     wait_group (else ETL_WGMMA_NO_FENCE: the accumulators it passes may
 *     not be the registers' values); C is the thread's newest in-flight
 *     result for the same accumulator registers (a chain of wgmmas on one
 *     accumulator, as the hardware orders them) or the registers
 *     themselves; D = C + the 16 exact products of each element summed in
 *     f32 in k order (etl_mma_m16n8k16_ref's order: a K loop of wgmmas is
 *     bit for bit the mma.sync one); D joins the thread's queue in its open
 *     group and is NOT written to the registers;
 *   - commit closes the open group; wait_group N writes, oldest first,
 *     every result of the groups committed before the newest N into its
 *     registers and clears the thread's fence;
 *   - a read of accumulator registers that an in-flight wgmma will write
 *     (etl_wgmma_busy, the wgmma_read op the compiled code calls before it
 *     reads them) is ETL_ERROR_RACE: the wait is missing or too weak.
 *
 * The descriptor (PTX ISA, "Matrix Descriptor Format"): bits 0-13 the
 * start address >> 4, 16-29 the leading dimension byte offset >> 4, 32-45
 * the stride dimension byte offset >> 4, 49-51 the base offset (0 here),
 * 62-63 the swizzle: 0 none, 1 128-byte, 2 64-byte, 3 32-byte. A W-byte
 * swizzle XORs the address's 16-byte chunk bits [4, 4 + log2(W / 16)) with
 * bits [7, 7 + log2(W / 16)) (CUTLASS's Swizzle<log2(W/16), 4, 3>), on the
 * address inside the CTA's shared memory (its base is 1024-byte aligned on
 * the GPU). K-major (A; B unless transposed): element (r, k) at start +
 * (r / 8) SBO + (r % 8) W + 2k. MN-major (B transposed: [K, N] rows): element
 * (k, n) at start + (n / (W / 2)) LBO + (k / 8) SBO + (k % 8) W + 2 (n % (W / 2)).
 * Only swizzled layouts are modelled (W = 32, 64, 128).
 *
 * Threading: a thread's state is touched only by its CTA's worker thread.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_SIM_WGMMA_H
#define ETL_SIM_WGMMA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One wgmma result in flight: `n` floats for the registers at `acc`. */
typedef struct etl_wgmma_result {
  float *acc;
  uint32_t n, group, line;
  float d[128];
} etl_wgmma_result;

/* One simulated thread's wgmma state. */
typedef struct etl_wgmma_thread {
  etl_wgmma_result *q; /* in flight, oldest first */
  uint32_t n, cap;
  uint32_t commits; /* groups committed so far: the open group's number */
  int fenced;       /* a wgmma.fence since the last wait_group */
} etl_wgmma_thread;

/* etl_abi.h's wgmma_mma `shape`: N | ETL_WGMMA_BF16 | ETL_WGMMA_TRANS_B. */
enum { ETL_WGMMA_N_MASK = 0x1FFu, ETL_WGMMA_BF16 = 1u << 16, ETL_WGMMA_TRANS_B = 1u << 17 };

enum {
  ETL_WGMMA_OK = 0,
  ETL_WGMMA_NO_FENCE = 1,   /* no wgmma.fence since the last wait_group */
  ETL_WGMMA_BAD_SHAPE = 2,  /* N not a multiple of 8 in [8, 256], or a bad descriptor */
  ETL_WGMMA_OUTSIDE = 3,    /* an operand element outside the shared memory */
  ETL_WGMMA_NO_MEMORY = 4
};

/* Where element (row, col) of an operand lies (byte offset in shared
 * memory), through `desc`: K-major when !mn_major (row = M or N index,
 * col = k), MN-major otherwise (row = k, col = N index). */
uint64_t etl_wgmma_elem(uint64_t desc, int mn_major, uint32_t row, uint32_t col);

/* The thread `tid` (of its CTA) issues a wgmma: see above. `msg` says why
 * on an error. */
int etl_wgmma_issue(etl_wgmma_thread *t, const unsigned char *smem, uint64_t smem_bytes,
                    uint32_t tid, uint64_t desc_a, uint64_t desc_b, float *acc, uint32_t shape,
                    uint32_t line, char *msg, size_t msg_size);
void etl_wgmma_commit(etl_wgmma_thread *t);
void etl_wgmma_wait(etl_wgmma_thread *t, uint32_t pending);
/* The in-flight result that will write the registers at `acc`, or NULL. */
const etl_wgmma_result *etl_wgmma_busy(const etl_wgmma_thread *t, const float *acc);
void etl_wgmma_free(etl_wgmma_thread *t);

#ifdef __cplusplus
}
#endif

#endif
