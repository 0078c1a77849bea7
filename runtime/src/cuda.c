/*===- src/cuda.c - The CUDA device through the Driver API ------------------===
 *
 * The device table etl_device_cuda (device.h).
 *
 * libcuda.so.1 is dlopen'ed when a "cuda" or "auto" context is created and
 * every function is resolved through the ETL_CUDA_FUNCS table (cuda_mini.h),
 * so the runtime builds and runs where no driver is installed ("cuda" then
 * fails with ETL_ERROR_NO_CUDA_DRIVER; "auto" falls back to sim).
 *
 * Contexts: the runtime creates none. It runs in the CUDA context current
 * on the creating thread when that one is on the requested device (the
 * caller's, e.g. PyTorch's), else in the device's primary context, retained
 * for the etl context's life. Every entry pushes that context and pops it
 * before returning (enter/leave), so the caller's current context is the
 * same afterwards, on any thread.
 *
 * A launch is one persistent grid: num_ctas = SM count, threads_per_cta
 * threads, the artifact's smem_bytes of dynamic shared memory (the kernel's
 * one `extern .shared` array; loading a program opts the function in up to
 * the device's maximum and checks with the occupancy API that every
 * persistent CTA is resident at once, since the megakernel's CTAs wait on
 * each other and deadlock otherwise), one parameter (the device pointer of
 * the argument block), on the
 * caller's stream, followed by an event recorded on that stream, so waiting
 * for the run waits for this kernel and not for work queued after it. On a
 * stream that captures a CUDA graph (cuStreamIsCapturing) the launch is
 * recorded and no event follows it: nothing is in flight. The
 * abort flag is host-mapped memory. The watchdog: while the host waits for
 * or queries the run, it polls the event and the per-CTA task counters the
 * kernel writes into the same mapped control block, and raises the abort
 * flag once no task has finished for watchdog_ms.
 *===----------------------------------------------------------------------===*/
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_mini.h"
#include "device.h"

typedef struct etl_cuda_state {
  void *lib;
#define ETL_CUDA_FIELD(field, sym, ret, params) ret(*field) params;
  ETL_CUDA_FUNCS(ETL_CUDA_FIELD)
  ETL_CUDA_OPTIONAL_FUNCS(ETL_CUDA_FIELD)
#undef ETL_CUDA_FIELD
  CUdevice dev;
  CUcontext cu;
  int retained;   /* cu is the device's primary context, retained by us */
  int cc;         /* major * 10 + minor */
  int sms;        /* multiprocessors */
  int smem_optin; /* dynamic shared memory a block may opt in to, bytes */
  CUevent done;   /* recorded after each launch */
  /* the launch in flight (one per context, run.c) and its watchdog */
  CUstream stream;
  int recorded; /* `done` follows the launch; else poll the stream */
  int64_t last_ms;
  uint64_t seen;
  int timed_out;
} etl_cuda_state;

/* A loaded program: its module and kernel. */
typedef struct cuda_program {
  CUmodule module;
  CUfunction function;
  int tma; /* the loaded PTX is an sm_NNa target's: its TMA copies read tensor maps */
} cuda_program;

static const char *cu_err(etl_cuda_state *s, CUresult r) {
  const char *str = NULL;
  if (s && s->GetErrorString && s->GetErrorString(r, &str) == ETL_CUDA_SUCCESS && str)
    return str;
  return "unknown CUDA error";
}

#define CU_FAIL(s, r, what)                                                                        \
  etl_error(ETL_ERROR_CUDA, "cuda: %s failed: %s (CUresult %d)", what, cu_err(s, r), (int)(r))

/* The state whose context this thread holds pushed (cuda_hold), or NULL:
 * enter and leave are then no-ops, so a run's calls share one push/pop. */
static __thread etl_cuda_state *held;

/* Make the etl context's CUDA context current for one entry point. */
static etlStatus enter(etl_cuda_state *s) {
  if (held == s)
    return ETL_SUCCESS;
  CUresult r = s->CtxPushCurrent(s->cu);
  return r ? CU_FAIL(s, r, "cuCtxPushCurrent") : ETL_SUCCESS;
}

