/*===- src/sim_profile.h - Hardware counters from the simulator -----------===
 *
 * What this owns: the sim device's profile mode (etlProgramSetProfile). It
 * counts, per task group and per access site, what Nsight Compute reports
 * for a kernel, with its definitions:
 *   - global memory: warp-level requests (the accesses of the lanes of one
 *     warp at one site, the k-th time each lane gets there since the CTA
 *     last met at a barrier: the fibers of a warp do not run in lockstep, so
 *     lanes are grouped by (site, per-lane dynamic instance)), bytes
 *     requested (distinct bytes: lanes reading one address count once),
 *     32-byte sectors touched per request, efficiency =
 *     requested / (sectors * 32), active lanes per request (lane
 *     utilisation), and unique DRAM bytes of the launch (first touch of each
 *     sector, as if L2 held everything);
 *   - shared memory: warp-level requests (grouped the same way) and
 *     wavefronts, with the 32 banks x 4 bytes rule: a request needs as many
 *     wavefronts as the most distinct 4-byte words any one bank holds among
 *     its addresses (lanes reading one word share it: a broadcast is one);
 *     bank-conflict factor = wavefronts / requests;
 *   - synchronisation: CTA barriers, atomics and fences (thread 0's, per
 *     task), warp shuffles (one per warp and instruction), spin-wait iterations and the time spent
 *in them (waiting on events or for dynamic work), and the dynamic queue's operations (sim_ops.c
 *tells them by address: pops, retries, pushes and the claims of tail that pushed them). A site is the call site of the access check in
 *the sim code (reported as its offset in the kernel object); its group is the task's. The
 *synchronisation counters are also reported per CTA (the cost of the task switch: round trips,
 *empty looks, spins per CTA). Each CTA
 *counts into its own tables (no locks); etl_profile_write merges them after the launch and writes
 *the JSON document (schema: docs/PROFILE.md) and a readable table next to it (PATH.txt).
 *===----------------------------------------------------------------------===*/
#ifndef ETL_SIM_PROFILE_H
#define ETL_SIM_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

typedef struct etl_profile etl_profile;
typedef struct etl_profile_sample_t etl_profile_sample_t; /* device.h */

enum etl_profile_event {
  ETL_PROF_BARRIER,
  ETL_PROF_ATOMIC,
  ETL_PROF_FENCE,
  ETL_PROF_SPIN,                /* one spin-wait iteration */
  ETL_PROF_WAIT_NS,             /* nanoseconds inside spin waits */
  ETL_PROF_TASK,                /* a task begun (thread 0) */
  ETL_PROF_SHUFFLE,             /* a warp-level shuffle (one per warp, all its lanes) */
  ETL_PROF_MMA,                 /* a warp-level mma.sync m16n8k16 or m16n8k8 tf32 (one per warp) */
  ETL_PROF_LDMATRIX,            /* a warp-level ldmatrix (one per warp) */
  ETL_PROF_TC_FLOPS,            /* tensor-core FLOPs: 2*16*8*16 per mma (2*16*8*8 tf32) */
  ETL_PROF_LDMATRIX_PHASES,     /* 8-row phases of the ldmatrix (1, 2 or 4 each) */
  ETL_PROF_LDMATRIX_WAVEFRONTS, /* shared wavefronts they needed (>= phases) */
  ETL_PROF_QUEUE_POPS,          /* dynamic queue: tickets taken (adds or won claims of head) */
  ETL_PROF_QUEUE_RETRIES,       /* lost claims of head, looks at a slot not yet filled */
  ETL_PROF_QUEUE_PUSHES,        /* items pushed */
  ETL_PROF_QUEUE_PUSH_CLAIMS,   /* atomics on tail that claimed them (one per batch) */
  ETL_PROF_QUEUE_EMPTY_LOOKS,   /* looks at the queue (head, then tail) that found it empty */
  ETL_PROF_EVENT_NOTIFIES,      /* adds on an event counter (notifies, an expander's settle) */
  ETL_PROF_EVENT_NOT_READY,     /* looks at a waited element that found it not yet zero */
  ETL_PROF_WAITS_SPUN,          /* tasks whose wait found an element not ready at least once */
  ETL_PROF_ROUND_TRIPS,         /* queue and event operations but the looks that found nothing */
  ETL_PROF_TMA_BYTES,           /* bytes TMA copies (cp.async.bulk.tensor) brought in, boxes whole */
  ETL_PROF_MBAR_WAITS,          /* mbarrier phase waits (thread 0's: one per CTA-wide wait) */
  ETL_PROF_WGMMA,               /* a warpgroup-level wgmma.mma_async (one per warpgroup) */
  ETL_PROF_EVENTS
};

/* NULL when out of memory. */
etl_profile *etl_profile_create(const etl_meta *m, uint32_t num_ctas, uint32_t threads_per_cta);
void etl_profile_destroy(etl_profile *p);

/* From CTA `cta`'s worker thread only. `group` is UINT32_MAX outside a task. */
void etl_profile_global(etl_profile *p, uint32_t cta, uint32_t tid, uint32_t group, uintptr_t site,
                        uint64_t addr, uint64_t bytes, int is_store);
/* A shared-memory access at byte `offset` of the CTA's shared memory. */
void etl_profile_shared(etl_profile *p, uint32_t cta, uint32_t tid, uint32_t group, uintptr_t site,
                        uint64_t offset, uint64_t bytes, int is_store);
void etl_profile_count(etl_profile *p, uint32_t cta, uint32_t group, int event, uint64_t n);
/* Closes the CTA's open warp-level requests: every lane of it met at a
 * barrier, or the CTA finished. */
void etl_profile_flush(etl_profile *p, uint32_t cta);

/* Thread 0 of CTA `cta` finished a task at `t_ns` (the timeline's clock):
 * a sample of the CTA's running totals, for the counter tracks. */
void etl_profile_sample(etl_profile *p, uint32_t cta, uint64_t t_ns);
/* The samples of every CTA (malloc'd, caller frees; NULL and 0 when none). */
etl_profile_sample_t *etl_profile_take_samples(etl_profile *p, size_t *n);

/* After the launch: writes `path` (JSON) and `path`.txt. `code_base` is
 * the kernel object's load address (sites are printed relative to it). */
etlStatus etl_profile_write(etl_profile *p, const char *path, uintptr_t code_base);

#endif
