/*===- tests/fake_cuda/fake_graph.c - Stream capture and graphs in the fake --===
 *
 * What this owns: the fake driver's (fake_cuda.h) stream capture
 * (cuStreamBeginCapture_v2, cuStreamEndCapture, cuStreamIsCapturing) and
 * graphs (cuGraphInstantiateWithFlags, cuGraphLaunch, cuGraphDestroy,
 * cuGraphExecDestroy), and the rules a capture imposes on every other
 * entry point (capture_refuse, capture_route: fake_internal.h). A graph is
 * the list of the calls made on the capturing stream, with the values
 * they were given (a kernel's parameters by value, a copy's addresses);
 * replaying it runs them in order on the launching stream and reads
 * memory as it is at replay time, as a real graph does.
 *===----------------------------------------------------------------------===*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_internal.h"

enum { MODE_GLOBAL = 0, MODE_THREAD_LOCAL = 1, MODE_RELAXED = 2 }; /* CUstreamCaptureMode */
enum { STATUS_NONE = 0, STATUS_ACTIVE = 1, STATUS_INVALIDATED = 2 }; /* CUstreamCaptureStatus */

int captures_active;
static fgraph *graphs;

static fgraph *graph_alive(const void *g, int exec) {
  for (fgraph *x = graphs; x; x = x->next)
    if (g && (const void *)x == g && x->exec == exec)
      return x;
  return NULL;
}

static void graph_free(fgraph *g) {
  for (fgraph **p = &graphs; *p; p = &(*p)->next)
    if (*p == g) {
      *p = g->next;
      break;
    }
  *(g->exec ? &stats.graph_execs : &stats.graphs) -= 1;
  free(g->nodes);
  free(g);
}

static fgraph *graph_new(fctx *c, int exec) {
  fgraph *g = calloc(1, sizeof *g);
  if (!g)
    return NULL;
  g->ctx = c;
  g->exec = exec;
  g->next = graphs;
  graphs = g;
  *(exec ? &stats.graph_execs : &stats.graphs) += 1;
  return g;
}

void graphs_reclaim(fctx *c) {
  for (fgraph *g = graphs, *nx; g; g = nx) {
    nx = g->next;
    if (g->ctx == c) {
      stats.reclaimed++;
      graph_free(g);
    }
  }
}

/* Every capture sequence breaks: cuStreamEndCapture will fail. */
static void invalidate_all(void) {
  for (fstream *s = NULL; (s = stream_next(s));)
    if (s->capture)
      s->invalidated = 1;
}

CUresult capture_refuse(const char *fn) {
  invalidate_all();
  return violation(STREAM_CAPTURE_UNSUPPORTED,
                   "%s while a stream is capturing a graph (it synchronises with the host or "
                   "allocates: the driver refuses it and invalidates the capture)",
                   fn);
}

int capture_route(const char *fn, void *s, CUresult *r) {
  fstream *x = stream_of(s);
  if (x && x->capture)
    return x->invalidated ? (*r = STREAM_CAPTURE_INVALIDATED, -1) : 1;
  if (s || !captures_active)
    return 0;
  for (fstream *y = NULL; (y = stream_next(y));)
    if (y->capture && !y->relaxed_mode && !(y->flags & 1u)) {
      invalidate_all();
      *r = violation(STREAM_CAPTURE_IMPLICIT,
                     "%s on the NULL stream while a blocking stream is capturing (it would "
                     "wait for the capture)",
                     fn);
      return -1;
    }
  return 0;
}

gnode *capture_node(void *s) {
  fgraph *g = stream_of(s)->capture;
  if (g->n == g->cap) {
    int cap = g->cap ? 2 * g->cap : 8;
    gnode *nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
    if (!nodes)
      return NULL;
    g->nodes = nodes;
    g->cap = cap;
  }
  gnode *n = &g->nodes[g->n++];
  memset(n, 0, sizeof *n);
  return n;
}

/*===-- Capture ------------------------------------------------------------===*/

EXPORT CUresult cuStreamBeginCapture_v2(fstream *s, int mode) {
  ENTER(cuStreamBeginCapture_v2);
  NEED_CTX();
  fstream *x = stream_of(s);
  if (!x || !stream_ok(s))
    RETURN(violation(INVALID_VALUE, "cuStreamBeginCapture of %s", s ? "a stream that is not the "
                                                                      "current context's"
                                                                    : "the NULL stream"));
  if (x->capture)
    RETURN(violation(ILLEGAL_STATE, "cuStreamBeginCapture of a stream already capturing"));
  if (mode < MODE_GLOBAL || mode > MODE_RELAXED)
    RETURN(violation(INVALID_VALUE, "cuStreamBeginCapture mode %d", mode));
  if (!(x->capture = graph_new(current, 0)))
    RETURN(OUT_OF_MEMORY);
  x->invalidated = 0;
  x->relaxed_mode = mode == MODE_RELAXED;
  captures_active += !x->relaxed_mode;
  RETURN(SUCCESS);
}

