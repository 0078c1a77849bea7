/*===- tests/fake_cuda/fake_cuda.c - A test-only libcuda.so.1 ---------------===
 *
 * What this owns: the fake CUDA driver described in fake_cuda.h. Built as
 * libcuda.so.1 under the build tree and found by the runtime's ordinary
 * dlopen("libcuda.so.1") because the tests that use it run with
 * LD_LIBRARY_PATH pointing at it. It implements, on host memory, the Driver
 * API functions runtime/src/cuda.c resolves, plus cuFuncSetAttribute (the
 * opt-in for dynamic shared memory its launch check honours). Types and
 * constants (fake_internal.h) are written from the Driver API's
 * documentation, not shared with the runtime's cuda_mini.h, so a mismatch in
 * either shows; fake_ptx.c reads the PTX images.
 *
 * Device addresses are non-canonical numbers (0xD000...) mapped to host
 * buffers, so a host dereference of a device pointer crashes instead of
 * passing; mapped host memory gets a device address of its own too.
 *===----------------------------------------------------------------------===*/
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "etl_abi.h"
#include "fake_cuda.h"
#include "fake_internal.h"

/*===-- State (declared in fake_internal.h) --------------------------------===*/

pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
__thread fctx *current;
__thread fctx *ctx_stack[CTX_STACK_DEPTH];
__thread int ctx_depth;
int inited, env_read;
fctx *contexts;
mem *mems;
module *modules;
static CUdeviceptr next_dev = 0xD000000000000000ull;
int calls[F_COUNT], fail_result[F_COUNT], fail_nth[F_COUNT];
static int kernel_mode = ETL_FAKE_KERNEL_COMPLETE;
static unsigned kernel_ms;
etl_fake_cuda_stats stats;
static char first_violation[512];

int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A call broke a rule of the API: print, count, return what CUDA returns. */
CUresult violation(CUresult r, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "fake libcuda: violation: %s (returns CUresult %d)\n", msg, r);
  if (!stats.violations++)
    snprintf(first_violation, sizeof first_violation, "%s", msg);
  return r;
}

static int symbol_index(const char *s) {
  for (int i = 0; i < F_COUNT; ++i)
    if (s && !strcmp(s, fn_names[i]))
      return i;
  return -1;
}

void read_env(void) {
  env_read = 1;
  const char *e = getenv("ETL_FAKE_CUDA");
  if (!e || !*e)
    return;
  char *copy = strdup(e), *save = NULL;
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    char sym[128];
    int res = 0, nth = 1;
    unsigned ms = 0;
    if (sscanf(t, "fail=%127[^:]:%d:%d", sym, &res, &nth) >= 2 && symbol_index(sym) >= 0 &&
        nth >= 1) {
      fail_result[symbol_index(sym)] = res;
      fail_nth[symbol_index(sym)] = nth;
    } else if (sscanf(t, "cc=%d", &res) == 1 && res >= 10) {
      fake_cc = res;
    } else if (!strcmp(t, "kernel=complete")) {
      kernel_mode = ETL_FAKE_KERNEL_COMPLETE;
    } else if (!strcmp(t, "kernel=hang")) {
      kernel_mode = ETL_FAKE_KERNEL_HANG;
    } else if (sscanf(t, "kernel=slow:%u", &ms) == 1) {
      kernel_mode = ETL_FAKE_KERNEL_SLOW;
      kernel_ms = ms;
    } else {
      violation(INVALID_VALUE, "ETL_FAKE_CUDA: cannot read '%s'", t);
    }
  }
  free(copy);
}

int ctx_alive(const fctx *c) {
  for (fctx *x = contexts; x; x = x->next)
    if (c && x == c)
      return 1;
  return 0;
}

static module *module_alive(const void *m) {
  for (module *x = modules; x; x = x->next)
    if (m && (const void *)x == m)
      return x;
  return NULL;
}

