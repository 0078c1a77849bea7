/*===- examples/mlp/mlp_host.c - Run mlp.etl and check it ------------------===
 *
 * The gated MLP block of a transformer layer,
 *   out = (silu(x @ wg) * (x @ wu)) @ wd      x: [T, D], wg/wu: [D, F], wd: [F, D]
 * from one artifact for several (T, D, F) bindings, one of them not a
 * multiple of the tile sizes, against a plain C reference in double.
 *
 * It runs mlp.etl (f32; max error 1e-4) and mlp_bf16.etl (bf16 x and
 * weights, f32 out; the dtype of `x` in the artifact says which). For bf16
 * the inputs are rounded to bf16 before the reference sees them, and the
 * kernel rounds the hidden activation h to bf16 (2^-9 relative) before the
 * down projection, so element (t, d) must be within
 * 2^-8 * sum_f |h[t, f] wd[f, d]| + 1e-4 of the reference.
 *
 *   mlp_host mlp.etlb|mlp_bf16.etlb [--device auto|sim|cuda] [--profile FILE] [--shape T,D,F]...
 *===----------------------------------------------------------------------===*/
#include "../common/example_util.h"

static const char *usage =
    "usage: mlp_host ARTIFACT [--device auto|sim|cuda] [--profile FILE] [--shape T,D,F]...\n";

static void reference(int64_t T, int64_t D, int64_t F, const float *x, const float *wg,
                      const float *wu, const float *wd, float *out, double *mag) {
  double *h = malloc(sizeof(double) * (size_t)F);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t f = 0; f < F; ++f) {
      double g = 0, u = 0;
      for (int64_t d = 0; d < D; ++d) {
        g += (double)x[t * D + d] * wg[d * F + f];
        u += (double)x[t * D + d] * wu[d * F + f];
      }
      h[f] = g / (1.0 + exp(-g)) * u;
    }
    for (int64_t d = 0; d < D; ++d) {
      double acc = 0, m = 0;
      for (int64_t f = 0; f < F; ++f) {
        acc += h[f] * wd[f * D + d];
        m += fabs(h[f] * wd[f * D + d]);
      }
      out[t * D + d] = (float)acc;
      mag[t * D + d] = m;
    }
  }
  free(h);
}

/* Runs one binding; x and the weights go in as `dt` (f32 or bf16). */
static double run_mlp(etlContext ctx, etlProgram prog, etlDType dt, int64_t T, int64_t D, int64_t F,
                      const float *x, const float *wg, const float *wu, const float *wd,
                      float *out) {
  void *dx = ex_upload_as(ctx, x, (size_t)(T * D), dt);
  void *dg = ex_upload_as(ctx, wg, (size_t)(D * F), dt);
  void *du = ex_upload_as(ctx, wu, (size_t)(D * F), dt);
  void *dd = ex_upload_as(ctx, wd, (size_t)(F * D), dt);
  void *dout = ex_upload(ctx, NULL, (size_t)(T * D));
  int64_t sx[2] = {T, D}, sw[2] = {D, F}, sd[2] = {F, D};
  CHECK_ETL(etlBindDim(prog, "T", T));
  CHECK_ETL(etlBindDim(prog, "D", D));
  CHECK_ETL(etlBindDim(prog, "F", F));
  CHECK_ETL(etlBindTensor(prog, "x", dx, dt, 2, sx));
  CHECK_ETL(etlBindTensor(prog, "wg", dg, dt, 2, sw));
  CHECK_ETL(etlBindTensor(prog, "wu", du, dt, 2, sw));
  CHECK_ETL(etlBindTensor(prog, "wd", dd, dt, 2, sd));
  CHECK_ETL(etlBindTensor(prog, "out", dout, ETL_F32, 2, sx));
  double ms = ex_run_timed(prog);
  ex_download(ctx, out, dout, (size_t)(T * D));
  void *bufs[] = {dx, dg, du, dd, dout};
  for (int i = 0; i < 5; ++i)
    CHECK_ETL(etlFree(ctx, bufs[i]));
  return ms;
}

int main(int argc, char **argv) {
  ex_args args = ex_parse_args(argc, argv, usage);
  static const int64_t defaults[] = {32, 64, 128, 7, 100, 68, 1, 32, 32, 48, 96, 160};
  ex_session ses = ex_open_n(&args, defaults, 3, 4);
  etlContext ctx = ses.ctx, sim = ses.sim;
  etlProgram prog = ses.prog, sim_prog = ses.sim_prog;
  int gpu = sim != NULL, failures = 0;
  etlDType dt = ex_tensor_dtype(prog, "x");
  int bf = dt == ETL_BF16;
  uint64_t seed = 0x1234567887654321ull;
  for (int s = 0; s < args.nshapes; ++s) {
    int64_t T = args.shapes[s][0], D = args.shapes[s][1], F = args.shapes[s][2];
    size_t nx = (size_t)(T * D), nw = (size_t)(D * F);
    float *x = malloc(sizeof(float) * nx), *out = malloc(sizeof(float) * nx);
    float *ref = malloc(sizeof(float) * nx);
    double *mag = malloc(sizeof(double) * nx);
    float *wg = malloc(sizeof(float) * nw), *wu = malloc(sizeof(float) * nw);
    float *wd = malloc(sizeof(float) * nw);
    for (size_t i = 0; i < nx; ++i)
      x[i] = ex_random(&seed);
    for (size_t i = 0; i < nw; ++i) {
      wg[i] = ex_random(&seed) / 4.0f;
      wu[i] = ex_random(&seed) / 4.0f;
      wd[i] = ex_random(&seed) / 4.0f;
    }
    if (bf) { /* what the bf16 program sees */
      ex_round_bf16(x, nx);
      ex_round_bf16(wg, nw);
      ex_round_bf16(wu, nw);
      ex_round_bf16(wd, nw);
    }
    reference(T, D, F, x, wg, wu, wd, ref, mag);
    double ms = run_mlp(ctx, prog, dt, T, D, F, x, wg, wu, wd, out);
    double err = ex_max_error(out, ref, nx);
    int ok = err < 1e-4;
    if (bf) {
      size_t bad = 0;
      for (size_t i = 0; i < nx; ++i) {
        int fine = fabs((double)out[i] - (double)ref[i]) <= 0x1p-8 * mag[i] + 1e-4;
        if (!fine && bad++ == 0)
          fprintf(stderr, "mlp: out[%zu] = %.9g, expected %.9g (bound %.3g)\n", i, out[i], ref[i],
                  0x1p-8 * mag[i] + 1e-4);
      }
      ok = bad == 0;
    }
    printf("mlp%s T=%-4lld D=%-4lld F=%-4lld on %s: max error %.2e, etlRun %.2f ms %s\n",
           bf ? " bf16" : "", (long long)T, (long long)D, (long long)F, etlContextDeviceName(ctx),
           err, ms, ok ? "OK" : "FAIL");
    if (gpu) {
      float *os = malloc(sizeof(float) * nx);
      run_mlp(sim, sim_prog, dt, T, D, F, x, wg, wu, wd, os);
      double d = ex_max_error(out, os, nx);
      ok &= ex_report_gpu_vs_sim(d, bf ? 2e-2 : 1e-4);
      free(os);
    }
    failures += !ok;
    free(x);
    free(out);
    free(ref);
    free(mag);
    free(wg);
    free(wu);
    free(wd);
  }
  printf("mlp: %d of %d bindings correct on %s, from one artifact\n", args.nshapes - failures,
         args.nshapes, etlContextDeviceName(ctx));
  ex_close(&ses);
  return failures ? 1 : 0;
}
