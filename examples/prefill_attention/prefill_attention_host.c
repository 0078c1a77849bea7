/*===- examples/prefill_attention/prefill_attention_host.c - vs PyTorch ---===
 *
 * Runs causal GQA prefill attention and its output projection
 * (prefill_attention.etl) on the bindings that
 * tests/models/prefill_attention_ref.py wrote, one reference directory each,
 * all from one artifact, and compares ETL's attention output with PyTorch's
 * scaled_dot_product_attention(is_causal=True) and its projection y with
 * PyTorch's out @ wo.
 *
 * q, k, v and wo are regenerated here from the seeds the reference used
 * (examples/common/ref_check.h, ex_seeded): bf16-exact values, so both sides
 * compute with the same numbers.
 *
 * Tolerance of out: |etl - torch| <= 2^-7 * |torch| + 2^-7 * rms per
 * element, rms the larger of torch's whole out and its row of D values
 * (ex_check_close_rows). out is bf16 (2^-8 relative rounding, and
 * a value near a rounding boundary may round either way after f32 sums in
 * another order); ETL also rounds the probabilities to bf16 before P.V
 * (2^-9 relative per term, independent across keys: about 2^-10 of the
 * row's rms), and exp runs as ex2.approx on a GPU. The row's scale matters
 * for the first queries of a long sequence: with a handful of keys their
 * outputs (and those roundings) are several times the rms of the whole
 * output, which the thousands of keys of later rows make small (S = 1000,
 * query 6: 0.0011 off, 1.3 times a whole-output floor, on sim and on an
 * H100 alike). A wrong mask, a
 * missed KV tile or a bad rescale moves elements by far more.
 * y = out @ wo sums NKV * G * D products, and inherits out's differences
 * from PyTorch's: the probabilities' bf16 rounding (about 2^-10 of out's
 * rms per element, independent) and the 1-ulp output roundings it flips
 * (a third of the elements), which add up over the sum to about 2^-8.6 of
 * y's rms (measured in PyTorch by rounding p to bf16, S = 130: rms 0.0011
 * against y's 0.45, largest 0.016). So y's floor is atol = 2^-5 * rms(y)
 * (about 12 times that rms), rtol 2^-7 as for out; a head missed by o_proj
 * (a wait that let it start early) moves y by about rms(y) / sqrt(heads).
 *
 *   prefill_attention_host ARTIFACT REFDIR... [--device auto|sim|cuda]
 *                          [--profile FILE] [--race-check]
 *===----------------------------------------------------------------------===*/
#include "../common/example_util.h"
#include "../common/ref_check.h"
#include "../common/ref_host.h"

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

/* Downloads n bf16 values and compares them with ref (the banner's rule,
 * rtol 2^-7 and this atol, per rows of `row` values). */
static int check_bf16(etlContext ctx, const char *what, void *d, const float *ref, size_t n,
                      size_t row, double atol) {
  uint16_t *h = malloc(2 * n + 2);
  float *got = malloc(sizeof(float) * (n + 1));
  CHECK_ETL(etlMemcpyDtoH(ctx, h, d, 2 * n));
  for (size_t i = 0; i < n; ++i)
    got[i] = ex_bf16_to_f32(h[i]);
  int ok = ex_check_close_rows(what, got, ref, n, row, 1.0 / 128, atol);
  free(h);
  free(got);
  return ok;
}

static int run_one(etlContext ctx, etlProgram prog, const char *dir) {
  size_t n;
  int64_t shape[4];
  float *dims = load_ref(dir, "dims", &n, shape);
  if (n != 6) {
    fprintf(stderr, "%s/dims.npy: expected 6 values (S NKV G D HID SEED)\n", dir);
    exit(1);
  }
  int64_t S = (int64_t)dims[0], NKV = (int64_t)dims[1], G = (int64_t)dims[2], D = (int64_t)dims[3],
          HID = (int64_t)dims[4];
  uint32_t seed = (uint32_t)dims[5];
  uint32_t s_q = seed * 8 + 1, s_k = s_q + 1, s_v = s_q + 2, s_wo = s_q + 3;
  free(dims);
  size_t nq = (size_t)(S * NKV * G * D), nkv = (size_t)(S * NKV * D);
  size_t nwo = (size_t)(NKV * G * D * HID), ny = (size_t)(S * HID);
  float *ref = load_ref(dir, "out", &n, shape);
  if (n != nq) {
    fprintf(stderr, "%s/out.npy: expected %zu elements\n", dir, nq);
    exit(1);
  }
  float *ref_y = load_ref(dir, "y", &n, shape);
  if (n != ny) {
    fprintf(stderr, "%s/y.npy: expected %zu elements\n", dir, ny);
    exit(1);
  }

  void *dq = upload_seeded(ctx, s_q, nq, 1.0f / 64);
  void *dk = upload_seeded(ctx, s_k, nkv, 1.0f / 64);
  void *dv = upload_seeded(ctx, s_v, nkv, 1.0f / 128);
  void *dwo = upload_seeded(ctx, s_wo, nwo, 1.0f / 512);
  void *dout = NULL, *dy = NULL;
  CHECK_ETL(etlMalloc(ctx, 2 * nq + 1, &dout));
  CHECK_ETL(etlMalloc(ctx, 2 * ny + 1, &dy));
  int64_t sq[4] = {S, NKV, G, D}, skv[3] = {S, NKV, D}, swo[4] = {NKV, G, D, HID}, sy[2] = {S, HID};
  CHECK_ETL(etlBindDim(prog, "S", S));
  CHECK_ETL(etlBindDim(prog, "NKV", NKV));
  CHECK_ETL(etlBindDim(prog, "G", G));
  CHECK_ETL(etlBindDim(prog, "HID", HID));
  CHECK_ETL(etlBindTensor(prog, "q", dq, ETL_BF16, 4, sq));
  CHECK_ETL(etlBindTensor(prog, "k", dk, ETL_BF16, 3, skv));
  CHECK_ETL(etlBindTensor(prog, "v", dv, ETL_BF16, 3, skv));
  CHECK_ETL(etlBindTensor(prog, "out", dout, ETL_BF16, 4, sq));
  CHECK_ETL(etlBindTensor(prog, "wo", dwo, ETL_BF16, 4, swo));
  CHECK_ETL(etlBindTensor(prog, "y", dy, ETL_BF16, 2, sy));
  double ms = ex_run_timed(prog);
  printf("prefill_attention S=%lld NKV=%lld G=%lld D=%lld HID=%lld on %s: etlRun %.2f ms\n",
         (long long)S, (long long)NKV, (long long)G, (long long)D, (long long)HID,
         etlContextDeviceName(ctx), ms);
  int ok = check_bf16(ctx, "out vs PyTorch", dout, ref, nq, (size_t)D, 1.0 / 128);
  ok &= check_bf16(ctx, "y = out @ wo vs PyTorch", dy, ref_y, ny, ny, 1.0 / 32);
  void *bufs[] = {dq, dk, dv, dwo, dout, dy};
  for (int i = 0; i < 6; ++i)
    CHECK_ETL(etlFree(ctx, bufs[i]));
  free(ref);
  free(ref_y);
  return ok;
}

int main(int argc, char **argv) {
  return ex_ref_main(argc, argv, "prefill_attention", usage, run_one);
}
