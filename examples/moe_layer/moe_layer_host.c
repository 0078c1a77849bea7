/*===- examples/moe_layer/moe_layer_host.c - Run moe_layer.etl vs PyTorch ---===
 *
 * Runs the Qwen3-30B-A3B MoE block (moe_layer.etl) on the bindings that
 * tests/models/moe_layer_ref.py wrote, one reference directory each, all
 * from one artifact, and compares ETL's output with PyTorch's.
 *
 * Inputs and weights are regenerated here from the seeds the reference used
 * (examples/common/ref_check.h, ex_seeded): x, the router and the experts
 * the reference's routing picked. The other experts' weights are NaN (bf16
 * 0xFFFF), so a routing that differs from PyTorch's reads NaN and fails
 * loudly even where the missing expert's share would be small.
 *
 * Tolerance: |etl - torch| <= 2^-7 * |torch| + 2^-7 * rms(torch) per output
 * element (ex_check_close): the output is bf16 (2^-8 relative rounding
 * error, and a value near a rounding boundary may round either way after f32
 * sums in another order), and so is the SwiGLU activation the down
 * projection reads (one flipped rounding of an input changes a sum by far
 * less than its rms). A dropped expert or a wrong weight moves elements by
 * ~1/8 of the rms or more.
 *
 * H and F must be multiples of 8 (the kernel's `where` facts, which let
 * every bf16 row move 128 bits at a time); the host refuses other bindings.
 *
 *   moe_layer_host ARTIFACT REFDIR... [--device auto|sim|cuda] [--profile FILE]
 *===----------------------------------------------------------------------===*/
#include "../common/example_util.h"
#include "../common/ref_check.h"
#include "../common/ref_host.h"

static const char *usage =
    "usage: moe_layer_host ARTIFACT REFDIR... [--device auto|sim|cuda] [--profile FILE]\n"
    "                      [--race-check]  (sim: fail on any access its events do not order)\n";

static float *load_ref(const char *dir, const char *name, size_t *n, int64_t shape[4]) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.npy", dir, name);
  return ex_npy_load(path, n, shape);
}

/* Uploads a seeded bf16 tensor of n elements. */
static void *upload_seeded(etlContext ctx, uint32_t seed, size_t n, float scale) {
  uint16_t *h = malloc(2 * n);
  ex_seeded_bf16(h, seed, 0, n, scale);
  void *d = ex_upload_bytes(ctx, h, 2 * n);
  free(h);
  return d;
}

/* An [E, R, C] expert weight: the used experts' slices seeded, the others NaN. */
static void *upload_experts(etlContext ctx, uint32_t seed, int64_t E, size_t per, float scale,
                            const int *used) {
  void *d = NULL;
  CHECK_ETL(etlMalloc(ctx, 2 * per * (size_t)E + 1, &d));
  uint16_t *h = malloc(2 * per);
  for (int64_t e = 0; e < E; ++e) {
    if (used[e])
      ex_seeded_bf16(h, seed, (uint64_t)e * per, per, scale);
    else if (e == 0 || used[e - 1])
      memset(h, 0xFF, 2 * per); /* bf16 NaN */
    CHECK_ETL(etlMemcpyHtoD(ctx, (char *)d + 2 * per * (size_t)e, h, 2 * per));
  }
  free(h);
  return d;
}

