/*===- src/sim_profile.c - Hardware counters from the simulator -----------===
 *
 * What this owns: the profile mode described in sim_profile.h: per-CTA hash
 * tables of open warp-level requests, per-lane instance counts, per-site
 * totals and touched sectors, merged and written after the launch.
 *===----------------------------------------------------------------------===*/
#include "sim_profile.h"

#include "device.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*===-- A small open-addressing table: three u64 words of key -> u32 ------===*/

typedef struct ptab {
  uint64_t *keys; /* 3 words per slot; slot free when vals[i] == 0 */
  uint32_t *vals; /* value + 1 */
  size_t cap, n;
} ptab;

static uint64_t mix(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull ^
               (c + 0x94D049BB133111EBull) * 0xD6E8FEB86659FD93ull;
  return h ^ (h >> 31);
}

static int ptab_grow(ptab *t) {
  size_t cap = t->cap ? t->cap * 2 : 256;
  uint64_t *keys = calloc(cap * 3, sizeof(uint64_t));
  uint32_t *vals = calloc(cap, sizeof(uint32_t));
  if (!keys || !vals) {
    free(keys);
    free(vals);
    return -1;
  }
  for (size_t i = 0; i < t->cap; ++i) {
    if (!t->vals[i])
      continue;
    const uint64_t *k = &t->keys[i * 3];
    size_t j = mix(k[0], k[1], k[2]) & (cap - 1);
    while (vals[j])
      j = (j + 1) & (cap - 1);
    memcpy(&keys[j * 3], k, 3 * sizeof(uint64_t));
    vals[j] = t->vals[i];
  }
  free(t->keys);
  free(t->vals);
  t->keys = keys;
  t->vals = vals;
  t->cap = cap;
  return 0;
}

/* The value of key (a, b, c), inserting `next` when absent (*fresh = 1).
 * Returns UINT32_MAX when out of memory. */
static uint32_t ptab_get(ptab *t, uint64_t a, uint64_t b, uint64_t c, uint32_t next, int *fresh) {
  if ((t->n + 1) * 2 > t->cap && ptab_grow(t) != 0)
    return UINT32_MAX;
  size_t j = mix(a, b, c) & (t->cap - 1);
  for (; t->vals[j]; j = (j + 1) & (t->cap - 1)) {
    const uint64_t *k = &t->keys[j * 3];
    if (k[0] == a && k[1] == b && k[2] == c) {
      *fresh = 0;
      return t->vals[j] - 1;
    }
  }
  t->keys[j * 3] = a;
  t->keys[j * 3 + 1] = b;
  t->keys[j * 3 + 2] = c;
  t->vals[j] = next + 1;
  t->n++;
  *fresh = 1;
  return next;
}

static void ptab_clear(ptab *t) {
  if (t->cap)
    memset(t->vals, 0, t->cap * sizeof(uint32_t));
  t->n = 0;
}

static void ptab_free(ptab *t) {
  free(t->keys);
  free(t->vals);
}

/*===-- Counters -------------------------------------------------------------===*/

enum { MAX_SECTORS = 64 };

typedef struct prof_request {
  uint64_t site;
  uint32_t group;
  int is_store;
  int shared;          /* a shared-memory request: words, not sectors */
  uint32_t n_words;    /* shared: distinct 4-byte words (offset / 4) */
  uint64_t words[128]; /* 32 lanes x 16 bytes */
  uint32_t lanes;      /* mask */
  uint64_t bytes;      /* distinct bytes: lanes reading one address (a broadcast) count once */
  uint64_t bytes128;   /* of them, moved by 16-byte (128-bit) lane accesses */
  uint32_t n_addrs;
  uint64_t addrs[32];
  uint32_t n_sectors;
  uint64_t sectors[MAX_SECTORS];
} prof_request;

typedef struct prof_site {
  uint64_t site;
  uint32_t group;
  int is_store, shared;
  uint64_t requests, lanes, bytes, sectors, wavefronts, bytes128;
  uint64_t ideal; /* shared: the fewest wavefronts its requests' words need */
} prof_site;

