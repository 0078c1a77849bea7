/*===- src/error.c - Status names and the per-thread last-error message ----===
 *
 * Every failing API call records a detailed message here (thread-local) and
 * returns its status; etlGetLastErrorMessage() reads it back.
 *===----------------------------------------------------------------------===*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define ETL_STATUS_LIST(X)                                                                         \
  X(ETL_SUCCESS, "no error")                                                                       \
  X(ETL_ERROR_INVALID_VALUE, "invalid argument")                                                   \
  X(ETL_ERROR_INVALID_HANDLE, "invalid or destroyed handle")                                       \
  X(ETL_ERROR_NOT_FOUND, "name not found")                                                         \
  X(ETL_ERROR_INVALID_ARTIFACT, "invalid artifact")                                                \
  X(ETL_ERROR_UNSUPPORTED_VERSION, "unsupported artifact version")                                 \
  X(ETL_ERROR_NO_DEVICE, "no usable device")                                                       \
  X(ETL_ERROR_NO_CUDA_DRIVER, "CUDA driver (libcuda.so.1) not available")                          \
  X(ETL_ERROR_OUT_OF_MEMORY, "out of memory")                                                      \
  X(ETL_ERROR_BINDING, "binding violates the program's shapes or constraints")                     \
  X(ETL_ERROR_UNBOUND, "a dimension or tensor is not bound")                                       \
  X(ETL_ERROR_LAUNCH_FAILED, "kernel load or launch failed")                                       \
  X(ETL_ERROR_MEMORY_VIOLATION, "out-of-bounds memory access")                                     \
  X(ETL_ERROR_TIMEOUT, "watchdog: no progress (deadlock?)")                                        \
  X(ETL_ERROR_CUDA, "CUDA driver error")                                                           \
  X(ETL_ERROR_IO, "a file could not be written")                                                   \
  X(ETL_ERROR_RACE, "sim: unordered accesses (tasks not ordered by events, or a cp.async not "     \
                    "waited for)")                                                                 \
  X(ETL_ERROR_NOT_READY, "the run is still in flight")                                             \
  X(ETL_ERROR_DIVERGENCE, "sim: a warp's lanes diverged at a warp shuffle")

static _Thread_local char tls_message[4096];

const char *etlGetErrorName(etlStatus status) {
  switch (status) {
#define ETL_NAME_CASE(s, d)                                                                        \
  case s:                                                                                          \
    return #s;
    ETL_STATUS_LIST(ETL_NAME_CASE)
#undef ETL_NAME_CASE
  }
  return "ETL_ERROR_UNKNOWN";
}

const char *etlGetErrorString(etlStatus status) {
  switch (status) {
#define ETL_DESC_CASE(s, d)                                                                        \
  case s:                                                                                          \
    return d;
    ETL_STATUS_LIST(ETL_DESC_CASE)
#undef ETL_DESC_CASE
  }
  return "unknown status";
}

const char *etlGetLastErrorMessage(void) { return tls_message; }

int etlVersion(void) {
  return ETL_VERSION_MAJOR * 10000 + ETL_VERSION_MINOR * 100 + ETL_VERSION_PATCH;
}

uint32_t etlArtifactVersion(void) { return ETL_ARTIFACT_VERSION; }

etlStatus etl_error(etlStatus st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tls_message, sizeof tls_message, fmt, ap);
  va_end(ap);
  return st;
}

etlStatus etl_error_str(etlStatus st, const char *msg) {
  snprintf(tls_message, sizeof tls_message, "%s", msg ? msg : "");
  return st;
}
