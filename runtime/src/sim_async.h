/*===- src/sim_async.h - cp.async of the simulator -------------------------===
 *
 * What this owns: the sim's model of PTX's asynchronous copies
 * (`cp.async.{ca,cg}.shared.global`, `cp.async.commit_group`,
 * `cp.async.wait_group N`; the async_copy / async_commit / async_wait ops of
 * etl_abi.h). A copy does not write shared memory when it is issued: it
 * joins its thread's queue, in the thread's open group, and lands (its bytes
 * are written to shared memory) only when a wait_group of that thread
 * covers its group. So a program that forgets a wait, or waits for too few
 * groups, cannot read the data by luck:
 *
 *   - issue: the source bytes are read at once (PTX reads the source at some
 *     point before the wait completes; reading at issue is one legal
 *     choice, and the compiled code bounds-checks the read there), the
 *     destination is filled with 0xFF bytes (NaN as f16, bf16 and f32) and
 *     every 4-byte word of it is marked as owned by the issuing thread;
 *   - commit closes the open group (groups are numbered from 0 in commit
 *     order per thread);
 *   - wait_group N lands, oldest first, every copy of the groups committed
 *     before the newest N; the open group's copies never land by a wait;
 *   - a shared-memory access (scratch load or store, an ldmatrix row, another
 *     copy's destination) that meets a word owned by a copy not yet landed
 *     is reported by etl_async_owner (sim.c fails the run with
 *     ETL_ERROR_RACE naming the access, the task and both threads);
 *   - copies still queued when a task ends (or the kernel) are an error
 *     too (sim.c: ETL_ERROR_RACE naming the task): they are never landed
 *     silently.
 *
 * Threading: a CTA's queues and shadow are touched only by that CTA's
 * worker thread (its fibers), so nothing here needs a lock.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_SIM_ASYNC_H
#define ETL_SIM_ASYNC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One copy in flight: `bytes` (4, 8 or 16) read from the source at issue,
 * landing at byte `off` of the CTA's shared memory; `group` is the number
 * of its thread's group. */
typedef struct etl_async_copy {
  uint32_t off, bytes, group;
  unsigned char data[16];
} etl_async_copy;

/* One simulated thread's copies in flight, oldest first (a ring). */
typedef struct etl_async_queue {
  etl_async_copy *q;
  uint32_t head, n, cap;
  uint32_t commits; /* groups committed so far: the open group's number */
} etl_async_queue;

/* A CTA's shared memory and, per 4-byte word, the thread whose copy in
 * flight will write it (0: none, else 1 + tid). */
typedef struct etl_async_smem {
  unsigned char *smem;
  uint64_t bytes;
  uint16_t *owner;  /* bytes / 4 words; allocated at the first copy */
  uint64_t pending; /* copies in flight in the CTA (0: every check is free) */
} etl_async_smem;

enum {
  ETL_ASYNC_OK = 0,
  ETL_ASYNC_OUTSIDE = -1,    /* the destination is not inside shared memory */
  ETL_ASYNC_MISALIGNED = -2, /* bytes not 4, 8 or 16, or dst not aligned to it */
  ETL_ASYNC_OVERLAP = -3,    /* the destination has a copy in flight already */
  ETL_ASYNC_NO_MEMORY = -4
};

/* Issues a copy of `bytes` from `src` to `dst` (in s's shared memory) by
 * thread `tid` into its open group. ETL_ASYNC_OVERLAP sets *other to the
 * tid of the copy already in flight there. Nothing changes on an error. */
int etl_async_issue(etl_async_smem *s, etl_async_queue *q, uint32_t tid, void *dst, const void *src,
                    uint32_t bytes, uint32_t *other);
/* cp.async.commit_group: closes the open group (an empty group is a group). */
void etl_async_commit(etl_async_queue *q);
/* cp.async.wait_group `pending`: lands every copy whose group is older than
 * the newest `pending` committed groups. Returns the number landed. */
uint32_t etl_async_wait(etl_async_smem *s, etl_async_queue *q, uint32_t pending);
/* The owner of the first word of shared-memory bytes [off, off + bytes)
 * (clipped to the shared memory) that a copy in flight will write: 1 + its
 * tid, with that word's byte offset in *at; 0 when there is none. */
uint32_t etl_async_owner(const etl_async_smem *s, uint64_t off, uint64_t bytes, uint64_t *at);
/* Forgets q's copies without landing them (a stopped CTA) and frees q. */
void etl_async_queue_free(etl_async_smem *s, etl_async_queue *q);
void etl_async_smem_free(etl_async_smem *s);

#ifdef __cplusplus
}
#endif

#endif /* ETL_SIM_ASYNC_H */
