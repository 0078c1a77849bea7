/*===- examples/common/ref_check.h - PyTorch reference checks, C half -----===
 *
 * The C side of tests/models/etl_ref.py (read its banner first):
 *   ex_seeded_int / ex_seeded      the same counter-based values as
 *                                  etl_ref.seeded_ints / seeded
 *   ex_seeded_bf16                 a slice of a seeded tensor as bf16 bits
 *   ex_bf16 / ex_bf16_to_f32       f32 <-> bf16 (round to nearest even)
 *   ex_npy_load                    a .npy file (<f4 or <i4, C order) as f32
 *   ex_check_close                 the comparison and its report
 *
 * Tolerance (ex_check_close): element i passes when
 *   |got_i - ref_i| <= rtol * |ref_i| + atol * rms(ref)
 * (ex_check_close_rows: rms(ref) or that of element i's row, the larger)
 * so `atol` is relative to the output's scale (an absolute floor for
 * elements near zero, where a relative bound means nothing after
 * cancellation) and `rtol` is per element. For bf16 outputs rtol = 2^-7 is
 * two units in the last place: one for rounding the output, one for an
 * intermediate bf16 rounding that f32 sums in another order can flip.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_REF_CHECK_H
#define ETL_REF_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An integer in [-128, 127]: etl_ref.seeded_ints(seed, index, 1)[0]. */
static inline int32_t ex_seeded_int(uint32_t seed, uint64_t index) {
  uint64_t m = 0xFFFFFFFFull;
  uint64_t x = (index & m) ^ (((uint64_t)seed * 0x3C6EF35Full) & m);
  x ^= x >> 16;
  x = (x * 0x7FEB352Dull) & m;
  x ^= x >> 15;
  x = (x * 0x68E31DA5ull) & m;
  x ^= x >> 16;
  return (int32_t)(x >> 24) - 128;
}

static inline float ex_seeded(uint32_t seed, uint64_t index, float scale) {
  return (float)ex_seeded_int(seed, index) * scale;
}

static inline uint16_t ex_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN stays a quiet NaN */
    return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline float ex_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* dst[i] = bf16 of seeded(seed, start + i) * scale, for i < n. */
static inline void ex_seeded_bf16(uint16_t *dst, uint32_t seed, uint64_t start, size_t n,
                                  float scale) {
  for (size_t i = 0; i < n; ++i)
    dst[i] = ex_bf16(ex_seeded(seed, start + i, scale));
}

/* Reads a .npy file written by etl_ref.save (dtype <f4 or <i4, C order) into
 * a malloc'd f32 array; *count gets the element count, shape[0..3] the
 * dims (unused ones 1). Exits with a message on any error. */
static inline float *ex_npy_load(const char *path, size_t *count, int64_t shape[4]) {
  FILE *f = fopen(path, "rb");
  unsigned char pre[10];
  if (!f || fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    fprintf(stderr, "%s: not a .npy file (or unreadable)\n", path);
    exit(1);
  }
  size_t hlen = pre[8] | (size_t)pre[9] << 8;
  if (pre[6] >= 2) { /* version 2+: a 4-byte header length */
    unsigned char more[2];
    if (fread(more, 1, 2, f) != 2) {
      fprintf(stderr, "%s: truncated header\n", path);
      exit(1);
    }
    hlen |= (size_t)more[0] << 16 | (size_t)more[1] << 24;
  }
  char *hdr = calloc(1, hlen + 1);
  if (!hdr || fread(hdr, 1, hlen, f) != hlen) {
    fprintf(stderr, "%s: truncated header\n", path);
    exit(1);
  }
  int is_f32 = strstr(hdr, "'<f4'") != NULL, is_i32 = strstr(hdr, "'<i4'") != NULL;
  const char *sh = strstr(hdr, "'shape': (");
  if ((!is_f32 && !is_i32) || strstr(hdr, "'fortran_order': True") || !sh) {
    fprintf(stderr, "%s: expected dtype <f4 or <i4 in C order: %s\n", path, hdr);
    exit(1);
  }
  size_t n = 1;
  sh += strlen("'shape': (");
  for (int d = 0; d < 4; ++d)
    shape[d] = 1;
  for (int d = 0; d < 4 && *sh != ')'; ++d) {
    char *end;
    long long v = strtoll(sh, &end, 10);
    if (end == sh)
      break;
    shape[d] = v;
    n *= (size_t)v;
    sh = end;
    while (*sh == ',' || *sh == ' ')
      ++sh;
  }
  free(hdr);
  float *out = malloc(sizeof(float) * (n ? n : 1));
  if (!out || fread(out, 4, n, f) != n) {
    fprintf(stderr, "%s: truncated data (%zu elements expected)\n", path, n);
    exit(1);
  }
  fclose(f);
  if (is_i32)
    for (size_t i = 0; i < n; ++i) {
      int32_t v;
      memcpy(&v, &out[i], 4);
      out[i] = (float)v;
    }
  *count = n;
  return out;
}

/* Compares got with ref under the rule in the banner, with rms(ref) the
 * larger of the whole output's and that of the `row` consecutive elements
 * holding element i (row = n: the whole output's alone), prints one line
 * (the worst element, how many fail) and returns 1 when all pass. NaN
 * fails. A per-row scale is for outputs whose rows differ in size and whose
 * error scales with their own row's: attention, where a query with few keys
 * has outputs (and rounding differences) several times those of one with
 * many. */
static inline int ex_check_close_rows(const char *what, const float *got, const float *ref,
                                      size_t n, size_t row, double rtol, double atol) {
  double ss = 0;
  for (size_t i = 0; i < n; ++i)
    ss += (double)ref[i] * ref[i];
  double rms = n ? sqrt(ss / (double)n) : 0, worst = 0;
  size_t bad = 0, at = 0;
  if (row == 0 || row > n)
    row = n;
  for (size_t r0 = 0; r0 < n; r0 += row) {
    size_t r1 = r0 + row < n ? r0 + row : n;
    double rss = 0;
    for (size_t i = r0; i < r1; ++i)
      rss += (double)ref[i] * ref[i];
    double scale = fmax(rms, sqrt(rss / (double)(r1 - r0)));
    for (size_t i = r0; i < r1; ++i) {
      double d = fabs((double)got[i] - (double)ref[i]);
      double lim = rtol * fabs((double)ref[i]) + atol * scale;
      double r = d / (lim > 0 ? lim : 1e-30);
      if (!(r <= 1.0))
        ++bad;
      if (!(r <= worst)) {
        worst = r;
        at = i;
      }
    }
  }
  printf("  %s: %zu elements, rms %.3g, worst at %zu: got %.6g want %.6g (%.2f of the "
         "tolerance rtol %.3g + atol %.3g*rms%s), %zu out of tolerance %s\n",
         what, n, rms, at, n ? got[at] : 0.0, n ? ref[at] : 0.0, worst, rtol, atol,
         row < n ? " of its row" : "", bad, bad ? "FAIL" : "OK");
  return bad == 0;
}

static inline int ex_check_close(const char *what, const float *got, const float *ref, size_t n,
                                 double rtol, double atol) {
  return ex_check_close_rows(what, got, ref, n, n, rtol, atol);
}

#endif