static func *func_alive(const void *f, module **owner) {
  for (module *x = modules; x; x = x->next)
    for (int i = 0; i < x->nfuncs; ++i)
      if (f == (const void *)&x->funcs[i]) {
        *owner = x;
        return &x->funcs[i];
      }
  return NULL;
}

/* The allocation whose device view holds [dev, dev + n), or NULL. */
static mem *find_range(CUdeviceptr dev, size_t n) {
  for (mem *m = mems; m; m = m->next)
    if (m->dev && dev >= m->dev && dev - m->dev <= m->bytes && n <= m->bytes - (dev - m->dev))
      return m;
  return NULL;
}

void *host_view(CUdeviceptr dev, size_t n) {
  mem *m = find_range(dev, n);
  return m ? m->host + (dev - m->dev) : NULL;
}

static mem *new_mem(size_t bytes, int is_host, int mapped, int poison) {
  mem *m = calloc(1, sizeof *m);
  unsigned char *h = malloc(bytes);
  if (!m || !h) {
    free(m);
    free(h);
    return NULL;
  }
  memset(h, poison, bytes);
  m->host = h;
  m->bytes = bytes;
  m->is_host = is_host;
  m->ctx = current;
  if (mapped) { /* 256-byte aligned, a 4 KiB gap to the next one */
    m->dev = next_dev;
    next_dev += (bytes + 255) / 256 * 256 + 4096;
  }
  m->next = mems;
  mems = m;
  return m;
}

void unlink_mem(mem *m) {
  for (mem **p = &mems; *p; p = &(*p)->next)
    if (*p == m) {
      *p = m->next;
      break;
    }
  free(m->host);
  free(m);
}

/*===-- The kernel in flight -----------------------------------------------===*/

/* As a finished kernel leaves it: each CTA counted its static tasks. */
void finish(fctx *c, int completed) {
  if (completed && c->queue_offs && c->progress)
    for (unsigned k = 0; k < c->grid; ++k)
      c->progress[k] += c->queue_offs[k + 1] - c->queue_offs[k];
  /* a finished kernel leaves its event counters changed (the real one
     counts them down or up): the next run must reset them */
  if (completed && c->events)
    c->events[0] = 0xFFFFFFFFu;
  c->events = NULL;
  c->running = 0;
}

CUresult query(fctx *c) {
  if (!c->running)
    return SUCCESS;
  if (c->fault) {
    c->running = 0;
    return ILLEGAL_ADDRESS;
  }
  int64_t t = now_ms();
  switch (c->mode) {
  case ETL_FAKE_KERNEL_HANG:
    if (__atomic_load_n(c->abort_flag, __ATOMIC_SEQ_CST)) {
      finish(c, 0);
      return SUCCESS;
    }
    return NOT_READY;
  case ETL_FAKE_KERNEL_SLOW:
    if (t - c->start_ms >= (int64_t)c->slow_ms && c->not_ready >= 2) {
      finish(c, 1);
      return SUCCESS;
    }
    if (t - c->last_tick_ms >= ETL_FAKE_SLOW_TICK_MS) {
      c->last_tick_ms = t;
      c->progress[(uint64_t)t % c->grid]++; /* some CTA finished a task */
    }
    c->not_ready++;
    return NOT_READY;
  default:
    finish(c, 1);
    return SUCCESS;
  }
}

/*===-- Initialisation and devices -----------------------------------------===*/

EXPORT CUresult cuInit(unsigned flags) {
  ENTER(cuInit);
  if (flags)
    RETURN(violation(INVALID_VALUE, "cuInit flags must be 0, got %u", flags));
  inited = 1;
  RETURN(SUCCESS);
}

EXPORT CUresult cuDeviceGetCount(int *count) {
  ENTER(cuDeviceGetCount);
  NEED_INIT();
  if (!count)
    RETURN(violation(INVALID_VALUE, "cuDeviceGetCount(NULL)"));
  *count = 1;
  RETURN(SUCCESS);
}

EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
  ENTER(cuDeviceGet);
  NEED_INIT();
  if (!dev)
    RETURN(violation(INVALID_VALUE, "cuDeviceGet(NULL)"));
  if (ordinal != 0)
    RETURN(INVALID_DEVICE);
  *dev = 0;
  RETURN(SUCCESS);
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  ENTER(cuDeviceGetName);
  NEED_INIT();
  if (dev != 0)
    RETURN(violation(INVALID_DEVICE, "cuDeviceGetName of device %d", dev));
  if (!name || len <= 0)
    RETURN(violation(INVALID_VALUE, "cuDeviceGetName into a buffer of %d bytes", len));
  snprintf(name, (size_t)len, "%s", ETL_FAKE_DEVICE_NAME);
  RETURN(SUCCESS);
}

EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice dev) {
  ENTER(cuDeviceGetAttribute);
  NEED_INIT();
  if (dev != 0 || !v)
    RETURN(violation(dev ? INVALID_DEVICE : INVALID_VALUE, "cuDeviceGetAttribute(%p, %d, %d)",
                     (void *)v, attr, dev));
  static const int table[][2] = {{1, MAX_THREADS}, {2, 1024},   {3, 1024},      {4, 64},
                                 {5, 2147483647},  {6, 65535},  {7, 65535},     {8, STATIC_SMEM},
                                 {10, 32},         {12, 65536}, {16, H100_SMS}, {19, 1},
                                 {41, 1},          {97, OPTIN_SMEM}};
  if (attr == 75 || attr == 76) { /* compute capability major, minor */
    *v = attr == 75 ? fake_cc / 10 : fake_cc % 10;
    RETURN(SUCCESS);
  }
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i)
    if (table[i][0] == attr) {
      *v = table[i][1];
      RETURN(SUCCESS);
    }
  RETURN(violation(INVALID_VALUE, "cuDeviceGetAttribute: attribute %d is not modelled", attr));
}

EXPORT CUresult cuGetErrorString(CUresult e, const char **s) {
  ENTER(cuGetErrorString);
  static const struct {
    int code;
    const char *text;
  } table[] = {{SUCCESS, "no error"},
               {INVALID_VALUE, "invalid argument"},
               {OUT_OF_MEMORY, "out of memory"},
               {NOT_INITIALIZED, "initialization error"},
               {100, "no CUDA-capable device is detected"},
               {INVALID_DEVICE, "invalid device ordinal"},
               {INVALID_CONTEXT, "invalid device context"},
               {INVALID_PTX, "a PTX JIT compilation failed"},
               {UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported "
                                         "toolchain."},
               {INVALID_HANDLE, "invalid resource handle"},
               {NOT_FOUND, "named symbol not found"},
               {NOT_READY, "device not ready"},
               {ILLEGAL_ADDRESS, "an illegal memory access was encountered"},
               {LAUNCH_TIMEOUT, "the launch timed out and was terminated"},
               {CONTEXT_IS_DESTROYED, "context is destroyed"},
               {LAUNCH_FAILED, "unspecified launch failure"},
               {UNKNOWN, "unknown error"}};
  if (!s)
    RETURN(violation(INVALID_VALUE, "cuGetErrorString(%d, NULL)", e));
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i)
    if (table[i].code == e) {
      *s = table[i].text;
      RETURN(SUCCESS);
    }
  *s = NULL;
  RETURN(INVALID_VALUE);
}

/*===-- Contexts -----------------------------------------------------------===*/

EXPORT CUresult cuCtxCreate_v2(fctx **out, unsigned flags, CUdevice dev) {
  ENTER(cuCtxCreate_v2);
  NEED_INIT();
  (void)flags;
  if (!out || dev != 0)
    RETURN(violation(out ? INVALID_DEVICE : INVALID_VALUE, "cuCtxCreate on device %d", dev));
  fctx *c = calloc(1, sizeof *c);
  if (!c)
    RETURN(OUT_OF_MEMORY);
  c->next = contexts;
  contexts = c;
  current = c;
  *out = c;
  stats.contexts++;
  RETURN(SUCCESS);
}