/* Give the caller back its current context: `st` when that works or `st`
 * already reports a failure, else the failure of cuCtxPopCurrent (our
 * context then stays current, and a caller undoing what it did may still
 * use it). */
static etlStatus leave(etl_cuda_state *s, etlStatus st) {
  if (held == s)
    return st;
  CUcontext popped = NULL;
  CUresult r = s->CtxPopCurrent(&popped);
  if (r && !st)
    st = CU_FAIL(s, r, "cuCtxPopCurrent (the caller's CUDA context may not be current)");
  return st;
}

static etlStatus cuda_context_create(etl_context *ctx) {
  etl_cuda_state *s = calloc(1, sizeof *s);
  if (!s)
    return etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory");
  s->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!s->lib) {
    const char *e = dlerror();
    free(s);
    return etl_error(ETL_ERROR_NO_CUDA_DRIVER,
                     "cuda: cannot load the CUDA driver libcuda.so.1 (%s); is an NVIDIA driver "
                     "installed? Use device \"sim\" to run on the CPU",
                     e ? e : "not found");
  }
#define ETL_CUDA_RESOLVE(field, sym, ret, params)                                                  \
  {                                                                                                \
    void *fp = dlsym(s->lib, sym);                                                                 \
    if (!fp) {                                                                                     \
      dlclose(s->lib);                                                                             \
      free(s);                                                                                     \
      return etl_error(ETL_ERROR_NO_CUDA_DRIVER, "cuda: libcuda.so.1 lacks %s (driver too old?)",  \
                       sym);                                                                       \
    }                                                                                              \
    memcpy(&s->field, &fp, sizeof fp);                                                             \
  }
  ETL_CUDA_FUNCS(ETL_CUDA_RESOLVE)
#undef ETL_CUDA_RESOLVE
#define ETL_CUDA_RESOLVE_OPTIONAL(field, sym, ret, params)                                         \
  {                                                                                                \
    void *fp = dlsym(s->lib, sym);                                                                 \
    memcpy(&s->field, &fp, sizeof fp);                                                             \
  }
  ETL_CUDA_OPTIONAL_FUNCS(ETL_CUDA_RESOLVE_OPTIONAL)
#undef ETL_CUDA_RESOLVE_OPTIONAL
  etlStatus st = ETL_SUCCESS;
  int pushed = 0;
  void *abort_host = NULL;
  CUresult r = s->Init(0);
  int count = 0;
  if (r == ETL_CUDA_SUCCESS)
    r = s->DeviceGetCount(&count);
  if (r != ETL_CUDA_SUCCESS || count == 0) {
    st = etl_error(ETL_ERROR_NO_DEVICE, "cuda: no CUDA device available (%s)",
                   r != ETL_CUDA_SUCCESS ? cu_err(s, r) : "0 devices");
    goto fail;
  }
  if (ctx->params.cuda_device < 0 || ctx->params.cuda_device >= count) {
    st = etl_error(ETL_ERROR_NO_DEVICE, "cuda: device %d requested, %d present",
                   ctx->params.cuda_device, count);
    goto fail;
  }
  int sms = 0, major = 0, minor = 0;
  char name[200] = "";
  if ((r = s->DeviceGet(&s->dev, ctx->params.cuda_device)) ||
      (r = s->DeviceGetName(name, (int)sizeof name, s->dev)) ||
      (r = s->DeviceGetAttribute(&sms, ETL_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, s->dev)) ||
      (r = s->DeviceGetAttribute(&major, ETL_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                 s->dev)) ||
      (r = s->DeviceGetAttribute(&minor, ETL_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                 s->dev)) ||
      (r = s->DeviceGetAttribute(
           &s->smem_optin, ETL_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, s->dev))) {
    st = CU_FAIL(s, r, "querying the device");
    goto fail;
  }
  /* the caller's current context when it is on this device, else the
     device's primary context */
  CUcontext cur = NULL;
  CUdevice cur_dev = -1;
  if ((r = s->CtxGetCurrent(&cur)) || (cur && (r = s->CtxGetDevice(&cur_dev)))) {
    st = CU_FAIL(s, r, "reading the calling thread's current context");
    goto fail;
  }
  if (cur && cur_dev == s->dev) {
    s->cu = cur;
  } else if ((r = s->DevicePrimaryCtxRetain(&s->cu, s->dev))) {
    st = CU_FAIL(s, r, "cuDevicePrimaryCtxRetain");
    goto fail;
  } else {
    s->retained = 1;
  }
  if ((st = enter(s)))
    goto fail;
  pushed = 1;
  /* the control block (etl_abi.h): abort flag, then a progress word per CTA */
  uint32_t ctas = sms > 0 ? (uint32_t)sms : 1;
  size_t control = ETL_CONTROL_BYTES(ctas);
  CUdeviceptr abort_dev = 0;
  if ((r = s->MemHostAlloc(&abort_host, control, ETL_CU_MEMHOSTALLOC_DEVICEMAP)) ||
      (r = s->MemHostGetDevicePointer(&abort_dev, abort_host, 0))) {
    st = CU_FAIL(s, r, "allocating the mapped abort flag");
    goto fail;
  }
  if ((r = s->EventCreate(&s->done, ETL_CU_EVENT_DISABLE_TIMING))) {
    st = CU_FAIL(s, r, "cuEventCreate");
    goto fail;
  }
  if ((st = leave(s, ETL_SUCCESS)))
    goto fail;
  memset(abort_host, 0, control);
  s->cc = major * 10 + minor;
  s->sms = sms;
  ctx->state = s;
  ctx->abort_host = abort_host;
  ctx->abort_dptr = abort_dev;
  ctx->num_ctas = ctas;
  snprintf(ctx->device_name, sizeof ctx->device_name, "%s (sm_%d, %d SMs)", name, s->cc, sms);
  return ETL_SUCCESS;
