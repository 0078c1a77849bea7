/*===- examples/gemv/gemv_host.c - Run gemv.etl and check it --------------===
 *
 * Loads the gemv artifact once and runs it for several (N, K) bindings, some
 * not multiples of the tiles (K always a multiple of 8, the kernel's `where`
 * fact), comparing y16 = W16 x (f16 weights) and y32 = W32 x (f32 weights)
 * with a plain C reference in double. The f16 weights are multiples of 1/64
 * in [-1, 1), exact in half precision, so both products have the same
 * reference. On a GPU each binding also runs on sim
 * and the two must agree. y starts at zero in every run, so the same host
 * serves examples/gemv_atomic (which adds into y; its host includes this
 * file with GEMV_NAME "gemv_atomic").
 *
 *   gemv_host gemv.etlb [--device auto|sim|cuda] [--profile FILE] [--shape N,K]...
 *===----------------------------------------------------------------------===*/
#include "../common/example_util.h"

#ifndef GEMV_NAME
#define GEMV_NAME "gemv"
#endif

static const char *usage =
    "usage: " GEMV_NAME "_host ARTIFACT [--device auto|sim|cuda] [--profile FILE] "
    "[--shape N,K]...\n";

/* IEEE half bits of `f`, which must be 0 or k/64 with |k| < 64 (exact). */
static uint16_t half_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  if ((x & 0x7fffffffu) == 0)
    return (uint16_t)sign;
  int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
  return (uint16_t)(sign | (uint32_t)exp << 10 | ((x >> 13) & 0x3ffu));
}

/* Runs one binding on `ctx`; leaves y16 and y32 in `o16`, `o32`. */
static double run_gemv(etlContext ctx, etlProgram prog, int64_t N, int64_t K, const uint16_t *w16,
                       const float *w32, const float *x, float *o16, float *o32) {
  void *dw16 = ex_upload_bytes(ctx, w16, sizeof(uint16_t) * (size_t)(N * K));
  void *dw32 = ex_upload(ctx, w32, (size_t)(N * K));
  void *dx = ex_upload(ctx, x, (size_t)K);
  float *zero = calloc((size_t)N, sizeof(float)); /* gemv_atomic adds into y */
  void *dy16 = ex_upload(ctx, zero, (size_t)N), *dy32 = ex_upload(ctx, zero, (size_t)N);
  free(zero);
  int64_t ws[2] = {N, K}, xs[1] = {K}, ys[1] = {N};
  CHECK_ETL(etlBindDim(prog, "N", N));
  CHECK_ETL(etlBindDim(prog, "K", K));
  CHECK_ETL(etlBindTensor(prog, "w16", dw16, ETL_F16, 2, ws));
  CHECK_ETL(etlBindTensor(prog, "w32", dw32, ETL_F32, 2, ws));
  CHECK_ETL(etlBindTensor(prog, "x", dx, ETL_F32, 1, xs));
  CHECK_ETL(etlBindTensor(prog, "y16", dy16, ETL_F32, 1, ys));
  CHECK_ETL(etlBindTensor(prog, "y32", dy32, ETL_F32, 1, ys));
  double ms = ex_run_timed(prog);
  ex_download(ctx, o16, dy16, (size_t)N);
  ex_download(ctx, o32, dy32, (size_t)N);
  void *bufs[] = {dw16, dw32, dx, dy16, dy32};
  for (int i = 0; i < 5; ++i)
    CHECK_ETL(etlFree(ctx, bufs[i]));
  return ms;
}

int main(int argc, char **argv) {
  ex_args args = ex_parse_args(argc, argv, usage);
  static const int64_t defaults[][2] = {{64, 512}, {100, 296}, {1, 8}, {33, 1000}, {160, 2048}};
  ex_session ses = ex_open(&args, defaults, (int)(sizeof defaults / sizeof defaults[0]));
  etlContext ctx = ses.ctx, sim = ses.sim;
  int gpu = sim != NULL;

  int failures = 0;
  uint64_t seed = 0x2545F4914F6CDD1Dull;
  for (int s = 0; s < args.nshapes; ++s) {
    int64_t N = args.shapes[s][0], K = args.shapes[s][1];
    size_t nw = (size_t)(N * K);
    uint16_t *w16 = malloc(sizeof(uint16_t) * nw);
    float *w32 = malloc(sizeof(float) * nw), *x = malloc(sizeof(float) * (size_t)K);
    float *y16 = malloc(sizeof(float) * (size_t)N), *y32 = malloc(sizeof(float) * (size_t)N);
    float *ref = malloc(sizeof(float) * (size_t)N);
    for (size_t i = 0; i < nw; ++i) {
      w32[i] = floorf(ex_random(&seed) * 64.0f) / 64.0f; /* k/64, exact in f16 */
      w16[i] = half_bits(w32[i]);
    }
    for (int64_t k = 0; k < K; ++k)
      x[k] = ex_random(&seed);
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += (double)w32[n * K + k] * x[k];
      ref[n] = (float)acc;
    }
    double ms = run_gemv(ctx, ses.prog, N, K, w16, w32, x, y16, y32);
    double e16 = ex_max_error(y16, ref, (size_t)N), e32 = ex_max_error(y32, ref, (size_t)N);
    double tol = 1e-5 * (double)K + 1e-5; /* f32 sums of K products of magnitude < 1 */
    int ok = e16 < tol && e32 < tol;
    printf(GEMV_NAME " N=%-5lld K=%-5lld on %s: max error f16 %.2e, f32 %.2e, etlRun %.2f ms %s\n",
           (long long)N, (long long)K, etlContextDeviceName(ctx), e16, e32, ms, ok ? "OK" : "FAIL");
    if (gpu) {
      float *s16 = malloc(sizeof(float) * (size_t)N), *s32 = malloc(sizeof(float) * (size_t)N);
      run_gemv(sim, ses.sim_prog, N, K, w16, w32, x, s16, s32);
      double d = ex_max_error(y16, s16, (size_t)N);
      double d32 = ex_max_error(y32, s32, (size_t)N);
      ok &= ex_report_gpu_vs_sim(d > d32 ? d : d32, tol);
      free(s16);
      free(s32);
    }
    failures += !ok;
    free(w16);
    free(w32);
    free(x);
    free(y16);
    free(y32);
    free(ref);
  }
  printf(GEMV_NAME ": %d of %d bindings correct on %s, from one artifact\n",
         args.nshapes - failures, args.nshapes, etlContextDeviceName(ctx));
  ex_close(&ses);
  return failures ? 1 : 0;
}
