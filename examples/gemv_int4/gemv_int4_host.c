/*===- examples/gemv_int4/gemv_int4_host.c - Run gemv_int4.etl, check it --===
 *
 * Loads the gemv_int4 artifact once and runs it for several (N, K) bindings
 * (K a multiple of the group size 128, N not always a multiple of the tile),
 * comparing y4 = dequant(Wq) x (u4 weights packed two per byte, low nibble
 * first, f16 scale and zero point per group of 128) and y16 = W16 x (the
 * dequantised weights in f16) with a plain C reference in double. Scales
 * are m/64 and zero points 8 or 7.5, so every dequantised weight is a
 * multiple of 1/128 in [-1, 1], exact in half precision: both products have
 * the same reference. On a GPU each binding also runs on sim and the two
 * must agree.
 *
 *   gemv_int4_host gemv_int4.etlb [--device auto|sim|cuda] [--profile FILE] [--shape N,K]...
 *===----------------------------------------------------------------------===*/
#include "../common/example_util.h"

static const char *usage = "usage: gemv_int4_host ARTIFACT [--device auto|sim|cuda] "
                           "[--profile FILE] [--shape N,K]...\n";

enum { G = 128 }; /* the quantisation group, as in gemv_int4.etl */

/* IEEE half bits of `f`, which must be 0 or a normal half value exactly. */
static uint16_t half_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  if ((x & 0x7fffffffu) == 0)
    return (uint16_t)sign;
  int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
  return (uint16_t)(sign | (uint32_t)exp << 10 | ((x >> 13) & 0x3ffu));
}

typedef struct gemv_data {
  uint8_t *wq;                    /* N * K / 2 bytes */
  uint16_t *scales, *zeros, *w16; /* f16 bits */
  float *x;
} gemv_data;

/* Runs one binding on `ctx`; leaves y4 and y16 in `o4`, `o16`. */
static double run_gemv(etlContext ctx, etlProgram prog, int64_t N, int64_t K, const gemv_data *g,
                       float *o4, float *o16) {
  size_t nw = (size_t)(N * K), ng = (size_t)(N * (K / G));
  void *dwq = ex_upload_bytes(ctx, g->wq, nw / 2);
  void *ds = ex_upload_bytes(ctx, g->scales, sizeof(uint16_t) * ng);
  void *dz = ex_upload_bytes(ctx, g->zeros, sizeof(uint16_t) * ng);
  void *dw16 = ex_upload_bytes(ctx, g->w16, sizeof(uint16_t) * nw);
  void *dx = ex_upload(ctx, g->x, (size_t)K);
  void *dy4 = ex_upload(ctx, NULL, (size_t)N), *dy16 = ex_upload(ctx, NULL, (size_t)N);
  int64_t ws[2] = {N, K}, gs[2] = {N, K / G}, xs[1] = {K}, ys[1] = {N};
  CHECK_ETL(etlBindDim(prog, "N", N));
  CHECK_ETL(etlBindDim(prog, "K", K));
  CHECK_ETL(etlBindTensor(prog, "wq", dwq, ETL_U4, 2, ws));
  CHECK_ETL(etlBindTensor(prog, "scales", ds, ETL_F16, 2, gs));
  CHECK_ETL(etlBindTensor(prog, "zeros", dz, ETL_F16, 2, gs));
  CHECK_ETL(etlBindTensor(prog, "w16", dw16, ETL_F16, 2, ws));
  CHECK_ETL(etlBindTensor(prog, "x", dx, ETL_F32, 1, xs));
  CHECK_ETL(etlBindTensor(prog, "y4", dy4, ETL_F32, 1, ys));
  CHECK_ETL(etlBindTensor(prog, "y16", dy16, ETL_F32, 1, ys));
  double ms = ex_run_timed(prog);
  ex_download(ctx, o4, dy4, (size_t)N);
  ex_download(ctx, o16, dy16, (size_t)N);
  void *bufs[] = {dwq, ds, dz, dw16, dx, dy4, dy16};
  for (int i = 0; i < 7; ++i)
    CHECK_ETL(etlFree(ctx, bufs[i]));
  return ms;
}

