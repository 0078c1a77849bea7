/*===- src/sim.c - The sim device: the artifact's x86-64 code on the CPU ---===
 *
 * The device table etl_device_sim (device.h): memory is host memory, so
 * device pointers are host pointers and plain host arrays may be bound.
 *
 * Loading the "sim" code section (an ELF shared object) is sim_load.c's;
 * the machine operations the code calls are sim_ops.c's, on the launch
 * state of sim_cta.h; the race check and the profile counters hook in from
 * sim_race.c and sim_profile.c.
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
 * This file owns the scheduler (the CTAs' threads and their fibers, warps
 * settling after each switch, barriers releasing), the launch (ranges,
 * checkers, shared memory, threads) and the context and memory entry points.
 *
 * Sanitizers: fiber switches are annotated for ThreadSanitizer
 * (__tsan_*_fiber) and AddressSanitizer (__sanitizer_*_switch_fiber).
 *===----------------------------------------------------------------------===*/
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_cta.h"
#include "sim_load.h"
#include "sim_poison.h"

/*===-- Loading (sim_load.c) ----------------------------------------------===*/

static etlStatus sim_program_load(etl_program *p) { return etl_sim_load(p, &etl_sim_ops_table); }

static void sim_program_unload(etl_program *p) { etl_sim_unload(p); }

/*===-- Launch state (sim_cta.h) -------------------------------------------===*/

/* First error wins; later ones (other CTAs seeing the abort) are dropped. */
int etl_sim_run_fail(sim_run *r, etlStatus st, const char *msg) {
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

static void fiber_main(void) {
  sim_cta *c = etl_sim_cta;
#ifdef ETL_ASAN
  __sanitizer_finish_switch_fiber(NULL, &c->asan_sched_bottom, &c->asan_sched_size);
#endif
  c->run->entry(c->run->args);
  if (c->cur->aq.n)
    etl_sim_async_leftover(c, "the kernel");
  set_state(c, c->cur, FIBER_EXITED);
  yield_fiber(c, 1);
  abort(); /* never resumed */
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
    etl_sim_current_task(c, task, sizeof task);
    snprintf(msg, sizeof msg, "sim: warp divergence in task %s, cta %u, warp %u: %s", task, c->cta,
             w, why);
    etl_sim_run_fail(c->run, ETL_ERROR_DIVERGENCE, msg);
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
  etl_sim_cta = c;
#ifdef ETL_TSAN
  c->tsan_sched = __tsan_get_current_fiber();
#endif
  uint32_t made = 0;
  for (; made < r->tpc; ++made) {
    if (make_fiber(r, &c->fibers[made], made) != 0) {
      etl_sim_run_fail(r, ETL_ERROR_OUT_OF_MEMORY, "sim: out of memory for thread stacks");
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
    etl_wgmma_free(&c->fibers[i].wg);
  }
  etl_mbar_set_free(&c->async, &c->mbars); /* a stopped CTA's TMA copies */
  etl_async_smem_free(&c->async);
  return NULL;
}

/*===-- Launch -------------------------------------------------------------===*/

static etlStatus sim_launch(etl_program *p, etl_plan *plan, uint64_t args, void *stream,
                            int capture, int *in_flight) {
  (void)stream;             /* run.c refuses one: sim has no streams */
  (void)capture;            /* nor graphs */
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
  r.args = (uint64_t *)(uintptr_t)args;
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
      {args, (uint64_t)m->num_slots * 8, "<arguments>", 8, 0},
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
      etl_sim_run_fail(&r, ETL_ERROR_OUT_OF_MEMORY, "sim: out of memory");
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
        etl_sim_run_fail(&r, ETL_ERROR_LAUNCH_FAILED, "sim: cannot start a worker thread");
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

static etlStatus sim_copy(etl_context *c, uint64_t dst, uint64_t src, size_t n, void *stream) {
  (void)c;
  (void)stream; /* run.c refuses one on the sim */
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  return ETL_SUCCESS;
}

static etlStatus sim_dtoh(etl_context *c, void *dst, uint64_t src, size_t n) {
  (void)c;
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return ETL_SUCCESS;
}

/* The sim's tensor map (sim_tma.h): what op_tma_load reads. */
static etlStatus sim_encode_tma(etl_program *p, const etl_tma_meta *t, uint32_t elem, uint64_t dptr,
                                const int64_t *dims, void *out) {
  (void)p;
  etl_sim_tmap m;
  memset(&m, 0, sizeof m);
  m.magic = ETL_SIM_TMAP_MAGIC;
  m.addr = dptr;
  m.rank = t->rank;
  m.elem_size = (uint32_t)etl_elem_size(elem);
  for (uint32_t k = 0; k < t->rank; ++k) {
    m.dims[k] = dims[k];
    m.box[k] = t->box[k];
  }
  memcpy(out, &m, sizeof m);
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
    .copy = sim_copy,
    .dtoh = sim_dtoh,
    .program_load = sim_program_load,
    .program_unload = sim_program_unload,
    .launch = sim_launch,
    .encode_tma = sim_encode_tma,
};