fail: /* undo in reverse; a failed pop left our context current for this */
  if (s->done)
    s->EventDestroy(s->done);
  if (abort_host)
    s->MemFreeHost(abort_host);
  if (pushed)
    leave(s, st);
  if (s->retained)
    s->DevicePrimaryCtxRelease(s->dev);
  dlclose(s->lib);
  free(s);
  return st;
}

static void cuda_context_destroy(etl_context *ctx) {
  etl_cuda_state *s = ctx->state;
  if (!s)
    return;
  if (enter(s) == ETL_SUCCESS) { /* else the primary's release reclaims them */
    if (ctx->abort_host)
      s->MemFreeHost(ctx->abort_host);
    if (s->done)
      s->EventDestroy(s->done);
    leave(s, ETL_SUCCESS);
  }
  if (s->retained)
    s->DevicePrimaryCtxRelease(s->dev);
  dlclose(s->lib);
  free(s);
  ctx->state = NULL;
  ctx->abort_host = NULL;
}

static etlStatus cuda_alloc(etl_context *ctx, size_t bytes, uint64_t *dptr) {
  etl_cuda_state *s = ctx->state;
  etlStatus st = enter(s);
  if (st)
    return st;
  CUdeviceptr d = 0;
  CUresult r = s->MemAlloc(&d, bytes ? bytes : 1);
  if (r)
    return leave(s, etl_error(ETL_ERROR_OUT_OF_MEMORY,
                              "cuda: cuMemAlloc of %zu bytes failed: %s (CUresult %d)", bytes,
                              cu_err(s, r), r));
  if ((st = leave(s, ETL_SUCCESS))) { /* our context is still current: undo, pop again */
    s->MemFree(d);
    return leave(s, st);
  }
  *dptr = d;
  return ETL_SUCCESS;
}

static void cuda_free(etl_context *ctx, uint64_t dptr) {
  etl_cuda_state *s = ctx->state;
  if (enter(s) == ETL_SUCCESS) { /* a free has no status to report */
    s->MemFree(dptr);
    leave(s, ETL_SUCCESS);
  }
}

static etlStatus cuda_htod(etl_context *ctx, uint64_t dst, const void *src, size_t n) {
  etl_cuda_state *s = ctx->state;
  etlStatus st = enter(s);
  if (st)
    return st;
  CUresult r = s->MemcpyHtoD(dst, src, n);
  return leave(s, r ? CU_FAIL(s, r, "cuMemcpyHtoD") : ETL_SUCCESS);
}

