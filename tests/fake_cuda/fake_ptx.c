/*===- tests/fake_cuda/fake_ptx.c - The fake driver's PTX loader ----------===
 *
 * What a driver reads from a PTX image before it can launch it (the entries,
 * their parameters, .maxntid and static shared memory) and what it refuses:
 * a .version newer than the driver's, a .target newer than the device (or
 * an architecture-specific sm_NNa on a device other than NN), static
 * shared memory past 48 KiB, and, when ETL_FAKE_CUDA_PTXAS names ptxas, an
 * image that does not assemble.
 *===----------------------------------------------------------------------===*/
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_internal.h"

int fake_cc = 90;

EXPORT void etl_fake_cuda_device_cc(int cc) { fake_cc = cc; }

static void put_log(char *log, size_t cap, const char *fmt, ...) {
  if (!log || !cap)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(log, cap, fmt, ap);
  va_end(ap);
}

/* ptxas, when ETL_FAKE_CUDA_PTXAS names one; 0 = accepted or not run. */
static int assemble(const char *ptx, const char *target, char *log, size_t cap) {
  static int told;
  const char *ptxas = getenv("ETL_FAKE_CUDA_PTXAS");
  if (!ptxas || !*ptxas) {
    if (!told++)
      fprintf(stderr, "fake libcuda: ptxas not found (ETL_FAKE_CUDA_PTXAS is empty): PTX images "
                      "are checked for .version, .target, .address_size, entries, .maxntid and "
                      "shared memory, not assembled\n");
    return 0;
  }
  /* an image ptxas accepted once is accepted again (tests load the same one often) */
  static uint64_t accepted[64];
  static int n_accepted;
  uint64_t h = 14695981039346656037ull;
  for (const char *p = ptx; *p; ++p)
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
  for (int i = 0; i < n_accepted; ++i)
    if (accepted[i] == h)
      return 0;
  char in[] = "/tmp/etl-fake-cuda-XXXXXX.ptx", out[] = "/tmp/etl-fake-cuda-XXXXXX.log";
  int fd = mkstemps(in, 4), fo = mkstemps(out, 4);
  if (fd < 0 || fo < 0 || write(fd, ptx, strlen(ptx)) != (ssize_t)strlen(ptx)) {
    put_log(log, cap, "fake libcuda: cannot write the PTX to a temporary file");
    return 1;
  }
  close(fd);
  close(fo);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' -arch=%s '%s' -o /dev/null >'%s' 2>&1", ptxas, target, in, out);
  int rc = system(cmd);
  FILE *f = fopen(out, "r");
  size_t n = f && log && cap ? fread(log, 1, cap - 1, f) : 0;
  if (log && cap)
    log[n] = 0;
  if (f)
    fclose(f);
  unlink(in);
  unlink(out);
  if (rc == 0 && n_accepted < 64)
    accepted[n_accepted++] = h;
  return rc != 0;
}

CUresult fake_read_ptx(const char *ptx, func *funcs, int *nfuncs, char *log, size_t cap,
                       char target[16]) {
  int major = 0, minor = 0, sm = 0, addr = 0, n = 0;
  const char *v = strstr(ptx, ".version"), *t = strstr(ptx, ".target"),
             *a = strstr(ptx, ".address_size");
  if (!v || sscanf(v, ".version %d.%d", &major, &minor) != 2) {
    put_log(log, cap, "ptxas fatal : no .version directive");
    return INVALID_PTX;
  }
  if (major > 8 || (major == 8 && minor > 4)) { /* a CUDA 12.4 driver */
    put_log(log, cap, "ptxas fatal : PTX ISA %d.%d is newer than this driver's 8.4", major, minor);
    return UNSUPPORTED_PTX_VERSION;
  }
  /* sm_NN runs on capability NN and newer, sm_NNa only on NN */
  char named[16] = "";
  if (t)
    sscanf(t, ".target %15[A-Za-z0-9_]", named);
  const char *suffix = named + (sscanf(named, "sm_%d%n", &sm, &n) == 1 ? n : 0);
  if (sm == 0 || sm > fake_cc || (*suffix && (strcmp(suffix, "a") || sm != fake_cc))) {
    put_log(log, cap, "ptxas fatal : .target %s is not supported by the device (sm_%d)",
            named[0] ? named : "(none)", fake_cc);
    return INVALID_PTX;
  }
  memcpy(target, named, sizeof named);
  if (!a || sscanf(a, ".address_size %d", &addr) != 1 || addr != 64) {
    put_log(log, cap, "ptxas fatal : .address_size must be 64");
    return INVALID_PTX;
  }
  unsigned shared = 0;
  for (const char *s = strstr(ptx, ".shared"); s; s = strstr(s + 1, ".shared")) {
    const char *br = strchr(s, '['), *semi = strchr(s, ';');
    unsigned n = 0, elem = 1;
    /* declarations only (not st.shared/ld.shared); `.extern` ones are dynamic: [] */
    if ((s > ptx && s[-1] != ' ' && s[-1] != '\t' && s[-1] != '\n') || !br || !semi || br > semi ||
        sscanf(br, "[%u]", &n) != 1)
      continue;
    const char *ty = strstr(s, " .b");
    if (!ty || ty > br)
      ty = strstr(s, " .u");
    if (ty && ty < br)
      elem = (unsigned)atoi(ty + 3) / 8;
    shared += n * (elem ? elem : 1);
  }
  *nfuncs = 0;
  for (const char *e = strstr(ptx, ".entry"); e && *nfuncs < MAX_FUNCS;
       e = strstr(e + 1, ".entry")) {
    func *f = &funcs[(*nfuncs)++];
    memset(f, 0, sizeof *f);
    sscanf(e, ".entry %127[A-Za-z0-9_$]", f->name);
    const char *open = strchr(e, '('), *close = open ? strchr(open, ')') : NULL;
    for (const char *p = open; p && close && (p = strstr(p, ".param")) && p < close; ++p)
      f->nparams++;
    const char *body = strchr(e, '{'), *mx = strstr(e, ".maxntid");
    unsigned x = 1, y = 1, z = 1;
    if (mx && body && mx < body && sscanf(mx, ".maxntid %u, %u, %u", &x, &y, &z) >= 1)
      f->maxntid = x * y * z;
    f->static_smem = shared;
    if (shared > STATIC_SMEM) {
      put_log(log, cap,
              "ptxas error   : Entry function '%s' uses too much shared data (0x%x bytes, "
              "0xc000 max)",
              f->name, shared);
      return INVALID_PTX;
    }
    f->max_dynamic_smem = STATIC_SMEM - shared;
  }
  return assemble(ptx, target, log, cap) ? INVALID_PTX : SUCCESS;
}
