/*===- examples/softmax/softmax_host.c - Run softmax.etl and check it -----===
 *
 * Loads the softmax artifact once and runs it for several (B, N) bindings,
 * some not multiples of the tile sizes (N always a multiple of 4, the kernel's
 * `where` fact), comparing with a plain C softmax.
 * On a GPU each binding also runs on sim and the two must agree.
 *
 *   softmax_host softmax.etlb [--device auto|sim|cuda] [--profile FILE] [--shape B,N]...
 *===----------------------------------------------------------------------===*/
#include "../common/example_util.h"

static const char *usage =
    "usage: softmax_host ARTIFACT [--device auto|sim|cuda] [--profile FILE] [--shape B,N]...\n";

static double run_softmax(etlContext ctx, etlProgram prog, int64_t B, int64_t N, const float *x,
                          float *out) {
  size_t n = (size_t)(B * N);
  void *dx = ex_upload(ctx, x, n);
  void *dy = ex_upload(ctx, NULL, n);
  int64_t shape[2] = {B, N};
  CHECK_ETL(etlBindDim(prog, "B", B));
  CHECK_ETL(etlBindDim(prog, "N", N));
  CHECK_ETL(etlBindTensor(prog, "x", dx, ETL_F32, 2, shape));
  CHECK_ETL(etlBindTensor(prog, "y", dy, ETL_F32, 2, shape));
  double ms = ex_run_timed(prog);
  ex_download(ctx, out, dy, n);
  CHECK_ETL(etlFree(ctx, dx));
  CHECK_ETL(etlFree(ctx, dy));
  return ms;
}

static void reference(int64_t B, int64_t N, const float *x, float *y) {
  for (int64_t b = 0; b < B; ++b) {
    const float *row = x + b * N;
    double m = -INFINITY, l = 0;
    for (int64_t n = 0; n < N; ++n)
      m = row[n] > m ? row[n] : m;
    for (int64_t n = 0; n < N; ++n)
      l += exp(row[n] - m);
    for (int64_t n = 0; n < N; ++n)
      y[b * N + n] = (float)(exp(row[n] - m) / l);
  }
}

int main(int argc, char **argv) {
  ex_args args = ex_parse_args(argc, argv, usage);
  static const int64_t defaults[][2] = {{4, 128}, {13, 1000}, {1, 4}, {32, 260}, {7, 3000}};
  ex_session ses = ex_open(&args, defaults, (int)(sizeof defaults / sizeof defaults[0]));
  etlContext ctx = ses.ctx, sim = ses.sim;
  etlProgram prog = ses.prog, sim_prog = ses.sim_prog;
  int gpu = sim != NULL;

  int failures = 0;
  uint64_t seed = 0x2545F4914F6CDD1Dull;
  for (int s = 0; s < args.nshapes; ++s) {
    int64_t B = args.shapes[s][0], N = args.shapes[s][1];
    size_t n = (size_t)(B * N);
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    float *ref = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; ++i)
      x[i] = 4.0f * ex_random(&seed);
    reference(B, N, x, ref);
    double ms = run_softmax(ctx, prog, B, N, x, y);
    double err = ex_max_error(y, ref, n);
    int ok = err < 1e-5;
    printf("softmax B=%-4lld N=%-5lld on %s: max error %.2e, etlRun %.2f ms %s\n", (long long)B,
           (long long)N, etlContextDeviceName(ctx), err, ms, ok ? "OK" : "FAIL");
    if (gpu) {
      float *ys = malloc(sizeof(float) * n);
      run_softmax(sim, sim_prog, B, N, x, ys);
      double d = ex_max_error(y, ys, n);
      ok &= ex_report_gpu_vs_sim(d, 1e-5);
      free(ys);
    }
    failures += !ok;
    free(x);
    free(y);
    free(ref);
  }
  printf("softmax: %d of %d bindings correct on %s, from one artifact\n", args.nshapes - failures,
         args.nshapes, etlContextDeviceName(ctx));
  ex_close(&ses);
  return failures ? 1 : 0;
}
