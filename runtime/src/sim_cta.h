/*===- src/sim_cta.h - The sim device's launch state (private) ----------===
 *
 * What this owns: the state of one sim launch that the device (sim.c: the
 * CTAs' worker threads, their fibers and the scheduler) and the machine
 * operations the compiled code calls (sim_ops.c) share: the run, its CTAs
 * and their fibers, the CTA whose fiber is running on this thread, and the
 * few steps both sides take (a fiber's state change, giving the CPU back
 * to the CTA's scheduler, abandoning a CTA, the first error of a run).
 * Included by sim.c and sim_ops.c only.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_SIM_CTA_H
#define ETL_SIM_CTA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "device.h"
#include "sim_async.h"
#include "sim_wgmma.h"
#include "sim_fiber.h"
#include "sim_profile.h"
#include "sim_race.h"
#include "sim_tma.h"
#include "sim_warp.h"

#if defined(__SANITIZE_THREAD__)
#define ETL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ETL_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ETL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ETL_ASAN 1
#endif
#endif

#ifdef ETL_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif
#ifdef ETL_ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                     size_t *size_old);
#endif

typedef struct sim_range {
  uint64_t base, bytes;
  const char *name;
  uint32_t elem_size;
  int is_tensor;
} sim_range;

enum { FIBER_RUNNABLE, FIBER_AT_BARRIER, FIBER_AT_SHUFFLE, FIBER_EXITED, FIBER_DEAD };

typedef struct sim_fiber {
  etl_fiber_ctx ctx;
  void *stack;
  uint32_t tid;
  int state;
  uint32_t race_task;  /* the race check's id of the fiber's task (sim_race.h) */
  uint32_t prof_group; /* the fiber's task group for the profile, or UINT32_MAX */
  etl_async_queue aq;  /* its cp.async copies in flight (sim_async.h) */
  etl_wgmma_thread wg; /* its wgmma results in flight (sim_wgmma.h) */
  void *tsan;
  void *asan_fake;
} sim_fiber;

typedef struct sim_run sim_run;

typedef struct sim_cta {
  sim_run *run;
  uint32_t cta;
  pthread_t thread;
  sim_fiber *fibers;
  sim_fiber *cur;
  etl_warp *warps;     /* ceil(tpc / 32): the shuffle rendezvous (sim_warp.h) */
  int *lane_state;     /* per thread, its fiber's state as etl_warp_settle reads it */
  etl_fiber_ctx sched; /* the scheduler's context while a fiber runs */
  uint32_t n_live, n_at_barrier;
  int stopped;
  void *smem;
  etl_async_smem async; /* who writes which shared word when it lands (sim_async.h) */
  etl_mbar_set mbars;   /* its mbarriers and the TMA copies queued on them (sim_tma.h) */
  void *tsan_sched;
  const void *asan_sched_bottom;
  size_t asan_sched_size;
  _Atomic uint32_t task_group, task_linear, in_task;
  /* Profile (sim_ops.c's sync_count), thread 0's: the head its last look
   * read, whether its last queue or event operation found nothing (a spin),
   * and the task (group << 32 | linear, + 1) whose wait last spun. */
  uint32_t prof_head;
  int prof_found_nothing;
  uint64_t prof_spun_task;
  uint64_t prof_open_task;      /* the task thread 0 began and has not ended (key as above) */
  uint64_t prof_suspended_task; /* the static task a nested dynamic item interrupted */
} sim_cta;

struct sim_run {
  void (*entry)(uint64_t *);
  etl_plan *plan;
  const etl_meta *meta;
  uint64_t *args;
  uint32_t num_ctas, tpc;
  size_t stack_bytes;
  _Atomic uint32_t *abort_flag;
  _Atomic int64_t last_progress_ns;
  int64_t watchdog_ns;
  sim_range *ranges;
  uint32_t n_ranges;
  uint32_t n_tensor_ranges; /* ranges[0 .. n) are the meta's tensors, in order */
  etl_race *race;           /* etlProgramSetRaceCheck; NULL = off */
  etl_profile *prof;        /* etlProgramSetProfile; NULL = off */
  sim_cta *ctas;
  pthread_mutex_t err_mu;
  etlStatus status;
  char msg[4096];
};

/* The CTA whose fiber runs on this worker thread (set by sim.c's cta_main;
 * read by every machine operation, sim_ops.c). */
extern __attribute__((visibility("hidden"))) _Thread_local sim_cta *etl_sim_cta;

/* The machine operations the sim code calls (sim_ops.c), handed to the
 * loader (sim_load.c). */
extern const etl_sim_ops etl_sim_ops_table;

static inline int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* First error wins; later ones (other CTAs seeing the abort) are dropped. */
int etl_sim_run_fail(sim_run *r, etlStatus st, const char *msg);

/* Every change of a fiber's state goes through here, which keeps
 * c->lane_state (what settle_warp hands etl_warp_settle) in step. */
static inline void set_state(sim_cta *c, sim_fiber *f, int state) {
  f->state = state;
  c->lane_state[f->tid] = state == FIBER_RUNNABLE     ? ETL_LANE_RUNNING
                          : state == FIBER_AT_SHUFFLE ? ETL_LANE_WAITING
                                                      : ETL_LANE_GONE;
}

/* Back to the CTA's scheduler. `dying`: this fiber is never resumed. */
static inline void yield_fiber(sim_cta *c, int dying) {
  sim_fiber *f = c->cur;
#ifdef ETL_ASAN
  __sanitizer_start_switch_fiber(dying ? NULL : &f->asan_fake, c->asan_sched_bottom,
                                 c->asan_sched_size);
#else
  (void)dying;
#endif
#ifdef ETL_TSAN
  __tsan_switch_to_fiber(c->tsan_sched, 0);
#endif
  etl_fiber_switch(&f->ctx, &c->sched);
#ifdef ETL_ASAN
  __sanitizer_finish_switch_fiber(f->asan_fake, &c->asan_sched_bottom, &c->asan_sched_size);
#endif
}

/* Abandon the current fiber and stop its CTA. */
static inline void stop_cta(sim_cta *c) {
  c->stopped = 1;
  set_state(c, c->cur, FIBER_DEAD);
  yield_fiber(c, 1);
  abort();
}

/* "group[i, j]" of the task CTA `c` runs, or "<no task>" (sim_ops.c). */
void etl_sim_current_task(sim_cta *c, char *buf, size_t n);
/* Fails the run: copies of the current fiber still in flight where `where`
 * (a task, the kernel) ends (sim_ops.c). */
void etl_sim_async_leftover(sim_cta *c, const char *where);

#endif /* ETL_SIM_CTA_H */
