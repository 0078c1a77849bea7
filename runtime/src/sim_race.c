/*===- src/sim_race.c - The sim's race check between tasks ----------------===
 *
 * What this owns: the race-detecting mode described in sim_race.h. One
 * mutex guards everything: the mode is for finding bugs, not for speed.
 *===----------------------------------------------------------------------===*/
#include "sim_race.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sets of tasks take words * 8 bytes each; the sets of all tasks and of all
 * synchronising words together may take at most this much. */
#define ETL_RACE_MAX_BYTES (512ull << 20)

enum { NO_TASK = UINT32_MAX };

typedef struct race_shadow {
  uint32_t writer, reader; /* task id + 1; 0 = none */
  uint32_t atomic;         /* 1: the writer's last access was an atomic */
} race_shadow;

typedef struct race_cta {
  uint32_t stack[8]; /* tasks begun and not ended (a static task that waits
                        runs dynamic items inside its bracket) */
  uint32_t depth;
  uint64_t *pending; /* acquired since the last task began or ended */
} race_cta;

struct etl_race {
  pthread_mutex_t mu;
  const etl_meta *meta;
  const etl_plan *plan;
  uint32_t n_tasks, words, num_ctas;
  uint64_t *group_base; /* per group: id of its first task */
  uint64_t **clock;     /* per task: the tasks ordered before it (lazy) */
  uint32_t *task_group, *task_linear;
  /* synchronising words: the event counters, then the dynamic state's words
     after its header (dependency counters and slots) */
  uint64_t counters, n_counters, dyn_sync, n_dyn_sync;
  uint64_t **sync; /* per synchronising word (lazy) */
  race_shadow **shadow;
  uint64_t *shadow_elems;
  uint32_t n_tensors;
  race_cta *ctas;
  int reported;
};

static uint64_t *new_set(etl_race *r) { return calloc(r->words, sizeof(uint64_t)); }

static void set_or(etl_race *r, uint64_t *dst, const uint64_t *src) {
  for (uint32_t i = 0; i < r->words; ++i)
    dst[i] |= src[i];
}

static int set_has(const uint64_t *s, uint32_t id) { return (int)((s[id / 64] >> (id % 64)) & 1u); }

etl_race *etl_race_create(const etl_meta *m, const etl_plan *plan, uint32_t num_ctas,
                          const uint64_t *elems, char *err, size_t err_size) {
  uint64_t n_tasks = 0;
  for (uint32_t g = 0; g < m->n_groups; ++g)
    n_tasks += plan->group_tasks[g] + plan->group_prefix[g];
  uint64_t dyn_header = ETL_DYN_GROUP_OFF + 2ull * m->n_groups;
  uint64_t n_dyn_sync =
      plan->dyn && plan->dyn_words > dyn_header ? plan->dyn_words - dyn_header : 0;
  uint64_t words = (n_tasks + 63) / 64;
  uint64_t bytes = (n_tasks + plan->n_counters + n_dyn_sync + num_ctas) * words * 8;
  if (n_tasks >= UINT32_MAX || bytes > ETL_RACE_MAX_BYTES) {
    snprintf(err, err_size,
             "the race check needs %llu MiB for %llu tasks (at most %llu MiB); check a smaller "
             "binding",
             (unsigned long long)(bytes >> 20), (unsigned long long)n_tasks,
             (unsigned long long)(ETL_RACE_MAX_BYTES >> 20));
    return NULL;
  }
  etl_race *r = calloc(1, sizeof *r);
  if (!r)
    goto oom;
  pthread_mutex_init(&r->mu, NULL);
  r->meta = m;
  r->plan = plan;
  r->n_tasks = (uint32_t)n_tasks;
  r->words = (uint32_t)(words ? words : 1);
  r->num_ctas = num_ctas;
  r->counters = plan->counters_dptr;
  r->n_counters = plan->n_counters;
  r->dyn_sync = plan->dyn_dptr + dyn_header * 4;
  r->n_dyn_sync = n_dyn_sync;
  r->n_tensors = m->n_tensors;
  r->group_base = calloc(m->n_groups + 1, sizeof(uint64_t));
  r->clock = calloc(n_tasks + 1, sizeof(uint64_t *));
  r->task_group = calloc(n_tasks + 1, sizeof(uint32_t));
  r->task_linear = calloc(n_tasks + 1, sizeof(uint32_t));
  r->sync = calloc(plan->n_counters + n_dyn_sync + 1, sizeof(uint64_t *));
  r->shadow = calloc(m->n_tensors + 1, sizeof(race_shadow *));
  r->shadow_elems = calloc(m->n_tensors + 1, sizeof(uint64_t));
  r->ctas = calloc(num_ctas, sizeof(race_cta));
  if (!r->group_base || !r->clock || !r->task_group || !r->task_linear || !r->sync || !r->shadow ||
      !r->shadow_elems || !r->ctas)
    goto oom;
  for (uint32_t g = 0; g < m->n_groups; ++g)
    r->group_base[g + 1] = r->group_base[g] + plan->group_tasks[g] + plan->group_prefix[g];
  for (uint32_t t = 0; t < m->n_tensors; ++t) {
    r->shadow_elems[t] = elems[t];
    if (elems[t] && !(r->shadow[t] = calloc(elems[t], sizeof(race_shadow))))
      goto oom;
  }
  for (uint32_t c = 0; c < num_ctas; ++c)
    if (!(r->ctas[c].pending = new_set(r)))
      goto oom;
  return r;
oom:
  etl_race_destroy(r);
  snprintf(err, err_size, "out of memory for the race check");
  return NULL;
}

