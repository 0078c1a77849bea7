/*===- src/sim_ops.c - The machine operations of the sim device ----------===
 *
 * The table etl_sim_ops (etl_abi.h) the compiled sim code calls instead of
 * PTX special registers, barriers, shuffles, tensor-core collectives,
 * cp.async, atomics, fences and the watchdog's spin: each one runs on the
 * fiber of the calling thread, on the launch state of sim_cta.h.
 * op_barrier, op_shuffle, op_mma and op_ldmatrix park the fiber and give
 * the CPU back to its CTA's scheduler (sim.c); cp.async copies queue per
 * thread (sim_async.c) and every shared-memory access is checked against
 * the copies still in flight (ETL_ERROR_RACE); op_check_access checks every
 * global access against the bound tensors, runtime buffers and runtime
 * arrays (and feeds the race check and the profile); op_spin_pause is the
 * watchdog.
 *===----------------------------------------------------------------------===*/
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "sim_cta.h"

_Thread_local sim_cta *etl_sim_cta;

static uint32_t op_tid(void) { return etl_sim_cta->cur->tid; }
static uint32_t op_ctaid(void) { return etl_sim_cta->cta; }

static void op_barrier(void) {
  sim_cta *c = etl_sim_cta;
  if (c->run->prof && c->cur->tid == 0)
    etl_profile_count(c->run->prof, c->cta, c->cur->prof_group, ETL_PROF_BARRIER, 1);
  set_state(c, c->cur, FIBER_AT_BARRIER);
  c->n_at_barrier++;
  yield_fiber(c, 0);
}

static void *op_shared_base(void) { return etl_sim_cta->smem; }

