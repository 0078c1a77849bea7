/*===- src/run.c - etlRun/Async/Wait/Query: plans, arguments, the launch ---===
 *
 * etlRunAsync checks every binding (bind.c) before anything is allocated or
 * launched, then takes the plan for the bound dims from the program's
 * cache (building it and its device memory on a miss), finds the device
 * argument block holding this binding (uploading it on a miss), resets the
 * run's state on the run's stream and hands the launch to the context's
 * device (start). A device that returns with the kernel in flight (cuda)
 * leaves the run to etlRunWait / etlRunQuery (finish_run, which polls the
 * device and its watchdog); sim returns with it done. Either way the end of
 * a run (conclude) reads the device error record and, with the timeline on,
 * the task records (timeline.c), and its status and message are kept on
 * the program (keep_outcome). A context has one run in flight at a time
 * (ctx->inflight, under launch_mu). etlRun is etlRunAsync + etlRunWait.
 *
 * What a run writes before its launch, and how (so that a CUDA graph
 * captured from a run replays it; docs/ARCHITECTURE.md "The run sequence
 * and CUDA graphs"):
 *   - the argument block: device memory per distinct binding (tensor
 *     pointers, dims, scalars), cached on the plan and uploaded only when
 *     a binding is new; a block a graph captured is never rewritten;
 *   - the per-run state (event counters, error record, dynamic queue
 *     state): one asynchronous device-to-device copy on the run's stream
 *     from the plan's pristine image, plus a memset per `= zeros` buffer;
 *   - the control block (mapped host memory): host stores before the
 *     launch, or, while capturing, the abort flag by a copy on the stream.
 * While the stream captures, nothing is allocated, uploaded, read back or
 * waited for: a binding or dims that never ran, or the timeline, is
 * refused before anything is recorded, and a run in flight stays in
 * flight (etlRunWait finishes it after the capture).
 *===----------------------------------------------------------------------===*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"

#define ETL_MAX_CACHED_PLANS 8
#define ETL_MAX_ARGS_BLOCKS 4 /* per plan, not counting those a graph captured */

/* A device argument block and the slots it holds. */
typedef struct etl_args_block {
  struct etl_args_block *next; /* most recently used first */
  uint64_t dptr;
  uint64_t *slots;
  int captured; /* a CUDA graph reads it: never rewritten, freed with the plan */
} etl_args_block;

static void args_block_free(etl_context *c, etl_args_block *b) {
  etl_dev_free(c, b->dptr);
  free(b->slots);
  free(b);
}

void etl_plan_release(etl_context *c, etl_plan *pl, const etl_meta *m) {
  for (uint32_t t = 0; t < m->n_tensors; ++t)
    etl_dev_free(c, pl->buffer_dptr[t]);
  etl_dev_free(c, pl->state_dptr);
  etl_dev_free(c, pl->init_dptr);
  etl_dev_free(c, pl->queue_dptr);
  etl_dev_free(c, pl->offs_dptr);
  for (etl_args_block *b = pl->args_blocks, *nx; b; b = nx) {
    nx = b->next;
    args_block_free(c, b);
  }
  etl_plan_free_host(pl);
}

/* The per-run state in one allocation, 16-byte aligned parts: the counters
 * (n_counters + 1 words), the error record, then the dynamic state (the
 * record and the dynamic header are adjacent: conclude reads both in one
 * copy). Allocates it and its pristine image, and uploads the image. */
#define ETL_ALIGN16(x) (((x) + 15u) & ~(uint64_t)15u)
static etlStatus plan_state(etl_context *c, etl_plan *pl) {
  uint64_t err_off = ETL_ALIGN16((pl->n_counters + 1) * sizeof(uint32_t));
  uint64_t dyn_off = err_off + ETL_ALIGN16(ETL_ERR_WORDS * sizeof(uint32_t));
  pl->state_bytes = dyn_off + (pl->dyn ? pl->dyn_words * sizeof(uint32_t) : 0);
  uint8_t *img = calloc(1, pl->state_bytes);
  if (!img)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "etlRun: out of memory for the run's state");
  memcpy(img, pl->wait_counts, pl->n_counters * sizeof(uint32_t));
  if (pl->dyn)
    memcpy(img + dyn_off, pl->dyn, pl->dyn_words * sizeof(uint32_t));
  etlStatus st = etl_dev_alloc(c, pl->state_bytes, &pl->state_dptr);
  if (!st)
    st = etl_dev_alloc(c, pl->state_bytes, &pl->init_dptr);
  if (!st)
    st = etl_dev_htod(c, pl->init_dptr, img, pl->state_bytes);
  free(img);
  pl->counters_dptr = pl->state_dptr;
  pl->err_dptr = pl->state_dptr + err_off;
  pl->dyn_dptr = pl->dyn ? pl->state_dptr + dyn_off : 0;
  return st;
}

