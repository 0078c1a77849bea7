/*===- examples/common/ref_host.h - main() of a PyTorch-reference host ----===
 *
 * ex_ref_main: the command line and the loop shared by the hosts that check
 * one artifact against reference directories written by tests/models/
 * (moe_layer, prefill_attention). ref_check.h stays runtime-free for
 * tests/models/ref_selftest.c; this half needs etl.h.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_REF_HOST_H
#define ETL_REF_HOST_H

#include "example_util.h"
#include "ref_check.h"

/* main() of a host that checks one artifact against PyTorch reference
 * directories: `ARTIFACT DIR... [--device D] [--profile F] [--race-check]`;
 * run_one(ctx, prog, dir) binds, runs and checks one directory (1: match). */
static inline int ex_ref_main(int argc, char **argv, const char *name, const char *usage,
                              int (*run_one)(etlContext, etlProgram, const char *)) {
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
  printf("%s: %d of %d bindings match PyTorch on %s, from one artifact\n", name, ndirs - failures,
         ndirs, etlContextDeviceName(ctx));
  etlProgramDestroy(prog);
  etlContextDestroy(ctx);
  return failures ? 1 : 0;
}

#endif