typedef struct prof_cta {
  ptab open; /* (site, warp, instance) -> requests[] */
  prof_request *requests;
  size_t n_requests, cap_requests;
  ptab instance; /* (site, tid, 0) -> next instance of that lane at that site */
  uint32_t *next_instance;
  size_t cap_instance;
  ptab site_tab; /* (site, group, is_store) -> sites[] */
  prof_site *sites;
  size_t n_sites, cap_sites;
  ptab dram;                                          /* (sector, 0, 0): sectors this CTA touched */
  uint64_t tot_requests, tot_sectors, tot_wavefronts; /* running, for samples */
  etl_profile_sample_t *samples;
  size_t n_samples, cap_samples;
  uint64_t *events; /* (n_groups + 1) * ETL_PROF_EVENTS */
} prof_cta;

struct etl_profile {
  const etl_meta *meta;
  uint32_t num_ctas, tpc;
  prof_cta *ctas;
  int oom;
};

static int reserve(void **arr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return 0;
  size_t cap2 = *cap ? *cap * 2 : 64;
  while (cap2 < need)
    cap2 *= 2;
  void *p = realloc(*arr, cap2 * elem);
  if (!p)
    return -1;
  memset((char *)p + *cap * elem, 0, (cap2 - *cap) * elem);
  *arr = p;
  *cap = cap2;
  return 0;
}

etl_profile *etl_profile_create(const etl_meta *m, uint32_t num_ctas, uint32_t threads_per_cta) {
  etl_profile *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->meta = m;
  p->num_ctas = num_ctas;
  p->tpc = threads_per_cta;
  p->ctas = calloc(num_ctas, sizeof(prof_cta));
  if (!p->ctas) {
    free(p);
    return NULL;
  }
  for (uint32_t i = 0; i < num_ctas; ++i)
    if (!(p->ctas[i].events =
              calloc((m->n_groups + 1) * (size_t)ETL_PROF_EVENTS, sizeof(uint64_t)))) {
      etl_profile_destroy(p);
      return NULL;
    }
  return p;
}

void etl_profile_destroy(etl_profile *p) {
  if (!p)
    return;
  for (uint32_t i = 0; p->ctas && i < p->num_ctas; ++i) {
    prof_cta *c = &p->ctas[i];
    ptab_free(&c->open);
    ptab_free(&c->instance);
    ptab_free(&c->site_tab);
    ptab_free(&c->dram);
    free(c->requests);
    free(c->next_instance);
    free(c->sites);
    free(c->events);
    free(c->samples);
  }
  free(p->ctas);
  free(p);
}

static uint32_t group_slot(const etl_profile *p, uint32_t group) {
  return group < p->meta->n_groups ? group : p->meta->n_groups;
}

void etl_profile_count(etl_profile *p, uint32_t cta, uint32_t group, int event, uint64_t n) {
  if (cta < p->num_ctas && event >= 0 && event < ETL_PROF_EVENTS)
    p->ctas[cta].events[group_slot(p, group) * ETL_PROF_EVENTS + (uint32_t)event] += n;
}

/* Adds `v` to the set `set[0 .. *n)` of at most `cap` values; 1 if it was new. */
static int add_unique(uint64_t *set, uint32_t *n, uint32_t cap, uint64_t v) {
  for (uint32_t k = 0; k < *n; ++k)
    if (set[k] == v)
      return 0;
  if (*n < cap)
    set[(*n)++] = v;
  return 1;
}

