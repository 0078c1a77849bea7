/*===- src/run.c - etlRun/Async/Wait/Query: plans, arguments, the launch ---===
 *
 * etlRunAsync checks every binding (bind.c) before anything is allocated or
 * launched, then takes the plan for the bound dims from the program's
 * cache (building it and its device memory on a miss), fills the argument
 * block, resets the event counters and hands the launch to the context's
 * device (start). A device that returns with the kernel in flight (cuda)
 * leaves the run to etlRunWait / etlRunQuery (finish_run, which polls the
 * device and its watchdog); sim returns with it done. Either way the end of
 * a run (conclude) reads the device error record and, with the timeline on,
 * the task records (timeline.c), and its status and message are kept on
 * the program (keep_outcome). A context has one run in flight at a time
 * (ctx->inflight, under launch_mu). etlRun is etlRunAsync + etlRunWait.
 *===----------------------------------------------------------------------===*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"

#define ETL_MAX_CACHED_PLANS 8

void etl_plan_release(etl_context *c, etl_plan *pl, const etl_meta *m) {
  for (uint32_t t = 0; t < m->n_tensors; ++t)
    etl_dev_free(c, pl->buffer_dptr[t]);
  etl_dev_free(c, pl->counters_dptr);
  etl_dev_free(c, pl->queue_dptr);
  etl_dev_free(c, pl->offs_dptr);
  etl_dev_free(c, pl->dyn_dptr);
  etl_dev_free(c, pl->args_dptr);
  etl_plan_free_host(pl);
}

/* Cached plan for the current dims, or a new one with its device memory. */
static etlStatus get_plan(etl_program *p, etl_plan **out) {
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
  etl_plan *pl;
  etlStatus st = etl_plan_build(m, p->dim_values, c->num_ctas, &pl);
  if (st)
    return st;
  for (uint32_t t = 0; t < m->n_tensors && !st; ++t)
    if (m->tensors[t].is_buffer)
      st = etl_dev_alloc(c, pl->buffer_bytes[t], &pl->buffer_dptr[t]);
  if (!st)
    st = etl_dev_alloc(c, (pl->n_counters + 1) * sizeof(uint32_t), &pl->counters_dptr);
  if (!st)
    st = etl_dev_alloc(c, (2 * pl->n_entries + 2) * sizeof(uint32_t), &pl->queue_dptr);
  if (!st)
    st = etl_dev_alloc(c, ((size_t)c->num_ctas + 1) * sizeof(uint32_t), &pl->offs_dptr);
  if (!st && pl->dyn)
    st = etl_dev_alloc(c, pl->dyn_words * sizeof(uint32_t), &pl->dyn_dptr);
  if (!st)
    st = etl_dev_alloc(c, ETL_ARGS_BYTES(m), &pl->args_dptr);
  if (!st)
    st = etl_dev_htod(c, pl->queue_dptr, pl->queue, 2 * pl->n_entries * sizeof(uint32_t));
  if (!st)
    st = etl_dev_htod(c, pl->offs_dptr, pl->queue_offs,
                      ((size_t)c->num_ctas + 1) * sizeof(uint32_t));
  if (st) {
    etl_plan_release(c, pl, m);
    return st;
  }
  /* evict beyond the cache size */
  uint32_t n = 0;
  for (etl_plan **q = &p->plans; *q;) {
    if (++n >= ETL_MAX_CACHED_PLANS) {
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

/* Fill the argument block, reset counters and queues and start the launch
 * on `stream`; *in_flight as the device's launch sets it. */
static etlStatus start(etl_program *p, etl_plan *pl, uint64_t tl_dptr, void *stream,
                       int *in_flight) {
  etl_context *c = p->ctx;
  const etl_meta *m = &p->art.meta;
  uint64_t *a = pl->args_host;
  memset(a, 0, ETL_ARGS_BYTES(m)); /* the error record after the slots too */
  pl->err_dptr = pl->args_dptr + m->num_slots * sizeof(uint64_t);
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
  etlStatus st = etl_dev_htod(c, pl->args_dptr, a, ETL_ARGS_BYTES(m));
  if (!st)
    st = etl_dev_htod(c, pl->counters_dptr, pl->wait_counts, pl->n_counters * sizeof(uint32_t));
  if (!st && pl->dyn)
    st = etl_dev_htod(c, pl->dyn_dptr, pl->dyn, pl->dyn_words * sizeof(uint32_t));
  /* `buffer ... = zeros`: cleared on the run's stream before its launch */
  for (uint32_t i = 0; i < m->n_tensors && !st; ++i)
    if (m->tensors[i].zeros && pl->buffer_bytes[i])
      st = c->dev->zero(c, pl->buffer_dptr[i], pl->buffer_bytes[i], stream);
  if (st)
    return st;
  /* the control block: no abort, and every CTA's task count from 0 (the
   * kernel never reads those words, it only writes them) */
  memset((char *)c->abort_host + ETL_CONTROL_PROGRESS, 0, 4u * (size_t)c->num_ctas);
  __atomic_store_n(c->abort_host, 0u, __ATOMIC_SEQ_CST);
  return c->dev->launch(p, pl, stream, in_flight);
}

/* Turn what the device reported for a launch that ended with status `st`
 * into the run's status: the device error record, the dynamic queue, the
 * timeline. */
static etlStatus conclude(etl_program *p, etl_plan *pl, uint64_t tl_dptr, etlStatus st) {
  etl_context *c = p->ctx;
  uint32_t rec[ETL_ERR_WORDS] = {0};
  /* a record that cannot be read back fails the run: its result is unknown */
  etlStatus rd = ETL_SUCCESS;
  if ((!st || st == ETL_ERROR_TIMEOUT) &&
      ((rd = etl_dev_dtoh(c, rec, pl->err_dptr, sizeof rec)) || rec[ETL_ERR_SET]))
    st = rd ? rd : device_error(p, pl, rec);
  if (pl->dyn && (!st || st == ETL_ERROR_TIMEOUT)) {
    uint32_t err = 0;
    if ((rd = etl_dev_dtoh(c, &err, pl->dyn_dptr + ETL_DYN_ERROR * 4, 4)))
      st = rd;
    else if (err)
      st = etl_error(ETL_ERROR_LAUNCH_FAILED,
                     "etlRun: the dynamic task queue overflowed (capacity %llu)",
                     (unsigned long long)pl->n_dynamic);
  }
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
  if (p->run_inflight)
    finish_run(p, 1);
  pthread_mutex_unlock(&p->ctx->launch_mu);
}

etlStatus etl_program_prepare(etlProgram h) {
  ETL_GET_PROG(p, h);
  etlStatus st = etl_bindings_validate(p);
  if (st)
    return st;
  etl_plan *pl = NULL;
  pthread_mutex_lock(&p->ctx->launch_mu);
  st = get_plan(p, &pl);
  pthread_mutex_unlock(&p->ctx->launch_mu);
  return st;
}

etlStatus etlRunAsync(etlProgram h, void *stream) {
  ETL_GET_PROG(p, h);
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
  if (p->run_inflight && (st = finish_run(p, 1))) {
    char msg[4096];
    snprintf(msg, sizeof msg,
             "etlRunAsync: nothing launched: the previous run, not waited for, failed: %s",
             etlGetLastErrorMessage());
    etl_error_str(st, msg);
    pthread_mutex_unlock(&c->launch_mu);
    return st;
  }
  if (c->inflight) /* another program's: its outcome waits for its etlRunWait */
    finish_run(c->inflight, 1);
  keep_outcome(p, ETL_SUCCESS);
  etl_plan *pl = NULL;
  uint64_t tl_dptr = 0;
  int in_flight = 0;
  st = get_plan(p, &pl);
  if (!st && p->timeline_path)
    st = timeline_buffer(c, pl, &tl_dptr);
  if (!st)
    st = start(p, pl, tl_dptr, stream, &in_flight);
  if (in_flight) { /* finished by etlRunWait / etlRunQuery, even when st reports a failure */
    p->run_inflight = 1;
    p->run_plan = pl;
    p->run_tl_dptr = tl_dptr;
    c->inflight = p;
  } else {
    st = pl ? conclude(p, pl, tl_dptr, st) : st;
    keep_outcome(p, st);
  }
  pthread_mutex_unlock(&c->launch_mu);
  return st;
}

etlStatus etlRunWait(etlProgram h) {
  ETL_GET_PROG(p, h);
  pthread_mutex_lock(&p->ctx->launch_mu);
  if (p->run_inflight)
    finish_run(p, 1);
  etlStatus st = outcome(p);
  pthread_mutex_unlock(&p->ctx->launch_mu);
  return st;
}

etlStatus etlRunQuery(etlProgram h) {
  ETL_GET_PROG(p, h);
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