void etl_race_destroy(etl_race *r) {
  if (!r)
    return;
  if (r->clock)
    for (uint32_t i = 0; i < r->n_tasks; ++i)
      free(r->clock[i]);
  if (r->sync)
    for (uint64_t i = 0; i < r->n_counters + r->n_dyn_sync; ++i)
      free(r->sync[i]);
  if (r->shadow)
    for (uint32_t t = 0; t < r->n_tensors; ++t)
      free(r->shadow[t]);
  if (r->ctas)
    for (uint32_t c = 0; c < r->num_ctas; ++c)
      free(r->ctas[c].pending);
  free(r->group_base);
  free(r->clock);
  free(r->task_group);
  free(r->task_linear);
  free(r->sync);
  free(r->shadow);
  free(r->shadow_elems);
  free(r->ctas);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

static uint32_t current(const race_cta *c) { return c->depth ? c->stack[c->depth - 1] : NO_TASK; }

void etl_race_task_begin(etl_race *r, uint32_t cta, uint32_t group, uint32_t linear) {
  if (cta >= r->num_ctas || group >= r->meta->n_groups)
    return;
  pthread_mutex_lock(&r->mu);
  race_cta *c = &r->ctas[cta];
  uint64_t id = r->group_base[group] + linear;
  if (id >= r->group_base[group + 1]) {
    pthread_mutex_unlock(&r->mu);
    return;
  }
  uint32_t at = 0;
  while (at < c->depth && c->stack[at] != id)
    ++at;
  if (at < c->depth) { /* a task resuming after the items it ran while waiting */
    c->depth = at + 1;
  } else if (c->depth < sizeof c->stack / sizeof c->stack[0]) {
    c->stack[c->depth++] = (uint32_t)id;
  }
  if (!r->clock[id])
    r->clock[id] = new_set(r); /* out of memory: the task is untracked */
  if (r->clock[id])
    set_or(r, r->clock[id], c->pending);
  r->task_group[id] = group;
  r->task_linear[id] = linear;
  memset(c->pending, 0, r->words * sizeof(uint64_t));
  pthread_mutex_unlock(&r->mu);
}

void etl_race_task_end(etl_race *r, uint32_t cta) {
  if (cta >= r->num_ctas)
    return;
  pthread_mutex_lock(&r->mu);
  race_cta *c = &r->ctas[cta];
  if (c->depth)
    c->depth--;
  memset(c->pending, 0, r->words * sizeof(uint64_t));
  pthread_mutex_unlock(&r->mu);
}

/* The index of the synchronising word at `addr`, or -1. */
static int64_t sync_index(const etl_race *r, uint64_t a) {
  if (a >= r->counters && a < r->counters + r->n_counters * 4)
    return (int64_t)((a - r->counters) / 4);
  if (r->n_dyn_sync && a >= r->dyn_sync && a < r->dyn_sync + r->n_dyn_sync * 4)
    return (int64_t)(r->n_counters + (a - r->dyn_sync) / 4);
  return -1;
}

void etl_race_sync(etl_race *r, uint32_t cta, const void *addr, int acquire, int release) {
  int64_t i = sync_index(r, (uint64_t)(uintptr_t)addr);
  if (i < 0 || cta >= r->num_ctas)
    return;
  pthread_mutex_lock(&r->mu);
  race_cta *c = &r->ctas[cta];
  uint32_t cur = current(c);
  uint64_t *mine = cur != NO_TASK ? r->clock[cur] : NULL;
  if (acquire && r->sync[i]) {
    set_or(r, c->pending, r->sync[i]);
    if (mine)
      set_or(r, mine, r->sync[i]);
  }
  if (release) {
    if (!r->sync[i])
      r->sync[i] = new_set(r);
    if (r->sync[i]) {
      set_or(r, r->sync[i], mine ? mine : c->pending);
      if (cur != NO_TASK)
        r->sync[i][cur / 64] |= 1ull << (cur % 64);
    }
  }
  pthread_mutex_unlock(&r->mu);
}

static void task_name(const etl_race *r, uint32_t id, char *buf, size_t n) {
  etl_plan_task_name(r->meta, r->plan, r->task_group[id], r->task_linear[id], buf, n);
}

uint32_t etl_race_task_id(const etl_race *r, uint32_t group, uint32_t linear) {
  if (group >= r->meta->n_groups || r->group_base[group] + linear >= r->group_base[group + 1])
    return NO_TASK;
  return (uint32_t)(r->group_base[group] + linear);
}

int etl_race_access(etl_race *r, uint32_t cur, uint32_t tensor, uint64_t elem, int is_store,
                    char *msg, size_t msg_size) {
  if (cur >= r->n_tasks || tensor >= r->n_tensors || elem >= r->shadow_elems[tensor])
    return 0;
  pthread_mutex_lock(&r->mu);
  const uint64_t *mine = r->clock[cur];
  if (!mine) { /* its thread 0 has not begun it (out of memory for its set) */
    pthread_mutex_unlock(&r->mu);
    return 0;
  }
  race_shadow *s = &r->shadow[tensor][elem];
  uint32_t other = NO_TASK;
  const char *what = NULL;
  int atomic = is_store == ETL_RACE_ATOMIC;
  if (atomic && s->atomic) {
    /* atomics of unordered tasks may meet; an unordered plain read before
       is still a race */
  } else if (s->writer && s->writer - 1 != cur && !set_has(mine, s->writer - 1)) {
    other = s->writer - 1;
    what = "wrote";
  } else if (is_store && s->reader && s->reader - 1 != cur && !set_has(mine, s->reader - 1)) {
    other = s->reader - 1;
    what = "read";
  }
  if (atomic && s->reader && s->reader - 1 != cur && !set_has(mine, s->reader - 1)) {
    other = s->reader - 1;
    what = "read";
  }
  if (is_store) {
    s->writer = cur + 1;
    s->reader = 0;
    s->atomic = (uint32_t)atomic;
  } else {
    s->reader = cur + 1;
  }
  int race = other != NO_TASK && !r->reported;
  if (race) {
    r->reported = 1;
    char a[256], b[256];
    task_name(r, other, a, sizeof a);
    task_name(r, cur, b, sizeof b);
    snprintf(msg, msg_size,
             "sim race check: task %s %s element %llu of '%s' and task %s then %s it, but no "
             "chain of events orders %s before %s",
             a, what, (unsigned long long)elem, r->meta->tensors[tensor].name, b,
             atomic     ? "updated (atomically)"
             : is_store ? "wrote"
                        : "read",
             a, b);
  }
  pthread_mutex_unlock(&r->mu);
  return race;
}