/* One lane's access: into the warp-level request of its (site, instance). */
static void record(etl_profile *p, uint32_t cta, uint32_t tid, uint32_t group, uintptr_t site,
                   uint64_t addr, uint64_t bytes, int is_store, int shared) {
  if (cta >= p->num_ctas || bytes == 0)
    return;
  prof_cta *c = &p->ctas[cta];
  int fresh;
  /* the lane's instance at this site */
  uint32_t ii = ptab_get(&c->instance, site, tid, 0, (uint32_t)c->instance.n, &fresh);
  if (ii == UINT32_MAX ||
      reserve((void **)&c->next_instance, &c->cap_instance, (size_t)ii + 1, sizeof(uint32_t))) {
    p->oom = 1;
    return;
  }
  if (fresh)
    c->next_instance[ii] = 0;
  uint32_t inst = c->next_instance[ii]++;
  /* the warp-level request it belongs to */
  uint32_t ri = ptab_get(&c->open, site, tid / 32 + ((uint64_t)shared << 32), inst,
                         (uint32_t)c->n_requests, &fresh);
  if (ri == UINT32_MAX ||
      reserve((void **)&c->requests, &c->cap_requests, (size_t)ri + 1, sizeof(prof_request))) {
    p->oom = 1;
    return;
  }
  prof_request *r = &c->requests[ri];
  if (fresh) {
    c->n_requests++;
    memset(r, 0, sizeof *r);
    r->site = site;
    r->group = group;
    r->is_store = is_store;
    r->shared = shared;
  }
  r->lanes |= 1u << (tid % 32);
  if (add_unique(r->addrs, &r->n_addrs, 32, addr)) {
    r->bytes += bytes; /* lanes reading one address count it once */
    if (bytes >= 16)
      r->bytes128 += bytes;
  }
  if (shared) {
    for (uint64_t w = addr / 4; w <= (addr + bytes - 1) / 4; ++w)
      add_unique(r->words, &r->n_words, 128, w);
    return;
  }
  for (uint64_t s = addr / 32; s <= (addr + bytes - 1) / 32; ++s) {
    add_unique(r->sectors, &r->n_sectors, MAX_SECTORS, s);
    if (ptab_get(&c->dram, s, 0, 0, 0, &fresh) == UINT32_MAX)
      p->oom = 1;
  }
}

void etl_profile_global(etl_profile *p, uint32_t cta, uint32_t tid, uint32_t group, uintptr_t site,
                        uint64_t addr, uint64_t bytes, int is_store) {
  record(p, cta, tid, group, site, addr, bytes, is_store, 0);
}

void etl_profile_shared(etl_profile *p, uint32_t cta, uint32_t tid, uint32_t group, uintptr_t site,
                        uint64_t offset, uint64_t bytes, int is_store) {
  record(p, cta, tid, group, site, offset, bytes, is_store, 1);
}

/* The fewest wavefronts a shared request's words need: 32 banks serve 32
   words a wavefront, so a 16-byte-per-lane access needs 4 however laid out. */
static uint32_t ideal_wavefronts(const prof_request *r) {
  return r->n_words > 32 ? (r->n_words + 31) / 32 : 1;
}

/* Wavefronts of a shared request: the most distinct words one bank holds. */
static uint32_t wavefronts(const prof_request *r) {
  uint32_t per_bank[32] = {0}, most = 1;
  for (uint32_t i = 0; i < r->n_words; ++i)
    if (++per_bank[r->words[i] % 32] > most)
      most = per_bank[r->words[i] % 32];
  return most;
}

void etl_profile_flush(etl_profile *p, uint32_t cta) {
  if (cta >= p->num_ctas)
    return;
  prof_cta *c = &p->ctas[cta];
  for (size_t i = 0; i < c->n_requests; ++i) {
    const prof_request *r = &c->requests[i];
    int fresh;
    uint32_t si =
        ptab_get(&c->site_tab, r->site, r->group, (uint64_t)r->is_store | (uint64_t)r->shared << 1,
                 (uint32_t)c->n_sites, &fresh);
    if (si == UINT32_MAX ||
        reserve((void **)&c->sites, &c->cap_sites, (size_t)si + 1, sizeof(prof_site))) {
      p->oom = 1;
      break;
    }
    prof_site *s = &c->sites[si];
    if (fresh) {
      c->n_sites++;
      s->site = r->site;
      s->group = r->group;
      s->is_store = r->is_store;
      s->shared = r->shared;
    }
    s->requests++;
    c->tot_requests++;
    c->tot_sectors += r->n_sectors;
    c->tot_wavefronts += r->shared ? wavefronts(r) : 0;
    s->lanes += (uint64_t)__builtin_popcount(r->lanes);
    s->bytes += r->bytes;
    s->bytes128 += r->bytes128;
    s->sectors += r->n_sectors;
    if (r->shared) {
      s->wavefronts += wavefronts(r);
      s->ideal += ideal_wavefronts(r);
    }
  }
  c->n_requests = 0;
  ptab_clear(&c->open);
  ptab_clear(&c->instance);
}

