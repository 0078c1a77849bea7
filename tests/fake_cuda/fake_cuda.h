/*===- tests/fake_cuda/fake_cuda.h - Controlling the test-only libcuda.so.1 -===
 *
 * The fake CUDA driver (fake_cuda.c, built as libcuda.so.1 in the test tree)
 * implements the Driver API calls the runtime makes (runtime/src/cuda_mini.h)
 * on host memory, as an H100 would answer them: 132 SMs, sm_90 (or the
 * compute capability etl_fake_cuda_device_cc sets, with the same limits), 1024
 * threads per block, 48 KiB static shared memory (227 KiB opted in). It
 * validates every call (initialised, a current context, handles alive, copies
 * inside an allocation, launch dimensions and shared memory within the
 * device's limits, a PTX image with a .target it can run, the ETL argument
 * block and control block of a launch) and counts them. It executes no PTX:
 * a launched kernel completes at once by default, marking the control
 * block's per-CTA progress words as a finished kernel would, and computes
 * nothing; device memory starts filled with 0xFF bytes (NaN as f32).
 *
 * Tests steer it through the functions below (dlsym them from the handle of
 * dlopen("libcuda.so.1")), or, for a separate process, through the
 * environment variable ETL_FAKE_CUDA, a comma-separated list of
 *   fail=cuSYMBOL:RESULT[:NTH]   the NTH next call (default 1) returns RESULT
 *   kernel=complete|hang|slow:MS a launched kernel's behaviour
 *   cc=NN                        the compute capability x 10 (default 90)
 * A hung kernel's progress words never move; it ends when the control
 * block's abort flag is raised (as the real kernel's CTAs do when they poll
 * it). A slow kernel bumps its progress words every ETL_FAKE_SLOW_TICK_MS
 * while the host polls, and completes after MS milliseconds, but never
 * before two queries have found it running: a test that checks "in flight"
 * right after the launch, and again in its first poll, holds however long a
 * loaded machine stalls it.
 * (tests/python/test_cuda_fake.py mirrors etl_fake_cuda_stats with ctypes:
 * change both together.)
 * ETL_FAKE_CUDA_PTXAS names ptxas: when set and non-empty every PTX image is
 * also assembled with it; otherwise the first load prints why it is not.
 * Contexts: each thread has a context stack (cuCtxPushCurrent/PopCurrent,
 * cuCtxSetCurrent replaces its top); device 0 has one primary context,
 * created by its first cuDevicePrimaryCtxRetain and freed (with what it still
 * holds) by the release of its last retain. Streams and events belong to
 * the context current when they were made. A context runs one kernel at a
 * time, on the stream it was launched on; an event recorded on that stream
 * (or the NULL stream) after the launch completes with it, and
 * cuStreamQuery of another stream does not wait for it.
 * Stream capture (fake_graph.c): between cuStreamBeginCapture and
 * cuStreamEndCapture the stream's calls (cuMemsetD8Async, cuMemcpyAsync,
 * cuLaunchKernel with its parameters' values, cuEventRecord) are recorded
 * into a graph, not run; cuGraphLaunch of its instantiation runs them in
 * order, reading memory as it then is. While a stream captures (in any
 * mode but relaxed), a synchronous or allocating call (cuMemcpyHtoD/DtoH,
 * cuMemAlloc/Free, cuMemHostAlloc/FreeHost, cuCtxSynchronize,
 * cuStreamQuery, cuEventQuery, module loads) fails with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture, and
 * work on the NULL stream fails with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
 * when the capturing stream is a blocking one; both count as violations.
 * Violations of the API's rules are printed to stderr as
 * "fake libcuda: violation: ..." and counted.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_FAKE_CUDA_H
#define ETL_FAKE_CUDA_H

#ifdef __cplusplus
extern "C" {
#endif

enum { ETL_FAKE_KERNEL_COMPLETE = 0, ETL_FAKE_KERNEL_HANG = 1, ETL_FAKE_KERNEL_SLOW = 2 };
#define ETL_FAKE_SLOW_TICK_MS 5
#define ETL_FAKE_DEVICE_NAME "ETL fake CUDA device (H100 limits)"

/// What the fake holds right now, and what it saw since the last reset.
typedef struct etl_fake_cuda_stats {
  int contexts, device_allocs, host_allocs, modules; /* alive now */
  int reclaimed;  /* resources cuCtxDestroy freed because the caller had not */
  int violations; /* calls that broke a rule of the API */
  int launches;   /* successful cuLaunchKernel */
  unsigned last_grid, last_block, last_smem; /* of the last launch (x dims) */
  unsigned long long last_stream; /* of the last launch: the CUstream's value (0 = NULL) */
  int primary_refs;               /* retains of the primary context outstanding */
  int streams, events;            /* alive now */
  unsigned long long last_memset_stream, last_memset_bytes; /* of the last one */
  /* What the last etl_main launch (direct or replayed) read as it started:
     its argument block's address and first 16 slots, the first event
     counter, the error record, the abort flag. A finished kernel sets the
     first counter to 0xFFFFFFFF, so a run that does not reset it shows. */
  unsigned long long seen_args, seen_slots[16];
  unsigned seen_event0, seen_error[8], seen_abort;
  /* stream capture and graphs (fake_graph.c) */
  int graphs, graph_execs;  /* alive now */
  int graph_launches;       /* successful cuGraphLaunch */
  int last_graph_nodes;     /* of the last cuStreamEndCapture: all nodes, */
  int last_graph_kernels;   /* kernel launches, */
  int last_graph_copies;    /* cuMemcpyAsync copies and */
  int last_graph_memsets;   /* memsets */
  char last_target[16];     /* the .target of the last module loaded ("sm_90a") */
  /* cuTensorMapEncodeTiled (fake_tma.c): its successful calls, and the
     arguments of the first ETL_FAKE_TMAPS of them, in call order */
  int tmaps;
  struct etl_fake_tmap {
    int dtype, rank, interleave, swizzle, l2, oob;
    unsigned long long addr, dims[2], stride; /* dims innermost first; stride of dim 1 */
    unsigned box[2], elem_strides[2];
  } tmap[4];
} etl_fake_cuda_stats;
#define ETL_FAKE_TMAPS 4
/* What the fake writes into an encoded map: this, then the address (the
   test finds it in the argument block the kernel got). */