static uint32_t op_shuffle(uint32_t value, uint32_t mode, uint32_t b, uint32_t cc, uint32_t mask,
                           uint32_t line) {
  sim_cta *c = etl_sim_cta;
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
  sim_cta *c = etl_sim_cta;
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
  sim_cta *c = etl_sim_cta;
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
  sim_cta *c = etl_sim_cta;
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

void etl_sim_current_task(sim_cta *c, char *buf, size_t n) {
  if (!atomic_load_explicit(&c->in_task, memory_order_relaxed)) {
    snprintf(buf, n, "<no task>");
    return;
  }
  etl_plan_task_name(c->run->meta, c->run->plan,
                     atomic_load_explicit(&c->task_group, memory_order_relaxed),
                     atomic_load_explicit(&c->task_linear, memory_order_relaxed), buf, n);
}

static void wgmma_fail(sim_cta *c, int code, const char *what);

/*===-- cp.async (sim_async.h) ---------------------------------------------===*/

/* A shared-memory access of [off, off + bytes) that meets the word at `at`
 * of a copy of thread owner - 1 still in flight: the run fails. */
static void async_conflict(sim_cta *c, const char *what, uint32_t line, uint64_t off,
                           uint64_t bytes, uint32_t owner, uint64_t at) {
  char task[256], where[64] = "", msg[1024];
  etl_sim_current_task(c, task, sizeof task);
  if (line)
    snprintf(where, sizeof where, " (line %u)", line);
  const etl_mbar *mb = owner == ETL_ASYNC_TMA_OWNER ? etl_mbar_owner(&c->mbars, at) : NULL;
  if (owner == ETL_ASYNC_TMA_OWNER)
    snprintf(msg, sizeof msg,
             "sim: shared-memory %s%s of %llu bytes at offset %llu in task %s, thread (cta %u, "
             "tid %u): byte %llu is the destination of a TMA copy (cp.async.bulk.tensor) "
             "completing on the mbarrier at offset %u in its phase %u, which no "
             "mbarrier.try_wait.parity has seen complete yet (a missing wait on the ring's "
             "mbarrier)",
             what, where, (unsigned long long)bytes, (unsigned long long)off, task, c->cta,
             c->cur->tid, (unsigned long long)at, mb ? mb->off : 0u, mb ? mb->phase : 0u);
  else
    snprintf(msg, sizeof msg,
           "sim: shared-memory %s%s of %llu bytes at offset %llu in task %s, thread (cta %u, "
           "tid %u): byte %llu is the destination of a cp.async of tid %u that no "
           "cp.async.wait_group has landed yet (a missing or too weak wait_group)",
           what, where, (unsigned long long)bytes, (unsigned long long)off, task, c->cta,
           c->cur->tid, (unsigned long long)at, owner - 1);
  etl_sim_run_fail(c->run, ETL_ERROR_RACE, msg);
  stop_cta(c);
}

/* Copies still in flight where `where` (a task, the kernel) ends. */
void etl_sim_async_leftover(sim_cta *c, const char *where) {
  char msg[1024];
  snprintf(msg, sizeof msg,
           "sim: %s ends with %u cp.async copies of thread (cta %u, tid %u) in flight: no "
           "cp.async.wait_group landed them",
           where, c->cur->aq.n, c->cta, c->cur->tid);
  etl_sim_run_fail(c->run, ETL_ERROR_RACE, msg);
  stop_cta(c);
}

static void op_async_copy(void *dst, const void *src, uint32_t bytes) {
  sim_cta *c = etl_sim_cta;
  sim_fiber *f = c->cur;
  uint32_t other = 0;
  int rc = etl_async_issue(&c->async, &f->aq, f->tid, dst, src, bytes, &other);
  if (rc == ETL_ASYNC_OVERLAP) {
    uint64_t off = (uint64_t)((uintptr_t)dst - (uintptr_t)c->smem), at = off;
    (void)etl_async_owner(&c->async, off, bytes, &at);
    async_conflict(c, "cp.async destination", 0, off, bytes, other + 1, at);
  } else if (rc != ETL_ASYNC_OK) {
    char task[256], msg[1024];
    etl_sim_current_task(c, task, sizeof task);
    snprintf(msg, sizeof msg,
             "sim: cp.async of %u bytes to %p in task %s, thread (cta %u, tid %u): %s", bytes, dst,
             task, c->cta, f->tid,
             rc == ETL_ASYNC_NO_MEMORY ? "out of memory for the copy queue"
             : rc == ETL_ASYNC_OUTSIDE ? "the destination is not inside the CTA's shared memory"
                                       : "the size is not 4, 8 or 16 or the destination is "
                                         "not aligned to it");
    etl_sim_run_fail(
        c->run, rc == ETL_ASYNC_NO_MEMORY ? ETL_ERROR_OUT_OF_MEMORY : ETL_ERROR_MEMORY_VIOLATION,
        msg);
    stop_cta(c);
  }
  if (c->run->prof) /* the shared store, counted at issue as before the queue */
    etl_profile_shared(c->run->prof, c->cta, f->tid, f->prof_group,
                       (uintptr_t)__builtin_return_address(0),
                       (uint64_t)((const char *)dst - (const char *)c->smem), bytes, 1);
}

static void op_async_commit(void) { etl_async_commit(&etl_sim_cta->cur->aq); }

static void op_async_wait(uint32_t pending) {
  sim_cta *c = etl_sim_cta;
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
      etl_sim_run_fail(r, ETL_ERROR_RACE, msg);
      stop_cta(c);
    }
}

static void op_check_access(const void *ptr, uint64_t bytes, uint32_t is_store) {
  sim_cta *c = etl_sim_cta;
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
  etl_sim_current_task(c, task, sizeof task);
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
  etl_sim_run_fail(r, ETL_ERROR_MEMORY_VIOLATION, msg);
  stop_cta(c);
}

/* Every atomic op is bracketed by these: atomic_before (the profile counts
 * it; the race check records a release before the atomic) and atomic_after
 * (the race check records an acquire after it), so whoever acquires what a
 * release wrote also finds its record (sim_race.h). */
static void atomic_before(const void *ptr, int release) {
  sim_cta *c = etl_sim_cta;
  if (c->run->prof)
    etl_profile_count(c->run->prof, c->cta, c->cur->prof_group, ETL_PROF_ATOMIC, 1);
  if (c->run->race && release)
    etl_race_sync(c->run->race, c->cta, ptr, 0, 1);
}

