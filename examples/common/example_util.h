/*===- examples/common/example_util.h - Shared bits of the example hosts ---===
 *
 * What the example host programs share: checking runtime calls, a
 * deterministic random generator, uploading/downloading f32 tensors,
 * comparing with a reference, and the command line
 *   HOST ARTIFACT [--device auto|sim|cuda] [--shape A,B]...
 * On a GPU, every binding also runs on sim, and the two results are compared.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_EXAMPLE_UTIL_H
#define ETL_EXAMPLE_UTIL_H

#include <etl/etl.h>

#include "ref_check.h" /* ex_bf16, ex_bf16_to_f32 */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Fails the program with the runtime's message when a call fails. */
#define CHECK_ETL(call)                                                                            \
  do {                                                                                             \
    etlStatus st_ = (call);                                                                        \
    if (st_ != ETL_SUCCESS) {                                                                      \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,                     \
              etlGetErrorName(st_), etlGetLastErrorMessage());                                     \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static inline float ex_random(uint64_t *state) { /* xorshift64*, in [-1, 1) */
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return (float)((*state * 2685821657736338717ull) >> 40) / (float)(1ull << 23) - 1.0f;
}

/* Runs the bound program and returns its wall time in milliseconds. */
static inline double ex_run_timed(etlProgram prog) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK_ETL(etlRun(prog));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
}

static inline void *ex_upload(etlContext ctx, const float *host, size_t n) {
  void *d = NULL;
  CHECK_ETL(etlMalloc(ctx, n * sizeof(float) + 1, &d));
  if (host)
    CHECK_ETL(etlMemcpyHtoD(ctx, d, host, n * sizeof(float)));
  return d;
}

/* The dtype tensor parameter `name` is declared with in `prog` (one host
 * serves an f32 and a bf16 version of a program, e.g. mlp.etl and
 * mlp_bf16.etl); exits when the program has no such tensor. */
static inline etlDType ex_tensor_dtype(etlProgram prog, const char *name) {
  int n = 0;
  CHECK_ETL(etlProgramNumTensors(prog, &n));
  for (int i = 0; i < n; ++i) {
    etlTensorInfo info;
    CHECK_ETL(etlProgramTensorInfo(prog, i, &info));
    if (!strcmp(info.name, name))
      return info.dtype;
  }
  fprintf(stderr, "the program has no tensor parameter '%s'\n", name);
  exit(1);
}

/* Rounds the n values to bf16 in place (nearest even): the data a bf16
 * program sees, so that the reference computes on the same inputs. */
static inline void ex_round_bf16(float *v, size_t n) {
  for (size_t i = 0; i < n; ++i)
    v[i] = ex_bf16_to_f32(ex_bf16(v[i]));
}

/* n f32 values into a new device buffer as `dtype` (ETL_F32 or ETL_BF16,
 * rounded to nearest even). */
static inline void *ex_upload_as(etlContext ctx, const float *host, size_t n, etlDType dtype) {
  if (dtype != ETL_BF16)
    return ex_upload(ctx, host, n);
  uint16_t *h = calloc(n ? n : 1, sizeof(uint16_t));
  for (size_t i = 0; host && i < n; ++i)
    h[i] = ex_bf16(host[i]);
  void *d = NULL;
  CHECK_ETL(etlMalloc(ctx, n * sizeof(uint16_t) + 1, &d));
  CHECK_ETL(etlMemcpyHtoD(ctx, d, h, n * sizeof(uint16_t)));
  free(h);
  return d;
}

/* Any bytes (i32 page tables, lengths, ...) into a new device buffer. */
static inline void *ex_upload_bytes(etlContext ctx, const void *host, size_t bytes) {
  void *d = NULL;
  CHECK_ETL(etlMalloc(ctx, bytes + 1, &d));
  CHECK_ETL(etlMemcpyHtoD(ctx, d, host, bytes));
  return d;
}

static inline void ex_download(etlContext ctx, float *host, void *d, size_t n) {
  CHECK_ETL(etlMemcpyDtoH(ctx, host, d, n * sizeof(float)));
}

/* Largest |a - b| / (1 + |b|); NaN anywhere counts as infinite. */
static inline double ex_max_error(const float *a, const float *b, size_t n) {
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    double e = fabs((double)a[i] - (double)b[i]) / (1.0 + fabs((double)b[i]));
    if (e != e)
      return INFINITY;
    if (e > worst)
      worst = e;
  }
  return worst;
}