/* What a run refuses while its stream captures a CUDA graph. */
static etlStatus capture_error(const char *why) {
  return etl_error(ETL_ERROR_INVALID_VALUE,
                   "etlRunAsync: the stream is capturing a CUDA graph, and %s; nothing was "
                   "recorded",
                   why);
}
#define CAPTURE_NOT_WARM                                                                           \
  "this binding (its dims, tensors and scalars) has not run yet: run it once outside the "         \
  "capture first (a warm-up run, as torch.cuda.graphs asks), so its argument block and state "     \
  "are in device memory, then capture it"

/* Cached plan for the current dims, or a new one with its device memory
 * (never while capturing: that would allocate and upload). */
static etlStatus get_plan(etl_program *p, int capture, etl_plan **out) {
  etl_context *c = p->ctx;
  const etl_meta *m = &p->art.meta;
  etl_plan **pp = &p->plans;
  for (; *pp; pp = &(*pp)->next) {
    if (memcmp((*pp)->dims, p->dim_values, m->n_dims * sizeof(int64_t)) == 0) {
      etl_plan *hit = *pp; /* move to front */
      *pp = hit->next;
      hit->next = p->plans;
      p->plans = hit;
      *out = hit;
      return ETL_SUCCESS;
    }
  }
  if (capture)
    return capture_error(CAPTURE_NOT_WARM);
  etl_plan *pl;
  etlStatus st = etl_plan_build(m, p->dim_values, c->num_ctas, &pl);
  if (st)
    return st;
  for (uint32_t t = 0; t < m->n_tensors && !st; ++t)
    if (m->tensors[t].is_buffer)
      st = etl_dev_alloc(c, pl->buffer_bytes[t], &pl->buffer_dptr[t]);
  if (!st)
    st = etl_dev_alloc(c, (2 * pl->n_entries + 2) * sizeof(uint32_t), &pl->queue_dptr);
  if (!st)
    st = etl_dev_alloc(c, ((size_t)c->num_ctas + 1) * sizeof(uint32_t), &pl->offs_dptr);
  if (!st)
    st = plan_state(c, pl);
  if (!st)
    st = etl_dev_htod(c, pl->queue_dptr, pl->queue, 2 * pl->n_entries * sizeof(uint32_t));
  if (!st)
    st = etl_dev_htod(c, pl->offs_dptr, pl->queue_offs,
                      ((size_t)c->num_ctas + 1) * sizeof(uint32_t));
  if (st) {
    etl_plan_release(c, pl, m);
    return st;
  }
  /* evict beyond the cache size (not a plan a graph captured) */
  uint32_t n = 0;
  for (etl_plan **q = &p->plans; *q;) {
    if (++n >= ETL_MAX_CACHED_PLANS && !(*q)->captured) {
      etl_plan *victim = *q;
      *q = victim->next;
      etl_plan_release(c, victim, m);
    } else {
      q = &(*q)->next;
    }
  }
  pl->next = p->plans;
  p->plans = pl;
  *out = pl;
  return ETL_SUCCESS;
}

/* The device error record (etl_abi.h) as a message naming task, event and
 * the index value the task read from tensor data. */