void ctx_free(fctx *c) {
  /* what the application left behind goes with the context */
  for (mem *m = mems, *nx; m; m = nx) {
    nx = m->next;
    if (m->ctx == c) {
      stats.reclaimed++;
      *(m->is_host ? &stats.host_allocs : &stats.device_allocs) -= 1;
      unlink_mem(m);
    }
  }
  for (module **p = &modules; *p;) {
    module *m = *p;
    if (m->ctx == c) {
      *p = m->next;
      stats.reclaimed++;
      stats.modules--;
      free(m);
    } else {
      p = &m->next;
    }
  }
  streams_reclaim(c);
  graphs_reclaim(c);
  for (fctx **p = &contexts; *p; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      break;
    }
  if (current == c) /* popped from the calling thread's stack */
    current = ctx_depth ? ctx_stack[--ctx_depth] : NULL;
  free(c);
  stats.contexts--;
}

EXPORT CUresult cuCtxDestroy_v2(fctx *c) {
  ENTER(cuCtxDestroy_v2);
  NEED_INIT();
  if (!ctx_alive(c))
    RETURN(violation(INVALID_CONTEXT, "cuCtxDestroy of a context that is not alive"));
  if (c->primary_refs)
    RETURN(violation(INVALID_CONTEXT, "cuCtxDestroy of a primary context (release it with "
                                      "cuDevicePrimaryCtxRelease)"));
  ctx_free(c);
  RETURN(SUCCESS);
}

EXPORT CUresult cuCtxSetCurrent(fctx *c) {
  ENTER(cuCtxSetCurrent);
  NEED_INIT();
  if (c && !ctx_alive(c))
    RETURN(violation(CONTEXT_IS_DESTROYED, "cuCtxSetCurrent of a destroyed context"));
  if (c) /* replaces the top of the stack */
    current = c;
  else /* NULL pops it */
    current = ctx_depth ? ctx_stack[--ctx_depth] : NULL;
  RETURN(SUCCESS);
}

EXPORT CUresult cuCtxSynchronize(void) {
  ENTER(cuCtxSynchronize);
  NEED_CTX();
  NO_CAPTURE();
  fctx *c = current;
  for (int64_t t0 = now_ms();;) {
    CUresult r = query(c);
    if (r != NOT_READY)
      RETURN(r);
    if (now_ms() - t0 > 30000) /* a hung kernel whose abort flag nobody raises */
      RETURN(violation(LAUNCH_TIMEOUT, "cuCtxSynchronize on a kernel that never ends"));
    pthread_mutex_unlock(&mu);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&mu);
    if (!ctx_alive(c))
      RETURN(CONTEXT_IS_DESTROYED);
  }
}

/*===-- Modules ------------------------------------------------------------===*/

EXPORT CUresult cuModuleLoadDataEx(module **out, const void *image, unsigned n, int *opts,
                                   void **vals) {
  ENTER(cuModuleLoadDataEx);
  NEED_CTX();
  NO_CAPTURE();
  if (!out || !image || (n && (!opts || !vals)))
    RETURN(violation(INVALID_VALUE, "cuModuleLoadDataEx(%p, %p, %u, %p, %p)", (void *)out, image, n,
                     (void *)opts, (void *)vals));
  char *log = NULL;
  size_t cap = 0;
  int cap_at = -1;
  for (unsigned i = 0; i < n; ++i) {
    if (opts[i] == 5) /* CU_JIT_ERROR_LOG_BUFFER */
      log = vals[i];
    else if (opts[i] == 6) { /* CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, by value */
      cap = (size_t)(uintptr_t)vals[i];
      cap_at = (int)i;
    }
  }
  if ((log != NULL) != (cap_at >= 0))
    RETURN(violation(INVALID_VALUE, "an error log buffer without its size, or the reverse"));
  module *m = calloc(1, sizeof *m);
  if (!m)
    RETURN(OUT_OF_MEMORY);
  char target[16] = "";
  CUresult r = fake_read_ptx(image, m->funcs, &m->nfuncs, log, cap, target);
  if (cap_at >= 0) /* the driver writes back the log's length */
    vals[cap_at] = (void *)(uintptr_t)(log ? strlen(log) : 0);
  if (r) {
    free(m);
    RETURN(r);
  }
  m->ctx = current;
  m->next = modules;
  modules = m;
  stats.modules++;
  memcpy(stats.last_target, target, sizeof target);
  *out = m;
  RETURN(SUCCESS);
}