static void atomic_after(const void *ptr, int acquire) {
  sim_cta *c = etl_sim_cta;
  if (c->run->race && acquire)
    etl_race_sync(c->run->race, c->cta, ptr, 1, 0);
}

/* The profile's counters of the task switch, told by address (the event
 * counters, the dynamic queue's state array: etl_abi.h). On the queue: an
 * add on head takes a ticket (a pop), a compare-and-swap of head is a pop
 * when it wins and a retry when it loses, a load of a ticket's slot that
 * finds it empty is a retry, a read of head then of tail that finds
 * head >= tail is an empty look, an add of n on tail pushes n items. On the
 * events: an add is a notify, a load that finds the element non-zero is a
 * look that found it not ready (and the task's wait spun). Every other
 * operation on them is a round trip the task switch waits for; the looks
 * that found nothing, and the read of `remaining` that follows an empty
 * slot, are spinning instead. */
enum { Q_ADD, Q_CAS_WON, Q_CAS_LOST, Q_LOAD };
static void sync_count(const void *ptr, int op, uint32_t value) {
  sim_cta *c = etl_sim_cta;
  sim_run *r = c->run;
  if (!r->prof)
    return;
  uintptr_t dyn = (uintptr_t)r->args[ETL_SLOT_DYN], evs = (uintptr_t)r->args[ETL_SLOT_EVENTS];
  uintptr_t a = (uintptr_t)ptr;
  uint32_t grp = c->cur->prof_group;
  int nothing = 0, trip = 1;
  if (dyn && a >= dyn && (a - dyn) / 4 < r->plan->dyn_words) {
    uint64_t w = (a - dyn) / 4, slot0 = ETL_DYN_GROUP_OFF + 2ull * r->meta->n_groups;
    if (w == ETL_DYN_HEAD && op == Q_LOAD) {
      c->prof_head = value;
      trip = 0; /* counted with the read of tail that completes the look */
    } else if (w == ETL_DYN_HEAD) {
      nothing = op == Q_CAS_LOST;
      etl_profile_count(r->prof, c->cta, grp, nothing ? ETL_PROF_QUEUE_RETRIES : ETL_PROF_QUEUE_POPS,
                        1);
    } else if (w == ETL_DYN_TAIL && op == Q_LOAD) {
      nothing = c->prof_head >= value;
      if (nothing)
        etl_profile_count(r->prof, c->cta, grp, ETL_PROF_QUEUE_EMPTY_LOOKS, 1);
      else
        etl_profile_count(r->prof, c->cta, grp, ETL_PROF_ROUND_TRIPS, 1); /* the read of head */
    } else if (w == ETL_DYN_TAIL && op == Q_ADD) {
      etl_profile_count(r->prof, c->cta, grp, ETL_PROF_QUEUE_PUSH_CLAIMS, 1);
      etl_profile_count(r->prof, c->cta, grp, ETL_PROF_QUEUE_PUSHES, value);
    } else if (w == ETL_DYN_REMAINING && op == Q_LOAD && c->prof_found_nothing) {
      trip = 0; /* the spin after an empty slot: still found nothing */
      nothing = 1;
    } else if (op == Q_LOAD && value == 0 && w >= slot0 && w < slot0 + r->plan->n_dynamic) {
      nothing = 1;
      etl_profile_count(r->prof, c->cta, grp, ETL_PROF_QUEUE_RETRIES, 1);
    }
  } else if (evs && a >= evs && (a - evs) / 4 < r->plan->n_counters) {
    if (op == Q_ADD) {
      etl_profile_count(r->prof, c->cta, grp, ETL_PROF_EVENT_NOTIFIES, 1);
    } else if (op == Q_LOAD && value != 0) {
      nothing = 1;
      etl_profile_count(r->prof, c->cta, grp, ETL_PROF_EVENT_NOT_READY, 1);
      uint64_t task = ((uint64_t)atomic_load_explicit(&c->task_group, memory_order_relaxed) << 32 |
                       atomic_load_explicit(&c->task_linear, memory_order_relaxed)) +
                      1;
      if (c->prof_spun_task != task)
        etl_profile_count(r->prof, c->cta, grp, ETL_PROF_WAITS_SPUN, 1);
      c->prof_spun_task = task;
    }
  } else {
    return; /* a tensor atomic, the abort flag, the error record */
  }
  if (trip && !nothing)
    etl_profile_count(r->prof, c->cta, grp, ETL_PROF_ROUND_TRIPS, 1);
  c->prof_found_nothing = nothing;
}

