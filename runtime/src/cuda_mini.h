/*===- src/cuda_mini.h - The slice of the CUDA Driver API the runtime uses --===
 *
 * Declared here instead of including cuda.h, so the runtime builds where no
 * CUDA toolkit is installed. ETL_CUDA_FUNCS lists every function with its
 * exported symbol; cuda.c resolves them with dlsym after dlopen.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_CUDA_MINI_H
#define ETL_CUDA_MINI_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult; /* 0 = CUDA_SUCCESS */
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr;
typedef int CUjit_option;

#define ETL_CUDA_SUCCESS 0
#define ETL_CUDA_ERROR_NOT_READY 600
#define ETL_CUDA_ERROR_NO_DEVICE 100
#define ETL_CU_STREAM_CAPTURE_STATUS_NONE 0
#define ETL_CU_STREAM_CAPTURE_STATUS_ACTIVE 1
#define ETL_CU_STREAM_CAPTURE_STATUS_INVALIDATED 2
#define ETL_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define ETL_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define ETL_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define ETL_CU_JIT_ERROR_LOG_BUFFER 5
#define ETL_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define ETL_CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define ETL_CU_EVENT_DISABLE_TIMING 0x02
#define ETL_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN 97
#define ETL_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8

/* X(field, symbol, return, parameters) */
#define ETL_CUDA_FUNCS(X)                                                                          \
  X(Init, "cuInit", CUresult, (unsigned flags))                                                    \
  X(DeviceGetCount, "cuDeviceGetCount", CUresult, (int *count))                                    \
  X(DeviceGet, "cuDeviceGet", CUresult, (CUdevice * dev, int ordinal))                             \
  X(DeviceGetName, "cuDeviceGetName", CUresult, (char *name, int len, CUdevice dev))               \
  X(DeviceGetAttribute, "cuDeviceGetAttribute", CUresult, (int *v, int attr, CUdevice dev))        \
  X(CtxGetCurrent, "cuCtxGetCurrent", CUresult, (CUcontext * c))                                   \
  X(CtxGetDevice, "cuCtxGetDevice", CUresult, (CUdevice * dev))                                    \
  X(CtxPushCurrent, "cuCtxPushCurrent_v2", CUresult, (CUcontext c))                                \
  X(CtxPopCurrent, "cuCtxPopCurrent_v2", CUresult, (CUcontext * c))                                \
  X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult, (CUcontext * c, CUdevice dev))   \
  X(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUresult, (CUdevice dev))             \
  X(ModuleLoadDataEx, "cuModuleLoadDataEx", CUresult,                                              \
    (CUmodule * m, const void *image, unsigned n, CUjit_option *opts, void **vals))                \
  X(ModuleUnload, "cuModuleUnload", CUresult, (CUmodule m))                                        \
  X(ModuleGetFunction, "cuModuleGetFunction", CUresult,                                            \
    (CUfunction * f, CUmodule m, const char *name))                                                \
  X(FuncSetAttribute, "cuFuncSetAttribute", CUresult, (CUfunction f, int attr, int value))         \
  X(OccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor",      \
    CUresult, (int *blocks, CUfunction f, int block_size, size_t dynamic_smem))                    \
  X(MemAlloc, "cuMemAlloc_v2", CUresult, (CUdeviceptr * p, size_t bytes))                          \
  X(MemFree, "cuMemFree_v2", CUresult, (CUdeviceptr p))                                            \
  X(MemcpyHtoD, "cuMemcpyHtoD_v2", CUresult, (CUdeviceptr dst, const void *src, size_t n))         \
  X(MemcpyDtoH, "cuMemcpyDtoH_v2", CUresult, (void *dst, CUdeviceptr src, size_t n))               \
  X(MemsetD8Async, "cuMemsetD8Async", CUresult,                                                    \
    (CUdeviceptr dst, unsigned char v, size_t n, CUstream s))                                      \
  X(MemcpyAsync, "cuMemcpyAsync", CUresult,                                                        \
    (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s))                                      \
  X(MemHostAlloc, "cuMemHostAlloc", CUresult, (void **p, size_t bytes, unsigned flags))            \
  X(MemFreeHost, "cuMemFreeHost", CUresult, (void *p))                                             \
  X(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", CUresult,                             \
    (CUdeviceptr * d, void *p, unsigned flags))                                                    \
  X(LaunchKernel, "cuLaunchKernel", CUresult,                                                      \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,   \
     unsigned smem, CUstream s, void **params, void **extra))                                      \
  X(StreamQuery, "cuStreamQuery", CUresult, (CUstream s))                                          \
  X(StreamIsCapturing, "cuStreamIsCapturing", CUresult, (CUstream s, int *status))                 \
  X(EventCreate, "cuEventCreate", CUresult, (CUevent * e, unsigned flags))                         \
  X(EventDestroy, "cuEventDestroy_v2", CUresult, (CUevent e))                                      \
  X(EventRecord, "cuEventRecord", CUresult, (CUevent e, CUstream s))                               \
  X(EventQuery, "cuEventQuery", CUresult, (CUevent e))                                             \
  X(GetErrorString, "cuGetErrorString", CUresult, (CUresult e, const char **s))

/* Resolved when present (NULL otherwise: a driver older than CUDA 12 has no
 * tensor maps; an sm_90a program with TMA copies then fails to run). */
#define ETL_CUDA_OPTIONAL_FUNCS(X)                                                                 \
  X(TensorMapEncodeTiled, "cuTensorMapEncodeTiled", CUresult,                                      \
    (void *map, int dtype, unsigned rank, void *addr, const uint64_t *dims,                        \
     const uint64_t *strides, const unsigned *box, const unsigned *elem_strides, int interleave,   \
     int swizzle, int l2, int oob))

/* CUtensorMapDataType, and the other enums of cuTensorMapEncodeTiled */
#define ETL_CU_TENSOR_MAP_DATA_TYPE_UINT8 0
#define ETL_CU_TENSOR_MAP_DATA_TYPE_UINT16 1
#define ETL_CU_TENSOR_MAP_DATA_TYPE_UINT32 2
#define ETL_CU_TENSOR_MAP_DATA_TYPE_INT32 3
#define ETL_CU_TENSOR_MAP_DATA_TYPE_INT64 5
#define ETL_CU_TENSOR_MAP_DATA_TYPE_FLOAT16 6
#define ETL_CU_TENSOR_MAP_DATA_TYPE_FLOAT32 7
#define ETL_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 9
#define ETL_CU_TENSOR_MAP_INTERLEAVE_NONE 0
#define ETL_CU_TENSOR_MAP_SWIZZLE_NONE 0
#define ETL_CU_TENSOR_MAP_L2_PROMOTION_L2_128B 2
#define ETL_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE 0 /* out-of-bounds elements are zeros */

#endif /* ETL_CUDA_MINI_H */