EXPORT CUresult cuModuleUnload(module *m) {
  ENTER(cuModuleUnload);
  NEED_CTX();
  NO_CAPTURE();
  if (!module_alive(m))
    RETURN(violation(INVALID_HANDLE, "cuModuleUnload of a module that is not loaded"));
  for (module **p = &modules; *p; p = &(*p)->next)
    if (*p == m) {
      *p = m->next;
      break;
    }
  free(m);
  stats.modules--;
  RETURN(SUCCESS);
}

EXPORT CUresult cuModuleGetFunction(func **out, module *m, const char *name) {
  ENTER(cuModuleGetFunction);
  NEED_CTX();
  if (!out || !name || !module_alive(m) || m->ctx != current)
    RETURN(violation(INVALID_HANDLE, "cuModuleGetFunction on a module not loaded in the "
                                     "current context"));
  for (int i = 0; i < m->nfuncs; ++i)
    if (!strcmp(m->funcs[i].name, name)) {
      *out = &m->funcs[i];
      RETURN(SUCCESS);
    }
  RETURN(NOT_FOUND);
}

EXPORT CUresult cuFuncSetAttribute(func *f, int attr, int value) {
  ENTER(cuFuncSetAttribute);
  NEED_CTX();
  module *owner = NULL;
  if (!func_alive(f, &owner))
    RETURN(violation(INVALID_HANDLE, "cuFuncSetAttribute on a function that is not loaded"));
  if (attr != 8) /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    RETURN(violation(INVALID_VALUE, "cuFuncSetAttribute: attribute %d is not modelled", attr));
  if (value < 0 || (unsigned)value + f->static_smem > OPTIN_SMEM)
    RETURN(INVALID_VALUE);
  f->max_dynamic_smem = (unsigned)value;
  RETURN(SUCCESS);
}

/*===-- Memory -------------------------------------------------------------===*/

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *out, size_t bytes) {
  ENTER(cuMemAlloc_v2);
  NEED_CTX();
  NO_CAPTURE();
  if (!out || bytes == 0)
    RETURN(violation(INVALID_VALUE, "cuMemAlloc of %zu bytes", bytes));
  if (bytes > (size_t)DEVICE_BYTES_GB << 30)
    RETURN(OUT_OF_MEMORY);
  mem *m = new_mem(bytes, 0, 1, 0xFF);
  if (!m)
    RETURN(OUT_OF_MEMORY);
  stats.device_allocs++;
  *out = m->dev;
  RETURN(SUCCESS);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  ENTER(cuMemFree_v2);
  NEED_CTX();
  NO_CAPTURE();
  mem *m = find_range(p, 0);
  if (!m || m->is_host || m->dev != p || m->ctx != current)
    RETURN(violation(INVALID_VALUE, "cuMemFree of 0x%llx, not an allocation of this context", p));
  unlink_mem(m);
  stats.device_allocs--;
  RETURN(SUCCESS);
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  ENTER(cuMemcpyHtoD_v2);
  NEED_CTX();
  NO_CAPTURE();
  if (n == 0)
    RETURN(SUCCESS);
  void *d = host_view(dst, n);
  if (!d || !src)
    RETURN(violation(INVALID_VALUE, "cuMemcpyHtoD of %zu bytes to 0x%llx from %p", n, dst, src));
  memcpy(d, src, n);
  RETURN(SUCCESS);
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  ENTER(cuMemcpyDtoH_v2);
  NEED_CTX();
  NO_CAPTURE();
  if (n == 0)
    RETURN(SUCCESS);
  void *s = host_view(src, n);
  if (!s || !dst)
    RETURN(violation(INVALID_VALUE, "cuMemcpyDtoH of %zu bytes from 0x%llx to %p", n, src, dst));
  memcpy(dst, s, n);
  RETURN(SUCCESS);
}

