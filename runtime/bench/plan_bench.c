/*===- bench/plan_bench.c - Time etl_plan_build, fast against enumeration ---===
 *
 *   etl_plan_bench both|fast ARTIFACT NUM_CTAS DIM...   (dims in metadata order)
 *
 * Builds the per-shape plan of one binding with ETL_PLAN_ENUMERATE (every
 * element of every edge of every task; skipped with `fast`, "-") and
 * ETL_PLAN_FAST (plan.c, "Fast counting") and prints one table row: tasks,
 * counters, the median build time of each (of 3 runs; 1 when a run takes
 * over 2 s) and whether the two plans are the same. A benchmark: it asserts nothing
 *(scripts/bench.sh prints the table; plan_equiv_test.cpp owns equality).
 *===----------------------------------------------------------------------===*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median build time in ms; the last plan in *out (NULL on failure). */
static double time_build(const etl_meta *m, const int64_t *dims, uint32_t ctas, etl_plan_mode mode,
                         etl_plan **out) {
  double t[3];
  int runs = 0;
  *out = NULL;
  while (runs < 3) {
    if (*out)
      etl_plan_free_host(*out);
    double t0 = now_ms();
    etlStatus st = etl_plan_build_mode(m, dims, ctas, mode, out);
    t[runs++] = now_ms() - t0;
    if (st) {
      fprintf(stderr, "plan_bench: %s\n", etlGetLastErrorMessage());
      *out = NULL;
      return -1;
    }
    if (t[0] > 2000)
      break;
  }
  qsort(t, (size_t)runs, sizeof t[0], cmp_double);
  return t[runs / 2];
}

static int same(const etl_plan *a, const etl_plan *b) {
  return a->n_counters == b->n_counters && a->n_entries == b->n_entries &&
         a->dyn_words == b->dyn_words &&
         !memcmp(a->wait_counts, b->wait_counts, a->n_counters * sizeof(uint32_t)) &&
         !memcmp(a->queue, b->queue, 2 * a->n_entries * sizeof(uint32_t)) &&
         (!a->dyn_words || !memcmp(a->dyn, b->dyn, a->dyn_words * sizeof(uint32_t)));
}

int main(int argc, char **argv) {
  if (argc < 4 || (strcmp(argv[1], "both") && strcmp(argv[1], "fast"))) {
    fprintf(stderr, "usage: %s both|fast ARTIFACT NUM_CTAS DIM...\n", argv[0]);
    return 2;
  }
  int both = !strcmp(argv[1], "both");
  ++argv;
  --argc;
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    fprintf(stderr, "plan_bench: cannot open %s\n", argv[1]);
    return 2;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *bytes = malloc(size > 0 ? (size_t)size : 1);
  if (!bytes || size <= 0 || fread(bytes, 1, (size_t)size, f) != (size_t)size) {
    fprintf(stderr, "plan_bench: cannot read %s\n", argv[1]);
    return 2;
  }
  fclose(f);
  etl_artifact art;
  if (etl_artifact_parse(bytes, (size_t)size, &art)) {
    fprintf(stderr, "plan_bench: %s\n", etlGetLastErrorMessage());
    return 2;
  }
  free(bytes);
  const etl_meta *m = &art.meta;
  if ((uint32_t)(argc - 3) != m->n_dims) {
    fprintf(stderr, "plan_bench: %s takes %u dims\n", argv[1], m->n_dims);
    return 2;
  }
  uint32_t ctas = (uint32_t)strtoul(argv[2], NULL, 10);
  int64_t dims[ETL_MAX_RANK];
  char binding[256] = "";
  size_t len = 0;
  for (uint32_t d = 0; d < m->n_dims && d < ETL_MAX_RANK; ++d) {
    dims[d] = strtoll(argv[3 + d], NULL, 10);
    len += (size_t)snprintf(binding + len, sizeof binding - len, "%s%s=%lld", d ? "," : "",
                            m->dims[d].name, (long long)dims[d]);
    if (len >= sizeof binding)
      len = sizeof binding - 1;
  }
  etl_plan *slow = NULL, *fast;
  double ts = both ? time_build(m, dims, ctas, ETL_PLAN_ENUMERATE, &slow) : 0;
  double tf = time_build(m, dims, ctas, ETL_PLAN_FAST, &fast);
  if ((both && !slow) || !fast)
    return 1;
  char enumerate[32] = "-", speedup[32] = "-";
  if (both) {
    snprintf(enumerate, sizeof enumerate, "%.2f", ts);
    snprintf(speedup, sizeof speedup, "%.1fx", tf > 0 ? ts / tf : 0.0);
  }
  printf("%-18s %-28s %10llu %10llu %14s %10.2f %9s %5s\n", m->kernel_name, binding,
         (unsigned long long)fast->n_entries, (unsigned long long)fast->n_counters, enumerate, tf,
         speedup,
         !both              ? "-"
         : same(slow, fast) ? "yes"
                            : "NO");
  etl_plan_free_host(slow);
  etl_plan_free_host(fast);
  etl_artifact_free(&art);
  return 0;
}