void etl_profile_sample(etl_profile *p, uint32_t cta, uint64_t t_ns) {
  if (cta >= p->num_ctas)
    return;
  prof_cta *c = &p->ctas[cta];
  if (reserve((void **)&c->samples, &c->cap_samples, c->n_samples + 1,
              sizeof(etl_profile_sample_t))) {
    p->oom = 1;
    return;
  }
  etl_profile_sample_t *s = &c->samples[c->n_samples++];
  s->t_ns = t_ns;
  s->cta = cta;
  s->requests = c->tot_requests;
  s->sectors = c->tot_sectors;
  s->wavefronts = c->tot_wavefronts;
}

etl_profile_sample_t *etl_profile_take_samples(etl_profile *p, size_t *n) {
  size_t total = 0;
  for (uint32_t i = 0; i < p->num_ctas; ++i)
    total += p->ctas[i].n_samples;
  *n = 0;
  etl_profile_sample_t *all = total ? malloc(total * sizeof *all) : NULL;
  if (!all)
    return NULL;
  for (uint32_t i = 0; i < p->num_ctas; ++i) {
    if (!p->ctas[i].n_samples)
      continue; /* a CTA that ran no task has no array */
    memcpy(all + *n, p->ctas[i].samples, p->ctas[i].n_samples * sizeof *all);
    *n += p->ctas[i].n_samples;
  }
  return all;
}

/*===-- Output ---------------------------------------------------------------===*/

static double ratio(double a, double b) { return b > 0 ? a / b : 0; }

typedef struct totals {
  uint64_t requests, lanes, bytes, sectors, wavefronts, bytes128, ideal;
} totals;

static void add(totals *t, const prof_site *s) {
  t->requests += s->requests;
  t->lanes += s->lanes;
  t->bytes += s->bytes;
  t->bytes128 += s->bytes128;
  t->sectors += s->sectors;
  t->wavefronts += s->wavefronts;
  t->ideal += s->ideal;
}

static void json_shared(FILE *f, const totals *t) {
  fprintf(f,
          "{\"requests\": %llu, \"bytes_requested\": %llu, \"wavefronts\": %llu, "
          "\"bank_conflict_factor\": %.4f, \"lane_utilization\": %.4f}",
          (unsigned long long)t->requests, (unsigned long long)t->bytes,
          (unsigned long long)t->wavefronts, ratio((double)t->wavefronts, (double)t->ideal),
          ratio((double)t->lanes, 32.0 * (double)t->requests));
}

static void json_totals(FILE *f, const totals *t) {
  fprintf(f,
          "{\"requests\": %llu, \"bytes_requested\": %llu, \"bytes_128bit\": %llu, "
          "\"sectors\": %llu, "
          "\"sectors_per_request\": %.4f, \"efficiency\": %.4f, \"lane_utilization\": %.4f}",
          (unsigned long long)t->requests, (unsigned long long)t->bytes,
          (unsigned long long)t->bytes128, (unsigned long long)t->sectors,
          ratio((double)t->sectors, (double)t->requests),
          ratio((double)t->bytes, 32.0 * (double)t->sectors),
          ratio((double)t->lanes, 32.0 * (double)t->requests));
}

static const char *event_names[ETL_PROF_EVENTS] = {
    "barriers", "atomics", "fences",   "spin_iterations", "wait_ns",         "tasks",
    "shuffles", "mma",     "ldmatrix", "tensor_flops",    "ldmatrix_phases", "ldmatrix_wavefronts",
    "queue_pops", "queue_retries", "queue_pushes", "queue_push_claims", "queue_empty_looks",
    "event_notifies", "event_not_ready", "waits_spun", "round_trips", "tma_bytes",
    "mbarrier_waits", "wgmma"};

/* The task switch's counters, per CTA: JSON "per_cta" (one row per CTA, the
 * columns named once) and a table in the text report. */
static const int cta_columns[] = {
    ETL_PROF_TASK,          ETL_PROF_QUEUE_POPS,       ETL_PROF_QUEUE_EMPTY_LOOKS,
    ETL_PROF_QUEUE_RETRIES, ETL_PROF_QUEUE_PUSHES,     ETL_PROF_QUEUE_PUSH_CLAIMS,
    ETL_PROF_EVENT_NOTIFIES, ETL_PROF_EVENT_NOT_READY, ETL_PROF_WAITS_SPUN,
    ETL_PROF_SPIN,          ETL_PROF_ROUND_TRIPS};