int main(int argc, char **argv) {
  ex_args args = ex_parse_args(argc, argv, usage);
  static const int64_t defaults[][2] = {{64, 512}, {100, 256}, {1, 128}, {33, 1024}, {96, 768}};
  ex_session ses = ex_open(&args, defaults, (int)(sizeof defaults / sizeof defaults[0]));
  etlContext ctx = ses.ctx, sim = ses.sim;
  int gpu = sim != NULL;

  int failures = 0;
  uint64_t seed = 0x2545F4914F6CDD1Dull;
  for (int s = 0; s < args.nshapes; ++s) {
    int64_t N = args.shapes[s][0], K = args.shapes[s][1];
    if (K % G != 0) {
      fprintf(stderr, "gemv_int4: K = %lld is not a multiple of %d\n", (long long)K, G);
      return 2;
    }
    size_t nw = (size_t)(N * K), ng = (size_t)(N * (K / G));
    gemv_data g = {calloc(nw / 2, 1), malloc(sizeof(uint16_t) * ng), malloc(sizeof(uint16_t) * ng),
                   malloc(sizeof(uint16_t) * nw), malloc(sizeof(float) * (size_t)K)};
    float *w = malloc(sizeof(float) * nw), *sc = malloc(sizeof(float) * ng);
    float *zp = malloc(sizeof(float) * ng);
    float *y4 = malloc(sizeof(float) * (size_t)N), *y16 = malloc(sizeof(float) * (size_t)N);
    float *ref = malloc(sizeof(float) * (size_t)N);
    for (size_t i = 0; i < ng; ++i) {
      sc[i] = (float)(1 + (int)((ex_random(&seed) + 1.0f) * 4.0f)) / 64.0f; /* 1/64 .. 8/64 */
      zp[i] = ex_random(&seed) < 0 ? 8.0f : 7.5f;
      g.scales[i] = half_bits(sc[i]);
      g.zeros[i] = half_bits(zp[i]);
    }
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) {
        size_t i = (size_t)(n * K + k);
        unsigned q = (unsigned)((ex_random(&seed) + 1.0f) * 8.0f) & 15u; /* 0 .. 15 */
        g.wq[i / 2] |= (uint8_t)(q << (4 * (i % 2))); /* element 2j: the low nibble of byte j */
        size_t gi = (size_t)(n * (K / G) + k / G);
        w[i] = ((float)q - zp[gi]) * sc[gi]; /* a multiple of 1/128, exact in f16 */
        g.w16[i] = half_bits(w[i]);
      }
    for (int64_t k = 0; k < K; ++k)
      g.x[k] = ex_random(&seed);
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += (double)w[n * K + k] * g.x[k];
      ref[n] = (float)acc;
    }
    double ms = run_gemv(ctx, ses.prog, N, K, &g, y4, y16);
    double e4 = ex_max_error(y4, ref, (size_t)N), e16 = ex_max_error(y16, ref, (size_t)N);
    double tol = 1e-5 * (double)K + 1e-5; /* f32 sums of K products of magnitude <= 1 */
    int ok = e4 < tol && e16 < tol;
    printf("gemv_int4 N=%-5lld K=%-5lld on %s: max error int4 %.2e, f16 %.2e, etlRun %.2f ms %s\n",
           (long long)N, (long long)K, etlContextDeviceName(ctx), e4, e16, ms, ok ? "OK" : "FAIL");
    if (gpu) {
      float *s4 = malloc(sizeof(float) * (size_t)N), *s16 = malloc(sizeof(float) * (size_t)N);
      run_gemv(sim, ses.sim_prog, N, K, &g, s4, s16);
      double d4 = ex_max_error(y4, s4, (size_t)N), d16 = ex_max_error(y16, s16, (size_t)N);
      ok &= ex_report_gpu_vs_sim(d4 > d16 ? d4 : d16, tol);
      free(s4);
      free(s16);
    }
    failures += !ok;
    free(g.wq);
    free(g.scales);
    free(g.zeros);
    free(g.w16);
    free(g.x);
    free(w);
    free(sc);
    free(zp);
    free(y4);
    free(y16);
    free(ref);
  }
  printf("gemv_int4: %d of %d bindings correct on %s, from one artifact\n", args.nshapes - failures,
         args.nshapes, etlContextDeviceName(ctx));
  ex_close(&ses);
  return failures ? 1 : 0;
}