static int run_one(etlContext ctx, etlProgram prog, const char *dir) {
  size_t n;
  int64_t shape[4];
  float *dims = load_ref(dir, "dims", &n, shape);
  if (n != 6) {
    fprintf(stderr, "%s/dims.npy: expected 6 values (T H E F K SEED)\n", dir);
    exit(1);
  }
  int64_t T = (int64_t)dims[0], H = (int64_t)dims[1], E = (int64_t)dims[2], F = (int64_t)dims[3],
          K = (int64_t)dims[4];
  uint32_t seed = (uint32_t)dims[5];
  if (H % 8 != 0 || F % 8 != 0) { /* moe_layer.etl: where H % 8 == 0, F % 8 == 0 */
    fprintf(stderr,
            "%s: H = %lld and F = %lld must be multiples of 8 (moe_layer.etl's `where H %% 8 == 0, "
            "F %% 8 == 0`: bf16 rows 16-byte aligned)\n",
            dir, (long long)H, (long long)F);
    exit(2);
  }
  uint32_t s_x = seed * 8 + 1, s_wr = s_x + 1, s_wg = s_x + 2, s_wu = s_x + 3, s_wd = s_x + 4;
  free(dims);
  float *ids = load_ref(dir, "topk_ids", &n, shape);
  int *used = calloc((size_t)E, sizeof(int));
  int nused = 0;
  for (size_t i = 0; i < n; ++i) {
    int e = (int)ids[i];
    if (e < 0 || e >= E) {
      fprintf(stderr, "%s/topk_ids.npy: expert %d out of range\n", dir, e);
      exit(1);
    }
    nused += !used[e];
    used[e] = 1;
  }
  free(ids);
  float *ref = load_ref(dir, "out", &n, shape);
  if (n != (size_t)(T * H)) {
    fprintf(stderr, "%s/out.npy: expected %lld elements\n", dir, (long long)(T * H));
    exit(1);
  }

  void *dx = upload_seeded(ctx, s_x, (size_t)(T * H), 1.0f / 16);
  void *dwr = upload_seeded(ctx, s_wr, (size_t)(H * E), 1.0f / 16384);
  void *dwg = upload_experts(ctx, s_wg, E, (size_t)(H * F), 1.0f / 4096, used);
  void *dwu = upload_experts(ctx, s_wu, E, (size_t)(H * F), 1.0f / 4096, used);
  void *dwd = upload_experts(ctx, s_wd, E, (size_t)(F * H), 1.0f / 2048, used);
  void *dout = NULL;
  CHECK_ETL(etlMalloc(ctx, 2 * (size_t)(T * H) + 1, &dout));
  int64_t sx[2] = {T, H}, swr[2] = {H, E}, sgu[3] = {E, H, F}, sd[3] = {E, F, H};
  CHECK_ETL(etlBindDim(prog, "T", T));
  CHECK_ETL(etlBindDim(prog, "H", H));
  CHECK_ETL(etlBindDim(prog, "E", E));
  CHECK_ETL(etlBindDim(prog, "F", F));
  CHECK_ETL(etlBindDim(prog, "K", K));
  CHECK_ETL(etlBindTensor(prog, "x", dx, ETL_BF16, 2, sx));
  CHECK_ETL(etlBindTensor(prog, "wr", dwr, ETL_BF16, 2, swr));
  CHECK_ETL(etlBindTensor(prog, "wg", dwg, ETL_BF16, 3, sgu));
  CHECK_ETL(etlBindTensor(prog, "wu", dwu, ETL_BF16, 3, sgu));
  CHECK_ETL(etlBindTensor(prog, "wd", dwd, ETL_BF16, 3, sd));
  CHECK_ETL(etlBindTensor(prog, "out", dout, ETL_BF16, 2, sx));
  double ms = ex_run_timed(prog);
  uint16_t *ob = malloc(2 * (size_t)(T * H));
  CHECK_ETL(etlMemcpyDtoH(ctx, ob, dout, 2 * (size_t)(T * H)));
  float *got = malloc(sizeof(float) * (size_t)(T * H));
  for (int64_t i = 0; i < T * H; ++i)
    got[i] = ex_bf16_to_f32(ob[i]);
  printf("moe_layer T=%lld H=%lld E=%lld F=%lld K=%lld (%d experts used) on %s: etlRun %.2f ms\n",
         (long long)T, (long long)H, (long long)E, (long long)F, (long long)K, nused,
         etlContextDeviceName(ctx), ms);
  int ok = ex_check_close("out vs PyTorch", got, ref, (size_t)(T * H), 1.0 / 128, 1.0 / 128);
  void *bufs[] = {dx, dwr, dwg, dwu, dwd, dout};
  for (int i = 0; i < 6; ++i)
    CHECK_ETL(etlFree(ctx, bufs[i]));
  free(ob);
  free(got);
  free(ref);
  free(used);
  return ok;
}

int main(int argc, char **argv) { return ex_ref_main(argc, argv, "moe_layer", usage, run_one); }
