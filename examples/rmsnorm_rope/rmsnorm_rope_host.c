/*===- examples/rmsnorm_rope/rmsnorm_rope_host.c - Run and check -----------===
 *
 * The front of an attention layer for B decode tokens of width D = 2 * D2:
 *   xn = x * rsqrt(mean(x^2) + eps) * wn      (eps: a scalar parameter, bound with
 *                                            etlBindScalar; 1e-6, or 0.25 for every
 *                                            other shape so that it matters)
 *   q = xn @ wq, k = xn @ wk, v = xn @ wv      (wq, wk, wv: [D, D]; wq, wk bound as
 *                                            [D, 2, D2], the two halves of each row)
 *   q, k rotated per pair (j, j + D2) by the angle of position pos[b] (NeoX /
 *   Hugging Face Llama rotate_half):
 *     (a, b) -> (a cos - b sin, a sin + b cos), cos/sin from tables [P, D2]
 *   q -> q_out[b];  k, v appended to the paged caches at token pos[b]:
 *     row = page_table[b * MP + pos[b] / PS] * PS + pos[b] % PS
 * Every request owns its own pages, so the appends never collide. The whole
 * caches are compared, so a write to a wrong row is caught too.
 *
 *   rmsnorm_rope_host rmsnorm_rope.etlb [--device D] [--shape B,D2,MP]...
 *===----------------------------------------------------------------------===*/
#include "../common/example_util.h"

#define PS 16 /* must match the .etl */

static const char *usage = "usage: rmsnorm_rope_host ARTIFACT [--device auto|sim|cuda] [--profile "
                           "FILE] [--shape B,D2,MP]... (D2 a multiple of 4)\n";

typedef struct problem {
  int64_t B, D2, MP, NP, P;
  float eps;
  float *x, *wn, *wq, *wk, *wv, *cos_t, *sin_t;
  int32_t *pos, *page_table;
} problem;

static float *randoms(size_t n, float scale, uint64_t *seed) {
  float *p = malloc(sizeof(float) * n);
  for (size_t i = 0; i < n; ++i)
    p[i] = scale * ex_random(seed);
  return p;
}

static problem make_problem(int64_t B, int64_t D2, int64_t MP, uint64_t *seed) {
  problem P;
  int64_t D = 2 * D2;
  P.B = B, P.D2 = D2, P.MP = MP, P.NP = B * MP, P.P = MP * PS;
  P.x = randoms((size_t)(B * D), 1.0f, seed);
  P.wn = randoms((size_t)D, 1.0f, seed);
  P.wq = randoms((size_t)(D * D), 0.25f, seed);
  P.wk = randoms((size_t)(D * D), 0.25f, seed);
  P.wv = randoms((size_t)(D * D), 0.25f, seed);
  P.cos_t = malloc(sizeof(float) * (size_t)(P.P * D2));
  P.sin_t = malloc(sizeof(float) * (size_t)(P.P * D2));
  for (int64_t p = 0; p < P.P; ++p)
    for (int64_t j = 0; j < D2; ++j) {
      double theta = (double)p * pow(10000.0, -2.0 * (double)j / (double)D);
      P.cos_t[p * D2 + j] = (float)cos(theta);
      P.sin_t[p * D2 + j] = (float)sin(theta);
    }
  P.pos = malloc(sizeof(int32_t) * (size_t)B);
  for (int64_t b = 0; b < B; ++b)
    P.pos[b] = (int32_t)((int64_t)((ex_random(seed) + 1.0f) * 0.5f * (float)P.P) % P.P);
  P.pos[0] = (int32_t)(P.P - 1); /* the last slot of the last page */
  /* Request b owns pages b*MP .. b*MP+MP-1 of the pool, listed in reverse. */
  P.page_table = malloc(sizeof(int32_t) * (size_t)(B * MP));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < MP; ++i)
      P.page_table[b * MP + i] = (int32_t)(b * MP + (MP - 1 - i));
  return P;
}

static void free_problem(problem *P) {
  float *f[] = {P->x, P->wn, P->wq, P->wk, P->wv, P->cos_t, P->sin_t};
  for (int i = 0; i < 7; ++i)
    free(f[i]);
  free(P->pos);
  free(P->page_table);
}

