/*===- src/tma.c - The tensor maps of TMA copies, encoded at each run ------===
 *
 * What this owns: etl_tma_encode (device.h). An artifact of v9 lists the
 * tensor maps its sm_90a code's TMA copies (and sim's) read
 * (compiler/tile/pipeline.cpp's TMA rings): a tensor and a box. Shapes are
 * symbolic, so a map is encoded at each run from the bound tensor (its
 * address and extents; tensors are dense, row-major) into its 16 argument
 * slots, which the argument block carries to the kernel (run.c caches the
 * block per binding, so an unchanged binding uploads nothing). The device
 * encodes (cuda: cuTensorMapEncodeTiled; sim: its own record). What TMA
 * cannot address is refused here with the tensor's name: an address not
 * 16-byte aligned, a row pitch not a multiple of 16 bytes, an extent past
 * 2^31 - 1 (the copies' coordinates are 32-bit).
 *===----------------------------------------------------------------------===*/
#include <string.h>

#include "device.h"

etlStatus etl_tma_encode(etl_program *p, etl_plan *pl, uint64_t *args) {
  const etl_meta *m = &p->art.meta;
  for (uint32_t i = 0; i < m->n_tma_maps; ++i) {
    const etl_tma_meta *t = &m->tma_maps[i];
    const etl_tensor_meta *tm = &m->tensors[t->tensor];
    uint64_t dptr = tm->is_buffer ? pl->buffer_dptr[t->tensor] : p->tensors[t->tensor].dptr;
    int64_t dims[2] = {0, 0};
    char err[256];
    int empty = 0;
    for (uint32_t k = 0; k < t->rank; ++k) {
      if (etl_expr_eval(&tm->shape[k], p->dim_values, m->n_dims, NULL, 0, &dims[k], err,
                        sizeof err))
        return etl_error(ETL_ERROR_BINDING, "etlRun: tensor '%s': %s", tm->name, err);
      empty |= dims[k] <= 0;
    }
    if (empty || !dptr) /* no element: no copy reads it */
      continue;
    uint64_t es = etl_elem_size(tm->elem);
    const char *why = NULL;
    if (dptr % 16 != 0)
      why = "its address is not 16-byte aligned";
    else if (t->rank == 2 && ((uint64_t)dims[1] * es) % 16 != 0)
      why = "its rows are not a multiple of 16 bytes";
    for (uint32_t k = 0; k < t->rank && !why; ++k)
      if (dims[k] > INT32_MAX)
        why = "an extent is 2^31 or more";
    if (why)
      return etl_error(ETL_ERROR_BINDING,
                       "etlRun: tensor '%s' (address 0x%llx, extents %lld%s%lld): %s; this "
                       "program loads it by TMA (cp.async.bulk.tensor), which needs a 16-byte "
                       "aligned address and row pitch (its sm_90 code copies it by cp.async: "
                       "compile for sm_90 instead of sm_90a)",
                       tm->name, (unsigned long long)dptr, (long long)dims[0],
                       t->rank == 2 ? " x " : "", t->rank == 2 ? (long long)dims[1] : 0LL, why);
    _Alignas(64) uint64_t map[16];
    memcpy(map, &args[t->slot], sizeof map);
    etlStatus st = p->ctx->dev->encode_tma(p, t, tm->elem, dptr, dims, map);
    if (st)
      return st;
    memcpy(&args[t->slot], map, sizeof map);
  }
  return ETL_SUCCESS;
}