enum { N_CTA_COLUMNS = sizeof cta_columns / sizeof cta_columns[0] };

static void write_per_cta(const etl_profile *p, FILE *f, FILE *t) {
  uint32_t ng = p->meta->n_groups + 1;
  fprintf(f, ",\n  \"per_cta\": {\"counters\": [");
  for (int k = 0; k < N_CTA_COLUMNS; ++k)
    fprintf(f, "%s\"%s\"", k ? ", " : "", event_names[cta_columns[k]]);
  fprintf(f, "],\n    \"values\": [");
  fprintf(t, "\ntask switch per CTA (queue and event operations; round trips exclude looks "
             "that found nothing):\n%5s", "cta");
  for (int k = 0; k < N_CTA_COLUMNS; ++k)
    fprintf(t, " %s", event_names[cta_columns[k]]);
  fprintf(t, " %10s\n", "trips/task");
  uint64_t total[N_CTA_COLUMNS] = {0};
  for (uint32_t i = 0; i < p->num_ctas; ++i) {
    uint64_t row[N_CTA_COLUMNS] = {0};
    for (uint32_t g = 0; g < ng; ++g)
      for (int k = 0; k < N_CTA_COLUMNS; ++k)
        row[k] += p->ctas[i].events[g * ETL_PROF_EVENTS + (uint32_t)cta_columns[k]];
    fprintf(f, "%s\n      [", i ? "," : "");
    fprintf(t, "%5u", i);
    for (int k = 0; k < N_CTA_COLUMNS; ++k) {
      fprintf(f, "%s%llu", k ? ", " : "", (unsigned long long)row[k]);
      fprintf(t, " %*llu", (int)strlen(event_names[cta_columns[k]]), (unsigned long long)row[k]);
      total[k] += row[k];
    }
    fprintf(f, "]");
    fprintf(t, " %10.2f\n", ratio((double)row[N_CTA_COLUMNS - 1], (double)row[0]));
  }
  fprintf(f, "]}");
  fprintf(t, "%5s", "all");
  for (int k = 0; k < N_CTA_COLUMNS; ++k)
    fprintf(t, " %*llu", (int)strlen(event_names[cta_columns[k]]), (unsigned long long)total[k]);
  fprintf(t, " %10.2f\n", ratio((double)total[N_CTA_COLUMNS - 1], (double)total[0]));
}

/* Merged per-site rows of every CTA, sorted by group then site. */
static int site_cmp(const void *a, const void *b) {
  const prof_site *x = a, *y = b;
  if (x->group != y->group)
    return x->group < y->group ? -1 : 1;
  if (x->site != y->site)
    return x->site < y->site ? -1 : 1;
  if (x->shared != y->shared)
    return x->shared - y->shared;
  return x->is_store - y->is_store;
}