static etlStatus device_error(etl_program *p, const etl_plan *pl, const uint32_t *rec) {
  const etl_meta *m = &p->art.meta;
  char task[256];
  etl_plan_task_name(m, pl, rec[ETL_ERR_GROUP], rec[ETL_ERR_LINEAR], task, sizeof task);
  int64_t v = (int64_t)(((uint64_t)rec[ETL_ERR_VALUE_HI] << 32) | rec[ETL_ERR_VALUE_LO]);
  const char *ev = rec[ETL_ERR_EVENT] < m->n_events ? m->events[rec[ETL_ERR_EVENT]].name : "?";
  return etl_error(ETL_ERROR_BINDING,
                   "etlRun: task %s %s event '%s' at index %lld along dimension %u, "
                   "outside [0, %u): the index is read from tensor data",
                   task, rec[ETL_ERR_SET] == ETL_ERR_SET_NOTIFY ? "notifies" : "waits on", ev,
                   (long long)v, rec[ETL_ERR_DIM], rec[ETL_ERR_EXTENT]);
}

/* Zeroed device memory for one launch's timeline records. */
static etlStatus timeline_buffer(etl_context *c, const etl_plan *pl, uint64_t *dptr) {
  size_t bytes = (size_t)pl->n_entries * sizeof(etl_timeline_record);
  etlStatus st = etl_dev_alloc(c, bytes, dptr);
  if (st || !bytes)
    return st;
  void *zero = calloc(1, bytes);
  st = zero ? etl_dev_htod(c, *dptr, zero, bytes)
            : etl_error(ETL_ERROR_OUT_OF_MEMORY, "etlRun: out of memory for the timeline");
  free(zero);
  return st;
}

/* The device argument block holding the slots in pl->args_host: a cached
 * one, or (not while capturing) a new or the least recently used one
 * that no graph captured, uploaded. No run of the context is in flight
 * here, so a block being rewritten is read by no kernel. */
static etlStatus args_block(etl_program *p, etl_plan *pl, int capture, uint64_t *dptr) {
  etl_context *c = p->ctx;
  size_t bytes = ETL_ARGS_BYTES(&p->art.meta);
  etl_args_block **pp = &pl->args_blocks, **lru = NULL, *b = NULL;
  unsigned reusable = 0;
  for (; *pp; pp = &(*pp)->next) {
    if (memcmp((*pp)->slots, pl->args_host, bytes) == 0)
      break;
    if (!(*pp)->captured) {
      reusable++;
      lru = pp;
    }
  }
  if (!*pp && capture)
    return capture_error(CAPTURE_NOT_WARM);
  if (*pp) {
    b = *pp;
    *pp = b->next;
  } else if (reusable >= ETL_MAX_ARGS_BLOCKS) {
    b = *lru;
    *lru = b->next;
  } else if (!(b = calloc(1, sizeof *b)) || !(b->slots = malloc(bytes))) {
    free(b);
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "etlRun: out of memory for an argument block");
  }
  etlStatus st = ETL_SUCCESS;
  if (!b->dptr || memcmp(b->slots, pl->args_host, bytes) != 0) {
    if (!b->dptr)
      st = etl_dev_alloc(c, bytes, &b->dptr);
    if (!st)
      st = etl_dev_htod(c, b->dptr, pl->args_host, bytes);
    if (st) { /* its contents are unknown now */
      args_block_free(c, b);
      return st;
    }
    memcpy(b->slots, pl->args_host, bytes);
  }
  b->captured |= capture;
  b->next = pl->args_blocks;
  pl->args_blocks = b;
  *dptr = b->dptr;
  return ETL_SUCCESS;
}

/* Fill the argument block, reset the run's state on `stream` and start the
 * launch there (recorded into the graph when `capture`); *in_flight as the
 * device's launch sets it. */
