/*===- src/sim_warp.h - Warp collectives of the simulator ------------------===
 *
 * What this owns: the per-warp rendezvous that the sim device runs warp
 * shuffles through (the `shuffle` op of etl_abi.h). The fibers of a CTA run
 * one at a time on the CTA's worker thread, so a warp's lanes never run in
 * lockstep: each lane that reaches a shuffle records its operands in its
 * warp's slot and stops (sim.c parks the fiber); after every fiber switch
 * sim.c asks etl_warp_settle whether that fiber's warp is complete. The
 * settle checks that every lane of the mask has arrived with the same op
 * (mode, c, mask, source line), computes every lane's result with PTX's
 * shfl.sync rule, and says the lanes may go on; a lane that can no longer
 * arrive (exited, or parked at a CTA barrier) or that arrived at another
 * op is a divergence, reported as a message naming the op and its line.
 * The tensor-core collectives (`mma` and `ldmatrix` of etl_abi.h) use the
 * same rendezvous with their own modes (ETL_WARP_MMA, ETL_WARP_LDMATRIX):
 * they need all 32 lanes of a full warp, carry several words per lane
 * (vin/vout) and are computed by the settle with PTX's fragment semantics
 * (docs/ARCHITECTURE.md, "Tensor cores").
 *
 * Threading: a CTA's warps are touched only by that CTA's worker thread
 * (its fibers and its scheduler), so nothing here needs a lock or atomics.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_SIM_WARP_H
#define ETL_SIM_WARP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What sim.c knows about a lane when it settles a warp. */
enum etl_lane_state {
  ETL_LANE_RUNNING, /* runnable: may still arrive */
  ETL_LANE_WAITING, /* parked at this warp's shuffle */
  ETL_LANE_GONE     /* exited, dead, or parked at a CTA barrier: never arrives */
};

typedef struct etl_warp_op {
  uint32_t mode, c, mask, line;
} etl_warp_op;

/* etl_warp_op.mode of the tensor-core collectives (after etl_shfl_mode's
 * values). mma: c is ETL_MMA_F16, _BF16 or _TF32 (etl_abi.h); ldmatrix: c is
 * the matrix count (1, 2 or 4) | ETL_LDMATRIX_TRANS. */
enum { ETL_WARP_MMA = 16, ETL_WARP_LDMATRIX = 17 };

typedef struct etl_warp {
  uint32_t arrived; /* bit per lane parked here */
  /* the arrived lanes an earlier etl_warp_settle found at one op (it
   * compares only the lanes that arrived since; cleared with arrived) */
  uint32_t agreed;
  etl_warp_op op[32];
  uint32_t in[32], b[32], out[32];
  /* mma: a0..a3, b0, b1, c0..c3 in, d0..d3 out; ldmatrix: regs out */
  uint32_t vin[32][10], vout[32][4];
  const unsigned char *addr[32]; /* ldmatrix: the lane's row address */
  /* the CTA's shared memory (ldmatrix reads only inside it) */
  const unsigned char *smem;
  uint64_t smem_bytes;
  /* the last settled ldmatrix: its 8-row phases (= matrices) and the
   * shared-memory wavefronts they needed (per phase, the most distinct rows
   * in one of the 8 16-byte bank groups; 1 = conflict-free) */
  uint32_t ld_phases, ld_wavefronts;
} etl_warp;

/* A lane arrives with its operands (the caller parks it afterwards). */
void etl_warp_arrive(etl_warp *w, uint32_t lane, uint32_t value, const etl_warp_op *op, uint32_t b);

/* mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: the lane's fragments
 * (a0..a3, b0, b1: packed halves, low half = lower index; c0..c3: f32 bits). */
void etl_warp_arrive_mma(etl_warp *w, uint32_t lane, const etl_warp_op *op, const uint32_t in[10]);
/* ldmatrix.sync.aligned.m8n8.xN[.trans].b16: the lane's row address. */
void etl_warp_arrive_ldmatrix(etl_warp *w, uint32_t lane, const etl_warp_op *op, const void *addr);

enum { ETL_WARP_WAIT = 0, ETL_WARP_DONE = 1, ETL_WARP_DIVERGED = -1 };

/* `state[lane]` for lanes [0, n_lanes) of the warp (n_lanes < 32 for a
 * partial last warp). ETL_WARP_DONE: results are in w->out and the arrived
 * lanes may resume (w->arrived is cleared: the caller reads `done_mask`
 * first). ETL_WARP_DIVERGED: `msg` says which lane and op. */
int etl_warp_settle(etl_warp *w, uint32_t n_lanes, const int *state, uint32_t *done_mask, char *msg,
                    size_t msg_size);

/* "shfl.sync.bfly", "mma.sync.m16n8k16", "ldmatrix.sync" etc. */
const char *etl_warp_op_name(uint32_t mode);

/* D = C + A*B of one m16n8k16 on whole matrices (row-major A[16][16],
 * B[16][8], C/D[16][8]): each product is exact in f32 (f16/bf16 inputs), and
 * the sum is taken in f32, rounding after each term, in the order
 * D = (((C + A[r][0]B[0][n]) + A[r][1]B[1][n]) + ...) + A[r][15]B[15][n]. */
void etl_mma_m16n8k16_ref(const float A[16][16], const float B[16][8], const float C[16][8],
                          float D[16][8]);
/* mma m16n8k8 tf32 (ETL_MMA_TF32): A and B rounded by etl_tf32_rna, the
 * exact products summed in f32 in k order after C. */
void etl_mma_m16n8k8_tf32_ref(const float A[16][8], const float B[8][8], const float C[16][8],
                              float D[16][8]);
/* cvt.rna.tf32.f32: 10 mantissa bits, to nearest, ties away from zero, the
 * 13 low bits zero; a NaN becomes 0x7FFFE000. */
float etl_tf32_rna(float x);
/* The f32 value of f16 bits. */
float etl_half_to_float(uint16_t h);

/* PTX's shfl.sync source lane of `lane` (sets *valid). */
uint32_t etl_shfl_source(uint32_t mode, uint32_t lane, uint32_t b, uint32_t c, int *valid);

#ifdef __cplusplus
}
#endif

#endif
