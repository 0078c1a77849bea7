/*===- examples/decode_attention/decode_attention_host.c - Run and check ---===
 *
 * Decode attention over a paged KV cache (FlashDecoding): B requests with
 * one query each, NH heads of DH = 32, per-request KV lengths kv_len[b]; the
 * cache holds NP pages of PS = 16 token rows, and request b's token p lives
 * in row page_table[b, p / PS] * PS + p % PS. The host scatters the pages
 * at random over the pool, picks lengths from 1 to the maximum MP * PS, runs
 * the artifact for several (B, NH, NP, MP) bindings, and compares with
 *   out[b, h] = softmax_p(q[b, h] . k[p, h] / sqrt(DH)) @ v[p, h].
 *
 *   decode_attention_host decode_attention.etlb [--device D] [--shape B,NH,NP,MP]...
 *===----------------------------------------------------------------------===*/
#include "../common/example_util.h"

#define PS 16 /* must match the .etl */
#define DH 32

static const char *usage = "usage: decode_attention_host ARTIFACT [--device auto|sim|cuda] "
                           "[--profile FILE] [--shape B,NH,NP,MP]...\n";

typedef struct problem {
  int64_t B, NH, NP, MP;
  float *q, *k, *v;
  int32_t *page_table, *kv_len;
} problem;

static problem make_problem(int64_t B, int64_t NH, int64_t NP, int64_t MP, uint64_t *seed) {
  problem P = {B, NH, NP, MP, NULL, NULL, NULL, NULL, NULL};
  size_t nq = (size_t)(B * NH * DH), nkv = (size_t)(NP * PS * NH * DH);
  P.q = malloc(sizeof(float) * nq);
  P.k = malloc(sizeof(float) * nkv);
  P.v = malloc(sizeof(float) * nkv);
  P.page_table = malloc(sizeof(int32_t) * (size_t)(B * MP));
  P.kv_len = malloc(sizeof(int32_t) * (size_t)B);
  for (size_t i = 0; i < nq; ++i)
    P.q[i] = ex_random(seed);
  for (size_t i = 0; i < nkv; ++i) {
    P.k[i] = ex_random(seed);
    P.v[i] = ex_random(seed);
  }
  /* Pages dealt from a shuffled pool (reused modulo NP if the pool is small). */
  int32_t *pool = malloc(sizeof(int32_t) * (size_t)NP);
  for (int64_t i = 0; i < NP; ++i)
    pool[i] = (int32_t)i;
  for (int64_t i = NP - 1; i > 0; --i) {
    int64_t j = (int64_t)((ex_random(seed) + 1.0f) * 0.5f * (float)(i + 1)) % (i + 1);
    int32_t t = pool[i];
    pool[i] = pool[j];
    pool[j] = t;
  }
  for (int64_t i = 0; i < B * MP; ++i)
    P.page_table[i] = pool[i % NP];
  free(pool);
  int64_t maxlen = MP * PS;
  for (int64_t b = 0; b < B; ++b) {
    int64_t len = 1 + (int64_t)((ex_random(seed) + 1.0f) * 0.5f * (float)maxlen) % maxlen;
    if (b == 0)
      len = 1;
    if (b == 1)
      len = maxlen;
    P.kv_len[b] = (int32_t)len;
  }
  return P;
}

static void free_problem(problem *P) {
  free(P->q);
  free(P->k);
  free(P->v);
  free(P->page_table);
  free(P->kv_len);
}

static void reference(const problem *P, float *out) {
  int64_t NH = P->NH, maxlen = P->MP * PS;
  double *s = malloc(sizeof(double) * (size_t)maxlen);
  for (int64_t b = 0; b < P->B; ++b)
    for (int64_t h = 0; h < NH; ++h) {
      const float *q = P->q + (b * NH + h) * DH;
      int64_t len = P->kv_len[b];
      double m = -INFINITY, l = 0;
      for (int64_t p = 0; p < len; ++p) {
        int64_t row = (int64_t)P->page_table[b * P->MP + p / PS] * PS + p % PS;
        const float *k = P->k + (row * NH + h) * DH;
        double dotv = 0;
        for (int d = 0; d < DH; ++d)
          dotv += (double)q[d] * k[d];
        s[p] = dotv / sqrt((double)DH);
        m = s[p] > m ? s[p] : m;
      }
      double acc[DH] = {0};
      for (int64_t p = 0; p < len; ++p) {
        int64_t row = (int64_t)P->page_table[b * P->MP + p / PS] * PS + p % PS;
        const float *v = P->v + (row * NH + h) * DH;
        double e = exp(s[p] - m);
        l += e;
        for (int d = 0; d < DH; ++d)
          acc[d] += e * v[d];
      }
      for (int d = 0; d < DH; ++d)
        out[(b * NH + h) * DH + d] = (float)(acc[d] / l);
    }
  free(s);
}