static etlStatus cuda_zero(etl_context *ctx, uint64_t dst, size_t n, void *stream) {
  etl_cuda_state *s = ctx->state;
  etlStatus st = enter(s);
  if (st)
    return st;
  CUresult r = s->MemsetD8Async(dst, 0, n, (CUstream)stream);
  return leave(s, r ? CU_FAIL(s, r, "cuMemsetD8Async") : ETL_SUCCESS);
}

static etlStatus cuda_copy(etl_context *ctx, uint64_t dst, uint64_t src, size_t n, void *stream) {
  etl_cuda_state *s = ctx->state;
  etlStatus st = enter(s);
  if (st)
    return st;
  CUresult r = s->MemcpyAsync(dst, src, n, (CUstream)stream);
  return leave(s, r ? CU_FAIL(s, r, "cuMemcpyAsync (resetting the run's state)") : ETL_SUCCESS);
}

static etlStatus cuda_capturing(etl_context *ctx, void *stream, int *capturing) {
  etl_cuda_state *s = ctx->state;
  etlStatus st = enter(s);
  if (st)
    return st;
  int status = ETL_CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult r = s->StreamIsCapturing((CUstream)stream, &status);
  if (r)
    st = CU_FAIL(s, r, "cuStreamIsCapturing (is the stream one of this context's?)");
  else if (status == ETL_CU_STREAM_CAPTURE_STATUS_INVALIDATED)
    st = etl_error(ETL_ERROR_CUDA,
                   "cuda: the CUDA graph capture on stream %p was invalidated by an earlier "
                   "call; end it (cuStreamEndCapture) and capture again; nothing was launched",
                   stream);
  *capturing = status == ETL_CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return leave(s, st);
}

/* Keep our context pushed on this thread across a run's calls. */
static etlStatus cuda_hold(etl_context *ctx, int on) {
  etl_cuda_state *s = ctx->state;
  if (on) {
    etlStatus st = held == s ? ETL_SUCCESS : enter(s);
    if (!st)
      held = s;
    return st;
  }
  if (held != s)
    return ETL_SUCCESS;
  held = NULL;
  return leave(s, ETL_SUCCESS);
}

static etlStatus cuda_dtoh(etl_context *ctx, void *dst, uint64_t src, size_t n) {
  etl_cuda_state *s = ctx->state;
  etlStatus st = enter(s);
  if (st)
    return st;
  CUresult r = s->MemcpyDtoH(dst, src, n);
  return leave(s, r ? CU_FAIL(s, r, "cuMemcpyDtoH") : ETL_SUCCESS);
}

/* The kernel's dynamic shared memory (opted in up to the device's maximum)
   and its residency: all ctx->num_ctas persistent CTAs must run at once. */
static etlStatus fit_on_device(etl_program *p, etl_cuda_state *s, CUfunction fn,
                               const char *target) {
  uint32_t smem = p->art.meta.smem_bytes, threads = p->art.meta.threads_per_cta;
  if (smem > (uint32_t)s->smem_optin)
    return etl_error(ETL_ERROR_LAUNCH_FAILED,
                     "cuda: the program (%s) needs %u bytes of shared memory per CTA; this "
                     "device (sm_%d) allows at most %d; use smaller tiles",
                     target, smem, s->cc, s->smem_optin);
  CUresult r =
      s->FuncSetAttribute(fn, ETL_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem);
  if (r)
    return etl_error(ETL_ERROR_LAUNCH_FAILED,
                     "cuda: cuFuncSetAttribute (%u bytes of dynamic shared memory) failed: %s "
                     "(CUresult %d)",
                     smem, cu_err(s, r), r);
  int per_sm = 0;
  r = s->OccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, (int)threads, smem);
  if (r)
    return etl_error(ETL_ERROR_LAUNCH_FAILED,
                     "cuda: cuOccupancyMaxActiveBlocksPerMultiprocessor failed: %s (CUresult %d)",
                     cu_err(s, r), r);
  if ((uint64_t)(per_sm > 0 ? per_sm : 0) * (uint64_t)s->sms < p->ctx->num_ctas)
    return etl_error(ETL_ERROR_LAUNCH_FAILED,
                     "cuda: the megakernel needs its %u CTAs resident at once (they wait on "
                     "each other), but only %d CTA(s) of %u threads with %u bytes of shared "
                     "memory fit on each of the %d SMs (registers or shared memory); compile "
                     "with fewer --threads or smaller tiles",
                     p->ctx->num_ctas, per_sm, threads, smem, s->sms);
  return ETL_SUCCESS;
}

