/*===- examples/gemm/gemm_host.c - Run gemm.etl and check it --------------===
 *
 * Loads the gemm artifact once and runs C = A @ B (bf16 A [M, K] and B [K, N],
 * f32 C) for several (M, N, K) bindings, most not multiples of the 128 x 128
 * x 32 tile (300 x 260 x 48: 3 x 3 ragged tasks), comparing with a plain C
 * reference in double. Random data are bf16 values in [-1, 1) (tolerance
 * K * 2^-22 * sum |a||b| + tiny); the bindings with K = 48 also run on small
 * integers in [-3, 3], whose sums are exact in f32 in any order, and must
 * then match bit for bit. On a GPU each binding also runs on sim and the two
 * must agree. gemm_tf32.etl (f32 A and B, `precision = tf32`; the dtype of
 * `a` in the artifact says which) runs on the same data as f32, the
 * reference multiplying the operands rounded as cvt.rna.tf32 does (their
 * products are exact in f32, so the same tolerance holds).
 *
 *   gemm_host gemm.etlb|gemm_tf32.etlb [--device auto|sim|cuda] [--profile FILE] [--shape M,N,K]...
 *===----------------------------------------------------------------------===*/
#include "../common/example_util.h"

static const char *usage =
    "usage: gemm_host ARTIFACT|TF32_ARTIFACT [--device auto|sim|cuda] [--profile FILE] [--shape M,N,K]...\n";

/* bf16 bits of `f` (round to nearest even; finite inputs). */
static uint16_t bf16_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