EXPORT CUresult cuMemHostAlloc(void **out, size_t bytes, unsigned flags) {
  ENTER(cuMemHostAlloc);
  NEED_CTX();
  NO_CAPTURE();
  if (!out || bytes == 0 || (flags & ~7u))
    RETURN(violation(INVALID_VALUE, "cuMemHostAlloc of %zu bytes, flags 0x%x", bytes, flags));
  mem *m = new_mem(bytes, 1, (flags & 2u) != 0, 0xA5); /* CU_MEMHOSTALLOC_DEVICEMAP */
  if (!m)
    RETURN(OUT_OF_MEMORY);
  stats.host_allocs++;
  *out = m->host;
  RETURN(SUCCESS);
}

EXPORT CUresult cuMemFreeHost(void *p) {
  ENTER(cuMemFreeHost);
  NEED_CTX();
  NO_CAPTURE();
  for (mem *m = mems; m; m = m->next)
    if (m->is_host && m->host == p) {
      unlink_mem(m);
      stats.host_allocs--;
      RETURN(SUCCESS);
    }
  RETURN(violation(INVALID_VALUE, "cuMemFreeHost of %p, not from cuMemHostAlloc", p));
}

EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *out, void *p, unsigned flags) {
  ENTER(cuMemHostGetDevicePointer_v2);
  NEED_CTX();
  for (mem *m = mems; m && out && !flags; m = m->next)
    if (m->is_host && (unsigned char *)p >= m->host && (unsigned char *)p < m->host + m->bytes) {
      if (!m->dev)
        RETURN(violation(INVALID_VALUE, "cuMemHostGetDevicePointer of memory allocated "
                                        "without CU_MEMHOSTALLOC_DEVICEMAP"));
      *out = m->dev + (CUdeviceptr)((unsigned char *)p - m->host);
      RETURN(SUCCESS);
    }
  RETURN(violation(INVALID_VALUE, "cuMemHostGetDevicePointer(%p, flags %u)", p, flags));
}

/*===-- Launches -----------------------------------------------------------===*/

/* The ETL argument block and control block a launch of etl_main reads;
   "" when they are sound, else why the kernel would fault. */
static const char *check_etl_args(fctx *c, CUdeviceptr args, unsigned grid) {
  const uint64_t *slot = host_view(args, ETL_SLOT_FIRST_PROGRAM * sizeof(uint64_t));
  if (!slot)
    return "the argument block is not device memory";
  if (slot[ETL_SLOT_NUM_CTAS] != grid)
    return "args[ETL_SLOT_NUM_CTAS] differs from the grid size";
  mem *ctl = find_range(slot[ETL_SLOT_ABORT], ETL_CONTROL_BYTES(grid));
  if (!ctl || !ctl->is_host)
    return "args[ETL_SLOT_ABORT] is not a mapped host control block of ETL_CONTROL_BYTES(grid)";
  c->queue_offs = host_view(slot[ETL_SLOT_QUEUE_OFFS], ((size_t)grid + 1) * 4);
  if (!c->queue_offs || !host_view(slot[ETL_SLOT_EVENTS], 4) || !host_view(slot[ETL_SLOT_QUEUE], 4))
    return "args[EVENTS], [QUEUE] or [QUEUE_OFFS] is not device memory of the right size";
  if ((slot[ETL_SLOT_DYN] && !host_view(slot[ETL_SLOT_DYN], 4 * ETL_DYN_GROUP_OFF)) ||
      (slot[ETL_SLOT_TIMELINE] && !host_view(slot[ETL_SLOT_TIMELINE], 1)) ||
      !host_view(slot[ETL_SLOT_ERROR], 4 * ETL_ERR_WORDS))
    return "args[DYN], [TIMELINE] or [ERROR] is not device memory";
  unsigned char *h = ctl->host + (slot[ETL_SLOT_ABORT] - ctl->dev);
  c->abort_flag = (volatile uint32_t *)h;
  c->progress = (volatile uint32_t *)(h + ETL_CONTROL_PROGRESS);
  c->events = host_view(slot[ETL_SLOT_EVENTS], 4);
  /* what the kernel reads as it starts */
  stats.seen_args = args;
  memset(stats.seen_slots, 0, sizeof stats.seen_slots);
  for (size_t i = 0; i < sizeof stats.seen_slots / 8 && host_view(args + 8 * i, 8); ++i)
    stats.seen_slots[i] = slot[i];
  stats.seen_event0 = c->events[0];
  memcpy(stats.seen_error, host_view(slot[ETL_SLOT_ERROR], 4 * ETL_ERR_WORDS),
         sizeof stats.seen_error);
  stats.seen_abort = *c->abort_flag;
  return "";
}