etlStatus etl_profile_write(etl_profile *p, const char *path, uintptr_t code_base) {
  if (p->oom)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "sim profile: out of memory while counting");
  const etl_meta *m = p->meta;
  uint32_t ng = m->n_groups + 1;
  /* merge sites, events and sectors */
  size_t n_all = 0;
  for (uint32_t i = 0; i < p->num_ctas; ++i)
    n_all += p->ctas[i].n_sites;
  prof_site *all = calloc(n_all + 1, sizeof(prof_site));
  uint64_t *events = calloc((size_t)ng * ETL_PROF_EVENTS, sizeof(uint64_t));
  ptab sectors = {0};
  if (!all || !events) {
    free(all);
    free(events);
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "sim profile: out of memory");
  }
  size_t n = 0;
  int oom = 0;
  for (uint32_t i = 0; i < p->num_ctas; ++i) {
    prof_cta *c = &p->ctas[i];
    for (size_t k = 0; k < c->n_sites; ++k)
      all[n++] = c->sites[k];
    for (size_t k = 0; k < (size_t)ng * ETL_PROF_EVENTS; ++k)
      events[k] += c->events[k];
    for (size_t k = 0; k < c->dram.cap; ++k) {
      int fresh;
      if (c->dram.vals[k] && ptab_get(&sectors, c->dram.keys[k * 3], 0, 0, 0, &fresh) == UINT32_MAX)
        oom = 1;
    }
  }
  qsort(all, n, sizeof *all, site_cmp);
  size_t m_rows = 0; /* fold equal (group, site, kind) rows of different CTAs */
  for (size_t k = 0; k < n; ++k) {
    if (m_rows && site_cmp(&all[m_rows - 1], &all[k]) == 0) {
      all[m_rows - 1].requests += all[k].requests;
      all[m_rows - 1].lanes += all[k].lanes;
      all[m_rows - 1].bytes += all[k].bytes;
      all[m_rows - 1].bytes128 += all[k].bytes128;
      all[m_rows - 1].sectors += all[k].sectors;
      all[m_rows - 1].wavefronts += all[k].wavefronts;
      all[m_rows - 1].ideal += all[k].ideal;
    } else {
      all[m_rows++] = all[k];
    }
  }
  uint64_t unique = (uint64_t)sectors.n * 32;
  ptab_free(&sectors);
  etlStatus st = ETL_SUCCESS;
  if (oom) {
    st = etl_error(ETL_ERROR_OUT_OF_MEMORY, "sim profile: out of memory");
    goto done;
  }
  char tmp[4096], txt[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  snprintf(txt, sizeof txt, "%s.txt", path);
  FILE *f = fopen(tmp, "w"), *t = fopen(txt, "w");
  if (!f || !t) {
    st = etl_error(ETL_ERROR_IO, "sim profile: cannot write '%s': %s", f ? txt : tmp,
                   strerror(errno));
    if (f)
      fclose(f);
    if (t)
      fclose(t);
    remove(tmp);
    goto done;
  }
  totals whole, whole_sh;
  memset(&whole, 0, sizeof whole);
  memset(&whole_sh, 0, sizeof whole_sh);
  for (size_t k = 0; k < m_rows; ++k)
    add(all[k].shared ? &whole_sh : &whole, &all[k]);
  fprintf(f, "{\n  \"schema\": \"etl-sim-profile-1\",\n  \"kernel\": \"%s\",\n", m->kernel_name);
  fprintf(f, "  \"ctas\": %u,\n  \"threads_per_cta\": %u,\n", p->num_ctas, p->tpc);
  fprintf(f, "  \"unique_dram_bytes\": %llu,\n  \"global\": ", (unsigned long long)unique);
  json_totals(f, &whole);
  fprintf(f, ",\n  \"shared\": ");
  json_shared(f, &whole_sh);
  fprintf(f, ",\n  \"groups\": [");
  fprintf(t, "sim profile of kernel %s: %u CTAs x %u threads; unique DRAM bytes %llu\n",
          m->kernel_name, p->num_ctas, p->tpc, (unsigned long long)unique);
  fprintf(t, "%-20s %-6s %-10s %10s %12s %9s %8s %8s\n", "group", "kind", "site", "requests",
          "bytes", "sect/req", "effic.", "lanes");
  for (uint32_t g = 0; g < ng; ++g) {
    const char *name = g < m->n_groups ? m->groups[g].name : "(outside tasks)";
    totals gt, gs;
    memset(&gt, 0, sizeof gt);
    memset(&gs, 0, sizeof gs);
    for (size_t k = 0; k < m_rows; ++k)
      if (all[k].group == g || (g == m->n_groups && all[k].group >= m->n_groups))
        add(all[k].shared ? &gs : &gt, &all[k]);
    fprintf(f, "%s\n    {\"name\": \"%s\", \"global\": ", g ? "," : "", name);
    json_totals(f, &gt);
    fprintf(f, ",\n     \"shared\": ");
    json_shared(f, &gs);
    fprintf(f, ",\n     \"sync\": {");
    for (int e = 0; e < ETL_PROF_EVENTS; ++e)
      fprintf(f, "%s\"%s\": %llu", e ? ", " : "", event_names[e],
              (unsigned long long)events[g * ETL_PROF_EVENTS + (uint32_t)e]);
    fprintf(f, "},\n     \"sites\": [");
    int first = 1;
    for (size_t k = 0; k < m_rows; ++k) {
      const prof_site *s = &all[k];
      if (!(s->group == g || (g == m->n_groups && s->group >= m->n_groups)))
        continue;
      totals one = {s->requests,   s->lanes,    s->bytes, s->sectors,
                    s->wavefronts, s->bytes128, s->ideal};
      const char *space = s->shared ? "shared" : "global";
      fprintf(f, "%s\n       {\"site\": \"0x%llx\", \"kind\": \"%s\", \"space\": \"%s\", \"%s\": ",
              first ? "" : ",", (unsigned long long)(s->site - code_base),
              s->is_store ? "store" : "load", space, space);
      if (s->shared)
        json_shared(f, &one);
      else
        json_totals(f, &one);
      fprintf(f, "}");
      if (s->shared)
        fprintf(t, "%-20s %-6s 0x%-8llx %10llu %12llu %8.2fw %8s %7.1f%%\n", name,
                s->is_store ? "st.sh" : "ld.sh", (unsigned long long)(s->site - code_base),
                (unsigned long long)s->requests, (unsigned long long)s->bytes,
                ratio((double)s->wavefronts, (double)s->ideal), "-",
                100 * ratio((double)s->lanes, 32.0 * (double)s->requests));
      else
        fprintf(t, "%-20s %-6s 0x%-8llx %10llu %12llu %9.2f %7.1f%% %7.1f%%\n", name,
                s->is_store ? "store" : "load", (unsigned long long)(s->site - code_base),
                (unsigned long long)s->requests, (unsigned long long)s->bytes,
                ratio((double)s->sectors, (double)s->requests),
                100 * ratio((double)s->bytes, 32.0 * (double)s->sectors),
                100 * ratio((double)s->lanes, 32.0 * (double)s->requests));
      first = 0;
    }
    fprintf(f, "]}");
    const uint64_t *ev = &events[g * ETL_PROF_EVENTS];
    if (gt.requests || ev[ETL_PROF_TASK] || ev[ETL_PROF_SPIN])
      fprintf(t,
              "%-20s tasks %llu, barriers %llu, shuffles %llu, atomics %llu, fences %llu, "
              "spin-wait iterations %llu (%.3f ms), mma %llu, ldmatrix %llu\n",
              name, (unsigned long long)ev[ETL_PROF_TASK], (unsigned long long)ev[ETL_PROF_BARRIER],
              (unsigned long long)ev[ETL_PROF_SHUFFLE], (unsigned long long)ev[ETL_PROF_ATOMIC],
              (unsigned long long)ev[ETL_PROF_FENCE], (unsigned long long)ev[ETL_PROF_SPIN],
              (double)ev[ETL_PROF_WAIT_NS] / 1e6, (unsigned long long)ev[ETL_PROF_MMA],
              (unsigned long long)ev[ETL_PROF_LDMATRIX]);
  }
  uint64_t q[ETL_PROF_EVENTS] = {0};
  for (uint32_t g = 0; g < ng; ++g)
    for (int e = 0; e < ETL_PROF_EVENTS; ++e)
      q[e] += events[g * ETL_PROF_EVENTS + (uint32_t)e];
  if (q[ETL_PROF_QUEUE_POPS] || q[ETL_PROF_QUEUE_PUSHES])
    fprintf(t,
            "dynamic queue: %llu pops (%.2f per task begun), %llu retries (%.2f per pop), %llu "
            "items pushed in %llu claims of tail\n",
            (unsigned long long)q[ETL_PROF_QUEUE_POPS],
            ratio((double)q[ETL_PROF_QUEUE_POPS], (double)q[ETL_PROF_TASK]),
            (unsigned long long)q[ETL_PROF_QUEUE_RETRIES],
            ratio((double)q[ETL_PROF_QUEUE_RETRIES], (double)q[ETL_PROF_QUEUE_POPS]),
            (unsigned long long)q[ETL_PROF_QUEUE_PUSHES],
            (unsigned long long)q[ETL_PROF_QUEUE_PUSH_CLAIMS]);
  fprintf(f, "\n  ]");
  write_per_cta(p, f, t);
  fprintf(f, "\n}\n");
  int bad = ferror(f) | ferror(t);
  bad |= fclose(f) != 0;
  bad |= fclose(t) != 0;
  if (bad || rename(tmp, path) != 0) {
    remove(tmp);
    st = etl_error(ETL_ERROR_IO, "sim profile: cannot write '%s': %s", path, strerror(errno));
  }
done:
  free(all);
  free(events);
  return st;
}
