/*===- tests/fake_cuda/fake_stream.c - Context stack, primary context, streams, events ===
 *
 * What this owns: the fake driver's (fake_cuda.h) entry points for the
 * calling thread's context stack (cuCtxGetCurrent, cuCtxGetDevice,
 * cuCtxPushCurrent, cuCtxPopCurrent), device 0's primary context
 * (cuDevicePrimaryCtxRetain / Release), and streams and events (create,
 * destroy, record, query), and cuMemsetD8Async and cuMemcpyAsync (done at
 * once: the fake's kernels compute nothing, so nothing on the stream can
 * read before it; on a capturing stream recorded instead, fake_graph.c). The state and the
 *entry-point macros are fake_internal.h's; a kernel in flight is fake_cuda.c's (query, finish).
 *===----------------------------------------------------------------------===*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_internal.h"

static fctx *primary; /* device 0's, while retained */
static fstream *streams;
static fevent *events;

static fevent *event_alive(const void *e) {
  for (fevent *x = events; x; x = x->next)
    if (e && (const void *)x == e)
      return x;
  return NULL;
}

fstream *stream_of(const void *s) {
  for (fstream *x = streams; x; x = x->next)
    if (s && (const void *)x == s)
      return x;
  return NULL;
}

fstream *stream_next(const fstream *s) { return s ? s->next : streams; }

int stream_ok(const void *s) {
  if (!s)
    return 1;
  for (fstream *x = streams; x; x = x->next)
    if ((const void *)x == s)
      return x->ctx == current;
  return 0;
}

void streams_reclaim(fctx *c) {
  for (fstream **p = &streams; *p;) {
    fstream *x = *p;
    if (x->ctx == c) {
      *p = x->next;
      stats.reclaimed++;
      stats.streams--;
      if (x->capture) /* its graph goes with the context (graphs_reclaim) */
        captures_active -= !x->relaxed_mode;
      free(x);
    } else {
      p = &x->next;
    }
  }
  for (fevent **p = &events; *p;) {
    fevent *x = *p;
    if (x->ctx == c) {
      *p = x->next;
      stats.reclaimed++;
      stats.events--;
      free(x);
    } else {
      p = &x->next;
    }
  }
  if (c == primary)
    primary = NULL;
}

/*===-- The context stack --------------------------------------------------===*/

EXPORT CUresult cuCtxGetCurrent(fctx **out) {
  ENTER(cuCtxGetCurrent);
  NEED_INIT();
  if (!out)
    RETURN(violation(INVALID_VALUE, "cuCtxGetCurrent(NULL)"));
  *out = current;
  RETURN(SUCCESS);
}

EXPORT CUresult cuCtxGetDevice(CUdevice *dev) {
  ENTER(cuCtxGetDevice);
  NEED_CTX();
  if (!dev)
    RETURN(violation(INVALID_VALUE, "cuCtxGetDevice(NULL)"));
  *dev = 0;
  RETURN(SUCCESS);
}

EXPORT CUresult cuCtxPushCurrent_v2(fctx *c) {
  ENTER(cuCtxPushCurrent_v2);
  NEED_INIT();
  if (!ctx_alive(c))
    RETURN(violation(INVALID_CONTEXT, "cuCtxPushCurrent of a context that is not alive"));
  if (ctx_depth == CTX_STACK_DEPTH)
    RETURN(violation(OUT_OF_MEMORY, "cuCtxPushCurrent: %d contexts pushed and never popped",
                     CTX_STACK_DEPTH));
  ctx_stack[ctx_depth++] = current;
  current = c;
  RETURN(SUCCESS);
}

EXPORT CUresult cuCtxPopCurrent_v2(fctx **out) {
  ENTER(cuCtxPopCurrent_v2);
  NEED_INIT();
  if (!current)
    RETURN(violation(INVALID_CONTEXT, "cuCtxPopCurrent with no current context"));
  if (out)
    *out = current;
  current = ctx_depth ? ctx_stack[--ctx_depth] : NULL;
  RETURN(SUCCESS);
}

/*===-- The primary context ------------------------------------------------===*/

EXPORT CUresult cuDevicePrimaryCtxRetain(fctx **out, CUdevice dev) {
  ENTER(cuDevicePrimaryCtxRetain);
  NEED_INIT();
  if (!out || dev != 0)
    RETURN(violation(out ? INVALID_DEVICE : INVALID_VALUE, "cuDevicePrimaryCtxRetain(%p, %d)",
                     (void *)out, dev));
  if (!primary) {
    if (!(primary = calloc(1, sizeof *primary)))
      RETURN(OUT_OF_MEMORY);
    primary->next = contexts;
    contexts = primary;
    stats.contexts++;
  }
  primary->primary_refs++;
  stats.primary_refs++;
  *out = primary;
  RETURN(SUCCESS);
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  ENTER(cuDevicePrimaryCtxRelease_v2);
  NEED_INIT();
  if (dev != 0 || !primary)
    RETURN(violation(dev ? INVALID_DEVICE : INVALID_CONTEXT,
                     "cuDevicePrimaryCtxRelease of device %d, not retained", dev));
  stats.primary_refs--;
  if (--primary->primary_refs == 0) {
    if (primary->running)
      finish(primary, 1);
    ctx_free(primary); /* the last release destroys it with what it holds */
  }
  RETURN(SUCCESS);
}

/*===-- Streams ------------------------------------------------------------===*/

EXPORT CUresult cuStreamCreate(fstream **out, unsigned flags) {
  ENTER(cuStreamCreate);
  NEED_CTX();
  if (!out || flags > 1) /* CU_STREAM_DEFAULT, CU_STREAM_NON_BLOCKING */
    RETURN(violation(INVALID_VALUE, "cuStreamCreate(%p, flags %u)", (void *)out, flags));
  fstream *x = calloc(1, sizeof *x);
  if (!x)
    RETURN(OUT_OF_MEMORY);
  x->ctx = current;
  x->flags = flags;
  x->next = streams;
  streams = x;
  stats.streams++;
  *out = x;
  RETURN(SUCCESS);
}

