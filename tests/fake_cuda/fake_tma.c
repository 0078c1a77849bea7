/*===- tests/fake_cuda/fake_tma.c - cuTensorMapEncodeTiled in the fake -----===
 *
 * What this owns: the fake libcuda.so.1's cuTensorMapEncodeTiled. It checks
 * what the driver documents for a tiled map (the map 64-byte aligned, rank
 * 1 .. 5, the address 16-byte aligned, each stride a multiple of 16 below
 * 2^40, each box dimension 1 .. 256 with the innermost a multiple of 16
 * bytes, element strides 1 .. 8, a known data type), refuses what breaks
 * it as a violation, records the arguments of the first ETL_FAKE_TMAPS
 * calls in the stats (fake_cuda.h) and writes ETL_FAKE_TMAP_MAGIC and the
 * address into the map, so that a test finds it in the argument block.
 *===----------------------------------------------------------------------===*/
#include <string.h>

#include "fake_internal.h"

static const unsigned elem_bytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};

EXPORT CUresult cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank, void *addr,
                                       const uint64_t *dims, const uint64_t *strides,
                                       const unsigned *box, const unsigned *elem_strides,
                                       int interleave, int swizzle, int l2, int oob) {
  ENTER(cuTensorMapEncodeTiled);
  NEED_INIT();
  if (!map || (uintptr_t)map % 64 != 0)
    RETURN(violation(INVALID_VALUE, "cuTensorMapEncodeTiled: map %p not 64-byte aligned", map));
  if (dtype < 0 || dtype > 12 || rank < 1 || rank > 5 || !dims || !box || !elem_strides ||
      (rank > 1 && !strides))
    RETURN(
        violation(INVALID_VALUE, "cuTensorMapEncodeTiled: data type %d or rank %u", dtype, rank));
  if (!addr || (uintptr_t)addr % 16 != 0)
    RETURN(
        violation(INVALID_VALUE, "cuTensorMapEncodeTiled: address %p not 16-byte aligned", addr));
  for (unsigned k = 0; k < rank; ++k) {
    if (dims[k] == 0 || dims[k] > (1ull << 32) || box[k] == 0 || box[k] > 256 ||
        elem_strides[k] == 0 || elem_strides[k] > 8)
      RETURN(violation(INVALID_VALUE,
                       "cuTensorMapEncodeTiled: dimension %u: extent %llu, box %u, element "
                       "stride %u",
                       k, (unsigned long long)dims[k], box[k], elem_strides[k]));
    if (k + 1 < rank && (strides[k] % 16 != 0 || strides[k] >= (1ull << 40)))
      RETURN(violation(INVALID_VALUE, "cuTensorMapEncodeTiled: stride %u of %llu bytes", k,
                       (unsigned long long)strides[k]));
  }
  if (interleave == 0 && (box[0] * elem_bytes[dtype]) % 16 != 0)
    RETURN(violation(INVALID_VALUE, "cuTensorMapEncodeTiled: inner box of %u bytes",
                     box[0] * elem_bytes[dtype]));
  if (stats.tmaps < ETL_FAKE_TMAPS) {
    struct etl_fake_tmap *t = &stats.tmap[stats.tmaps];
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->rank = (int)rank;
    t->interleave = interleave;
    t->swizzle = swizzle;
    t->l2 = l2;
    t->oob = oob;
    t->addr = (unsigned long long)(uintptr_t)addr;
    for (unsigned k = 0; k < rank && k < 2; ++k) {
      t->dims[k] = dims[k];
      t->box[k] = box[k];
      t->elem_strides[k] = elem_strides[k];
    }
    t->stride = rank > 1 ? strides[0] : 0;
  }
  stats.tmaps++;
  uint64_t words[16] = {ETL_FAKE_TMAP_MAGIC, (uint64_t)(uintptr_t)addr};
  memcpy(map, words, sizeof words);
  RETURN(SUCCESS);
}