/* q_out [B, D]; kcache, vcache [NP * PS, D] (zero where nothing is appended). */
static void reference(const problem *P, float *q_out, float *kc, float *vc) {
  int64_t D2 = P->D2, D = 2 * D2;
  memset(kc, 0, sizeof(float) * (size_t)(P->NP * PS * D));
  memset(vc, 0, sizeof(float) * (size_t)(P->NP * PS * D));
  double *xn = malloc(sizeof(double) * (size_t)D), *q = malloc(sizeof(double) * (size_t)D);
  double *k = malloc(sizeof(double) * (size_t)D);
  for (int64_t b = 0; b < P->B; ++b) {
    double ss = 0;
    for (int64_t d = 0; d < D; ++d)
      ss += (double)P->x[b * D + d] * P->x[b * D + d];
    double r = 1.0 / sqrt(ss / (double)D + (double)P->eps);
    for (int64_t d = 0; d < D; ++d)
      xn[d] = P->x[b * D + d] * r * P->wn[d];
    int64_t p = P->pos[b];
    int64_t row = (int64_t)P->page_table[b * P->MP + p / PS] * PS + p % PS;
    for (int64_t c = 0; c < D; ++c) {
      double aq = 0, ak = 0, av = 0;
      for (int64_t d = 0; d < D; ++d) {
        aq += xn[d] * P->wq[d * D + c];
        ak += xn[d] * P->wk[d * D + c];
        av += xn[d] * P->wv[d * D + c];
      }
      q[c] = aq;
      k[c] = ak;
      vc[row * D + c] = (float)av;
    }
    for (int64_t j = 0; j < D2; ++j) {
      double cs = P->cos_t[p * D2 + j], sn = P->sin_t[p * D2 + j];
      q_out[b * D + j] = (float)(q[j] * cs - q[j + D2] * sn);
      q_out[b * D + j + D2] = (float)(q[j] * sn + q[j + D2] * cs);
      kc[row * D + j] = (float)(k[j] * cs - k[j + D2] * sn);
      kc[row * D + j + D2] = (float)(k[j] * sn + k[j + D2] * cs);
    }
  }
  free(xn);
  free(q);
  free(k);
}

static double run_layer(etlContext ctx, etlProgram prog, const problem *P, float *q_out, float *kc,
                        float *vc) {
  int64_t B = P->B, D2 = P->D2, D = 2 * D2, rows = P->NP * PS;
  size_t ncache = (size_t)(rows * D);
  float *zeros = calloc(ncache, sizeof(float));
  void *dx = ex_upload(ctx, P->x, (size_t)(B * D));
  void *dwn = ex_upload(ctx, P->wn, (size_t)D);
  void *dwq = ex_upload(ctx, P->wq, (size_t)(D * D));
  void *dwk = ex_upload(ctx, P->wk, (size_t)(D * D));
  void *dwv = ex_upload(ctx, P->wv, (size_t)(D * D));
  void *dcos = ex_upload(ctx, P->cos_t, (size_t)(P->P * D2));
  void *dsin = ex_upload(ctx, P->sin_t, (size_t)(P->P * D2));
  void *dpos = ex_upload_bytes(ctx, P->pos, sizeof(int32_t) * (size_t)B);
  void *dpt = ex_upload_bytes(ctx, P->page_table, sizeof(int32_t) * (size_t)(B * P->MP));
  void *dq = ex_upload(ctx, NULL, (size_t)(B * D));
  void *dkc = ex_upload(ctx, zeros, ncache);
  void *dvc = ex_upload(ctx, zeros, ncache);
  int64_t sx[2] = {B, D}, swn[1] = {D}, sw[3] = {D, 2, D2}, swv[2] = {D, D};
  int64_t st[2] = {P->P, D2}, spos[1] = {B}, spt[1] = {B * P->MP};
  int64_t sq[3] = {B, 2, D2}, skc[3] = {rows, 2, D2}, svc[2] = {rows, D};
  CHECK_ETL(etlBindDim(prog, "B", B));
  CHECK_ETL(etlBindDim(prog, "D2", D2));
  CHECK_ETL(etlBindDim(prog, "P", P->P));
  CHECK_ETL(etlBindDim(prog, "NP", P->NP));
  CHECK_ETL(etlBindDim(prog, "MP", P->MP));
  CHECK_ETL(etlBindTensor(prog, "x", dx, ETL_F32, 2, sx));
  CHECK_ETL(etlBindTensor(prog, "wn", dwn, ETL_F32, 1, swn));
  CHECK_ETL(etlBindTensor(prog, "wq", dwq, ETL_F32, 3, sw));
  CHECK_ETL(etlBindTensor(prog, "wk", dwk, ETL_F32, 3, sw));
  CHECK_ETL(etlBindTensor(prog, "wv", dwv, ETL_F32, 2, swv));
  CHECK_ETL(etlBindTensor(prog, "cos_t", dcos, ETL_F32, 2, st));
  CHECK_ETL(etlBindTensor(prog, "sin_t", dsin, ETL_F32, 2, st));
  CHECK_ETL(etlBindTensor(prog, "pos", dpos, ETL_I32, 1, spos));
  CHECK_ETL(etlBindTensor(prog, "page_table", dpt, ETL_I32, 1, spt));
  CHECK_ETL(etlBindTensor(prog, "q_out", dq, ETL_F32, 3, sq));
  CHECK_ETL(etlBindTensor(prog, "kcache", dkc, ETL_F32, 3, skc));
  CHECK_ETL(etlBindTensor(prog, "vcache", dvc, ETL_F32, 2, svc));
  CHECK_ETL(etlBindScalar(prog, "eps", ETL_F32, &P->eps));
  double ms = ex_run_timed(prog);
  ex_download(ctx, q_out, dq, (size_t)(B * D));
  ex_download(ctx, kc, dkc, ncache);
  ex_download(ctx, vc, dvc, ncache);
  void *bufs[] = {dx, dwn, dwq, dwk, dwv, dcos, dsin, dpos, dpt, dq, dkc, dvc};
  for (int i = 0; i < 12; ++i)
    CHECK_ETL(etlFree(ctx, bufs[i]));
  free(zeros);
  return ms;
}