/* Prints how far the GPU's result is from sim's (`d`, a max error) and
 * returns whether it is within `tol`. */
static inline int ex_report_gpu_vs_sim(double d, double tol) {
  printf("  gpu vs sim: max difference %.2e %s\n", d, d < tol ? "OK" : "FAIL");
  return d < tol;
}

/* Command line: ARTIFACT [--device D] [--profile FILE] [--shape A,B[,C[,D]]]...
 * --profile FILE: the sim profile counters (etlProgramSetProfile) of the
 * last sim run go to FILE (JSON) and FILE.txt (a table). */
#define EX_MAX_SHAPE 4
typedef struct ex_args {
  const char *artifact;
  const char *device;
  const char *profile;
  int nshapes;
  int64_t shapes[16][EX_MAX_SHAPE];
} ex_args;

static inline ex_args ex_parse_args(int argc, char **argv, const char *usage) {
  ex_args a;
  memset(&a, 0, sizeof a);
  a.device = "auto";
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) {
      a.device = argv[++i];
    } else if (!strcmp(argv[i], "--profile") && i + 1 < argc) {
      a.profile = argv[++i];
    } else if (!strcmp(argv[i], "--shape") && i + 1 < argc && a.nshapes < 16) {
      long long v[EX_MAX_SHAPE] = {0, 0, 0, 0};
      if (sscanf(argv[++i], "%lld,%lld,%lld,%lld", &v[0], &v[1], &v[2], &v[3]) < 2) {
        fprintf(stderr, "bad --shape '%s': expected A,B[,C[,D]]\n%s", argv[i], usage);
        exit(2);
      }
      for (int k = 0; k < EX_MAX_SHAPE; ++k)
        a.shapes[a.nshapes][k] = v[k];
      a.nshapes++;
    } else if (!a.artifact && argv[i][0] != '-') {
      a.artifact = argv[i];
    } else {
      fprintf(stderr, "%s", usage);
      exit(2);
    }
  }
  if (!a.artifact) {
    fprintf(stderr, "%s", usage);
    exit(2);
  }
  return a;
}

/* The program loaded on the chosen device and, on a GPU, also on sim (to
 * compare with): `sim`/`sim_prog` are NULL when the device is already sim. */
typedef struct ex_session {
  etlContext ctx, sim;
  etlProgram prog, sim_prog;
} ex_session;

/* Opens the session for `a`, and fills in the default shapes (`ndefaults`
 * rows of `width` values, row-major) if none were given on the command line. */
static inline ex_session ex_open_n(ex_args *a, const int64_t *defaults, int width, int ndefaults) {
  ex_session s = {NULL, NULL, NULL, NULL};
  if (a->nshapes == 0) {
    a->nshapes = ndefaults;
    for (int i = 0; i < ndefaults; ++i)
      for (int k = 0; k < EX_MAX_SHAPE; ++k)
        a->shapes[i][k] = k < width ? defaults[i * width + k] : 0;
  }
  CHECK_ETL(etlContextCreate(&s.ctx, a->device, NULL));
  if (!etlContextIsGpu(s.ctx) && strcmp(a->device, "sim") != 0)
    printf("no GPU used, so no GPU-vs-sim comparison: %s\n", etlGetLastErrorMessage());
  CHECK_ETL(etlProgramLoadFile(s.ctx, a->artifact, &s.prog));
  if (etlContextIsGpu(s.ctx)) {
    CHECK_ETL(etlContextCreate(&s.sim, "sim", NULL));
    CHECK_ETL(etlProgramLoadFile(s.sim, a->artifact, &s.sim_prog));
  }
  if (a->profile)
    CHECK_ETL(etlProgramSetProfile(s.sim_prog ? s.sim_prog : s.prog, a->profile));
  return s;
}

/* ex_open_n for two-value shapes (A,B). */
static inline ex_session ex_open(ex_args *a, const int64_t (*defaults)[2], int ndefaults) {
  return ex_open_n(a, &defaults[0][0], 2, ndefaults);
}

static inline void ex_close(ex_session *s) {
  if (s->sim_prog)
    etlProgramDestroy(s->sim_prog);
  if (s->sim)
    etlContextDestroy(s->sim);
  etlProgramDestroy(s->prog);
  etlContextDestroy(s->ctx);
}

#endif
