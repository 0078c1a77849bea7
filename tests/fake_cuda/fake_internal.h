/*===- tests/fake_cuda/fake_internal.h - Shared by the fake driver's files -===
 *
 * The Driver API's types and result codes as the fake defines them (from the
 * API's documentation, not from the runtime's cuda_mini.h), the H100 limits
 * it models, a kernel function as a loaded module describes it, the PTX
 * reader in fake_ptx.c, and the driver's state with the entry-point macros
 * that fake_cuda.c (devices, contexts, modules, memory, launches) and
 * fake_stream.c (the context stack, primary contexts, streams, events)
 * share. Everything here has hidden visibility: only EXPORT symbols leave
 * the library.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_FAKE_INTERNAL_H
#define ETL_FAKE_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "fake_cuda.h"

#define EXPORT __attribute__((visibility("default")))

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
  ILLEGAL_STATE = 401,
  NOT_FOUND = 500,
  NOT_READY = 600,
  ILLEGAL_ADDRESS = 700,
  LAUNCH_TIMEOUT = 702,
  CONTEXT_IS_DESTROYED = 709,
  LAUNCH_FAILED = 719,
  STREAM_CAPTURE_UNSUPPORTED = 900,
  STREAM_CAPTURE_INVALIDATED = 901,
  STREAM_CAPTURE_IMPLICIT = 906,
  CAPTURED_EVENT = 907,
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
  X(cuCtxGetCurrent)                                                                               \
  X(cuCtxGetDevice)                                                                                \
  X(cuCtxPushCurrent_v2)                                                                           \
  X(cuCtxPopCurrent_v2)                                                                            \
  X(cuDevicePrimaryCtxRetain)                                                                      \
  X(cuDevicePrimaryCtxRelease_v2)                                                                  \
  X(cuModuleLoadDataEx)                                                                            \
  X(cuModuleUnload)                                                                                \
  X(cuModuleGetFunction)                                                                           \
  X(cuFuncSetAttribute)                                                                            \
  X(cuMemAlloc_v2)                                                                                 \
  X(cuMemFree_v2)                                                                                  \
  X(cuMemcpyHtoD_v2)                                                                               \
  X(cuMemcpyDtoH_v2)                                                                               \
  X(cuMemsetD8Async)                                                                               \
  X(cuMemcpyAsync)                                                                                 \
  X(cuMemHostAlloc)                                                                                \
  X(cuMemFreeHost)                                                                                 \
  X(cuMemHostGetDevicePointer_v2)                                                                  \
  X(cuLaunchKernel)                                                                                \
  X(cuStreamQuery)                                                                                 \
  X(cuStreamCreate)                                                                                \
  X(cuStreamDestroy_v2)                                                                            \
  X(cuStreamIsCapturing)                                                                           \
  X(cuStreamBeginCapture_v2)                                                                       \
  X(cuStreamEndCapture)                                                                            \
  X(cuGraphInstantiateWithFlags)                                                                   \
  X(cuGraphLaunch)                                                                                 \
  X(cuGraphDestroy)                                                                                \
  X(cuGraphExecDestroy)                                                                            \
  X(cuEventCreate)                                                                                 \
  X(cuEventDestroy_v2)                                                                             \
  X(cuEventRecord)                                                                                 \
  X(cuEventQuery)                                                                                  \
  X(cuGetErrorString)                                                                              \
  X(cuTensorMapEncodeTiled)

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
   or INVALID_PTX / UNSUPPORTED_PTX_VERSION with the reason in `log`; on
   SUCCESS `target` holds the image's .target ("sm_90a"). */
CUresult fake_read_ptx(const char *ptx, func *funcs, int *nfuncs, char *log, size_t cap,
                       char target[16]);
/* The device's compute capability x 10 (etl_fake_cuda_device_cc): what
   cuDeviceGetAttribute reports and which .target an image may have. */
extern int fake_cc;

/*===-- The driver's state (fake_cuda.c) -----------------------------------===*/

typedef struct fctx fctx;
typedef struct mem {
  struct mem *next;
  fctx *ctx;
  CUdeviceptr dev; /* device view; 0 for host memory that is not mapped */
  size_t bytes;
  unsigned char *host;
  int is_host; /* cuMemHostAlloc */
} mem;

typedef struct module {
  struct module *next;
  fctx *ctx;
  int nfuncs;
  func funcs[MAX_FUNCS];
} module;

/* cuStreamBeginCapture .. cuStreamEndCapture (fake_graph.c): the calls made
   on a capturing stream, replayed in order by cuGraphLaunch */
typedef struct gnode {
  enum { NODE_MEMSET, NODE_MEMCPY, NODE_KERNEL } kind;
  CUdeviceptr dst, src; /* memset, memcpy */
  size_t n;
  unsigned char value;
  func *f; /* kernel: parameters by value, as cuLaunchKernel copies them */
  unsigned grid, block[3], smem;
  int nparams;
  uint64_t params[8];
} gnode;
typedef struct fgraph {
  struct fgraph *next;
  fctx *ctx;
  int exec; /* a cuGraphInstantiate result, else a captured graph */
  int n, cap;
  gnode *nodes;
} fgraph;