EXPORT CUresult cuStreamDestroy_v2(fstream *s) {
  ENTER(cuStreamDestroy_v2);
  NEED_INIT();
  for (fstream **p = &streams; *p; p = &(*p)->next)
    if (*p == s) {
      if (s->capture)
        RETURN(violation(STREAM_CAPTURE_UNSUPPORTED, "cuStreamDestroy of a stream that is "
                                                     "capturing (end the capture first)"));
      *p = s->next;
      if (s->ctx->stream == s) /* its kernel runs on; nothing names the stream now */
        s->ctx->stream = NULL;
      free(s);
      stats.streams--;
      RETURN(SUCCESS);
    }
  RETURN(violation(INVALID_HANDLE, "cuStreamDestroy of a stream that is not alive"));
}

/*===-- Events -------------------------------------------------------------===*/

EXPORT CUresult cuEventCreate(fevent **out, unsigned flags) {
  ENTER(cuEventCreate);
  NEED_CTX();
  if (!out || (flags & ~0xFu))
    RETURN(violation(INVALID_VALUE, "cuEventCreate(%p, flags 0x%x)", (void *)out, flags));
  fevent *x = calloc(1, sizeof *x);
  if (!x)
    RETURN(OUT_OF_MEMORY);
  x->ctx = current;
  x->next = events;
  events = x;
  stats.events++;
  *out = x;
  RETURN(SUCCESS);
}

EXPORT CUresult cuEventDestroy_v2(fevent *e) {
  ENTER(cuEventDestroy_v2);
  NEED_INIT();
  for (fevent **p = &events; *p; p = &(*p)->next)
    if (*p == e) {
      *p = e->next;
      free(e);
      stats.events--;
      RETURN(SUCCESS);
    }
  RETURN(violation(INVALID_HANDLE, "cuEventDestroy of an event that is not alive"));
}

EXPORT CUresult cuEventRecord(fevent *e, fstream *s) {
  ENTER(cuEventRecord);
  NEED_CTX();
  fevent *x = event_alive(e);
  if (!x || x->ctx != current || !stream_ok(s))
    RETURN(violation(INVALID_HANDLE, "cuEventRecord of an event or on a stream that is not "
                                     "the current context's"));
  CUresult r = SUCCESS;
  int route = capture_route(fn_, s, &r);
  if (route < 0)
    RETURN(r);
  x->captured = route > 0; /* a graph's node: no launch of its own to complete with */
  fctx *c = current; /* after the kernel in flight when it runs on `s` (or s is NULL) */
  x->launch = !route && c->running && (!s || c->stream == s) ? c->launch : 0;
  RETURN(SUCCESS);
}

EXPORT CUresult cuEventQuery(fevent *e) {
  ENTER(cuEventQuery);
  NEED_INIT();
  NO_CAPTURE();
  fevent *x = event_alive(e);
  if (!x)
    RETURN(violation(INVALID_HANDLE, "cuEventQuery of an event that is not alive"));
  if (x->captured)
    RETURN(violation(CAPTURED_EVENT, "cuEventQuery of an event last recorded in a capture"));
  fctx *c = x->ctx;
  if (!x->launch || !c->running || c->launch != x->launch)
    RETURN(SUCCESS);
  CUresult r = query(c);
  if (r != NOT_READY)
    x->launch = 0;
  RETURN(r);
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, fstream *s) {
  ENTER(cuMemsetD8Async);
  NEED_CTX();
  if (!stream_ok(s))
    RETURN(violation(INVALID_HANDLE, "cuMemsetD8Async on stream %p, not one of this context", s));
  if (n == 0)
    RETURN(SUCCESS);
  void *d = host_view(dst, n);
  if (!d)
    RETURN(violation(INVALID_VALUE, "cuMemsetD8Async of %zu bytes at 0x%llx", n, dst));
  stats.last_memset_stream = (unsigned long long)(uintptr_t)s;
  stats.last_memset_bytes = n;
  CUresult r = SUCCESS;
  int route = capture_route(fn_, s, &r);
  if (route) {
    gnode *g = route > 0 ? capture_node(s) : NULL;
    if (g) {
      g->kind = NODE_MEMSET;
      g->dst = dst;
      g->n = n;
      g->value = v;
    }
    RETURN(route > 0 && !g ? OUT_OF_MEMORY : r);
  }
  memset(d, v, n);
  RETURN(SUCCESS);
}

/* Copies between device addresses (mapped host memory has one too). */
EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, fstream *s) {
  ENTER(cuMemcpyAsync);
  NEED_CTX();
  if (!stream_ok(s))
    RETURN(violation(INVALID_HANDLE, "cuMemcpyAsync on stream %p, not one of this context", s));
  if (n == 0)
    RETURN(SUCCESS);
  void *d = host_view(dst, n), *from = host_view(src, n);
  if (!d || !from)
    RETURN(violation(INVALID_VALUE, "cuMemcpyAsync of %zu bytes from 0x%llx to 0x%llx", n, src,
                     dst));
  CUresult r = SUCCESS;
  int route = capture_route(fn_, s, &r);
  if (route) {
    gnode *g = route > 0 ? capture_node(s) : NULL;
    if (g) {
      g->kind = NODE_MEMCPY;
      g->dst = dst;
      g->src = src;
      g->n = n;
    }
    RETURN(route > 0 && !g ? OUT_OF_MEMORY : r);
  }
  memmove(d, from, n);
  RETURN(SUCCESS);
}
