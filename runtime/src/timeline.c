/*===- src/timeline.c - Per-task timeline records and the Chrome trace ---===
 *
 * etlProgramSetTimeline / etlProgramGetTimeline, and the two steps etlRun
 * takes after a launch with the timeline on: copy the device's records back
 * and pair each with its task (static queue entries first, then one per
 * dynamic queue slot), then write them as Chrome trace JSON, atomically
 * (a temporary file in the same directory, renamed over the target).
 *===----------------------------------------------------------------------===*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"

/* Directory part of `path` ("." when it has none) is writable. */
static int dir_writable(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    return access(".", W_OK | X_OK) == 0;
  if (slash == path)
    return access("/", W_OK | X_OK) == 0;
  size_t n = (size_t)(slash - path);
  char *dir = malloc(n + 1);
  if (!dir)
    return 0;
  memcpy(dir, path, n);
  dir[n] = 0;
  int ok = access(dir, W_OK | X_OK) == 0;
  free(dir);
  return ok;
}

etlStatus etlProgramSetRaceCheck(etlProgram h, int enable) {
  ETL_GET_PROG(p, h);
  if (p->ctx->dev->is_gpu && enable)
    return etl_error(ETL_ERROR_INVALID_VALUE,
                     "etlProgramSetRaceCheck: the race check runs on the sim device only (this "
                     "program is loaded on '%s')",
                     p->ctx->dev->name);
  p->race_check = enable != 0;
  ETL_FOR_SUBS(p, etlProgramSetRaceCheck(h_, enable));
  return ETL_SUCCESS;
}

etlStatus etlProgramSetProfile(etlProgram h, const char *json_path) {
  ETL_GET_PROG(p, h);
  if (json_path && p->ctx->dev->is_gpu)
    return etl_error(ETL_ERROR_INVALID_VALUE,
                     "etlProgramSetProfile: the profile counters come from the sim device (this "
                     "program is loaded on '%s'; use Nsight Compute there)",
                     p->ctx->dev->name);
  if (json_path && !json_path[0])
    return etl_error(ETL_ERROR_INVALID_VALUE,
                     "etlProgramSetProfile: json_path is empty (pass NULL to turn it off)");
  if (json_path && !dir_writable(json_path))
    return etl_error(ETL_ERROR_IO, "etlProgramSetProfile: cannot write '%s': %s", json_path,
                     strerror(errno));
  char *copy = NULL;
  if (json_path && !(copy = strdup(json_path)))
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "etlProgramSetProfile: out of memory");
  free(p->profile_path);
  p->profile_path = copy;
  ETL_FOR_SUBS(p, etlProgramSetProfile(h_, json_path));
  return ETL_SUCCESS;
}

etlStatus etlProgramSetTimeline(etlProgram h, const char *json_path) {
  ETL_GET_PROG(p, h);
  if (json_path && !json_path[0])
    return etl_error(ETL_ERROR_INVALID_VALUE,
                     "etlProgramSetTimeline: json_path is empty (pass NULL to turn it off)");
  if (json_path && !dir_writable(json_path))
    return etl_error(ETL_ERROR_IO, "etlProgramSetTimeline: cannot write '%s': %s", json_path,
                     strerror(errno));
  char *copy = NULL;
  if (json_path) {
    copy = malloc(strlen(json_path) + 1);
    if (!copy)
      return etl_error(ETL_ERROR_OUT_OF_MEMORY, "etlProgramSetTimeline: out of memory");
    strcpy(copy, json_path);
  }
  free(p->timeline_path);
  p->timeline_path = copy;
  if (!copy) {
    free(p->timeline);
    p->timeline = NULL;
    p->timeline_count = 0;
  }
  ETL_FOR_SUBS(p, etlProgramSetTimeline(h_, json_path));
  return ETL_SUCCESS;
}

