/*===- examples/prefill_attention/prefill_attention_host.c - vs PyTorch ---===
 *
 * Runs causal GQA prefill attention (prefill_attention.etl) on the bindings
 * that tests/models/prefill_attention_ref.py wrote, one reference directory
 * each, all from one artifact, and compares ETL's output with PyTorch's
 * scaled_dot_product_attention(is_causal=True).
 *
 * q, k and v are regenerated here from the seeds the reference used
 * (examples/common/ref_check.h, ex_seeded): bf16-exact values, so both sides
 * attend over the same numbers.
 *
 * Tolerance: |etl - torch| <= 2^-7 * |torch| + 2^-7 * rms(torch) per output
 * element (ex_check_close). The output is bf16 (2^-8 relative rounding, and
 * a value near a rounding boundary may round either way after f32 sums in
 * another order); ETL also rounds the probabilities to bf16 before P.V
 * (2^-9 relative per term, independent across keys: about 2^-10 of the
 * output's rms), and exp runs as ex2.approx on a GPU. A wrong mask, a
 * missed KV tile or a bad rescale moves elements by far more.
 *
 *   prefill_attention_host ARTIFACT REFDIR... [--device auto|sim|cuda]
 *                          [--profile FILE] [--race-check]
 *===----------------------------------------------------------------------===*/
#include "../common/example_util.h"
#include "../common/ref_check.h"

static const char *usage =
    "usage: prefill_attention_host ARTIFACT REFDIR... [--device auto|sim|cuda] [--profile FILE]\n"
    "                              [--race-check]  (sim: fail on any access its events do not "
    "order)\n";

static float *load_ref(const char *dir, const char *name, size_t *n, int64_t shape[4]) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.npy", dir, name);
  return ex_npy_load(path, n, shape);
}

/* Uploads a seeded bf16 tensor of n elements. */
static void *upload_seeded(etlContext ctx, uint32_t seed, size_t n, float scale) {
  uint16_t *h = malloc(2 * n + 2);
  ex_seeded_bf16(h, seed, 0, n, scale);
  void *d = ex_upload_bytes(ctx, h, 2 * n);
  free(h);
  return d;
}

static int run_one(etlContext ctx, etlProgram prog, const char *dir) {
  size_t n;
  int64_t shape[4];
  float *dims = load_ref(dir, "dims", &n, shape);
  if (n != 5) {
    fprintf(stderr, "%s/dims.npy: expected 5 values (S NKV G D SEED)\n", dir);
    exit(1);
  }
  int64_t S = (int64_t)dims[0], NKV = (int64_t)dims[1], G = (int64_t)dims[2], D = (int64_t)dims[3];
  uint32_t seed = (uint32_t)dims[4];
  uint32_t s_q = seed * 8 + 1, s_k = s_q + 1, s_v = s_q + 2;
  free(dims);
  size_t nq = (size_t)(S * NKV * G * D), nkv = (size_t)(S * NKV * D);
  float *ref = load_ref(dir, "out", &n, shape);
  if (n != nq) {
    fprintf(stderr, "%s/out.npy: expected %zu elements\n", dir, nq);
    exit(1);
  }

  void *dq = upload_seeded(ctx, s_q, nq, 1.0f / 64);
  void *dk = upload_seeded(ctx, s_k, nkv, 1.0f / 64);
  void *dv = upload_seeded(ctx, s_v, nkv, 1.0f / 128);
  void *dout = NULL;
  CHECK_ETL(etlMalloc(ctx, 2 * nq + 1, &dout));
  int64_t sq[4] = {S, NKV, G, D}, skv[3] = {S, NKV, D};
  CHECK_ETL(etlBindDim(prog, "S", S));
  CHECK_ETL(etlBindDim(prog, "NKV", NKV));
  CHECK_ETL(etlBindDim(prog, "G", G));
  CHECK_ETL(etlBindTensor(prog, "q", dq, ETL_BF16, 4, sq));
  CHECK_ETL(etlBindTensor(prog, "k", dk, ETL_BF16, 3, skv));
  CHECK_ETL(etlBindTensor(prog, "v", dv, ETL_BF16, 3, skv));
  CHECK_ETL(etlBindTensor(prog, "out", dout, ETL_BF16, 4, sq));
  double ms = ex_run_timed(prog);
  uint16_t *ob = malloc(2 * nq + 2);
  CHECK_ETL(etlMemcpyDtoH(ctx, ob, dout, 2 * nq));
  float *got = malloc(sizeof(float) * (nq + 1));
  for (size_t i = 0; i < nq; ++i)
    got[i] = ex_bf16_to_f32(ob[i]);
  printf("prefill_attention S=%lld NKV=%lld G=%lld D=%lld on %s: etlRun %.2f ms\n", (long long)S,
         (long long)NKV, (long long)G, (long long)D, etlContextDeviceName(ctx), ms);
  int ok = ex_check_close("out vs PyTorch", got, ref, nq, 1.0 / 128, 1.0 / 128);
  void *bufs[] = {dq, dk, dv, dout};
  for (int i = 0; i < 4; ++i)
    CHECK_ETL(etlFree(ctx, bufs[i]));
  free(ob);
  free(got);
  free(ref);
  return ok;
}

int main(int argc, char **argv) {
  const char *artifact = NULL, *device = "auto", *profile = NULL;
  const char *dirs[64];
  int ndirs = 0, race_check = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc)
      device = argv[++i];
    else if (!strcmp(argv[i], "--profile") && i + 1 < argc)
      profile = argv[++i];
    else if (!strcmp(argv[i], "--race-check"))
      race_check = 1;
    else if (argv[i][0] != '-' && !artifact)
      artifact = argv[i];
    else if (argv[i][0] != '-' && ndirs < 64)
      dirs[ndirs++] = argv[i];
    else {
      fprintf(stderr, "%s", usage);
      return 2;
    }
  }
  if (!artifact || ndirs == 0) {
    fprintf(stderr, "%s", usage);
    return 2;
  }
  etlContext ctx;
  etlProgram prog;
  CHECK_ETL(etlContextCreate(&ctx, device, NULL));
  CHECK_ETL(etlProgramLoadFile(ctx, artifact, &prog));
  if (profile)
    CHECK_ETL(etlProgramSetProfile(prog, profile));
  if (race_check)
    CHECK_ETL(etlProgramSetRaceCheck(prog, 1));
  int failures = 0;
  for (int i = 0; i < ndirs; ++i)
    failures += !run_one(ctx, prog, dirs[i]);
  printf("prefill_attention: %d of %d bindings match PyTorch on %s, from one artifact\n",
         ndirs - failures, ndirs, etlContextDeviceName(ctx));
  etlProgramDestroy(prog);
  etlContextDestroy(ctx);
  return failures ? 1 : 0;
}