static etlStatus start(etl_program *p, etl_plan *pl, uint64_t tl_dptr, void *stream, int capture,
                       int *in_flight) {
  etl_context *c = p->ctx;
  const etl_meta *m = &p->art.meta;
  uint64_t *a = pl->args_host;
  memset(a, 0, ETL_ARGS_BYTES(m));
  a[ETL_SLOT_EVENTS] = pl->counters_dptr;
  a[ETL_SLOT_QUEUE] = pl->queue_dptr;
  a[ETL_SLOT_QUEUE_OFFS] = pl->offs_dptr;
  a[ETL_SLOT_ABORT] = c->abort_dptr;
  a[ETL_SLOT_NUM_CTAS] = c->num_ctas;
  a[ETL_SLOT_TIMELINE] = tl_dptr;
  a[ETL_SLOT_DYN] = pl->dyn_dptr;
  a[ETL_SLOT_ERROR] = pl->err_dptr;
  for (uint32_t i = 0; i < m->n_dims; ++i)
    a[m->dims[i].slot] = (uint64_t)p->dim_values[i];
  for (uint32_t i = 0; i < m->n_tensors; ++i)
    a[m->tensors[i].slot] = m->tensors[i].is_buffer ? pl->buffer_dptr[i] : p->tensors[i].dptr;
  for (uint32_t i = 0; i < m->n_events; ++i)
    a[m->events[i].slot] = pl->event_offset[i];
  for (uint32_t i = 0; i < m->n_scalars; ++i)
    a[m->scalars[i].slot] = p->scalar_bits[i];
  etlStatus st = etl_tma_encode(p, pl, a); /* the tensor maps of TMA copies (tma.c) */
  if (st)
    return st;
  uint64_t args = 0;
  st = args_block(p, pl, capture, &args);
  if (st)
    return st;
  pl->captured |= capture; /* from here on the graph names its memory */
  st = c->dev->copy(c, pl->state_dptr, pl->init_dptr, pl->state_bytes, stream);
  /* `buffer ... = zeros`: cleared on the run's stream before its launch */
  for (uint32_t i = 0; i < m->n_tensors && !st; ++i)
    if (m->tensors[i].zeros && pl->buffer_bytes[i])
      st = c->dev->zero(c, pl->buffer_dptr[i], pl->buffer_bytes[i], stream);
  if (st)
    return st;
  if (capture) {
    /* each replay starts with the abort flag down (an earlier run or
     * replay may have raised it); the image's error record is zeros */
    st = c->dev->copy(c, c->abort_dptr, pl->err_dptr - pl->state_dptr + pl->init_dptr,
                      sizeof(uint32_t), stream);
    if (st)
      return st;
  } else {
    /* the control block: no abort, and every CTA's task count from 0 (the
     * kernel never reads those words, it only writes them) */
    memset((char *)c->abort_host + ETL_CONTROL_PROGRESS, 0, 4u * (size_t)c->num_ctas);
    __atomic_store_n(c->abort_host, 0u, __ATOMIC_SEQ_CST);
  }
  return c->dev->launch(p, pl, args, stream, capture, in_flight);
}

/* Turn what the device reported for a launch that ended with status `st`
 * into the run's status: the device error record, the dynamic queue, the
 * timeline. */
static etlStatus conclude(etl_program *p, etl_plan *pl, uint64_t tl_dptr, etlStatus st) {
  etl_context *c = p->ctx;
  /* the error record and, right after it, the dynamic state's header (one
   * copy); a record that cannot be read back fails the run: its result is
   * unknown */
  uint32_t rec[(ETL_ALIGN16(ETL_ERR_WORDS * 4) / 4) + ETL_DYN_GROUP_OFF] = {0};
  const uint32_t *dyn = rec + ETL_ALIGN16(ETL_ERR_WORDS * 4) / 4;
  size_t bytes = pl->dyn ? sizeof rec : ETL_ERR_WORDS * sizeof(uint32_t);
  etlStatus rd = ETL_SUCCESS;
  if ((!st || st == ETL_ERROR_TIMEOUT) &&
      ((rd = etl_dev_dtoh(c, rec, pl->err_dptr, bytes)) || rec[ETL_ERR_SET]))
    st = rd ? rd : device_error(p, pl, rec);
  if (pl->dyn && (!st || st == ETL_ERROR_TIMEOUT) && dyn[ETL_DYN_ERROR])
    st = etl_error(ETL_ERROR_LAUNCH_FAILED,
                   "etlRun: the dynamic task queue overflowed (capacity %llu)",
                   (unsigned long long)pl->n_dynamic);
  int traced = 0;
  if (!st && tl_dptr) {
    st = etl_timeline_collect(p, pl, tl_dptr);
    traced = !st;
  }
  etl_dev_free(c, tl_dptr);
  if (traced && p->timeline_path)
    st = etl_timeline_write(p, pl, p->timeline_path);
  return st;
}

/* Record `st` (and the calling thread's message) as the outcome of p's
 * last run. */
static void keep_outcome(etl_program *p, etlStatus st) {
  free(p->run_message);
  p->run_message = st ? strdup(etlGetLastErrorMessage()) : NULL;
  p->run_status = st;
}