EXPORT CUresult cuLaunchKernel(func *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned smem, void *stream, void **params,
                               void **extra) {
  ENTER(cuLaunchKernel);
  NEED_CTX();
  module *owner = NULL;
  if (!func_alive(f, &owner) || owner->ctx != current)
    RETURN(violation(INVALID_HANDLE, "cuLaunchKernel of a function not loaded in this context"));
  if (!stream_ok(stream))
    RETURN(violation(INVALID_HANDLE, "cuLaunchKernel on a stream that is not one of the current "
                                     "context's"));
  if (!gx || !gy || !gz || gx > 2147483647u || gy > 65535 || gz > 65535)
    RETURN(violation(INVALID_VALUE, "grid %ux%ux%u outside the device's limits", gx, gy, gz));
  if (!bx || !by || !bz || bx > 1024 || by > 1024 || bz > 64 ||
      (unsigned long long)bx * by * bz > MAX_THREADS)
    RETURN(violation(INVALID_VALUE, "block %ux%ux%u outside the device's limits", bx, by, bz));
  if (f->maxntid && bx * by * bz > f->maxntid)
    RETURN(violation(INVALID_VALUE, "block of %u threads exceeds the kernel's .maxntid %u",
                     bx * by * bz, f->maxntid));
  if (smem > f->max_dynamic_smem)
    RETURN(violation(INVALID_VALUE,
                     "%u bytes of dynamic shared memory, %u allowed (opt in with "
                     "cuFuncSetAttribute up to %u)",
                     smem, f->max_dynamic_smem, OPTIN_SMEM - f->static_smem));
  if (extra || (f->nparams && !params))
    RETURN(violation(INVALID_VALUE, "kernel parameters missing or passed through `extra`"));
  for (int i = 0; i < f->nparams; ++i)
    if (!params[i])
      RETURN(violation(INVALID_VALUE, "kernel parameter %d is NULL", i));
  uint64_t values[8] = {0};
  if (f->nparams > 8)
    RETURN(violation(INVALID_VALUE, "the fake models kernels of at most 8 parameters"));
  for (int i = 0; i < f->nparams; ++i) /* copied now, as the driver does */
    memcpy(&values[i], params[i], sizeof values[i]);
  CUresult r = SUCCESS;
  int route = capture_route(fn_, stream, &r);
  if (route) {
    gnode *g = route > 0 ? capture_node(stream) : NULL;
    if (g) {
      g->kind = NODE_KERNEL;
      g->f = f;
      g->grid = gx;
      g->block[0] = bx;
      g->block[1] = by;
      g->block[2] = bz;
      g->smem = smem;
      g->nparams = f->nparams;
      memcpy(g->params, values, sizeof values);
    }
    RETURN(route > 0 && !g ? OUT_OF_MEMORY : r);
  }
  start_kernel(current, f, gx, bx, smem, stream, values);
  RETURN(SUCCESS);
}