static uint32_t op_atomic_add_release(uint32_t *ptr, uint32_t value) {
  atomic_before(ptr, 1);
  sync_count(ptr, Q_ADD, value);
  return atomic_fetch_add_explicit((_Atomic uint32_t *)ptr, value, memory_order_release);
}

static uint32_t op_load_acquire(const uint32_t *ptr) {
  atomic_before(ptr, 0);
  uint32_t v = atomic_load_explicit((_Atomic uint32_t *)(uintptr_t)ptr, memory_order_acquire);
  atomic_after(ptr, 1);
  sync_count(ptr, Q_LOAD, v);
  return v;
}

static uint32_t op_atomic_add_acq_rel(uint32_t *ptr, uint32_t value) {
  atomic_before(ptr, 1);
  uint32_t v = atomic_fetch_add_explicit((_Atomic uint32_t *)ptr, value, memory_order_acq_rel);
  atomic_after(ptr, 1);
  sync_count(ptr, Q_ADD, value);
  return v;
}

static uint32_t op_atomic_cas(uint32_t *ptr, uint32_t expected, uint32_t desired) {
  atomic_before(ptr, 1);
  uint32_t want = expected;
  atomic_compare_exchange_strong_explicit((_Atomic uint32_t *)ptr, &expected, desired,
                                          memory_order_acq_rel, memory_order_acquire);
  atomic_after(ptr, 1);
  sync_count(ptr, expected == want ? Q_CAS_WON : Q_CAS_LOST, 0);
  return expected; /* the old value either way */
}

static void op_fence(void) {
  sim_cta *c = etl_sim_cta;
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
    etl_sim_current_task(&r->ctas[i], task, sizeof task);
    len += (size_t)snprintf(msg + len, sizeof msg - len, "%s cta %u in %s", i ? ";" : "; tasks:", i,
                            task);
  }
  etl_sim_run_fail(r, ETL_ERROR_TIMEOUT, msg);
}

static void op_spin_pause(void) {
  sim_cta *c = etl_sim_cta;
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
  sim_cta *c = etl_sim_cta;
  if (c->run->race) {
    if (c->cur->tid == 0)
      etl_race_task_begin(c->run->race, c->cta, group, linear);
    c->cur->race_task = etl_race_task_id(c->run->race, group, linear);
  }
  if (c->run->prof) {
    c->cur->prof_group = group;
    /* A static task that ran a dynamic item while it waited begins again
     * after it (lower_dynamic.cpp): that is the same task, resumed. */
    uint64_t key = ((uint64_t)group << 32 | linear) + 1;
    if (c->cur->tid == 0) {
      if (key != c->prof_suspended_task) {
        if (c->prof_open_task)
          c->prof_suspended_task = c->prof_open_task;
        etl_profile_count(c->run->prof, c->cta, group, ETL_PROF_TASK, 1);
      }
      c->prof_open_task = key;
    }
  }
  atomic_store_explicit(&c->task_group, group, memory_order_relaxed);
  atomic_store_explicit(&c->task_linear, linear, memory_order_relaxed);
  atomic_store_explicit(&c->in_task, 1u, memory_order_relaxed);
}