/* Enter the device once for a run's several calls (etl_device.hold);
 * *held says whether to leave. */
static etlStatus hold_device(etl_context *c, int *held) {
  etlStatus st = c->dev->hold ? c->dev->hold(c, 1) : ETL_SUCCESS;
  *held = c->dev->hold && !st;
  return st;
}
static etlStatus release_device(etl_context *c, int held, etlStatus st) {
  etlStatus r = held ? c->dev->hold(c, 0) : ETL_SUCCESS;
  return st ? st : r;
}

/* Finish p's run in flight (ctx->launch_mu held): ETL_ERROR_NOT_READY while
 * it runs and `block` is 0, else its status, kept for etlRunWait. */
static etlStatus finish_run(etl_program *p, int block) {
  etl_context *c = p->ctx;
  etlStatus st = c->dev->finish(p, p->run_plan, block);
  if (st == ETL_ERROR_NOT_READY)
    return st;
  st = conclude(p, p->run_plan, p->run_tl_dptr, st);
  p->run_inflight = 0;
  p->run_tl_dptr = 0;
  if (c->inflight == p)
    c->inflight = NULL;
  keep_outcome(p, st);
  return st;
}

/* The kept outcome of p's last run, its message restored on this thread. */
static etlStatus outcome(etl_program *p) {
  if (p->run_status)
    etl_error_str(p->run_status, p->run_message ? p->run_message : "");
  return p->run_status;
}

void etl_run_drain(etl_program *p) {
  pthread_mutex_lock(&p->ctx->launch_mu);
  if (p->run_inflight) {
    int held = 0;
    etlStatus st = hold_device(p->ctx, &held);
    finish_run(p, 1); /* a context the driver refuses cannot wait either way */
    release_device(p->ctx, held, st);
  }
  pthread_mutex_unlock(&p->ctx->launch_mu);
}

etlStatus etl_program_prepare(etlProgram h) {
  ETL_GET_PROG(p, h);
  if (p->n_subs) {
    etl_program *s = NULL;
    int index = 0;
    etlStatus st = etl_variant_bind(p, &s, &index);
    return st ? st : etl_program_prepare((etlProgram)(uintptr_t)s->handle);
  }
  etlStatus st = etl_bindings_validate(p);
  if (st)
    return st;
  etl_plan *pl = NULL;
  pthread_mutex_lock(&p->ctx->launch_mu);
  st = get_plan(p, 0, &pl);
  pthread_mutex_unlock(&p->ctx->launch_mu);
  return st;
}

/* etlRunAsync of a program of several variants: the one the dims select
   runs (variant.c), after the previous run of another one has ended. */
static etlStatus run_variant(etl_program *p, void *stream) {
  etl_program *s = NULL;
  int index = 0;
  etlStatus st = etl_variant_bind(p, &s, &index);
  if (st)
    return st;
  if (p->ran && p->ran != s && (st = etlRunWait((etlProgram)(uintptr_t)p->ran->handle))) {
    char msg[4096];
    snprintf(msg, sizeof msg,
             "etlRunAsync: nothing launched: the previous run, not waited for, failed: %s",
             etlGetLastErrorMessage());
    return etl_error_str(st, msg);
  }
  p->ran = s;
  p->ran_variant = index;
  return etlRunAsync((etlProgram)(uintptr_t)s->handle, stream);
}