etlStatus etlProgramGetTimeline(etlProgram h, etlTimelineRecord *records, size_t capacity,
                                size_t *count) {
  ETL_GET_PROG(p, h);
  if (!count)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlProgramGetTimeline: count is NULL");
  if (capacity && !records)
    return etl_error(ETL_ERROR_INVALID_VALUE,
                     "etlProgramGetTimeline: records is NULL with capacity %zu", capacity);
  if (p->n_subs && p->ran) /* the variant that ran last recorded it */
    p = p->ran;
  *count = p->timeline_count;
  size_t n = capacity < p->timeline_count ? capacity : p->timeline_count;
  if (n)
    memcpy(records, p->timeline, n * sizeof *records);
  return ETL_SUCCESS;
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; ++s) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(f, "\\u%04x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

/* Chrome trace JSON of the recorded tasks, written to a temporary file in
 * the same directory and renamed over `path`. */
etlStatus etl_timeline_write(etl_program *p, const etl_plan *pl, const char *path) {
  const etl_meta *m = &p->art.meta;
  const etlTimelineRecord *r = p->timeline;
  uint64_t t0 = UINT64_MAX;
  for (size_t i = 0; i < p->timeline_count; ++i)
    if (r[i].start_ns && r[i].start_ns < t0)
      t0 = r[i].start_ns;
  size_t n = strlen(path) + 32;
  char *tmp = malloc(n);
  if (!tmp)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "etlRun: out of memory writing the timeline");
  snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) {
    etlStatus st = etl_error(ETL_ERROR_IO, "etlRun: cannot write the timeline to '%s': %s", tmp,
                             strerror(errno));
    free(tmp);
    return st;
  }
  fputs("{\"traceEvents\":[", f);
  int first = 1;
  for (size_t i = 0; i < p->timeline_count; ++i) {
    if (!r[i].start_ns)
      continue; /* not run */
    char name[256];
    etl_plan_task_name(m, pl, r[i].group, r[i].linear, name, sizeof name);
    uint64_t dur = r[i].end_ns > r[i].start_ns ? r[i].end_ns - r[i].start_ns : 0;
    fputs(first ? "\n{\"name\":" : ",\n{\"name\":", f);
    first = 0;
    json_string(f, name);
    fprintf(f, ",\"ph\":\"X\",\"pid\":0,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"group\":",
            r[i].sm, (double)(r[i].start_ns - t0) / 1000.0, (double)dur / 1000.0);
    json_string(f, r[i].group < m->n_groups ? m->groups[r[i].group].name : "?");
    fprintf(f, ",\"linear\":%u,\"cta\":%u}}", r[i].linear, r[i].cta);
  }
  /* With the sim profile on: a counter track per CTA of its running global
     requests, sectors and shared wavefronts, sampled as its tasks end. */
  for (size_t i = 0; i < p->n_profile_samples; ++i) {
    const etl_profile_sample_t *s = &p->profile_samples[i];
    if (s->t_ns < t0)
      continue;
    fprintf(f,
            "%s\n{\"name\":\"profile cta %u\",\"ph\":\"C\",\"pid\":0,\"ts\":%.3f,\"args\":{"
            "\"global requests\":%llu,\"sectors\":%llu,\"shared wavefronts\":%llu}}",
            first ? "" : ",", s->cta, (double)(s->t_ns - t0) / 1000.0,
            (unsigned long long)s->requests, (unsigned long long)s->sectors,
            (unsigned long long)s->wavefronts);
    first = 0;
  }
  fputs("\n],\"displayTimeUnit\":\"ns\"}\n", f);
  int bad = ferror(f);
  int err = errno;
  if (fclose(f) != 0 && !bad) {
    bad = 1;
    err = errno;
  }
  if (!bad && rename(tmp, path) != 0) {
    bad = 1;
    err = errno;
  }
  etlStatus st = ETL_SUCCESS;
  if (bad) {
    remove(tmp);
    st = etl_error(ETL_ERROR_IO, "etlRun: cannot write the timeline to '%s': %s", path,
                   strerror(err));
  }
  free(tmp);
  return st;
}

/* Copies the launch's records back and pairs them with the queue: static
 * entries first, then one per dynamic queue slot (the slot names the item). */
etlStatus etl_timeline_collect(etl_program *p, const etl_plan *pl, uint64_t dptr) {
  size_t n = (size_t)pl->n_entries;
  etl_timeline_record *raw = calloc(n ? n : 1, sizeof *raw);
  etlTimelineRecord *out = calloc(n ? n : 1, sizeof *out);
  etlStatus st = ETL_SUCCESS;
  if (!raw || !out)
    st = etl_error(ETL_ERROR_OUT_OF_MEMORY, "etlRun: out of memory reading the timeline");
  if (!st)
    st = etl_dev_dtoh(p->ctx, raw, dptr, n * sizeof *raw);
  if (st) {
    free(raw);
    free(out);
    return st;
  }
  uint32_t *slots = NULL;
  uint64_t slot0 = ETL_DYN_GROUP_OFF + 2 * (uint64_t)p->art.meta.n_groups;
  if (pl->dyn && pl->n_dynamic) {
    slots = calloc(pl->n_dynamic, sizeof(uint32_t));
    st = slots ? etl_dev_dtoh(p->ctx, slots, pl->dyn_dptr + slot0 * 4, pl->n_dynamic * 4)
               : etl_error(ETL_ERROR_OUT_OF_MEMORY, "etlRun: out of memory reading the timeline");
    if (st) {
      free(slots);
      free(raw);
      free(out);
      return st;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    out[i].start_ns = raw[i].start_ns;
    out[i].end_ns = raw[i].end_ns;
    out[i].sm = raw[i].sm;
    out[i].cta = raw[i].cta;
    if (i < pl->n_static) {
      out[i].group = pl->queue[2 * i];
      out[i].linear = pl->queue[2 * i + 1];
      continue;
    }
    uint32_t item = slots ? slots[i - pl->n_static] : 0;
    if (item == 0) {
      out[i].start_ns = out[i].end_ns = 0; /* slot never filled: not run */
      continue;
    }
    uint32_t id = item - 1, g = 0;
    for (uint32_t k = 0; k < p->art.meta.n_groups; ++k)
      if (p->art.meta.groups[k].schedule == ETL_SCHEDULE_DYNAMIC &&
          pl->dyn[ETL_DYN_GROUP_OFF + k] <= id)
        g = k;
    uint32_t lin = id - pl->dyn[ETL_DYN_GROUP_OFF + g];
    uint32_t pre = (uint32_t)pl->group_prefix[g];
    if (lin < pre) { /* an expander: not a task, no record */
      out[i].start_ns = out[i].end_ns = 0;
      continue;
    }
    out[i].group = g;
    out[i].linear = lin - pre;
  }
  free(slots);
  free(raw);
  free(p->timeline);
  p->timeline = out;
  p->timeline_count = n;
  return ETL_SUCCESS;
}