static float bf16_value(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* cvt.rna.tf32.f32: 10 mantissa bits, to nearest, ties away from zero
 * (finite inputs). */
static float tf32_value(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  x = (x + 0x1000u) & 0xFFFFE000u;
  memcpy(&f, &x, 4);
  return f;
}

/* Runs one binding on `ctx`; leaves C in `out`. A and B are bf16 bits, or
 * f32 values when `f32` (the tf32 artifact). */
static double run_gemm(etlContext ctx, etlProgram prog, int64_t M, int64_t N, int64_t K,
                       const void *a, const void *b, int f32, float *out) {
  size_t eb = f32 ? sizeof(float) : sizeof(uint16_t);
  etlDType dt = f32 ? ETL_F32 : ETL_BF16;
  void *da = ex_upload_bytes(ctx, a, eb * (size_t)(M * K));
  void *db = ex_upload_bytes(ctx, b, eb * (size_t)(K * N));
  void *dc = ex_upload(ctx, NULL, (size_t)(M * N));
  int64_t as[2] = {M, K}, bs[2] = {K, N}, cs[2] = {M, N};
  CHECK_ETL(etlBindDim(prog, "M", M));
  CHECK_ETL(etlBindDim(prog, "N", N));
  CHECK_ETL(etlBindDim(prog, "K", K));
  CHECK_ETL(etlBindTensor(prog, "a", da, dt, 2, as));
  CHECK_ETL(etlBindTensor(prog, "b", db, dt, 2, bs));
  CHECK_ETL(etlBindTensor(prog, "c", dc, ETL_F32, 2, cs));
  double ms = ex_run_timed(prog);
  ex_download(ctx, out, dc, (size_t)(M * N));
  CHECK_ETL(etlFree(ctx, da));
  CHECK_ETL(etlFree(ctx, db));
  CHECK_ETL(etlFree(ctx, dc));
  return ms;
}

/* One binding with random (`exact` = 0) or small-integer data; 1 if correct. */
static int check(ex_session *ses, int64_t M, int64_t N, int64_t K, int exact, uint64_t *seed) {
  size_t na = (size_t)(M * K), nb = (size_t)(K * N), nc = (size_t)(M * N);
  const int f32 = ex_tensor_dtype(ses->prog, "a") == ETL_F32;
  uint16_t *a = malloc(sizeof(uint16_t) * na), *b = malloc(sizeof(uint16_t) * nb);
  float *af = malloc(sizeof(float) * na), *bf = malloc(sizeof(float) * nb);
  float *c = malloc(sizeof(float) * nc), *ref = malloc(sizeof(float) * nc);
  double *bound = malloc(sizeof(double) * nc);
  for (size_t i = 0; i < na; ++i) {
    af[i] = exact ? (float)((int)((ex_random(seed) + 1.0f) * 3.5f) - 3) : ex_random(seed);
    a[i] = bf16_bits(af[i]);
  }
  for (size_t i = 0; i < nb; ++i) {
    bf[i] = exact ? (float)((int)((ex_random(seed) + 1.0f) * 3.5f) - 3) : ex_random(seed);
    b[i] = bf16_bits(bf[i]);
  }
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        double p = f32 ? (double)tf32_value(af[m * K + k]) * tf32_value(bf[k * N + n])
                       : (double)bf16_value(a[m * K + k]) * bf16_value(b[k * N + n]);
        acc += p;
        mag += fabs(p);
      }
      ref[m * N + n] = (float)acc;
      bound[m * N + n] = (double)K * 0x1p-22 * mag + 1e-30;
    }
  const void *pa = f32 ? (const void *)af : a, *pb = f32 ? (const void *)bf : b;
  double ms = run_gemm(ses->ctx, ses->prog, M, N, K, pa, pb, f32, c);
  int ok = 1;
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < nc; ++i) {
    double e = fabs((double)c[i] - (double)ref[i]);
    int fine = exact ? memcmp(&c[i], &ref[i], 4) == 0 : e <= bound[i];
    if (!fine && bad++ == 0)
      fprintf(stderr, "gemm: C[%zu] = %.9g, expected %.9g\n", i, c[i], ref[i]);
    if (e > worst)
      worst = e;
  }
  ok = bad == 0;
  printf("gemm M=%-5lld N=%-5lld K=%-5lld %s on %s: max error %.2e, %zu wrong, etlRun %.2f ms %s\n",
         (long long)M, (long long)N, (long long)K,
         exact ? "integers, bit for bit" : f32 ? "random f32 (tf32)" : "random bf16",
         etlContextDeviceName(ses->ctx), worst, bad, ms, ok ? "OK" : "FAIL");
  if (ses->sim) {
    float *s = malloc(sizeof(float) * nc);
    run_gemm(ses->sim, ses->sim_prog, M, N, K, pa, pb, f32, s);
    double d = ex_max_error(c, s, nc);
    ok &= ex_report_gpu_vs_sim(d, exact ? 1e-30 : 1e-3);
    free(s);
  }
  free(a);
  free(b);
  free(af);
  free(bf);
  free(c);
  free(ref);
  free(bound);
  return ok;
}

int main(int argc, char **argv) {
  ex_args args = ex_parse_args(argc, argv, usage);
  static const int64_t defaults[][3] = {
      {64, 64, 32}, {100, 72, 48}, {1, 1, 1}, {130, 65, 97}, {300, 260, 48}};
  ex_session ses =
      ex_open_n(&args, &defaults[0][0], 3, (int)(sizeof defaults / sizeof defaults[0]));
  int failures = 0, runs = 0;
  uint64_t seed = 0x2545F4914F6CDD1Dull;
  for (int s = 0; s < args.nshapes; ++s) {
    int64_t M = args.shapes[s][0], N = args.shapes[s][1], K = args.shapes[s][2];
    if (M <= 0 || N <= 0 || K <= 0) {
      fprintf(stderr, "gemm: --shape needs M,N,K > 0\n%s", usage);
      return 2;
    }
    failures += !check(&ses, M, N, K, 0, &seed);
    runs++;
    if (K == 48) { /* the integer binding: exact sums, bit for bit */
      failures += !check(&ses, M, N, K, 1, &seed);
      runs++;
    }
  }
  printf("gemm: %d of %d runs correct on %s, from one artifact\n", runs - failures, runs,
         etlContextDeviceName(ses.ctx));
  ex_close(&ses);
  return failures ? 1 : 0;
}