etlStatus etlRunAsync(etlProgram h, void *stream) {
  ETL_GET_PROG(p, h);
  if (p->n_subs)
    return run_variant(p, stream);
  p->ran_variant = 0; /* its only one */
  etl_context *c = p->ctx;
  if (stream && !c->dev->is_gpu)
    return etl_error(ETL_ERROR_INVALID_VALUE,
                     "etlRunAsync: a stream was given, but the program runs on %s, which has no "
                     "CUDA streams (pass NULL: the run then completes before etlRunAsync returns)",
                     c->device_name);
  etlStatus st = etl_bindings_validate(p);
  if (st)
    return st;
  pthread_mutex_lock(&c->launch_mu);
  int held = 0, capture = 0;
  st = hold_device(c, &held);
  if (!st && stream && c->dev->capturing) /* the NULL stream never captures */
    st = c->dev->capturing(c, stream, &capture);
  if (!st && capture && p->timeline_path)
    st = capture_error("the timeline is on (etlProgramSetTimeline: its records are read back "
                       "after the run); turn it off for the captured run");
  if (st) {
    st = release_device(c, held, st);
    pthread_mutex_unlock(&c->launch_mu);
    return st;
  }
  /* a run in flight is finished first, but not while capturing: that
   * would query and copy synchronously. It stays in flight for etlRunWait;
   * the recorded run touches nothing it uses (its state is reset only when
   * the graph replays, its argument block is never rewritten). */
  if (!capture && p->run_inflight && (st = finish_run(p, 1))) {
    char msg[4096];
    snprintf(msg, sizeof msg,
             "etlRunAsync: nothing launched: the previous run, not waited for, failed: %s",
             etlGetLastErrorMessage());
    etl_error_str(st, msg);
    release_device(c, held, st);
    pthread_mutex_unlock(&c->launch_mu);
    return st;
  }
  if (!capture && c->inflight) /* another program's: its outcome waits for its etlRunWait */
    finish_run(c->inflight, 1);
  if (!p->run_inflight)
    keep_outcome(p, ETL_SUCCESS);
  etl_plan *pl = NULL;
  uint64_t tl_dptr = 0;
  int in_flight = 0;
  st = get_plan(p, capture, &pl);
  if (!st && p->timeline_path)
    st = timeline_buffer(c, pl, &tl_dptr);
  if (!st)
    st = start(p, pl, tl_dptr, stream, capture, &in_flight);
  if (in_flight) { /* finished by etlRunWait / etlRunQuery, even when st reports a failure */
    p->run_inflight = 1;
    p->run_plan = pl;
    p->run_tl_dptr = tl_dptr;
    c->inflight = p;
  } else if (capture) { /* recorded: nothing ran, nothing to read back */
    if (!p->run_inflight)
      keep_outcome(p, st);
  } else {
    st = pl ? conclude(p, pl, tl_dptr, st) : st;
    keep_outcome(p, st);
  }
  st = release_device(c, held, st);
  pthread_mutex_unlock(&c->launch_mu);
  return st;
}

etlStatus etlRunWait(etlProgram h) {
  ETL_GET_PROG(p, h);
  if (p->n_subs)
    return p->ran ? etlRunWait((etlProgram)(uintptr_t)p->ran->handle) : ETL_SUCCESS;
  pthread_mutex_lock(&p->ctx->launch_mu);
  etlStatus left = ETL_SUCCESS;
  if (p->run_inflight) {
    int held = 0;
    hold_device(p->ctx, &held); /* if refused, finish_run's own entry reports it */
    finish_run(p, 1);           /* its status is the outcome kept */
    left = release_device(p->ctx, held, ETL_SUCCESS);
  }
  etlStatus st = outcome(p);
  st = st ? st : left;
  pthread_mutex_unlock(&p->ctx->launch_mu);
  return st;
}

etlStatus etlRunQuery(etlProgram h) {
  ETL_GET_PROG(p, h);
  if (p->n_subs)
    return p->ran ? etlRunQuery((etlProgram)(uintptr_t)p->ran->handle) : ETL_SUCCESS;
  pthread_mutex_lock(&p->ctx->launch_mu);
  etlStatus st = p->run_inflight ? finish_run(p, 0) : ETL_SUCCESS;
  st = st == ETL_ERROR_NOT_READY ? etl_error(st, "etlRunQuery: the run is still in flight")
                                 : outcome(p);
  pthread_mutex_unlock(&p->ctx->launch_mu);
  return st;
}

etlStatus etlRun(etlProgram h) {
  etlStatus st = etlRunAsync(h, NULL);
  if (!st)
    return etlRunWait(h);
  etl_program *p = etl_prog_of(h);
  if (p && p->n_subs) /* the variant that ran */
    p = p->ran;
  int inflight = 0;
  if (p) {
    pthread_mutex_lock(&p->ctx->launch_mu);
    inflight = p->run_inflight;
    pthread_mutex_unlock(&p->ctx->launch_mu);
  }
  if (inflight) { /* launched, then a step failed: the run still ends here */
    char msg[4096];
    snprintf(msg, sizeof msg, "%s", etlGetLastErrorMessage());
    etlRunWait(h);
    etl_error_str(st, msg);
  }
  return st;
}