static etlStatus cuda_program_load(etl_program *p) {
  etl_cuda_state *s = p->ctx->state;
  /* The best PTX the device runs: sm_NN runs on capability NN and newer,
     sm_NNa (architecture-specific, PTX's rule) only on exactly NN, where it
     beats sm_NN; among those the highest NN. */
  const etl_code_section *best = NULL;
  int best_rank = -1;
  char have[128] = "";
  for (uint32_t i = 0; i < p->art.n_code; ++i) {
    const char *t = p->art.code[i].target;
    int sm = 0, n = 0;
    if (sscanf(t, "sm_%d%n", &sm, &n) != 1)
      continue;
    size_t used = strlen(have);
    snprintf(have + used, sizeof have - used, "%s%.12s", used ? ", " : "", t);
    int arch = strcmp(t + n, "a") == 0;
    if (t[n] && !arch)
      continue;
    int rank = 2 * sm + arch;
    if ((arch ? sm == s->cc : sm <= s->cc) && rank > best_rank) {
      best_rank = rank;
      best = &p->art.code[i];
    }
  }
  if (!best)
    return etl_error(ETL_ERROR_NOT_FOUND,
                     "cuda: artifact has no PTX this sm_%d device runs (it has: %s; sm_NN runs "
                     "on sm_NN and newer, sm_NNa only on sm_NN); compile with --target=sm_%d",
                     s->cc, have[0] ? have : "none", s->cc);
  if (best->size == 0 || best->data[best->size - 1] != 0)
    return etl_error(ETL_ERROR_INVALID_ARTIFACT, "cuda: PTX section '%s' is not NUL-terminated",
                     best->target);
  etlStatus st = enter(s);
  if (st)
    return st;
  char log[4096] = "";
  CUjit_option opts[2] = {ETL_CU_JIT_ERROR_LOG_BUFFER, ETL_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
  CUmodule mod = NULL;
  CUresult r = s->ModuleLoadDataEx(&mod, best->data, 2, opts, vals);
  if (r)
    return leave(s, etl_error(ETL_ERROR_LAUNCH_FAILED,
                              "cuda: loading PTX for %s failed: %s (CUresult %d)%s%s", best->target,
                              cu_err(s, r), r, log[0] ? "\n" : "", log));
  CUfunction fn = NULL;
  cuda_program *cp = NULL;
  r = s->ModuleGetFunction(&fn, mod, ETL_KERNEL_ENTRY);
  if (r)
    st = etl_error(ETL_ERROR_LAUNCH_FAILED, "cuda: PTX has no kernel '%s': %s (CUresult %d)",
                   ETL_KERNEL_ENTRY, cu_err(s, r), r);
  else if ((st = fit_on_device(p, s, fn, best->target)) != ETL_SUCCESS)
    ; /* the message is set */
  else if (!(cp = calloc(1, sizeof *cp)))
    st = etl_error(ETL_ERROR_OUT_OF_MEMORY, "out of memory loading a program");
  else
    st = leave(s, ETL_SUCCESS);
  if (st) { /* our context is current: a failed pop left it there too */
    free(cp);
    s->ModuleUnload(mod);
    return leave(s, st);
  }
  cp->module = mod;
  cp->function = fn;
  cp->tma = best_rank % 2 == 1;
  p->state = cp;
  return ETL_SUCCESS;
}

/* A tensor map for the sm_90a code's TMA copies (device.h): dense row-major
   tensor, boxes of t->box, no swizzle (the slots are row-major), zeros out
   of bounds (the loads' default pad). */
static etlStatus cuda_encode_tma(etl_program *p, const etl_tma_meta *t, uint32_t elem,
                                 uint64_t dptr, const int64_t *dims, void *out) {
  etl_cuda_state *s = p->ctx->state;
  if (!((cuda_program *)p->state)->tma)
    return ETL_SUCCESS;
  if (!s->TensorMapEncodeTiled)
    return etl_error(ETL_ERROR_NO_CUDA_DRIVER,
                     "cuda: libcuda.so.1 lacks cuTensorMapEncodeTiled (a driver older than CUDA "
                     "12?), which this sm_90a program's TMA copies need; compile for sm_90");
  int dtype;
  switch (elem) {
  case ETL_ELEM_F32: dtype = ETL_CU_TENSOR_MAP_DATA_TYPE_FLOAT32; break;
  case ETL_ELEM_F16: dtype = ETL_CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
  case ETL_ELEM_BF16: dtype = ETL_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
  case ETL_ELEM_I32: dtype = ETL_CU_TENSOR_MAP_DATA_TYPE_INT32; break;
  case ETL_ELEM_U32: dtype = ETL_CU_TENSOR_MAP_DATA_TYPE_UINT32; break;
  case ETL_ELEM_I64: dtype = ETL_CU_TENSOR_MAP_DATA_TYPE_INT64; break;
  default: /* bytes are bytes: 8- and 16-bit integers and FP8 copy as unsigned */
    dtype = etl_elem_size(elem) == 2 ? ETL_CU_TENSOR_MAP_DATA_TYPE_UINT16
                                     : ETL_CU_TENSOR_MAP_DATA_TYPE_UINT8;
  }
  /* The driver's order is innermost first. */
  uint64_t gdim[2], gstride[1];
  unsigned box[2], estride[2] = {1, 1};
  for (uint32_t k = 0; k < t->rank; ++k) {
    gdim[k] = (uint64_t)dims[t->rank - 1 - k];
    box[k] = t->box[t->rank - 1 - k];
  }
  gstride[0] = (uint64_t)dims[t->rank - 1] * etl_elem_size(elem);
  etlStatus st = enter(s);
  if (st)
    return st;
  CUresult r = s->TensorMapEncodeTiled(
      out, dtype, t->rank, (void *)(uintptr_t)dptr, gdim, gstride, box, estride,
      ETL_CU_TENSOR_MAP_INTERLEAVE_NONE, ETL_CU_TENSOR_MAP_SWIZZLE_NONE,
      ETL_CU_TENSOR_MAP_L2_PROMOTION_L2_128B, ETL_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return leave(s, r ? etl_error(ETL_ERROR_LAUNCH_FAILED,
                                "cuda: cuTensorMapEncodeTiled for tensor '%s' failed: %s "
                                "(CUresult %d)",
                                p->art.meta.tensors[t->tensor].name, cu_err(s, r), r)
                    : ETL_SUCCESS);
}

static void cuda_program_unload(etl_program *p) {
  etl_cuda_state *s = p->ctx->state;
  cuda_program *cp = p->state;
  if (!cp)
    return;
  if (s && cp->module && enter(s) == ETL_SUCCESS) {
    s->ModuleUnload(cp->module);
    leave(s, ETL_SUCCESS);
  }
  free(cp);
  p->state = NULL;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static etlStatus cuda_launch(etl_program *p, etl_plan *plan, uint64_t args_dptr, void *stream,
                             int capture, int *in_flight) {
  etl_context *ctx = p->ctx;
  etl_cuda_state *s = ctx->state;
  (void)plan;
  etlStatus st = enter(s);
  if (st)
    return st;
  CUdeviceptr args = args_dptr;
  void *params[1] = {&args};
  CUresult r = s->LaunchKernel(((cuda_program *)p->state)->function, ctx->num_ctas, 1, 1,
                               p->art.meta.threads_per_cta, 1, 1, p->art.meta.smem_bytes,
                               (CUstream)stream, params, NULL);
  if (r)
    return leave(s, etl_error(ETL_ERROR_LAUNCH_FAILED,
                              "cuda: cuLaunchKernel failed: %s (CUresult %d)", cu_err(s, r), r));
  if (capture) /* recorded into the graph: nothing runs, nothing waits for it */
    return leave(s, ETL_SUCCESS);
  *in_flight = 1;
  s->stream = (CUstream)stream;
  s->last_ms = now_ms();
  s->seen = 0;
  s->timed_out = 0;
  r = s->EventRecord(s->done, (CUstream)stream);
  s->recorded = r == ETL_CUDA_SUCCESS; /* else finish polls the stream */
  return leave(s, r ? CU_FAIL(s, r, "cuEventRecord after the launch (the run is in flight)")
                    : ETL_SUCCESS);
}

/* The watchdog's look at the launch in flight: raise the abort flag once no
 * CTA has finished a task for watchdog_ms (the kernel counts finished tasks
 * per CTA in the mapped control block). */
static void watchdog(etl_context *ctx, etl_cuda_state *s) {
  const volatile uint32_t *progress =
      (const volatile uint32_t *)((const char *)ctx->abort_host + ETL_CONTROL_PROGRESS);
  uint64_t sum = 0;
  for (uint32_t c = 0; c < ctx->num_ctas; ++c)
    sum += progress[c];
  if (sum != s->seen) {
    s->seen = sum;
    s->last_ms = now_ms();
  }
  if (!s->timed_out && now_ms() - s->last_ms > (int64_t)ctx->params.watchdog_ms) {
    __atomic_store_n((volatile uint32_t *)ctx->abort_host, 1u, __ATOMIC_SEQ_CST);
    s->timed_out = 1;
  }
}

/* The watchdog's message: the event elements still pending. */
static etlStatus timeout_error(etl_program *p, etl_plan *plan) {
  etl_cuda_state *s = p->ctx->state;
  uint32_t *ctr = malloc((plan->n_counters + 1) * sizeof(uint32_t));
  char msg[4096];
  size_t len = (size_t)snprintf(
      msg, sizeof msg,
      "watchdog: no task finished for %u ms, aborted; pending events:", p->ctx->params.watchdog_ms);
  if (ctr && s->MemcpyDtoH(ctr, plan->counters_dptr, plan->n_counters * 4) == 0) {
    uint32_t listed = 0;
    for (uint64_t i = 0; i < plan->n_counters && listed < 32 && len < sizeof msg - 200; ++i) {
      if (!ctr[i])
        continue;
      char name[256];
      etl_plan_counter_name(&p->art.meta, plan, i, name, sizeof name);
      len += (size_t)snprintf(msg + len, sizeof msg - len, " %s=%u", name, ctr[i]);
      listed++;
    }
  }
  free(ctr);
  return etl_error_str(ETL_ERROR_TIMEOUT, msg);
}

static etlStatus cuda_finish(etl_program *p, etl_plan *plan, int block) {
  etl_context *ctx = p->ctx;
  etl_cuda_state *s = ctx->state;
  etlStatus st = enter(s);
  if (st) /* the driver refuses our context: the run's end cannot be known */
    return st;
  CUresult r;
  for (;;) {
    r = s->recorded ? s->EventQuery(s->done) : s->StreamQuery(s->stream);
    if (r != ETL_CUDA_ERROR_NOT_READY)
      break;
    watchdog(ctx, s);
    if (!block)
      return leave(s, ETL_ERROR_NOT_READY);
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  if (r)
    st = etl_error(ETL_ERROR_CUDA, "cuda: kernel failed: %s (CUresult %d)", cu_err(s, r), r);
  else if (s->timed_out)
    st = timeout_error(p, plan);
  return leave(s, st);
}

const etl_device etl_device_cuda = {
    .name = "cuda",
    .is_gpu = 1,
    .host_addressable = 0,
    .context_create = cuda_context_create,
    .context_destroy = cuda_context_destroy,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .htod = cuda_htod,
    .zero = cuda_zero,
    .copy = cuda_copy,
    .capturing = cuda_capturing,
    .hold = cuda_hold,
    .dtoh = cuda_dtoh,
    .program_load = cuda_program_load,
    .encode_tma = cuda_encode_tma,
    .program_unload = cuda_program_unload,
    .launch = cuda_launch,
    .finish = cuda_finish,
};