#define ETL_FAKE_TMAP_MAGIC 0x70616d74656b6166ull /* "faketmap" */

/// Forget failures, kernel mode, the compute capability, call counts and
/// violations (not resources).
void etl_fake_cuda_reset(void);
/// The compute capability x 10 the device reports from now on (90, 80):
/// cuDeviceGetAttribute's major and minor and the .target it loads (sm_NN up
/// to it, sm_NNa only at it); the other limits stay the H100's.
void etl_fake_cuda_device_cc(int cc);
/// The `nth` next call (1 = the next one) of `symbol` (e.g. "cuMemAlloc_v2")
/// returns `result` and does nothing else. Returns 0, or -1 for an unknown symbol.
int etl_fake_cuda_fail(const char *symbol, int result, int nth);
/// How launched kernels behave: ETL_FAKE_KERNEL_*; `ms` for SLOW.
void etl_fake_cuda_kernel(int mode, unsigned ms);
/// Calls of `symbol` since the last reset (-1 for an unknown symbol).
int etl_fake_cuda_calls(const char *symbol);
/// The symbol of the i-th function the fake implements, NULL past the end.
const char *etl_fake_cuda_symbol(int i);
etl_fake_cuda_stats etl_fake_cuda_get_stats(void);
/// The first violation since the last reset, "" when none.
const char *etl_fake_cuda_first_violation(void);

typedef void (*etl_fake_cuda_reset_fn)(void);
typedef int (*etl_fake_cuda_fail_fn)(const char *, int, int);
typedef void (*etl_fake_cuda_kernel_fn)(int, unsigned);
typedef void (*etl_fake_cuda_device_cc_fn)(int);
typedef int (*etl_fake_cuda_calls_fn)(const char *);
typedef const char *(*etl_fake_cuda_symbol_fn)(int);
typedef etl_fake_cuda_stats (*etl_fake_cuda_get_stats_fn)(void);
typedef const char *(*etl_fake_cuda_first_violation_fn)(void);

#ifdef __cplusplus
}
#endif
#endif /* ETL_FAKE_CUDA_H */