static void op_task_end(void) {
  sim_cta *c = etl_sim_cta;
  if (c->cur->aq.n) {
    char task[256], where[300];
    etl_sim_current_task(c, task, sizeof task);
    snprintf(where, sizeof where, "task %s", task);
    etl_sim_async_leftover(c, where);
  }
  if (c->cur->wg.n) {
    char msg[512];
    snprintf(msg, sizeof msg,
             "the task ends with %u wgmma.mma_async results in flight (line %u): no "
             "wgmma.wait_group landed them",
             c->cur->wg.n, c->cur->wg.q[0].line);
    wgmma_fail(c, ETL_WGMMA_NO_FENCE, msg);
  }
  if (c->run->race) {
    if (c->cur->tid == 0)
      etl_race_task_end(c->run->race, c->cta);
    c->cur->race_task = UINT32_MAX;
  }
  if (c->run->prof) {
    if (c->cur->tid == 0 && c->cur->prof_group != UINT32_MAX)
      etl_profile_sample(c->run->prof, c->cta, (uint64_t)now_ns());
    if (c->cur->tid == 0) {
      if (c->prof_open_task == c->prof_suspended_task)
        c->prof_suspended_task = 0;
      c->prof_open_task = 0;
    }
    c->cur->prof_group = UINT32_MAX;
  }
  atomic_store_explicit(&c->in_task, 0u, memory_order_relaxed);
  atomic_store_explicit(&c->run->last_progress_ns, now_ns(), memory_order_relaxed);
}

/*===-- wgmma (sim_wgmma.h) -------------------------------------------------===*/

static void wgmma_fail(sim_cta *c, int code, const char *what) {
  char task[256], msg[1280];
  etl_sim_current_task(c, task, sizeof task);
  snprintf(msg, sizeof msg, "sim: %s, in task %s, thread (cta %u, tid %u)", what, task, c->cta,
           c->cur->tid);
  etl_sim_run_fail(c->run,
                   code == ETL_WGMMA_NO_MEMORY ? ETL_ERROR_OUT_OF_MEMORY
                   : code == ETL_WGMMA_OUTSIDE ? ETL_ERROR_MEMORY_VIOLATION
                   : code == ETL_WGMMA_BAD_SHAPE ? ETL_ERROR_LAUNCH_FAILED
                                                 : ETL_ERROR_RACE,
                   msg);
  stop_cta(c);
}

static void op_wgmma_fence(void) { etl_sim_cta->cur->wg.fenced = 1; }

static void op_wgmma_mma(uint64_t desc_a, uint64_t desc_b, float *acc, uint32_t shape,
                         uint32_t line) {
  sim_cta *c = etl_sim_cta;
  sim_fiber *f = c->cur;
  char why[512];
  if (c->async.pending) { /* an operand's 16-byte piece still the target of a cp.async */
    const uint32_t n = shape & ETL_WGMMA_N_MASK;
    const int trans_b = (shape & ETL_WGMMA_TRANS_B) != 0;
    /* A: 64 rows of two 8-element pieces; B: N rows so (K-major), or 16
     * k rows of N / 8 pieces (MN-major) */
    const uint32_t pieces = 128 + (trans_b ? 16 * (n / 8) : 2 * n);
    for (uint32_t i = 0; i < pieces; ++i) {
      const uint32_t j = i - 128;
      uint64_t at, off = i < 128   ? etl_wgmma_elem(desc_a, 0, i / 2, 8 * (i % 2))
                         : trans_b ? etl_wgmma_elem(desc_b, 1, j % 16, 8 * (j / 16))
                                   : etl_wgmma_elem(desc_b, 0, j / 2, 8 * (j % 2));
      uint32_t who = off < c->async.bytes ? etl_async_owner(&c->async, off, 16, &at) : 0;
      if (who) {
        async_conflict(c, "wgmma.mma_async operand read", line, off, 16, who, at);
        return;
      }
    }
  }
  int rc = etl_wgmma_issue(&f->wg, c->smem, c->async.bytes, f->tid, desc_a, desc_b, acc,
                           shape, line, why, sizeof why);
  if (rc != ETL_WGMMA_OK) {
    wgmma_fail(c, rc, why);
    return;
  }
  if (c->run->prof && f->tid % 128 == 0) { /* one per warpgroup */
    etl_profile_count(c->run->prof, c->cta, f->prof_group, ETL_PROF_WGMMA, 1);
    etl_profile_count(c->run->prof, c->cta, f->prof_group, ETL_PROF_TC_FLOPS,
                      2ull * 64 * (shape & ETL_WGMMA_N_MASK) * 16);
  }
}

