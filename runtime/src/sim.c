/*===- src/sim.c - The sim device: the artifact's x86-64 code on the CPU ---===
 *
 * The device table etl_device_sim (device.h): memory is host memory, so
 * device pointers are host pointers and plain host arrays may be bound.
 *
 * Loading the "sim" code section (an ELF shared object) is sim_load.c's;
 * the race check and the profile counters hook in from sim_race.c and
 * sim_profile.c.
 *
 * A launch runs num_ctas = sim_workers CTAs, one pthread each. A CTA's
 * threads are fibers (sim_fiber.h) scheduled round-robin by that pthread; a fiber
 * gives up the CPU only in barrier() (until every live fiber of the CTA has
 * arrived; exited fibers count as arrived), at a warp shuffle (until every
 * lane of its mask has arrived: sim_warp.c, which also reports a lane that
 * can no longer arrive as ETL_ERROR_DIVERGENCE) and in spin_pause(). cp.async
 * copies queue per thread and land at the wait_group that covers them
 * (sim_async.c); every shared-memory access is checked against the copies
 * still in flight (ETL_ERROR_RACE). Every global
 * access is checked (check_access) against the bound tensors, runtime
 * buffers and runtime arrays; a violation records the task, thread and
 * nearest tensor, raises the abort flag and abandons the CTA. spin_pause()
 * is also the watchdog: when no task has completed anywhere for watchdog_ms
 * it raises the abort flag and reports the event elements still pending.
 *
 * Sanitizers: fiber switches are annotated for ThreadSanitizer
 * (__tsan_*_fiber) and AddressSanitizer (__sanitizer_*_switch_fiber).
 *===----------------------------------------------------------------------===*/
#include <dlfcn.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "device.h"
#include "sim_async.h"
#include "sim_fiber.h"
#include "sim_load.h"
#include "sim_poison.h"
#include "sim_profile.h"
#include "sim_race.h"
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

/*===-- Loading (sim_load.c) ----------------------------------------------===*/

static const etl_sim_ops sim_ops_table;

static etlStatus sim_program_load(etl_program *p) { return etl_sim_load(p, &sim_ops_table); }

static void sim_program_unload(etl_program *p) { etl_sim_unload(p); }

/*===-- Launch state -------------------------------------------------------===*/

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
  void *tsan_sched;
  const void *asan_sched_bottom;
  size_t asan_sched_size;
  _Atomic uint32_t task_group, task_linear, in_task;
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

static _Thread_local sim_cta *tls_cta;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* First error wins; later ones (other CTAs seeing the abort) are dropped. */
static int run_fail(sim_run *r, etlStatus st, const char *msg) {
  pthread_mutex_lock(&r->err_mu);
  int first = r->status == ETL_SUCCESS;
  if (first) {
    r->status = st;
    snprintf(r->msg, sizeof r->msg, "%s", msg);
  }
  pthread_mutex_unlock(&r->err_mu);
  atomic_store_explicit(r->abort_flag, 1u, memory_order_seq_cst);
  return first;
}

/*===-- Fibers -------------------------------------------------------------===*/

/* Every change of a fiber's state goes through here, which keeps
 * c->lane_state (what settle_warp hands etl_warp_settle) in step. */
static void set_state(sim_cta *c, sim_fiber *f, int state) {
  f->state = state;
  c->lane_state[f->tid] = state == FIBER_RUNNABLE     ? ETL_LANE_RUNNING
                          : state == FIBER_AT_SHUFFLE ? ETL_LANE_WAITING
                                                      : ETL_LANE_GONE;
}

static void switch_to_fiber(sim_cta *c, sim_fiber *f) {
  c->cur = f;
#ifdef ETL_ASAN
  void *fake = NULL;
  __sanitizer_start_switch_fiber(&fake, f->stack, c->run->stack_bytes);
#endif
#ifdef ETL_TSAN
  __tsan_switch_to_fiber(f->tsan, 0);
#endif
  etl_fiber_switch(&c->sched, &f->ctx);
#ifdef ETL_ASAN
  __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
  c->cur = NULL;
}