EXPORT CUresult cuStreamEndCapture(fstream *s, fgraph **out) {
  ENTER(cuStreamEndCapture);
  NEED_INIT();
  fstream *x = stream_of(s);
  if (!out || !x || !x->capture)
    RETURN(violation(ILLEGAL_STATE, "cuStreamEndCapture of a stream not capturing"));
  fgraph *g = x->capture;
  x->capture = NULL;
  captures_active -= !x->relaxed_mode;
  *out = NULL;
  if (x->invalidated) { /* the driver returns no graph */
    x->invalidated = 0;
    graph_free(g);
    RETURN(STREAM_CAPTURE_INVALIDATED);
  }
  stats.last_graph_nodes = g->n;
  stats.last_graph_kernels = stats.last_graph_copies = stats.last_graph_memsets = 0;
  for (int i = 0; i < g->n; ++i)
    *(g->nodes[i].kind == NODE_KERNEL   ? &stats.last_graph_kernels
      : g->nodes[i].kind == NODE_MEMCPY ? &stats.last_graph_copies
                                        : &stats.last_graph_memsets) += 1;
  *out = g;
  RETURN(SUCCESS);
}

EXPORT CUresult cuStreamIsCapturing(fstream *s, int *status) {
  ENTER(cuStreamIsCapturing);
  NEED_CTX();
  if (!status || !stream_ok(s))
    RETURN(violation(INVALID_VALUE, "cuStreamIsCapturing(%p, %p)", (void *)s, (void *)status));
  fstream *x = stream_of(s);
  *status = !x || !x->capture ? STATUS_NONE : x->invalidated ? STATUS_INVALIDATED : STATUS_ACTIVE;
  RETURN(SUCCESS);
}

/*===-- Graphs -------------------------------------------------------------===*/

EXPORT CUresult cuGraphInstantiateWithFlags(fgraph **out, fgraph *g, unsigned long long flags) {
  ENTER(cuGraphInstantiateWithFlags);
  NEED_CTX();
  if (!out || !graph_alive(g, 0) || flags)
    RETURN(violation(INVALID_VALUE, "cuGraphInstantiateWithFlags(%p, %p, %llu)", (void *)out,
                     (void *)g, flags));
  fgraph *e = graph_new(g->ctx, 1);
  if (!e || (g->n && !(e->nodes = malloc((size_t)g->n * sizeof *e->nodes)))) {
    if (e)
      graph_free(e);
    RETURN(OUT_OF_MEMORY);
  }
  if (g->n)
    memcpy(e->nodes, g->nodes, (size_t)g->n * sizeof *e->nodes);
  e->n = e->cap = g->n;
  *out = e;
  RETURN(SUCCESS);
}

/* Run the graph's calls in order, on `stream`, reading memory as it is now. */
EXPORT CUresult cuGraphLaunch(fgraph *e, fstream *s) {
  ENTER(cuGraphLaunch);
  NEED_CTX();
  if (!graph_alive(e, 1) || e->ctx != current || !stream_ok(s))
    RETURN(violation(INVALID_HANDLE, "cuGraphLaunch of a graph or on a stream that is not the "
                                     "current context's"));
  if (stream_of(s) && stream_of(s)->capture)
    RETURN(violation(STREAM_CAPTURE_UNSUPPORTED, "cuGraphLaunch into a capturing stream (the fake "
                                                 "does not nest graphs)"));
  for (int i = 0; i < e->n; ++i) {
    gnode *n = &e->nodes[i];
    void *d = n->kind == NODE_KERNEL ? NULL : host_view(n->dst, n->n);
    void *from = n->kind == NODE_MEMCPY ? host_view(n->src, n->n) : NULL;
    if (n->kind != NODE_KERNEL && (!d || (n->kind == NODE_MEMCPY && !from)))
      RETURN(violation(ILLEGAL_ADDRESS, "graph node %d: memory it names was freed", i));
    if (n->kind == NODE_MEMSET)
      memset(d, n->value, n->n);
    else if (n->kind == NODE_MEMCPY)
      memmove(d, from, n->n);
    else if (!func_loaded(n->f, current))
      RETURN(violation(ILLEGAL_ADDRESS, "graph node %d: its kernel's module was unloaded", i));
    else
      start_kernel(current, n->f, n->grid, n->block[0], n->smem, s, n->params);
  }
  stats.graph_launches++;
  RETURN(SUCCESS);
}

EXPORT CUresult cuGraphDestroy(fgraph *g) {
  ENTER(cuGraphDestroy);
  NEED_INIT();
  if (!graph_alive(g, 0))
    RETURN(violation(INVALID_VALUE, "cuGraphDestroy of a graph that is not alive"));
  graph_free(g);
  RETURN(SUCCESS);
}

EXPORT CUresult cuGraphExecDestroy(fgraph *e) {
  ENTER(cuGraphExecDestroy);
  NEED_INIT();
  if (!graph_alive(e, 1))
    RETURN(violation(INVALID_VALUE, "cuGraphExecDestroy of a graph that is not alive"));
  graph_free(e);
  RETURN(SUCCESS);
}
