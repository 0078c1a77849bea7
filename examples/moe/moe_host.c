/*===- examples/moe/moe_host.c - Run moe.etl and check it ------------------===
 *
 * A mixture-of-experts layer with data-dependent work: the router decides
 * which expert tiles exist. For each binding (T tokens, hidden size H, E
 * experts, top-K) and routing (uniform, skewed: every token's first choice is
 * expert 0, and empty experts: the upper half of the experts is never
 * chosen), the host builds inputs, runs the one artifact, and compares with
 * a plain C reference of the same layer:
 *
 *   logits = x @ wr                       [T, E]
 *   (e_k, v_k) = top-K of each row        ties: lowest expert index first
 *   p_k = softmax over k of v_k
 *   out[t] = sum_k p_k * (x[t] @ w[e_k])  w: [E, H, H]
 *
 * x and wr are multiples of 1/8 so the router logits are exact in f32 and the
 * routing cannot differ from the reference by rounding.
 *
 * It runs moe.etl (f32) and moe_bf16.etl (bf16 x, wr and w; the dtype of `x`
 * in the artifact says which). For bf16 the inputs are rounded to bf16
 * before the reference sees them (the expert outputs stay f32, so the same
 * 1e-4 holds). A binding with K = 1 also runs on exact data (w multiples of
 * 1/8 as well): each expert row is a sum of multiples of 1/64, exact in f32
 * in any order, and its routing weight is exp(0) / exp(0) = 1, so the
 * output must match the reference bit for bit.
 *
 * H must be a multiple of 4 for moe.etl and of 8 for moe_bf16.etl (the
 * kernels' `where` facts, which let every row of x, w, y and out move 128
 * bits at a time); the host refuses other bindings.
 *
 *   moe_host moe.etlb|moe_bf16.etlb [--device auto|sim|cuda] [--profile FILE] [--shape T,H,E,K]...
 *===----------------------------------------------------------------------===*/
#include "../common/example_util.h"

static const char *usage =
    "usage: moe_host ARTIFACT [--device auto|sim|cuda] [--profile FILE] [--shape T,H,E,K]...\n";

enum routing { UNIFORM, SKEWED, EMPTY_EXPERTS };
static const char *routing_name[] = {"uniform", "skewed", "empty-experts"};

typedef struct layer {
  int64_t T, H, E, K;
  float *x, *wr, *w;
} layer;

/* Inputs for one binding. Column 0 of x is 1, so row 0 of wr is a per-expert
 * bias that steers the routing. */
static layer make_layer(int64_t T, int64_t H, int64_t E, int64_t K, enum routing r, int exact,
                        int bf, uint64_t *seed) {
  layer L = {T, H, E, K, NULL, NULL, NULL};
  L.x = malloc(sizeof(float) * (size_t)(T * H));
  L.wr = malloc(sizeof(float) * (size_t)(H * E));
  L.w = malloc(sizeof(float) * (size_t)(E * H * H));
  for (int64_t i = 0; i < T * H; ++i)
    L.x[i] = (i % H == 0) ? 1.0f : (float)(int)(8.0f * ex_random(seed)) / 8.0f;
  for (int64_t i = 0; i < H * E; ++i)
    L.wr[i] = (float)(int)(8.0f * ex_random(seed)) / 8.0f;
  for (int64_t e = 0; e < E; ++e) {
    float bias = 0.0f;
    if (r == SKEWED && e == 0)
      bias = 1000.0f;
    if (r == EMPTY_EXPERTS && e >= (E + 1) / 2)
      bias = -1000.0f;
    L.wr[e] += bias; /* row 0 */
  }
  for (int64_t i = 0; i < E * H * H; ++i)
    L.w[i] = exact ? (float)(int)(8.0f * ex_random(seed)) / 8.0f : ex_random(seed) / 4.0f;
  if (bf) { /* what the bf16 program sees (wr's biased row 0 rounds) */
    ex_round_bf16(L.x, (size_t)(T * H));
    ex_round_bf16(L.wr, (size_t)(H * E));
    ex_round_bf16(L.w, (size_t)(E * H * H));
  }
  return L;
}

static void free_layer(layer *L) {
  free(L->x);
  free(L->wr);
  free(L->w);
}

/* The plain C layer; also returns the number of tokens per expert. */
static void reference(const layer *L, float *out, int64_t *count) {
  int64_t T = L->T, H = L->H, E = L->E, K = L->K;
  float *logit = malloc(sizeof(float) * (size_t)E);
  int64_t *pick = malloc(sizeof(int64_t) * (size_t)K);
  double *v = malloc(sizeof(double) * (size_t)K);
  for (int64_t e = 0; e < E; ++e)
    count[e] = 0;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t e = 0; e < E; ++e) {
      float s = 0;
      for (int64_t h = 0; h < H; ++h)
        s += L->x[t * H + h] * L->wr[h * E + e];
      logit[e] = s;
    }
    for (int64_t k = 0; k < K; ++k) { /* top-K, lowest index on ties */
      int64_t best = -1;
      for (int64_t e = 0; e < E; ++e) {
        int taken = 0;
        for (int64_t j = 0; j < k; ++j)
          taken |= pick[j] == e;
        if (!taken && (best < 0 || logit[e] > logit[best]))
          best = e;
      }
      pick[k] = best;
      v[k] = logit[best];
      count[best]++;
    }
    double denom = 0;
    for (int64_t k = 0; k < K; ++k)
      denom += exp(v[k] - v[0]);
    for (int64_t n = 0; n < H; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        const float *we = L->w + pick[k] * H * H;
        double y = 0;
        for (int64_t h = 0; h < H; ++h)
          y += (double)L->x[t * H + h] * we[h * H + n];
        acc += exp(v[k] - v[0]) / denom * y;
      }
      out[t * H + n] = (float)acc;
    }
  }
  free(logit);
  free(pick);
  free(v);
}

