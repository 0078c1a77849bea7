/*===- examples/rowsum/rowsum_host.c - Run rowsum.etl and check it --------===
 *
 * Loads the rowsum artifact once and runs it for several (M, N) bindings,
 * some not multiples of the tile sizes (N always a multiple of 4, the kernel's
 * `where` fact), comparing y = rowsum(x) with a plain C reference. On a GPU
 * each binding also runs on sim and the two must agree.
 *
 *   rowsum_host rowsum.etlb [--device auto|sim|cuda] [--profile FILE] [--shape M,N]...
 *===----------------------------------------------------------------------===*/
#include "../common/example_util.h"

static const char *usage =
    "usage: rowsum_host ARTIFACT [--device auto|sim|cuda] [--profile FILE] [--shape M,N]...\n";

/* Runs one binding on `ctx`; leaves y in `out`. */
static double run_rowsum(etlContext ctx, etlProgram prog, int64_t M, int64_t N, const float *x,
                         float *out) {
  void *dx = ex_upload(ctx, x, (size_t)(M * N));
  void *dy = ex_upload(ctx, NULL, (size_t)M);
  int64_t xs[2] = {M, N}, ys[1] = {M};
  CHECK_ETL(etlBindDim(prog, "M", M));
  CHECK_ETL(etlBindDim(prog, "N", N));
  CHECK_ETL(etlBindTensor(prog, "x", dx, ETL_F32, 2, xs));
  CHECK_ETL(etlBindTensor(prog, "y", dy, ETL_F32, 1, ys));
  double ms = ex_run_timed(prog);
  ex_download(ctx, out, dy, (size_t)M);
  CHECK_ETL(etlFree(ctx, dx));
  CHECK_ETL(etlFree(ctx, dy));
  return ms;
}

int main(int argc, char **argv) {
  ex_args args = ex_parse_args(argc, argv, usage);
  static const int64_t defaults[][2] = {{16, 128}, {300, 1000}, {1, 4}, {77, 132}, {64, 4096}};
  ex_session ses = ex_open(&args, defaults, (int)(sizeof defaults / sizeof defaults[0]));
  etlContext ctx = ses.ctx, sim = ses.sim;
  etlProgram prog = ses.prog, sim_prog = ses.sim_prog;
  int gpu = sim != NULL;

  int failures = 0;
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  for (int s = 0; s < args.nshapes; ++s) {
    int64_t M = args.shapes[s][0], N = args.shapes[s][1];
    float *x = malloc(sizeof(float) * (size_t)(M * N));
    float *y = malloc(sizeof(float) * (size_t)M), *ref = malloc(sizeof(float) * (size_t)M);
    for (int64_t i = 0; i < M * N; ++i)
      x[i] = ex_random(&seed);
    for (int64_t m = 0; m < M; ++m) {
      double acc = 0;
      for (int64_t n = 0; n < N; ++n)
        acc += x[m * N + n];
      ref[m] = (float)acc;
    }
    double ms = run_rowsum(ctx, prog, M, N, x, y);
    double err = ex_max_error(y, ref, (size_t)M);
    int ok = err < 1e-4;
    printf("rowsum M=%-5lld N=%-5lld on %s: max error %.2e, etlRun %.2f ms %s\n", (long long)M,
           (long long)N, etlContextDeviceName(ctx), err, ms, ok ? "OK" : "FAIL");
    if (gpu) {
      float *ys = malloc(sizeof(float) * (size_t)M);
      run_rowsum(sim, sim_prog, M, N, x, ys);
      double d = ex_max_error(y, ys, (size_t)M);
      ok &= ex_report_gpu_vs_sim(d, 1e-4);
      free(ys);
    }
    failures += !ok;
    free(x);
    free(y);
    free(ref);
  }
  printf("rowsum: %d of %d bindings correct on %s, from one artifact\n", args.nshapes - failures,
         args.nshapes, etlContextDeviceName(ctx));
  ex_close(&ses);
  return failures ? 1 : 0;
}