int main(int argc, char **argv) {
  ex_args args = ex_parse_args(argc, argv, usage);
  /* B, D2, MP: D2 = 20 (a multiple of 4, as the kernel's `where` asks) is not a
   * multiple of any tile size. */
  static const int64_t defaults[] = {8, 32, 4, 5, 20, 3, 1, 16, 2};
  ex_session ses = ex_open_n(&args, defaults, 3, 3);
  etlContext ctx = ses.ctx, sim = ses.sim;
  etlProgram prog = ses.prog, sim_prog = ses.sim_prog;
  int gpu = sim != NULL, failures = 0;
  uint64_t seed = 0x0DDBA11CAFEF00Dull;
  for (int s = 0; s < args.nshapes; ++s) {
    problem P = make_problem(args.shapes[s][0], args.shapes[s][1], args.shapes[s][2], &seed);
    P.eps = s % 2 ? 0.25f : 1e-6f;
    int64_t D = 2 * P.D2;
    size_t nq = (size_t)(P.B * D), nc = (size_t)(P.NP * PS * D);
    float *q = malloc(sizeof(float) * nq), *qr = malloc(sizeof(float) * nq);
    float *kc = malloc(sizeof(float) * nc), *kr = malloc(sizeof(float) * nc);
    float *vc = malloc(sizeof(float) * nc), *vr = malloc(sizeof(float) * nc);
    reference(&P, qr, kr, vr);
    double ms = run_layer(ctx, prog, &P, q, kc, vc);
    double err = ex_max_error(q, qr, nq);
    double ek = ex_max_error(kc, kr, nc), ev = ex_max_error(vc, vr, nc);
    err = ek > err ? ek : err;
    err = ev > err ? ev : err;
    int ok = err < 1e-4;
    printf("rmsnorm_rope B=%-3lld D=%-4lld MP=%lld eps=%g on %s: max error %.2e (q, k cache, "
           "v cache), etlRun %.2f ms %s\n",
           (long long)P.B, (long long)D, (long long)P.MP, (double)P.eps, etlContextDeviceName(ctx),
           err, ms, ok ? "OK" : "FAIL");
    if (gpu) {
      float *q2 = malloc(sizeof(float) * nq), *k2 = malloc(sizeof(float) * nc);
      float *v2 = malloc(sizeof(float) * nc);
      run_layer(sim, sim_prog, &P, q2, k2, v2);
      double d = ex_max_error(q, q2, nq);
      double dk = ex_max_error(kc, k2, nc), dv = ex_max_error(vc, v2, nc);
      d = dk > d ? dk : d;
      d = dv > d ? dv : d;
      ok &= ex_report_gpu_vs_sim(d, 1e-4);
      free(q2);
      free(k2);
      free(v2);
    }
    failures += !ok;
    free(q);
    free(qr);
    free(kc);
    free(kr);
    free(vc);
    free(vr);
    free_problem(&P);
  }
  printf("rmsnorm_rope: %d of %d bindings correct on %s, from one artifact\n",
         args.nshapes - failures, args.nshapes, etlContextDeviceName(ctx));
  ex_close(&ses);
  return failures ? 1 : 0;
}