/* cuStreamCreate / cuEventCreate (fake_stream.c) */
typedef struct fstream {
  struct fstream *next;
  fctx *ctx;
  unsigned flags;   /* CU_STREAM_NON_BLOCKING = 1 */
  fgraph *capture;  /* while capturing: the graph being recorded */
  int invalidated;  /* the capture broke: cuStreamEndCapture fails */
  int relaxed_mode; /* captured with CU_STREAM_CAPTURE_MODE_RELAXED */
} fstream;
typedef struct fevent {
  struct fevent *next;
  fctx *ctx;
  unsigned long long launch; /* the launch it was recorded after; 0 = none */
  int captured;              /* last recorded on a capturing stream */
} fevent;

struct fctx {
  fctx *next;
  int primary_refs; /* the primary context: retains outstanding */
  /* the kernel in flight: one per context, on `stream` (NULL = the NULL
     stream), numbered `launch` */
  int running, mode, fault;
  int not_ready; /* queries a slow kernel has answered NOT_READY */
  unsigned slow_ms, grid;
  int64_t start_ms, last_tick_ms;
  volatile uint32_t *abort_flag, *progress;
  uint32_t *events; /* the launch's event counters (a finished kernel changes them) */
  const uint32_t *queue_offs;
  fstream *stream;
  unsigned long long launch;
};

enum { CTX_STACK_DEPTH = 64 };
extern pthread_mutex_t mu;
extern __thread fctx *current; /* the top of the calling thread's context stack */
extern __thread fctx *ctx_stack[CTX_STACK_DEPTH]; /* below it */
extern __thread int ctx_depth;
extern int inited, env_read;
extern fctx *contexts;
extern mem *mems;
extern module *modules;
extern int calls[F_COUNT], fail_result[F_COUNT], fail_nth[F_COUNT];
extern etl_fake_cuda_stats stats;

int64_t now_ms(void);
/* A call broke a rule of the API: print, count, return what CUDA returns. */
__attribute__((format(printf, 2, 3))) CUresult violation(CUresult r, const char *fmt, ...);
void read_env(void);
int ctx_alive(const fctx *c);
void unlink_mem(mem *m);
/* Free a context and what it still holds (counted as reclaimed). */
void ctx_free(fctx *c);
/* The kernel in flight on `c`: finish it (as a complete one when
   `completed`); poll it (NOT_READY, SUCCESS or the fault). */
void finish(fctx *c, int completed);
CUresult query(fctx *c);
/* fake_stream.c: drop the streams and events of a context being freed. */
void streams_reclaim(fctx *c);
/* A stream handle of the current context (NULL is the NULL stream): 1, or 0. */
int stream_ok(const void *s);
/* fake_cuda.c: the host memory behind [dev, dev + n) of one allocation, or NULL. */
void *host_view(CUdeviceptr dev, size_t n);
/* fake_cuda.c: run a validated launch now (cuLaunchKernel, or a replayed
   kernel node) with its parameters' values. */
void start_kernel(fctx *c, func *f, unsigned grid, unsigned block, unsigned smem, void *stream,
                  const uint64_t *params);
/* fake_cuda.c: whether `f` is a function of a loaded module of context `c`. */
int func_loaded(const func *f, const fctx *c);

/* fake_graph.c: stream capture. captures_active counts streams capturing
   in a mode that forbids unsafe calls (not RELAXED). */
extern int captures_active;
/* A call that synchronises with the host, or allocates, while a stream
   captures: refused as the driver does (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED),
   invalidating the captures. */
CUresult capture_refuse(const char *fn);
/* A stream-ordered call on `s`: 1 when s captures (the caller records
   its node and returns SUCCESS); -1 when it would break a capture (the
   NULL stream while a blocking stream captures: *r holds the error);
   0: run it now. */
int capture_route(const char *fn, void *s, CUresult *r);
/* The node appended to the graph `s` is capturing (NULL when out of memory). */
gnode *capture_node(void *s);
void graphs_reclaim(fctx *c);
/* fake_stream.c: the stream behind a handle (NULL for the NULL stream or a
   dead handle); the live streams one by one (stream_next(NULL) is the first). */
fstream *stream_of(const void *s);
fstream *stream_next(const fstream *s);

/* Every entry point that a capture forbids (synchronous, allocating). */
#define NO_CAPTURE()                                                                               \
  if (captures_active)                                                                             \
  RETURN(capture_refuse(fn_))

/* Every entry point: count the call, then an injected failure if due. */
#define ENTER(name)                                                                                \
  pthread_mutex_lock(&mu);                                                                         \
  if (!env_read)                                                                                   \
    read_env();                                                                                    \
  calls[F_##name]++;                                                                               \
  if (fail_nth[F_##name] && --fail_nth[F_##name] == 0) {                                           \
    CUresult injected_ = fail_result[F_##name];                                                    \
    pthread_mutex_unlock(&mu);                                                                     \
    return injected_;                                                                              \
  }                                                                                                \
  const char *fn_ = #name;                                                                         \
  (void)fn_
#define RETURN(r)                                                                                  \
  do {                                                                                             \
    CUresult r_ = (r);                                                                             \
    pthread_mutex_unlock(&mu);                                                                     \
    return r_;                                                                                     \
  } while (0)
#define NEED_INIT()                                                                                \
  if (!inited)                                                                                     \
  RETURN(violation(NOT_INITIALIZED, "%s before cuInit", fn_))
#define NEED_CTX()                                                                                 \
  NEED_INIT();                                                                                     \
  if (!ctx_alive(current))                                                                         \
  RETURN(violation(current ? CONTEXT_IS_DESTROYED : INVALID_CONTEXT,                               \
                   "%s with no current context%s", fn_, current ? " (it was destroyed)" : ""))

#endif /* ETL_FAKE_INTERNAL_H */