/* Back to the CTA's scheduler. `dying`: this fiber is never resumed. */
static void yield_fiber(sim_cta *c, int dying) {
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

static void async_leftover(sim_cta *c, const char *where);

static void fiber_main(void) {
  sim_cta *c = tls_cta;
#ifdef ETL_ASAN
  __sanitizer_finish_switch_fiber(NULL, &c->asan_sched_bottom, &c->asan_sched_size);
#endif
  c->run->entry(c->run->args);
  if (c->cur->aq.n)
    async_leftover(c, "the kernel");
  set_state(c, c->cur, FIBER_EXITED);
  yield_fiber(c, 1);
  abort(); /* never resumed */
}

/* Abandon the current fiber and stop its CTA. */
static void stop_cta(sim_cta *c) {
  c->stopped = 1;
  set_state(c, c->cur, FIBER_DEAD);
  yield_fiber(c, 1);
  abort();
}

static void release_barrier(sim_cta *c) {
  if (c->n_at_barrier == 0 || c->n_at_barrier < c->n_live)
    return;
  if (c->run->prof) /* every lane met here: the open warp-level requests are complete */
    etl_profile_flush(c->run->prof, c->cta);
  for (uint32_t i = 0; i < c->run->tpc; ++i)
    if (c->fibers[i].state == FIBER_AT_BARRIER)
      set_state(c, &c->fibers[i], FIBER_RUNNABLE);
  c->n_at_barrier = 0;
}

static void current_task(sim_cta *c, char *buf, size_t n);

/* After a fiber of warp `w` stopped running: if the lanes of the warp's
 * pending shuffle are all there, they get their results and go on; if one
 * can no longer arrive, the CTA stops with ETL_ERROR_DIVERGENCE. */
static void settle_warp(sim_cta *c, uint32_t w) {
  etl_warp *wp = &c->warps[w];
  if (!wp->arrived)
    return;
  uint32_t tpc = c->run->tpc, lanes = tpc - w * 32 < 32 ? tpc - w * 32 : 32;
  const int *state = &c->lane_state[w * 32];
  uint32_t done = 0;
  char why[512];
  int rc = etl_warp_settle(wp, lanes, state, &done, why, sizeof why);
  if (rc == ETL_WARP_DONE) {
    uint32_t first = w * 32 + (uint32_t)__builtin_ctz(done);
    if (c->run->prof) {
      uint32_t mode = wp->op[first - w * 32].mode, grp = c->fibers[first].prof_group;
      if (mode == ETL_WARP_MMA) {
        etl_profile_count(c->run->prof, c->cta, grp, ETL_PROF_MMA, 1);
        uint32_t k = wp->op[first - w * 32].c == ETL_MMA_TF32 ? 8 : 16; /* m16n8k8 / k16 */
        etl_profile_count(c->run->prof, c->cta, grp, ETL_PROF_TC_FLOPS, 2 * 16 * 8 * k);
      } else if (mode == ETL_WARP_LDMATRIX) {
        etl_profile_count(c->run->prof, c->cta, grp, ETL_PROF_LDMATRIX, 1);
        etl_profile_count(c->run->prof, c->cta, grp, ETL_PROF_LDMATRIX_PHASES, wp->ld_phases);
        etl_profile_count(c->run->prof, c->cta, grp, ETL_PROF_LDMATRIX_WAVEFRONTS,
                          wp->ld_wavefronts);
      } else
        etl_profile_count(c->run->prof, c->cta, grp, ETL_PROF_SHUFFLE, 1);
    }
    for (uint32_t l = 0; l < lanes; ++l)
      if (done & (1u << l))
        set_state(c, &c->fibers[w * 32 + l], FIBER_RUNNABLE);
  } else if (rc == ETL_WARP_DIVERGED) {
    char task[256], msg[1024];
    current_task(c, task, sizeof task);
    snprintf(msg, sizeof msg, "sim: warp divergence in task %s, cta %u, warp %u: %s", task, c->cta,
             w, why);
    run_fail(c->run, ETL_ERROR_DIVERGENCE, msg);
    c->stopped = 1;
  }
}

static int make_fiber(sim_run *r, sim_fiber *f, uint32_t tid) {
  f->tid = tid;
  f->race_task = UINT32_MAX;
  f->prof_group = UINT32_MAX;
  f->stack = malloc(r->stack_bytes);
  if (!f->stack)
    return -1;
  if (etl_fiber_make(&f->ctx, f->stack, r->stack_bytes, fiber_main) != 0) {
    free(f->stack);
    f->stack = NULL;
    return -1;
  }
#ifdef ETL_TSAN
  f->tsan = __tsan_create_fiber(0);
#endif
  f->state = FIBER_RUNNABLE;
  return 0;
}

static void *cta_main(void *arg) {
  sim_cta *c = arg;
  sim_run *r = c->run;
  tls_cta = c;
#ifdef ETL_TSAN
  c->tsan_sched = __tsan_get_current_fiber();
#endif
  uint32_t made = 0;
  for (; made < r->tpc; ++made) {
    if (make_fiber(r, &c->fibers[made], made) != 0) {
      run_fail(r, ETL_ERROR_OUT_OF_MEMORY, "sim: out of memory for thread stacks");
      goto done;
    }
  }
  c->n_live = r->tpc;
  while (c->n_live > 0 && !c->stopped) {
    for (uint32_t i = 0; i < r->tpc && !c->stopped; ++i) {
      sim_fiber *f = &c->fibers[i];
      if (f->state != FIBER_RUNNABLE)
        continue;
      switch_to_fiber(c, f);
      if (f->state == FIBER_EXITED)
        c->n_live--;
      settle_warp(c, f->tid / 32);
      release_barrier(c);
    }
  }
  if (r->prof)
    etl_profile_flush(r->prof, c->cta);
done:
  for (uint32_t i = 0; i < made; ++i) {
#ifdef ETL_TSAN
    __tsan_destroy_fiber(c->fibers[i].tsan);
#endif
    free(c->fibers[i].stack);
    etl_async_queue_free(&c->async, &c->fibers[i].aq); /* a stopped CTA's copies */
  }
  etl_async_smem_free(&c->async);
  return NULL;
}

/*===-- Machine operations -------------------------------------------------===*/

static uint32_t op_tid(void) { return tls_cta->cur->tid; }
static uint32_t op_ctaid(void) { return tls_cta->cta; }

static void op_barrier(void) {
  sim_cta *c = tls_cta;
  if (c->run->prof && c->cur->tid == 0)
    etl_profile_count(c->run->prof, c->cta, c->cur->prof_group, ETL_PROF_BARRIER, 1);
  set_state(c, c->cur, FIBER_AT_BARRIER);
  c->n_at_barrier++;
  yield_fiber(c, 0);
}

static void *op_shared_base(void) { return tls_cta->smem; }

static uint32_t op_shuffle(uint32_t value, uint32_t mode, uint32_t b, uint32_t cc, uint32_t mask,
                           uint32_t line) {
  sim_cta *c = tls_cta;
  sim_fiber *f = c->cur;
  etl_warp *w = &c->warps[f->tid / 32];
  etl_warp_op op = {mode, cc, mask, line};
  etl_warp_arrive(w, f->tid % 32, value, &op, b);
  set_state(c, f, FIBER_AT_SHUFFLE);
  yield_fiber(c, 0); /* back once settle_warp has filled in the results */
  return w->out[f->tid % 32];
}

/* The tensor-core collectives: the same rendezvous as op_shuffle, with a
 * full warp and several words per lane (sim_warp.h). */
static void op_mma(uint32_t kind, const uint32_t *in, uint32_t *out, uint32_t line) {
  sim_cta *c = tls_cta;
  sim_fiber *f = c->cur;
  etl_warp *w = &c->warps[f->tid / 32];
  etl_warp_op op = {ETL_WARP_MMA, kind, 0xFFFFFFFFu, line};
  etl_warp_arrive_mma(w, f->tid % 32, &op, in);
  set_state(c, f, FIBER_AT_SHUFFLE);
  yield_fiber(c, 0);
  memcpy(out, w->vout[f->tid % 32], 4 * sizeof(uint32_t));
}

static void async_conflict(sim_cta *c, const char *what, uint32_t line, uint64_t off,
                           uint64_t bytes, uint32_t owner, uint64_t at);

static void op_ldmatrix(const void *addr, uint32_t variant, uint32_t *out, uint32_t line) {
  sim_cta *c = tls_cta;
  sim_fiber *f = c->cur;
  uintptr_t a = (uintptr_t)addr, base = (uintptr_t)c->smem;
  if (c->async.pending && a >= base && f->tid % 32 < 8 * (variant & 7u)) { /* the lane's row */
    uint64_t at;
    uint32_t who = etl_async_owner(&c->async, a - base, 16, &at);
    if (who)
      async_conflict(c, "ldmatrix.sync row read", line, a - base, 16, who, at);
  }
  etl_warp *w = &c->warps[f->tid / 32];
  etl_warp_op op = {ETL_WARP_LDMATRIX, variant, 0xFFFFFFFFu, line};
  etl_warp_arrive_ldmatrix(w, f->tid % 32, &op, addr);
  set_state(c, f, FIBER_AT_SHUFFLE);
  yield_fiber(c, 0);
  uint32_t n = variant & 7u;
  memcpy(out, w->vout[f->tid % 32], (n <= 4 ? n : 4) * sizeof(uint32_t));
}

static void op_shared_access(const void *ptr, uint64_t bytes, uint32_t is_store) {
  sim_cta *c = tls_cta;
  if (c->async.pending && (uintptr_t)ptr >= (uintptr_t)c->smem) {
    uint64_t at, off = (uint64_t)((uintptr_t)ptr - (uintptr_t)c->smem);
    uint32_t who = etl_async_owner(&c->async, off, bytes, &at);
    if (who)
      async_conflict(c, is_store ? "store" : "load", 0, off, bytes, who, at);
  }
  if (c->run->prof)
    etl_profile_shared(c->run->prof, c->cta, c->cur->tid, c->cur->prof_group,
                       (uintptr_t)__builtin_return_address(0),
                       (uint64_t)((const char *)ptr - (const char *)c->smem), bytes, (int)is_store);
}

static void current_task(sim_cta *c, char *buf, size_t n) {
  if (!atomic_load_explicit(&c->in_task, memory_order_relaxed)) {
    snprintf(buf, n, "<no task>");
    return;
  }
  etl_plan_task_name(c->run->meta, c->run->plan,
                     atomic_load_explicit(&c->task_group, memory_order_relaxed),
                     atomic_load_explicit(&c->task_linear, memory_order_relaxed), buf, n);
}

/*===-- cp.async (sim_async.h) ---------------------------------------------===*/

/* A shared-memory access of [off, off + bytes) that meets the word at `at`
 * of a copy of thread owner - 1 still in flight: the run fails. */
static void async_conflict(sim_cta *c, const char *what, uint32_t line, uint64_t off,
                           uint64_t bytes, uint32_t owner, uint64_t at) {
  char task[256], where[64] = "", msg[1024];
  current_task(c, task, sizeof task);
  if (line)
    snprintf(where, sizeof where, " (line %u)", line);
  snprintf(msg, sizeof msg,
           "sim: shared-memory %s%s of %llu bytes at offset %llu in task %s, thread (cta %u, "
           "tid %u): byte %llu is the destination of a cp.async of tid %u that no "
           "cp.async.wait_group has landed yet (a missing or too weak wait_group)",
           what, where, (unsigned long long)bytes, (unsigned long long)off, task, c->cta,
           c->cur->tid, (unsigned long long)at, owner - 1);
  run_fail(c->run, ETL_ERROR_RACE, msg);
  stop_cta(c);
}

/* Copies still in flight where `where` (a task, the kernel) ends. */
static void async_leftover(sim_cta *c, const char *where) {
  char msg[1024];
  snprintf(msg, sizeof msg,
           "sim: %s ends with %u cp.async copies of thread (cta %u, tid %u) in flight: no "
           "cp.async.wait_group landed them",
           where, c->cur->aq.n, c->cta, c->cur->tid);
  run_fail(c->run, ETL_ERROR_RACE, msg);
  stop_cta(c);
}

static void op_async_copy(void *dst, const void *src, uint32_t bytes) {
  sim_cta *c = tls_cta;
  sim_fiber *f = c->cur;
  uint32_t other = 0;
  int rc = etl_async_issue(&c->async, &f->aq, f->tid, dst, src, bytes, &other);
  if (rc == ETL_ASYNC_OVERLAP) {
    uint64_t off = (uint64_t)((uintptr_t)dst - (uintptr_t)c->smem), at = off;
    (void)etl_async_owner(&c->async, off, bytes, &at);
    async_conflict(c, "cp.async destination", 0, off, bytes, other + 1, at);
  } else if (rc != ETL_ASYNC_OK) {
    char task[256], msg[1024];
    current_task(c, task, sizeof task);
    snprintf(msg, sizeof msg,
             "sim: cp.async of %u bytes to %p in task %s, thread (cta %u, tid %u): %s", bytes, dst,
             task, c->cta, f->tid,
             rc == ETL_ASYNC_NO_MEMORY ? "out of memory for the copy queue"
             : rc == ETL_ASYNC_OUTSIDE ? "the destination is not inside the CTA's shared memory"
                                       : "the size is not 4, 8 or 16 or the destination is "
                                         "not aligned to it");
    run_fail(c->run,
             rc == ETL_ASYNC_NO_MEMORY ? ETL_ERROR_OUT_OF_MEMORY : ETL_ERROR_MEMORY_VIOLATION, msg);
    stop_cta(c);
  }
  if (c->run->prof) /* the shared store, counted at issue as before the queue */
    etl_profile_shared(c->run->prof, c->cta, f->tid, f->prof_group,
                       (uintptr_t)__builtin_return_address(0),
                       (uint64_t)((const char *)dst - (const char *)c->smem), bytes, 1);
}

static void op_async_commit(void) { etl_async_commit(&tls_cta->cur->aq); }

static void op_async_wait(uint32_t pending) {
  sim_cta *c = tls_cta;
  etl_async_wait(&c->async, &c->cur->aq, pending);
}

/* The race check (sim_race.h) of an access of `bytes` at byte `off` of
 * tensor `t`, element by element. */
static void check_race(sim_cta *c, uint32_t t, uint64_t off, uint64_t bytes, uint32_t is_store) {
  sim_run *r = c->run;
  uint32_t es = r->ranges[t].elem_size;
  char msg[1024];
  for (uint64_t e = off / es; e * es < off + bytes; ++e)
    if (etl_race_access(r->race, c->cur->race_task, t, e, (int)is_store, msg, sizeof msg)) {
      run_fail(r, ETL_ERROR_RACE, msg);
      stop_cta(c);
    }
}

static void op_check_access(const void *ptr, uint64_t bytes, uint32_t is_store) {
  sim_cta *c = tls_cta;
  sim_run *r = c->run;
  uint64_t a = (uint64_t)(uintptr_t)ptr;
  for (uint32_t i = 0; i < r->n_ranges; ++i) {
    const sim_range *g = &r->ranges[i];
    if (a >= g->base && bytes <= g->bytes && a - g->base <= g->bytes - bytes) {
      if (r->race && i < r->n_tensor_ranges)
        check_race(c, i, a - g->base, bytes, is_store);
      if (r->prof)
        etl_profile_global(r->prof, c->cta, c->cur->tid, c->cur->prof_group,
                           (uintptr_t)__builtin_return_address(0), a, bytes, is_store != 0);
      return;
    }
  }
  /* violation: name the nearest tensors below and above the address */
  const sim_range *below = NULL, *above = NULL;
  for (uint32_t i = 0; i < r->n_ranges; ++i) {
    const sim_range *g = &r->ranges[i];
    if (!g->is_tensor)
      continue;
    if (g->base <= a) {
      if (!below || g->base > below->base)
        below = g;
    } else if (!above || g->base < above->base) {
      above = g;
    }
  }
  char task[256], where[640];
  current_task(c, task, sizeof task);
  size_t len = 0;
  where[0] = 0;
  const sim_range *near[2] = {below, above};
  for (int i = 0; i < 2; ++i) {
    const sim_range *g = near[i];
    if (!g || len >= sizeof where)
      continue;
    int64_t off = (int64_t)(a - g->base); /* two's complement: negative above */
    int64_t es = (int64_t)g->elem_size;
    int64_t elem = off >= 0 ? off / es : -((-off + es - 1) / es);
    len += (size_t)snprintf(where + len, sizeof where - len,
                            "%stensor '%s' (%llu elements) at element offset %lld",
                            len ? "; " : "nearest ", g->name,
                            (unsigned long long)(g->bytes / g->elem_size), (long long)elem);
  }
  if (!below && !above)
    snprintf(where, sizeof where, "no tensor is bound");
  char msg[1024];
  snprintf(msg, sizeof msg,
           "sim: out-of-bounds %s of %llu bytes at %p in task %s, thread (cta %u, tid %u): %s",
           is_store == ETL_SIM_ACCESS_ATOMIC ? "atomic"
           : is_store                        ? "store"
                                             : "load",
           (unsigned long long)bytes, ptr, task, c->cta, c->cur->tid, where);
  run_fail(r, ETL_ERROR_MEMORY_VIOLATION, msg);
  stop_cta(c);
}

/* Every atomic op is bracketed by these: atomic_before (the profile counts
 * it; the race check records a release before the atomic) and atomic_after
 * (the race check records an acquire after it), so whoever acquires what a
 * release wrote also finds its record (sim_race.h). */
static void atomic_before(const void *ptr, int release) {
  sim_cta *c = tls_cta;
  if (c->run->prof)
    etl_profile_count(c->run->prof, c->cta, c->cur->prof_group, ETL_PROF_ATOMIC, 1);
  if (c->run->race && release)
    etl_race_sync(c->run->race, c->cta, ptr, 0, 1);
}

static void atomic_after(const void *ptr, int acquire) {
  sim_cta *c = tls_cta;
  if (c->run->race && acquire)
    etl_race_sync(c->run->race, c->cta, ptr, 1, 0);
}

static uint32_t op_atomic_add_release(uint32_t *ptr, uint32_t value) {
  atomic_before(ptr, 1);
  return atomic_fetch_add_explicit((_Atomic uint32_t *)ptr, value, memory_order_release);
}

static uint32_t op_load_acquire(const uint32_t *ptr) {
  atomic_before(ptr, 0);
  uint32_t v = atomic_load_explicit((_Atomic uint32_t *)(uintptr_t)ptr, memory_order_acquire);
  atomic_after(ptr, 1);
  return v;
}

static uint32_t op_atomic_add_acq_rel(uint32_t *ptr, uint32_t value) {
  atomic_before(ptr, 1);
  uint32_t v = atomic_fetch_add_explicit((_Atomic uint32_t *)ptr, value, memory_order_acq_rel);
  atomic_after(ptr, 1);
  return v;
}

static uint32_t op_atomic_cas(uint32_t *ptr, uint32_t expected, uint32_t desired) {
  atomic_before(ptr, 1);
  atomic_compare_exchange_strong_explicit((_Atomic uint32_t *)ptr, &expected, desired,
                                          memory_order_acq_rel, memory_order_acquire);
  atomic_after(ptr, 1);
  return expected; /* the old value either way */
}

static void op_fence(void) {
  sim_cta *c = tls_cta;
  if (c->run->prof)
    etl_profile_count(c->run->prof, c->cta, c->cur->prof_group, ETL_PROF_FENCE, 1);
  atomic_thread_fence(memory_order_seq_cst);
}

static void report_timeout(sim_run *r) {
  char msg[4096];
  size_t len = (size_t)snprintf(msg, sizeof msg,
                                "watchdog: no task completed for %lld ms (deadlock?); pending "
                                "events:",
                                (long long)(r->watchdog_ns / 1000000));
  const uint32_t *ctr = (const uint32_t *)(uintptr_t)r->args[ETL_SLOT_EVENTS];
  uint32_t listed = 0, more = 0;
  for (uint64_t i = 0; i < r->plan->n_counters; ++i) {
    uint32_t v = atomic_load_explicit((_Atomic uint32_t *)(uintptr_t)&ctr[i], memory_order_relaxed);
    if (v == 0)
      continue;
    if (listed >= 32 || len >= sizeof msg - 200) {
      more++;
      continue;
    }
    char name[256];
    etl_plan_counter_name(r->meta, r->plan, i, name, sizeof name);
    len += (size_t)snprintf(msg + len, sizeof msg - len, " %s=%u", name, v);
    listed++;
  }
  if (listed == 0 && len < sizeof msg)
    len += (size_t)snprintf(msg + len, sizeof msg - len, " none");
  if (more && len < sizeof msg)
    len += (size_t)snprintf(msg + len, sizeof msg - len, " ... and %u more", more);
  for (uint32_t i = 0; i < r->num_ctas && len < sizeof msg - 300; ++i) {
    char task[256];
    current_task(&r->ctas[i], task, sizeof task);
    len += (size_t)snprintf(msg + len, sizeof msg - len, "%s cta %u in %s", i ? ";" : "; tasks:", i,
                            task);
  }
  run_fail(r, ETL_ERROR_TIMEOUT, msg);
}

static void op_spin_pause(void) {
  sim_cta *c = tls_cta;
  sim_run *r = c->run;
  if (atomic_load_explicit(r->abort_flag, memory_order_acquire))
    stop_cta(c);
  int64_t last = atomic_load_explicit(&r->last_progress_ns, memory_order_relaxed);
  if (now_ns() - last > r->watchdog_ns) {
    report_timeout(r);
    stop_cta(c);
  }
  int64_t t0 = r->prof ? now_ns() : 0;
  sched_yield();
  yield_fiber(c, 0);
  if (r->prof) {
    etl_profile_count(r->prof, c->cta, c->cur->prof_group, ETL_PROF_SPIN, 1);
    etl_profile_count(r->prof, c->cta, c->cur->prof_group, ETL_PROF_WAIT_NS,
                      (uint64_t)(now_ns() - t0));
  }
}

static void op_task_begin(uint32_t group, uint32_t linear) {
  sim_cta *c = tls_cta;
  if (c->run->race) {
    if (c->cur->tid == 0)
      etl_race_task_begin(c->run->race, c->cta, group, linear);
    c->cur->race_task = etl_race_task_id(c->run->race, group, linear);
  }
  if (c->run->prof) {
    c->cur->prof_group = group;
    if (c->cur->tid == 0)
      etl_profile_count(c->run->prof, c->cta, group, ETL_PROF_TASK, 1);
  }
  atomic_store_explicit(&c->task_group, group, memory_order_relaxed);
  atomic_store_explicit(&c->task_linear, linear, memory_order_relaxed);
  atomic_store_explicit(&c->in_task, 1u, memory_order_relaxed);
}

static void op_task_end(void) {
  sim_cta *c = tls_cta;
  if (c->cur->aq.n) {
    char task[256], where[300];
    current_task(c, task, sizeof task);
    snprintf(where, sizeof where, "task %s", task);
    async_leftover(c, where);
  }
  if (c->run->race) {
    if (c->cur->tid == 0)
      etl_race_task_end(c->run->race, c->cta);
    c->cur->race_task = UINT32_MAX;
  }
  if (c->run->prof) {
    if (c->cur->tid == 0 && c->cur->prof_group != UINT32_MAX)
      etl_profile_sample(c->run->prof, c->cta, (uint64_t)now_ns());
    c->cur->prof_group = UINT32_MAX;
  }
  atomic_store_explicit(&c->in_task, 0u, memory_order_relaxed);
  atomic_store_explicit(&c->run->last_progress_ns, now_ns(), memory_order_relaxed);
}

static uint64_t op_clock_ns(void) { return (uint64_t)now_ns(); }

static uint32_t op_sm_id(void) { return tls_cta->cta; }

static const etl_sim_ops sim_ops_table = {
#define ETL_SIM_OP_INIT(name, ret, params) .name = op_##name,
    ETL_SIM_OPS(ETL_SIM_OP_INIT)
#undef ETL_SIM_OP_INIT
};

/*===-- Launch -------------------------------------------------------------===*/

static etlStatus sim_launch(etl_program *p, etl_plan *plan, void *stream, int *in_flight) {
  (void)stream;             /* run.c refuses one: sim has no streams */
  *in_flight = 0;           /* the launch ends here */
  free(p->profile_samples); /* a run without the profile leaves no counter track */
  p->profile_samples = NULL;
  p->n_profile_samples = 0;
  etl_sim_poison_buffers(p, plan);
  etl_context *ctx = p->ctx;
  const etl_meta *m = &p->art.meta;
  sim_run r;
  memset(&r, 0, sizeof r);
  r.entry = etl_sim_entry(p);
  r.plan = plan;
  r.meta = m;
  r.args = (uint64_t *)(uintptr_t)plan->args_dptr;
  r.num_ctas = ctx->num_ctas;
  r.tpc = m->threads_per_cta;
  r.stack_bytes = ctx->params.sim_stack_bytes;
#ifdef ETL_ASAN
  if (r.stack_bytes < 256 * 1024)
    r.stack_bytes = 256 * 1024;
#endif
  r.abort_flag = (_Atomic uint32_t *)ctx->abort_host;
  r.watchdog_ns = (int64_t)ctx->params.watchdog_ms * 1000000;
  atomic_store(&r.last_progress_ns, now_ns());
  pthread_mutex_init(&r.err_mu, NULL);

  /* accessible ranges: tensors and buffers, then the runtime's arrays */
  r.ranges = calloc(m->n_tensors + 5, sizeof(sim_range));
  r.ctas = calloc(r.num_ctas, sizeof(sim_cta));
  etlStatus st = ETL_SUCCESS;
  if (!r.ranges || !r.ctas) {
    st = etl_error(ETL_ERROR_OUT_OF_MEMORY, "sim: out of memory");
    goto out;
  }
  for (uint32_t i = 0; i < m->n_tensors; ++i) {
    const etl_tensor_meta *t = &m->tensors[i];
    sim_range *g = &r.ranges[r.n_ranges++];
    g->name = t->name;
    g->elem_size = (uint32_t)etl_elem_size(t->elem);
    g->is_tensor = 1;
    if (t->is_buffer) {
      g->base = plan->buffer_dptr[i];
      g->bytes = plan->buffer_bytes[i];
    } else {
      g->base = p->tensors[i].dptr;
      g->bytes = p->tensors[i].bytes; /* overflow-checked by etlBindTensor */
    }
  }
  r.n_tensor_ranges = r.n_ranges;
  if (p->profile_path && !(r.prof = etl_profile_create(m, r.num_ctas, r.tpc))) {
    st = etl_error(ETL_ERROR_OUT_OF_MEMORY, "sim: out of memory for the profile");
    goto out;
  }
  if (p->race_check) {
    uint64_t *elems = calloc(m->n_tensors + 1, sizeof(uint64_t));
    char err[256] = "out of memory for the race check";
    for (uint32_t i = 0; elems && i < m->n_tensors; ++i)
      elems[i] = r.ranges[i].bytes / r.ranges[i].elem_size;
    r.race = elems ? etl_race_create(m, plan, r.num_ctas, elems, err, sizeof err) : NULL;
    free(elems);
    if (!r.race) {
      st = etl_error(ETL_ERROR_OUT_OF_MEMORY, "sim: %s", err);
      goto out;
    }
  }
  sim_range rt[] = {
      {plan->counters_dptr, plan->n_counters * 4, "<event counters>", 4, 0},
      {plan->queue_dptr, plan->n_entries * 8, "<queue>", 4, 0},
      {plan->offs_dptr, ((uint64_t)r.num_ctas + 1) * 4, "<queue offsets>", 4, 0},
      {plan->args_dptr, (uint64_t)m->num_slots * 8, "<arguments>", 8, 0},
  };
  for (size_t i = 0; i < sizeof rt / sizeof rt[0]; ++i)
    r.ranges[r.n_ranges++] = rt[i];

  uint32_t started = 0;
  for (uint32_t i = 0; i < r.num_ctas; ++i) {
    sim_cta *c = &r.ctas[i];
    c->run = &r;
    c->cta = i;
    c->fibers = calloc(r.tpc, sizeof(sim_fiber));
    c->smem = calloc(1, m->smem_bytes ? m->smem_bytes : 16);
    c->warps = calloc((r.tpc + 31) / 32, sizeof(etl_warp));
    c->lane_state = calloc(r.tpc, sizeof(int)); /* ETL_LANE_RUNNING, as make_fiber's fibers */
    if (!c->fibers || !c->smem || !c->warps || !c->lane_state) {
      run_fail(&r, ETL_ERROR_OUT_OF_MEMORY, "sim: out of memory");
      break;
    }
    c->async.smem = c->smem;
    c->async.bytes = m->smem_bytes;
    for (uint32_t w = 0; w < (r.tpc + 31) / 32; ++w) {
      c->warps[w].smem = c->smem;
      c->warps[w].smem_bytes = m->smem_bytes;
    }
  }
  if (r.status == ETL_SUCCESS) {
    for (; started < r.num_ctas; ++started) {
      if (pthread_create(&r.ctas[started].thread, NULL, cta_main, &r.ctas[started]) != 0) {
        run_fail(&r, ETL_ERROR_LAUNCH_FAILED, "sim: cannot start a worker thread");
        break;
      }
    }
  }
  for (uint32_t i = 0; i < started; ++i)
    pthread_join(r.ctas[i].thread, NULL);
  for (uint32_t i = 0; i < r.num_ctas; ++i) {
    free(r.ctas[i].fibers);
    free(r.ctas[i].smem);
    free(r.ctas[i].warps);
    free(r.ctas[i].lane_state);
  }
  st = r.status;
  if (st) {
    etl_error_str(st, r.msg);
  } else if (r.prof) {
    Dl_info info;
    uintptr_t base = dladdr((void *)(uintptr_t)r.entry, &info) ? (uintptr_t)info.dli_fbase : 0;
    st = etl_profile_write(r.prof, p->profile_path, base);
    free(p->profile_samples);
    p->profile_samples = etl_profile_take_samples(r.prof, &p->n_profile_samples);
  }
out:
  etl_profile_destroy(r.prof);
  etl_race_destroy(r.race);
  free(r.ranges);
  free(r.ctas);
  pthread_mutex_destroy(&r.err_mu);
  return st;
}

/*===-- Context and memory -------------------------------------------------===*/

static etlStatus sim_context_create(etl_context *c) {
  c->num_ctas = c->params.sim_workers;
  snprintf(c->device_name, sizeof c->device_name, "sim (%u workers)", c->params.sim_workers);
  /* the control block (etl_abi.h): abort flag, then a progress word per CTA */
  size_t control = (ETL_CONTROL_BYTES(c->num_ctas) + 63u) / 64u * 64u;
  c->abort_host = aligned_alloc(64, control);
  if (!c->abort_host)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory creating a context");
  memset(c->abort_host, 0, control);
  c->abort_dptr = (uint64_t)(uintptr_t)c->abort_host;
  return ETL_SUCCESS;
}

static void sim_context_destroy(etl_context *c) {
  free(c->abort_host);
  c->abort_host = NULL;
}

/* Host memory, zeroed, 256-byte aligned like cuMemAlloc's. */
static etlStatus sim_alloc(etl_context *c, size_t bytes, uint64_t *dptr) {
  (void)c;
  size_t rounded = (bytes + 255) & ~(size_t)255;
  if (rounded < bytes)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "allocation too large");
  void *p = aligned_alloc(256, rounded ? rounded : 256);
  if (!p)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory allocating %zu bytes", bytes);
  memset(p, 0, rounded ? rounded : 256);
  *dptr = (uint64_t)(uintptr_t)p;
  return ETL_SUCCESS;
}

static void sim_free(etl_context *c, uint64_t dptr) {
  (void)c;
  free((void *)(uintptr_t)dptr);
}

static etlStatus sim_htod(etl_context *c, uint64_t dst, const void *src, size_t n) {
  (void)c;
  memcpy((void *)(uintptr_t)dst, src, n);
  return ETL_SUCCESS;
}

static etlStatus sim_dtoh(etl_context *c, void *dst, uint64_t src, size_t n) {
  (void)c;
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return ETL_SUCCESS;
}

const etl_device etl_device_sim = {
    .name = "sim",
    .is_gpu = 0,
    .host_addressable = 1,
    .context_create = sim_context_create,
    .context_destroy = sim_context_destroy,
    .alloc = sim_alloc,
    .free = sim_free,
    .htod = sim_htod,
    .zero = etl_sim_zero,
    .dtoh = sim_dtoh,
    .program_load = sim_program_load,
    .program_unload = sim_program_unload,
    .launch = sim_launch,
};