static void op_wgmma_commit(void) { etl_wgmma_commit(&etl_sim_cta->cur->wg); }

static void op_wgmma_wait(uint32_t pending) { etl_wgmma_wait(&etl_sim_cta->cur->wg, pending); }

static void op_wgmma_read(const float *acc, uint32_t line) {
  sim_cta *c = etl_sim_cta;
  const etl_wgmma_result *r = etl_wgmma_busy(&c->cur->wg, acc);
  if (!r)
    return;
  char what[512];
  snprintf(what, sizeof what,
           "read of wgmma accumulator registers (line %u) that the wgmma.mma_async of line %u "
           "(group %u) still in flight will write: no wgmma.wait_group landed it yet (a missing "
           "or too weak wait_group)",
           line, r->line, r->group);
  wgmma_fail(c, ETL_WGMMA_NO_FENCE, what); /* a race, as a missing fence */
}

static uint64_t op_clock_ns(void) { return (uint64_t)now_ns(); }

static uint32_t op_sm_id(void) { return etl_sim_cta->cta; }

/*===-- mbarriers and TMA (sim_tma.h) -------------------------------------===*/

static void tma_fail(sim_cta *c, etlStatus st, const char *what, uint64_t off, const char *why) {
  char task[256], msg[1024];
  etl_sim_current_task(c, task, sizeof task);
  snprintf(msg, sizeof msg, "sim: %s at shared offset %llu in task %s, thread (cta %u, tid %u): %s",
           what, (unsigned long long)off, task, c->cta, c->cur->tid, why);
  etl_sim_run_fail(c->run, st, msg);
  stop_cta(c);
}

/* `p`'s offset in shared memory, checked: inside it, `align`-aligned. */
static uint32_t smem_at(sim_cta *c, const void *p, uint64_t bytes, uint32_t align,
                        const char *what) {
  uintptr_t a = (uintptr_t)p, base = (uintptr_t)c->smem;
  uint64_t sb = c->async.bytes;
  if (a < base || a - base > sb || sb - (a - base) < bytes || (a - base) % align != 0)
    tma_fail(c, ETL_ERROR_MEMORY_VIOLATION, what, a - base,
             "not inside the CTA's shared memory, or misaligned");
  return (uint32_t)(a - base);
}

static etl_mbar *mbar_at(sim_cta *c, void *bar, const char *what) {
  uint32_t off = smem_at(c, bar, 8, 8, what);
  etl_mbar *b = etl_mbar_find(&c->mbars, off);
  if (!b)
    tma_fail(c, ETL_ERROR_RACE, what, off, "no mbarrier.init made an mbarrier there");
  return b;
}

static void op_mbar_init(void *bar, uint32_t count) {
  sim_cta *c = etl_sim_cta;
  int busy = 0;
  uint32_t off = smem_at(c, bar, 8, 8, "mbarrier.init");
  if (!etl_mbar_init(&c->mbars, off, count, &busy))
    tma_fail(c, busy ? ETL_ERROR_RACE : ETL_ERROR_OUT_OF_MEMORY, "mbarrier.init", off,
             busy ? "the mbarrier there still has TMA copies in flight" : "out of memory");
}

static void op_mbar_arrive_tx(void *bar, uint32_t tx) {
  sim_cta *c = etl_sim_cta;
  etl_mbar *b = mbar_at(c, bar, "mbarrier.arrive.expect_tx");
  if (b->pending == 0)
    tma_fail(c, ETL_ERROR_RACE, "mbarrier.arrive.expect_tx", b->off,
             "more arrivals in one phase than its init count");
  b->tx += tx;
  b->pending--;
}

