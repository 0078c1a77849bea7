/*===- tests/models/ref_selftest.c - The reference harness's two halves agree -===
 *
 * Reads what selftest_ref.py wrote and checks that ref_check.h computes the
 * same seeded values (bit for bit) and the same bf16 rounding as
 * etl_ref.py, and that ex_check_close fails on a perturbed copy.
 *
 *   ref_selftest DIR
 *===----------------------------------------------------------------------===*/
#include "../../examples/common/ref_check.h"

static int check_seeded(const char *dir, const char *name, uint32_t seed, uint64_t start,
                        float scale) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.npy", dir, name);
  size_t n;
  int64_t shape[4];
  float *ref = ex_npy_load(path, &n, shape);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i)
    bad += ex_seeded(seed, start + i, scale) != ref[i];
  printf("%s: %zu values, %zu differ from ex_seeded %s\n", name, n, bad, bad ? "FAIL" : "OK");
  free(ref);
  return bad == 0 && n > 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: ref_selftest DIR\n");
    return 2;
  }
  int ok = check_seeded(argv[1], "seeded_lo", 12345, 0, 1.0f);
  ok &= check_seeded(argv[1], "seeded_hi", 7, (1u << 28) - 500, 1.0f / 64);
  char path[4096];
  size_t n, m;
  int64_t shape[4];
  snprintf(path, sizeof path, "%s/bf16_in.npy", argv[1]);
  float *in = ex_npy_load(path, &n, shape);
  snprintf(path, sizeof path, "%s/bf16_out.npy", argv[1]);
  float *want = ex_npy_load(path, &m, shape);
  size_t bad = n != m;
  for (size_t i = 0; i < n && i < m; ++i)
    bad += ex_bf16_to_f32(ex_bf16(in[i])) != want[i];
  printf("bf16 rounding: %zu values, %zu differ from torch %s\n", n, bad, bad ? "FAIL" : "OK");
  ok &= bad == 0;
  /* the comparison passes on itself and fails on a copy one element off */
  ok &= ex_check_close("identical", want, want, m, 1.0 / 128, 1e-3);
  want[m / 2] += 1.0f;
  ok &= !ex_check_close("perturbed (must FAIL)", want, in, m, 1.0 / 128, 1e-3);
  free(in);
  free(want);
  printf("ref_selftest: %s\n", ok ? "OK" : "FAIL");
  return ok ? 0 : 1;
}