static double run_moe(etlContext ctx, etlProgram prog, etlDType dt, const layer *L, float *out) {
  int64_t T = L->T, H = L->H, E = L->E;
  void *dx = ex_upload_as(ctx, L->x, (size_t)(T * H), dt);
  void *dwr = ex_upload_as(ctx, L->wr, (size_t)(H * E), dt);
  void *dw = ex_upload_as(ctx, L->w, (size_t)(E * H * H), dt);
  void *dout = ex_upload(ctx, NULL, (size_t)(T * H));
  int64_t sx[2] = {T, H}, swr[2] = {H, E}, sw[3] = {E, H, H};
  CHECK_ETL(etlBindDim(prog, "T", T));
  CHECK_ETL(etlBindDim(prog, "H", H));
  CHECK_ETL(etlBindDim(prog, "E", E));
  CHECK_ETL(etlBindDim(prog, "K", L->K));
  CHECK_ETL(etlBindTensor(prog, "x", dx, dt, 2, sx));
  CHECK_ETL(etlBindTensor(prog, "wr", dwr, dt, 2, swr));
  CHECK_ETL(etlBindTensor(prog, "w", dw, dt, 3, sw));
  CHECK_ETL(etlBindTensor(prog, "out", dout, ETL_F32, 2, sx));
  double ms = ex_run_timed(prog);
  ex_download(ctx, out, dout, (size_t)(T * H));
  CHECK_ETL(etlFree(ctx, dx));
  CHECK_ETL(etlFree(ctx, dwr));
  CHECK_ETL(etlFree(ctx, dw));
  CHECK_ETL(etlFree(ctx, dout));
  return ms;
}

int main(int argc, char **argv) {
  ex_args args = ex_parse_args(argc, argv, usage);
  /* T, H, E, K; each runs with every routing. One binding (T 37, H 72) is
   * not a multiple of any tile size; every H is a multiple of 8. */
  static const int64_t defaults[] = {64, 64, 8, 2, 37, 72, 5, 2, 50, 48, 4, 1};
  ex_session ses = ex_open_n(&args, defaults, 4, 3);
  etlContext ctx = ses.ctx, sim = ses.sim;
  etlProgram prog = ses.prog, sim_prog = ses.sim_prog;
  int gpu = sim != NULL;
  etlDType dt = ex_tensor_dtype(prog, "x");
  int bf = dt == ETL_BF16;

  int failures = 0, runs = 0;
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  for (int s = 0; s < args.nshapes; ++s) {
    int64_t T = args.shapes[s][0], H = args.shapes[s][1], E = args.shapes[s][2];
    int64_t K = args.shapes[s][3] ? args.shapes[s][3] : 1;
    int64_t align = bf ? 8 : 4; /* the kernel's `where H % 4 == 0` (f32), `% 8` (bf16) */
    if (H % align != 0) {
      fprintf(stderr,
              "moe%s: H = %lld is not a multiple of %lld (the kernel's `where H %% %lld == 0`)\n",
              bf ? "_bf16" : "", (long long)H, (long long)align, (long long)align);
      return 2;
    }
    /* every routing on random data; with K = 1 also exact data (the last run) */
    for (int run = UNIFORM; run <= EMPTY_EXPERTS + (K == 1); ++run) {
      int exact = run > EMPTY_EXPERTS;
      enum routing r = exact ? UNIFORM : (enum routing)run;
      layer L = make_layer(T, H, E, K, r, exact, bf, &seed);
      size_t n = (size_t)(T * H);
      float *out = malloc(sizeof(float) * n), *ref = malloc(sizeof(float) * n);
      int64_t *count = malloc(sizeof(int64_t) * (size_t)E);
      reference(&L, ref, count);
      int64_t empty = 0, most = 0;
      for (int64_t e = 0; e < E; ++e) {
        empty += count[e] == 0;
        most = count[e] > most ? count[e] : most;
      }
      double ms = run_moe(ctx, prog, dt, &L, out);
      double err = ex_max_error(out, ref, n);
      int ok = exact ? memcmp(out, ref, sizeof(float) * n) == 0 : err < 1e-4;
      printf("moe%s T=%-3lld H=%-3lld E=%-2lld K=%lld %-13s%s (busiest expert %3lld rows, %lld "
             "empty) on %s: max error %.2e, etlRun %.2f ms %s\n",
             bf ? " bf16" : "", (long long)T, (long long)H, (long long)E, (long long)K,
             routing_name[r], exact ? " exact" : "", (long long)most, (long long)empty,
             etlContextDeviceName(ctx), err, ms, ok ? "OK" : "FAIL");
      if (gpu) {
        float *os = malloc(sizeof(float) * n);
        run_moe(sim, sim_prog, dt, &L, os);
        double d = ex_max_error(out, os, n);
        ok &= ex_report_gpu_vs_sim(d, exact ? 1e-30 : 1e-4);
        free(os);
      }
      failures += !ok;
      runs++;
      free(out);
      free(ref);
      free(count);
      free_layer(&L);
    }
  }
  printf("moe: %d of %d runs correct on %s, from one artifact\n", runs - failures, runs,
         etlContextDeviceName(ctx));
  ex_close(&ses);
  return failures ? 1 : 0;
}