void start_kernel(fctx *c, func *f, unsigned gx, unsigned bx, unsigned smem, void *stream,
                  const uint64_t *params) {
  if (c->running)
    finish(c, 1); /* one kernel at a time: launches run in order */
  static unsigned long long launches;
  c->launch = ++launches;
  c->stream = stream;
  c->grid = gx;
  c->queue_offs = NULL;
  c->progress = c->abort_flag = NULL;
  c->events = NULL;
  c->fault = 0;
  if (!strcmp(f->name, ETL_KERNEL_ENTRY) && f->nparams == 1) {
    const char *why = check_etl_args(c, params[0], gx);
    if (*why) {
      violation(ILLEGAL_ADDRESS, "etl_main would fault: %s", why);
      c->fault = 1;
    }
  }
  c->running = 1;
  c->mode = c->fault || !c->progress ? ETL_FAKE_KERNEL_COMPLETE : kernel_mode;
  c->slow_ms = kernel_ms;
  c->not_ready = 0;
  c->start_ms = c->last_tick_ms = now_ms();
  if (c->mode == ETL_FAKE_KERNEL_COMPLETE && !c->fault)
    finish(c, 1);
  stats.launches++;
  stats.last_grid = gx;
  stats.last_block = bx;
  stats.last_smem = smem;
  stats.last_stream = (unsigned long long)(uintptr_t)stream;
}

int func_loaded(const func *f, const fctx *c) {
  module *owner = NULL;
  return func_alive(f, &owner) && owner->ctx == c;
}

EXPORT CUresult cuStreamQuery(void *stream) {
  ENTER(cuStreamQuery);
  NEED_CTX();
  NO_CAPTURE();
  if (!stream_ok(stream))
    RETURN(violation(INVALID_HANDLE, "cuStreamQuery of a stream that is not one of the current "
                                     "context's"));
  fctx *c = current; /* the NULL stream waits for every stream */
  RETURN(!stream || c->stream == stream ? query(c) : SUCCESS);
}

/*===-- Control (fake_cuda.h) ----------------------------------------------===*/

EXPORT void etl_fake_cuda_reset(void) {
  pthread_mutex_lock(&mu);
  env_read = 1; /* the test steers from here on */
  memset(calls, 0, sizeof calls);
  memset(fail_nth, 0, sizeof fail_nth);
  kernel_mode = ETL_FAKE_KERNEL_COMPLETE;
  kernel_ms = 0;
  fake_cc = 90;
  stats.reclaimed = stats.violations = stats.launches = stats.graph_launches = 0;
  stats.tmaps = 0;
  first_violation[0] = 0;
  pthread_mutex_unlock(&mu);
}

EXPORT int etl_fake_cuda_fail(const char *symbol, int result, int nth) {
  int i = symbol_index(symbol);
  if (i < 0 || nth < 1)
    return -1;
  pthread_mutex_lock(&mu);
  fail_result[i] = result;
  fail_nth[i] = nth;
  pthread_mutex_unlock(&mu);
  return 0;
}

EXPORT void etl_fake_cuda_kernel(int mode, unsigned ms) {
  pthread_mutex_lock(&mu);
  kernel_mode = mode;
  kernel_ms = ms;
  pthread_mutex_unlock(&mu);
}

EXPORT int etl_fake_cuda_calls(const char *symbol) {
  int i = symbol_index(symbol);
  pthread_mutex_lock(&mu);
  int n = i < 0 ? -1 : calls[i];
  pthread_mutex_unlock(&mu);
  return n;
}

EXPORT const char *etl_fake_cuda_symbol(int i) {
  return i >= 0 && i < F_COUNT ? fn_names[i] : NULL;
}

EXPORT etl_fake_cuda_stats etl_fake_cuda_get_stats(void) {
  pthread_mutex_lock(&mu);
  etl_fake_cuda_stats s = stats;
  pthread_mutex_unlock(&mu);
  return s;
}

EXPORT const char *etl_fake_cuda_first_violation(void) { return first_violation; }