static void op_mbar_wait(void *bar, uint32_t parity, uint32_t line) {
  sim_cta *c = etl_sim_cta;
  if (c->run->prof && c->cur->tid == 0)
    etl_profile_count(c->run->prof, c->cta, c->cur->prof_group, ETL_PROF_MBAR_WAITS, 1);
  (void)line;
  for (;;) {
    etl_mbar *b = mbar_at(c, bar, "mbarrier.try_wait.parity");
    if ((b->phase & 1u) != (parity & 1u))
      return; /* the phase of that parity has completed */
    if (!etl_mbar_complete(&c->async, b))
      op_spin_pause(); /* arrivals or copies still to come (the watchdog's) */
  }
}

static void op_mbar_inval(void *bar) {
  sim_cta *c = etl_sim_cta;
  etl_mbar *b = mbar_at(c, bar, "mbarrier.inval");
  if (etl_mbar_inval(&c->mbars, b))
    tma_fail(c, ETL_ERROR_RACE, "mbarrier.inval", b->off,
             "TMA copies completing on it are still in flight (no wait saw their phase)");
}

static void op_tma_load(void *dst, const void *map, const int32_t *coords, uint32_t rank,
                        void *bar) {
  sim_cta *c = etl_sim_cta;
  const etl_sim_tmap *t = map;
  if (t->magic != ETL_SIM_TMAP_MAGIC || t->rank != rank || rank < 1 || rank > 2)
    tma_fail(c, ETL_ERROR_MEMORY_VIOLATION, "cp.async.bulk.tensor",
             (uint64_t)((uintptr_t)dst - (uintptr_t)c->smem),
             "its tensor map is not one the runtime encoded for this rank");
  uint32_t rows = rank == 2 ? t->box[0] : 1, cols = t->box[rank - 1], es = t->elem_size;
  uint32_t bytes = rows * cols * es;
  uint32_t off = smem_at(c, dst, bytes, 128, "cp.async.bulk.tensor destination");
  etl_mbar *b = mbar_at(c, bar, "cp.async.bulk.tensor's mbarrier");
  uint64_t at = off;
  uint32_t who = etl_async_owner(&c->async, off, bytes, &at);
  if (who)
    async_conflict(c, "cp.async.bulk.tensor destination", 0, off, bytes, who, at);
  unsigned char *data = calloc(1, bytes); /* zeros: the box outside the tensor */
  if (!data)
    tma_fail(c, ETL_ERROR_OUT_OF_MEMORY, "cp.async.bulk.tensor", off, "out of memory");
  int64_t c0 = coords[0], r0 = rank == 2 ? coords[1] : 0, nrows = rank == 2 ? t->dims[0] : 1;
  int64_t ncols = t->dims[rank - 1];
  for (uint32_t r = 0; r < rows; ++r) {
    int64_t gr = r0 + r, lo = c0 < 0 ? -c0 : 0, hi = ncols - c0 < cols ? ncols - c0 : cols;
    if (gr < 0 || gr >= nrows || lo >= hi)
      continue;
    const unsigned char *src =
        (const unsigned char *)(uintptr_t)t->addr + ((uint64_t)gr * ncols + c0 + lo) * es;
    op_check_access(src, (uint64_t)(hi - lo) * es, 0);
    memcpy(data + ((uint64_t)r * cols + lo) * es, src, (uint64_t)(hi - lo) * es);
  }
  if (etl_mbar_queue(&c->async, b, off, bytes, data)) {
    free(data);
    tma_fail(c, ETL_ERROR_OUT_OF_MEMORY, "cp.async.bulk.tensor", off, "out of memory");
  }
  if (c->run->prof) {
    etl_profile_count(c->run->prof, c->cta, c->cur->prof_group, ETL_PROF_TMA_BYTES, bytes);
    etl_profile_shared(c->run->prof, c->cta, c->cur->tid, c->cur->prof_group,
                       (uintptr_t)__builtin_return_address(0), off, bytes, 1);
  }
}

const etl_sim_ops etl_sim_ops_table = {
#define ETL_SIM_OP_INIT(name, ret, params) .name = op_##name,
    ETL_SIM_OPS(ETL_SIM_OP_INIT)
#undef ETL_SIM_OP_INIT
};
