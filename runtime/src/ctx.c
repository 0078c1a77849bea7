/*===- src/ctx.c - Contexts and the list of devices ----------------------===
 *
 * etl_devices[] is every device the runtime knows, in the order "auto"
 * tries them: adding a device is its file (a filled-in etl_device table,
 * see device.h) plus one entry here. A context owns its device state, its
 * allocations (memory.c) and the programs loaded into it; destroying it
 * destroys them all and invalidates their handles. The ETL_DEVICE,
 * ETL_SIM_WORKERS and ETL_WATCHDOG_MS environment variables are read here.
 *===----------------------------------------------------------------------===*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"

/* Every device, each defined in its own file; "auto" takes the first that
 * opens. */
extern const etl_device etl_device_cuda; /* cuda.c */
extern const etl_device etl_device_sim;  /* sim.c */
static const etl_device *const etl_devices[] = {&etl_device_cuda, &etl_device_sim};
#define N_DEVICES (sizeof etl_devices / sizeof etl_devices[0])

/* The environment variable `name` as a whole number in [lo, hi] into *out:
 * 1, 0 when unset or empty, -1 (and *out untouched) when malformed. */
static int env_number(const char *name, unsigned long lo, unsigned long hi, uint32_t *out) {
  const char *s = getenv(name);
  if (!s || !*s)
    return 0;
  char *end = NULL;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || *end || *s == '-' || v < lo || v > hi)
    return -1;
  *out = (uint32_t)v;
  return 1;
}

etlContextParams etlContextDefaultParams(void) {
  etlContextParams p;
  memset(&p, 0, sizeof p);
  p.sim_workers = 4;
  p.sim_stack_bytes = 64 * 1024;
  p.watchdog_ms = 10000;
  p.cuda_device = 0;
  /* settings a user may change without rebuilding the host (etl.h);
     malformed values are reported by etlContextCreate */
  env_number("ETL_SIM_WORKERS", 1, 1024, &p.sim_workers);
  env_number("ETL_WATCHDOG_MS", 1, UINT32_MAX, &p.watchdog_ms);
  return p;
}

/* A malformed ETL_* setting is an error, not silently the default. */
static etlStatus check_env(void) {
  uint32_t v;
  if (env_number("ETL_SIM_WORKERS", 1, 1024, &v) < 0)
    return etl_error(ETL_ERROR_INVALID_VALUE,
                     "etlContextCreate: ETL_SIM_WORKERS='%s' is not a number in [1, 1024]",
                     getenv("ETL_SIM_WORKERS"));
  if (env_number("ETL_WATCHDOG_MS", 1, UINT32_MAX, &v) < 0)
    return etl_error(ETL_ERROR_INVALID_VALUE,
                     "etlContextCreate: ETL_WATCHDOG_MS='%s' is not a number of milliseconds >= 1",
                     getenv("ETL_WATCHDOG_MS"));
  return ETL_SUCCESS;
}

/* Open `dev` into `c`; on failure `c` is as before. */
static etlStatus open_device(etl_context *c, const etl_device *dev) {
  c->dev = dev;
  etlStatus st = dev->context_create(c);
  if (st)
    c->dev = NULL;
  return st;
}

etlStatus etlContextCreate(etlContext *out, const char *device, const etlContextParams *params) {
  if (!out)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlContextCreate: ctx is NULL");
  *out = NULL;
  etlStatus env_st = check_env();
  if (env_st)
    return env_st;
  if (!device)
    device = "auto";
  /* ETL_DEVICE decides what "auto" means: the host asked the runtime to choose */
  const char *env_dev = getenv("ETL_DEVICE");
  const char *from_env = "";
  if (strcmp(device, "auto") == 0 && env_dev && *env_dev) {
    device = env_dev;
    from_env = " (from ETL_DEVICE)";
  }
  etlContextParams prm = params ? *params : etlContextDefaultParams();
  if (prm.sim_workers < 1 || prm.sim_workers > 1024)
    return etl_error(ETL_ERROR_INVALID_VALUE, "etlContextCreate: sim_workers %u not in [1, 1024]",
                     prm.sim_workers);
  if (prm.sim_stack_bytes < 16384)
    prm.sim_stack_bytes = 16384;
  if (prm.watchdog_ms == 0)
    prm.watchdog_ms = 10000;
  int want_auto = strcmp(device, "auto") == 0;
  const etl_device *named = NULL;
  for (size_t i = 0; i < N_DEVICES && !want_auto && !named; ++i)
    if (strcmp(device, etl_devices[i]->name) == 0)
      named = etl_devices[i];
  if (!want_auto && !named) {
    char names[256];
    size_t len = 0;
    for (size_t i = 0; i < N_DEVICES && len < sizeof names; ++i)
      len += (size_t)snprintf(names + len, sizeof names - len, "\"%s\", ", etl_devices[i]->name);
    return etl_error(ETL_ERROR_NOT_FOUND,
                     "etlContextCreate: unknown device '%s'%s (use %sor \"auto\")", device,
                     from_env, names);
  }
  etl_context *c = calloc(1, sizeof *c);
  if (!c)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory creating a context");
  c->params = prm;
  c->next_alloc_id = 1;
  etlStatus st = ETL_SUCCESS;
  if (named) {
    st = open_device(c, named);
  } else {
    for (size_t i = 0; i < N_DEVICES; ++i)
      if ((st = open_device(c, etl_devices[i])) == ETL_SUCCESS)
        break;
  }
  if (st) {
    free(c);
    return st;
  }
  pthread_mutex_init(&c->mu, NULL);
  pthread_mutex_init(&c->launch_mu, NULL);
  c->handle = etl_handle_new(ETL_HANDLE_CONTEXT, c);
  if (!c->handle) {
    c->dev->context_destroy(c);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->launch_mu);
    free(c);
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory creating a context");
  }
  *out = (etlContext)(uintptr_t)c->handle;
  return ETL_SUCCESS;
}

etlStatus etlContextDestroy(etlContext h) {
  if (!h)
    return ETL_SUCCESS;
  ETL_GET_CTX(c, h);
  etl_handle_drop(c->handle); /* from here on the handle is refused */
  while (c->programs)
    etlProgramDestroy((etlProgram)(uintptr_t)c->programs->handle);
  for (size_t i = 0; i < c->n_allocs; ++i)
    if (!c->allocs[i].host)
      etl_dev_free(c, c->allocs[i].dptr);
  free(c->allocs);
  c->dev->context_destroy(c);
  pthread_mutex_destroy(&c->mu);
  pthread_mutex_destroy(&c->launch_mu);
  free(c);
  return ETL_SUCCESS;
}

const char *etlContextDeviceName(etlContext h) {
  etl_context *c = etl_ctx_of(h);
  return c ? c->device_name : NULL;
}

int etlContextIsGpu(etlContext h) {
  etl_context *c = etl_ctx_of(h);
  return c && c->dev->is_gpu;
}
