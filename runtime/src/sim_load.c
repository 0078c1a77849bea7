/*===- src/sim_load.c - Loading the sim code object -----------------------===
 *
 * What this owns: etl_sim_load / etl_sim_unload (see sim_load.h).
 *===----------------------------------------------------------------------===*/
#include "sim_load.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* What a loaded program keeps: the dlopen handle, the memfd behind it
 * (-1 when a temporary file was used and removed) and the entry point. */
typedef struct sim_program {
  void *handle;
  int fd;
  void (*entry)(uint64_t *);
} sim_program;

etlStatus etl_sim_load(etl_program *p, const etl_sim_ops *ops) {
  const etl_code_section *code = NULL;
  for (uint32_t i = 0; i < p->art.n_code; ++i)
    if (strcmp(p->art.code[i].target, "sim") == 0)
      code = &p->art.code[i];
  if (!code) {
    char have[256] = "";
    size_t len = 0;
    for (uint32_t i = 0; i < p->art.n_code && len < sizeof have; ++i)
      len += (size_t)snprintf(have + len, sizeof have - len, "%s%s", i ? ", " : "",
                              p->art.code[i].target);
    return etl_error(ETL_ERROR_NOT_FOUND,
                     "artifact has no code for target 'sim' (it has: %s); compile with "
                     "--target=sim",
                     len ? have : "none");
  }
  char err[256];
  if (etl_elf_check(code->data, code->size, err, sizeof err) != 0)
    return etl_error(ETL_ERROR_INVALID_ARTIFACT,
                     "sim: the 'sim' code section (%llu bytes) is "
                     "not a loadable shared object: %s",
                     (unsigned long long)code->size, err);
  sim_program *sp = calloc(1, sizeof *sp);
  if (!sp)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory loading a program");
  int fd = memfd_create("etl-sim-kernel", MFD_CLOEXEC);
  char path[4096];
  if (fd >= 0) {
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/etl-sim-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    fd = mkstemp(path);
    if (fd < 0) {
      free(sp);
      return etl_error(ETL_ERROR_LAUNCH_FAILED, "sim: cannot create a file for the "
                                                "kernel object");
    }
  }
  const uint8_t *d = code->data;
  uint64_t left = code->size;
  while (left > 0) {
    ssize_t w = write(fd, d, left);
    if (w <= 0) {
      close(fd);
      if (path[0] == '/' && strncmp(path, "/proc/", 6) != 0)
        unlink(path);
      free(sp);
      return etl_error(ETL_ERROR_LAUNCH_FAILED, "sim: cannot write the kernel object");
    }
    d += w;
    left -= (uint64_t)w;
  }
  dlerror();
  void *h = dlopen(path, RTLD_LOCAL | RTLD_NOW);
  if (strncmp(path, "/proc/", 6) != 0) {
    unlink(path); /* the mapping stays valid */
    close(fd);
    fd = -1;
  }
  if (!h) {
    const char *e = dlerror();
    if (fd >= 0)
      close(fd);
    free(sp);
    return etl_error(ETL_ERROR_LAUNCH_FAILED, "sim: cannot load the kernel object: %s",
                     e ? e : "unknown dlopen error");
  }
  void *entry = dlsym(h, ETL_KERNEL_ENTRY);
  void *slot = dlsym(h, ETL_SIM_OPS_SYMBOL);
  if (!entry || !slot) {
    dlclose(h);
    if (fd >= 0)
      close(fd);
    free(sp);
    return etl_error(ETL_ERROR_LAUNCH_FAILED, "sim: kernel object does not export '%s'",
                     !entry ? ETL_KERNEL_ENTRY : ETL_SIM_OPS_SYMBOL);
  }
  *(const etl_sim_ops **)slot = ops;
  sp->handle = h;
  sp->fd = fd;
  /* POSIX leaves object-to-function pointer conversion to the platform;
     dlsym's contract makes it valid here. */
  memcpy(&sp->entry, &entry, sizeof entry);
  p->state = sp;
  return ETL_SUCCESS;
}

void etl_sim_unload(etl_program *p) {
  sim_program *sp = p->state;
  if (!sp)
    return;
  if (sp->handle)
    dlclose(sp->handle);
  if (sp->fd >= 0)
    close(sp->fd);
  free(sp);
  p->state = NULL;
}

void (*etl_sim_entry(const etl_program *p))(uint64_t *) {
  return ((const sim_program *)p->state)->entry;
}
