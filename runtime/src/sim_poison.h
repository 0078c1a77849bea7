/*===- src/sim_poison.h - Buffer lifetimes on the sim device ---------------===
 *
 * `buffer x: ... = zeros;` is cleared before each run (etl_sim_zero, the sim
 * device's `zero`); every other buffer starts undefined. In the checking
 * mode (etlProgramSetPoisonBuffers, or ETL_SIM_POISON=1 in the environment)
 * the sim fills those undefined buffers before each run with a value a
 * read-before-write cannot miss: a quiet NaN for f32/f16/bf16
 * (0x7FC00000, 0x7E00, 0x7FC0), 0xDEADBEEF for i32 and 0xDEADBEEFDEADBEEF
 * for i64.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_SIM_POISON_H
#define ETL_SIM_POISON_H

#include "device.h"

/// The sim device's `zero`: memset (device memory is host memory).
etlStatus etl_sim_zero(etl_context *ctx, uint64_t dst, size_t n, void *stream);
/// Fill p's undefined buffers of `plan` with the poison pattern when the
/// checking mode is on (the program's switch or ETL_SIM_POISON=1).
void etl_sim_poison_buffers(const etl_program *p, const etl_plan *plan);

#endif /* ETL_SIM_POISON_H */
