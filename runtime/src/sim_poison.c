/*===- src/sim_poison.c - Buffer lifetimes on the sim device ---------------===
 *
 * What this owns: clearing `= zeros` buffers on the sim device and the
 * poison checking mode for the other buffers (sim_poison.h), with its
 * switch etlProgramSetPoisonBuffers.
 *===----------------------------------------------------------------------===*/
#include "sim_poison.h"

#include <stdlib.h>
#include <string.h>

etlStatus etl_sim_zero(etl_context *ctx, uint64_t dst, size_t n, void *stream) {
  (void)ctx;
  (void)stream; /* run.c refuses one on the sim */
  memset((void *)(uintptr_t)dst, 0, n);
  return ETL_SUCCESS;
}

static int poison_from_env(void) {
  const char *v = getenv("ETL_SIM_POISON");
  return v && v[0] && strcmp(v, "0") != 0;
}

void etl_sim_poison_buffers(const etl_program *p, const etl_plan *plan) {
  if (!p->poison_buffers && !poison_from_env())
    return;
  const etl_meta *m = &p->art.meta;
  for (uint32_t i = 0; i < m->n_tensors; ++i) {
    const etl_tensor_meta *t = &m->tensors[i];
    if (!t->is_buffer || t->zeros)
      continue;
    unsigned char *b = (unsigned char *)(uintptr_t)plan->buffer_dptr[i];
    uint64_t bytes = plan->buffer_bytes[i];
    size_t es = etl_elem_size(t->elem);
    uint64_t pattern = 0xDEADBEEFDEADBEEFull; /* i32, i64 */
    if (t->elem == ETL_ELEM_F32)
      pattern = 0x7FC00000u;
    else if (t->elem == ETL_ELEM_F16)
      pattern = 0x7E00u;
    else if (t->elem == ETL_ELEM_BF16)
      pattern = 0x7FC0u;
    else if (t->elem == ETL_ELEM_F8E4M3)
      pattern = 0x7Fu;
    else if (t->elem == ETL_ELEM_F8E5M2)
      pattern = 0x7Eu;
    for (uint64_t off = 0; off + es <= bytes; off += es)
      memcpy(b + off, &pattern, es); /* little-endian: the low bytes */
  }
}

etlStatus etlProgramSetPoisonBuffers(etlProgram h, int enable) {
  ETL_GET_PROG(p, h);
  if (p->ctx->dev->is_gpu && enable)
    return etl_error(ETL_ERROR_INVALID_VALUE,
                     "etlProgramSetPoisonBuffers: poisoned buffers are a sim checking mode (this "
                     "program is loaded on '%s')",
                     p->ctx->dev->name);
  p->poison_buffers = enable != 0;
  return ETL_SUCCESS;
}