static double run_attention(etlContext ctx, etlProgram prog, const problem *P, float *out) {
  int64_t B = P->B, NH = P->NH, NP = P->NP, MP = P->MP;
  size_t nq = (size_t)(B * NH * DH), nkv = (size_t)(NP * PS * NH * DH);
  void *dq = ex_upload(ctx, P->q, nq);
  void *dk = ex_upload(ctx, P->k, nkv);
  void *dv = ex_upload(ctx, P->v, nkv);
  void *dpt = ex_upload_bytes(ctx, P->page_table, sizeof(int32_t) * (size_t)(B * MP));
  void *dlen = ex_upload_bytes(ctx, P->kv_len, sizeof(int32_t) * (size_t)B);
  void *dout = ex_upload(ctx, NULL, nq);
  int64_t sq[3] = {B, NH, DH}, skv[3] = {NP * PS, NH, DH}, spt[2] = {B, MP}, slen[1] = {B};
  CHECK_ETL(etlBindDim(prog, "B", B));
  CHECK_ETL(etlBindDim(prog, "NH", NH));
  CHECK_ETL(etlBindDim(prog, "NP", NP));
  CHECK_ETL(etlBindDim(prog, "MP", MP));
  CHECK_ETL(etlBindTensor(prog, "q", dq, ETL_F32, 3, sq));
  CHECK_ETL(etlBindTensor(prog, "kcache", dk, ETL_F32, 3, skv));
  CHECK_ETL(etlBindTensor(prog, "vcache", dv, ETL_F32, 3, skv));
  CHECK_ETL(etlBindTensor(prog, "page_table", dpt, ETL_I32, 2, spt));
  CHECK_ETL(etlBindTensor(prog, "kv_len", dlen, ETL_I32, 1, slen));
  CHECK_ETL(etlBindTensor(prog, "out", dout, ETL_F32, 3, sq));
  double ms = ex_run_timed(prog);
  ex_download(ctx, out, dout, nq);
  void *bufs[] = {dq, dk, dv, dpt, dlen, dout};
  for (int i = 0; i < 6; ++i)
    CHECK_ETL(etlFree(ctx, bufs[i]));
  return ms;
}

int main(int argc, char **argv) {
  ex_args args = ex_parse_args(argc, argv, usage);
  /* B, NH, NP, MP: the second binding's maximum length (80) is not a
   * multiple of the 32-token chunks; the third has one request. */
  static const int64_t defaults[] = {4, 2, 32, 8, 3, 3, 15, 5, 1, 1, 4, 4};
  ex_session ses = ex_open_n(&args, defaults, 4, 3);
  etlContext ctx = ses.ctx, sim = ses.sim;
  etlProgram prog = ses.prog, sim_prog = ses.sim_prog;
  int gpu = sim != NULL, failures = 0;
  uint64_t seed = 0xA5A5A5A55A5A5A5Aull;
  for (int s = 0; s < args.nshapes; ++s) {
    problem P = make_problem(args.shapes[s][0], args.shapes[s][1], args.shapes[s][2],
                             args.shapes[s][3], &seed);
    size_t n = (size_t)(P.B * P.NH * DH);
    float *out = malloc(sizeof(float) * n), *ref = malloc(sizeof(float) * n);
    reference(&P, ref);
    double ms = run_attention(ctx, prog, &P, out);
    double err = ex_max_error(out, ref, n);
    int ok = err < 1e-4;
    printf("decode_attention B=%lld NH=%lld NP=%-3lld MP=%lld (kv_len %d..%d) on %s: max error "
           "%.2e, etlRun %.2f ms %s\n",
           (long long)P.B, (long long)P.NH, (long long)P.NP, (long long)P.MP, P.kv_len[0],
           P.kv_len[P.B > 1 ? 1 : 0], etlContextDeviceName(ctx), err, ms, ok ? "OK" : "FAIL");
    if (gpu) {
      float *os = malloc(sizeof(float) * n);
      run_attention(sim, sim_prog, &P, os);
      double d = ex_max_error(out, os, n);
      ok &= ex_report_gpu_vs_sim(d, 1e-4);
      free(os);
    }
    failures += !ok;
    free(out);
    free(ref);
    free_problem(&P);
  }
  printf("decode_attention: %d of %d bindings correct on %s, from one artifact\n",
         args.nshapes - failures, args.nshapes, etlContextDeviceName(ctx));
  ex_close(&ses);
  return failures ? 1 : 0;
}
