/*===- src/sim_tma.h - mbarriers and TMA copies of the simulator -----------===
 *
 * What this owns: the sim's model of PTX's mbarrier objects (arrival count,
 * transaction bytes, phase) and of cp.async.bulk.tensor (TMA) copies that
 * complete on them, per CTA (etl_abi.h's mbar_* and tma_load ops; the ops
 * themselves, which need the launch state, are in sim_ops.c):
 *
 *   - init(count): phase 0 with `count` pending arrivals, no bytes expected;
 *   - arrive_tx(n): n more transaction bytes expected, one arrival;
 *   - a TMA copy reads its box at issue (zeros outside the tensor), fills
 *     the destination with 0xFF bytes and marks every word of it in the
 *     CTA's shadow (sim_async.h) with ETL_ASYNC_TMA_OWNER, and queues on
 *     its mbarrier;
 *   - the phase completes when no arrival is pending and the queued copies
 *     deliver exactly the bytes expected; the sim completes it as late as
 *     it may, when a wait needs it (etl_mbar_complete): the copies land
 *     then, their words are unmarked, the phase count goes up by one and
 *     the arrivals are pending again. So a read of a slot that no wait
 *     covered meets a marked word and fails (ETL_ERROR_RACE), whatever the
 *     timing;
 *   - inval ends the object; one with copies queued is an error.
 *
 * The sim's tensor map (what the runtime's encode_tma writes into the
 * argument block for sim, 128 bytes): etl_sim_tmap.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_SIM_TMA_H
#define ETL_SIM_TMA_H

#include <stdint.h>

#include "sim_async.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ETL_ASYNC_TMA_OWNER 0xFFFFu              /* a word a TMA copy in flight will write */
#define ETL_SIM_TMAP_MAGIC 0x50414d54414d5445ull /* "ETMATMAP" */

typedef struct etl_sim_tmap {
  uint64_t magic;
  uint64_t addr;            /* the tensor's first element (host memory) */
  uint32_t rank, elem_size; /* rank 1 or 2 */
  int64_t dims[2];          /* extents, outermost first (dense, row-major) */
  uint32_t box[2];          /* the box, outermost first */
} etl_sim_tmap;

typedef struct etl_tma_copy {
  uint32_t off, bytes; /* its destination in shared memory */
  unsigned char *data; /* the box as read at issue */
} etl_tma_copy;

typedef struct etl_mbar {
  uint32_t off;            /* the object's byte offset in shared memory */
  uint32_t count, pending; /* arrivals a phase takes; still to arrive in this one */
  uint64_t tx, queued;     /* bytes expected in this phase; bytes its copies deliver */
  uint32_t phase;          /* phases completed */
  etl_tma_copy *copies;
  uint32_t n_copies, cap;
} etl_mbar;

typedef struct etl_mbar_set {
  etl_mbar *b;
  uint32_t n, cap;
} etl_mbar_set;

/* The mbarrier at byte `off`, or NULL (not initialised). */
etl_mbar *etl_mbar_find(etl_mbar_set *s, uint32_t off);
/* mbarrier.init; NULL when out of memory or when one with copies queued is
 * there (*busy = 1). */
etl_mbar *etl_mbar_init(etl_mbar_set *s, uint32_t off, uint32_t count, int *busy);
/* Queues a copy of `bytes` bytes of `data` (taken over) landing at `off`
 * of `sm` on `b`, marking its words; -1 when out of memory. */
int etl_mbar_queue(etl_async_smem *sm, etl_mbar *b, uint32_t off, uint32_t bytes,
                   unsigned char *data);
/* Completes b's phase if it can (no arrival pending, the copies deliver
 * exactly the bytes expected): lands them. Returns 1 if it did. */
int etl_mbar_complete(etl_async_smem *sm, etl_mbar *b);
/* mbarrier.inval: -1 (nothing changed) when copies are queued. */
int etl_mbar_inval(etl_mbar_set *s, etl_mbar *b);
/* The mbarrier whose queued copy writes byte `off`, or NULL. */
etl_mbar *etl_mbar_owner(etl_mbar_set *s, uint64_t off);
/* Forgets every object and copy (a CTA's end; the shadow's marks too). */
void etl_mbar_set_free(etl_async_smem *sm, etl_mbar_set *s);

#ifdef __cplusplus
}
#endif

#endif /* ETL_SIM_TMA_H */
