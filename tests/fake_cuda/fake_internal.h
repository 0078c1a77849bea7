/*===- tests/fake_cuda/fake_internal.h - Shared by the fake driver's files -===
 *
 * The Driver API's types and result codes as the fake defines them (from the
 * API's documentation, not from the runtime's cuda_mini.h), the H100 limits
 * it models, a kernel function as a loaded module describes it, and the PTX
 * reader in fake_ptx.c.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_FAKE_INTERNAL_H
#define ETL_FAKE_INTERNAL_H

#include <stddef.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
enum {
  SUCCESS = 0,
  INVALID_VALUE = 1,
  OUT_OF_MEMORY = 2,
  NOT_INITIALIZED = 3,
  INVALID_DEVICE = 101,
  INVALID_CONTEXT = 201,
  INVALID_PTX = 218,
  UNSUPPORTED_PTX_VERSION = 222,
  INVALID_HANDLE = 400,
  NOT_FOUND = 500,
  NOT_READY = 600,
  ILLEGAL_ADDRESS = 700,
  LAUNCH_TIMEOUT = 702,
  CONTEXT_IS_DESTROYED = 709,
  LAUNCH_FAILED = 719,
  UNKNOWN = 999
};

/* H100 SXM limits */
enum {
  H100_SMS = 132,
  MAX_THREADS = 1024,
  STATIC_SMEM = 48 * 1024,
  OPTIN_SMEM = 232448,
  MAX_FUNCS = 8,
  DEVICE_BYTES_GB = 80
};

#define FAKE_FUNCS(X)                                                                              \
  X(cuInit)                                                                                        \
  X(cuDeviceGetCount)                                                                              \
  X(cuDeviceGet)                                                                                   \
  X(cuDeviceGetName)                                                                               \
  X(cuDeviceGetAttribute)                                                                          \
  X(cuCtxCreate_v2)                                                                                \
  X(cuCtxDestroy_v2)                                                                               \
  X(cuCtxSetCurrent)                                                                               \
  X(cuCtxSynchronize)                                                                              \
  X(cuModuleLoadDataEx)                                                                            \
  X(cuModuleUnload)                                                                                \
  X(cuModuleGetFunction)                                                                           \
  X(cuFuncSetAttribute)                                                                            \
  X(cuMemAlloc_v2)                                                                                 \
  X(cuMemFree_v2)                                                                                  \
  X(cuMemcpyHtoD_v2)                                                                               \
  X(cuMemcpyDtoH_v2)                                                                               \
  X(cuMemHostAlloc)                                                                                \
  X(cuMemFreeHost)                                                                                 \
  X(cuMemHostGetDevicePointer_v2)                                                                  \
  X(cuLaunchKernel)                                                                                \
  X(cuStreamQuery)                                                                                 \
  X(cuGetErrorString)

enum {
#define X(name) F_##name,
  FAKE_FUNCS(X)
#undef X
      F_COUNT
};
static const char *const fn_names[] = {
#define X(name) #name,
    FAKE_FUNCS(X)
#undef X
};

typedef struct func {
  char name[128];
  int nparams;
  unsigned maxntid; /* 0 = not declared */
  unsigned static_smem, max_dynamic_smem;
} func;

/* Reads the entries of a PTX image into funcs[0 .. *nfuncs) (at most
   MAX_FUNCS) and checks what a driver checks before it runs one: .version,
   .target, .address_size, static shared memory, and, when
   ETL_FAKE_CUDA_PTXAS names ptxas, that the image assembles. Returns SUCCESS
   or INVALID_PTX / UNSUPPORTED_PTX_VERSION with the reason in `log`. */
CUresult fake_read_ptx(const char *ptx, func *funcs, int *nfuncs, char *log, size_t cap);

#endif /* ETL_FAKE_INTERNAL_H */
