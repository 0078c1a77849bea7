/*===- src/device.h - Contexts, programs, handles and the device table ----===
 *
 * What the public entry points (ctx.c, memory.c, program.c, bind.c, run.c,
 * timeline.c) share with the devices (sim.c, cuda.c):
 *
 *   - etl_device: one table of function pointers per device. A device is one
 *     file that defines its table plus one entry in ctx.c's etl_devices[];
 *     nothing else in the runtime names a device.
 *   - etl_context / etl_program: the objects behind the public handles.
 *   - handles (handle.c): etlContext and etlProgram values are index +
 *     generation numbers into a table the runtime owns, so a destroyed or
 *     made-up handle is refused without reading freed memory.
 *   - allocations (memory.c): every etlMalloc block and every registered
 *     host range, so binds and copies are checked against the allocation
 *     they point into.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_RUNTIME_DEVICE_H
#define ETL_RUNTIME_DEVICE_H

#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct etl_context etl_context;
/* A CTA's running profile totals when it finished a task (sim_profile.h). */
typedef struct etl_profile_sample_t {
  uint64_t t_ns;
  uint32_t cta;
  uint64_t requests, sectors, wavefronts;
} etl_profile_sample_t;

typedef struct etl_program etl_program;

/*===-- The device table ---------------------------------------------------===*/

typedef struct etl_device {
  const char *name; /* as etlContextCreate takes it: "sim", "cuda" */
  int is_gpu;       /* etlContextIsGpu */
  /// Device memory is host memory at the same address (sim): host pointers
  /// may be bound directly and registered with etlRegisterHostMemory.
  int host_addressable;
  /// Open the device for `ctx` (ctx->params set): fill num_ctas,
  /// device_name, the control block (abort_host/abort_dptr) and `state`.
  /// On failure the message is set and nothing is left to release.
  etlStatus (*context_create)(etl_context *ctx);
  void (*context_destroy)(etl_context *ctx);
  /// Device memory (sim: zeroed). `bytes` may be 0.
  etlStatus (*alloc)(etl_context *ctx, size_t bytes, uint64_t *dptr);
  void (*free)(etl_context *ctx, uint64_t dptr);
  etlStatus (*htod)(etl_context *ctx, uint64_t dst, const void *src, size_t n);
  etlStatus (*dtoh)(etl_context *ctx, void *dst, uint64_t src, size_t n);
  /// Set `n` bytes at `dst` to 0, ordered before the next launch on
  /// `stream` (NULL: the default stream): `buffer ... = zeros` before a run.
  etlStatus (*zero)(etl_context *ctx, uint64_t dst, size_t n, void *stream);
  /// Copy `n` bytes from `src` to `dst`, device addresses (or the device
  /// view of the mapped control block), ordered on `stream` like `zero`:
  /// the per-run reset of counters, queue state and error record from the
  /// plan's pristine image, which a captured CUDA graph replays.
  etlStatus (*copy)(etl_context *ctx, uint64_t dst, uint64_t src, size_t n, void *stream);
  /// Whether `stream` is capturing a CUDA graph (*capturing = 1; an
  /// invalidated capture is an error). NULL for a device without streams.
  etlStatus (*capturing)(etl_context *ctx, void *stream, int *capturing);
  /// Optional (NULL: nothing to do): between hold(ctx, 1) and hold(ctx, 0)
  /// on one thread, the device's calls share one entry into its context
  /// (cuda: one context push and pop for a run's calls, not one per call).
  /// hold(ctx, 0) returns the failure to leave, if any.
  etlStatus (*hold)(etl_context *ctx, int on);
  /// Load the artifact's code for this device into p->state.
  etlStatus (*program_load)(etl_program *p);
  void (*program_unload)(etl_program *p);
  /// Start one launch on `stream` (NULL: the default stream; run.c refuses
  /// a stream on a device that is not a GPU) with the argument block at
  /// `args` (device memory, filled). Sets *in_flight = 1 once the kernel is
  /// queued (also when a later step of the call fails): `finish` must then
  /// be called. A device that runs the launch to completion here (sim)
  /// leaves it 0 and returns the launch's status. `capture`: `stream` is
  /// capturing a CUDA graph, so the launch is recorded, not run: nothing is
  /// in flight and nothing may wait for it (no event, no watchdog).
  etlStatus (*launch)(etl_program *p, etl_plan *plan, uint64_t args, void *stream, int capture,
                      int *in_flight);
  /// The launch in flight: ETL_ERROR_NOT_READY while it runs when `block` is
  /// 0, else its status once it ended. Each call checks the watchdog. NULL
  /// for a device whose launches never stay in flight.
  etlStatus (*finish)(etl_program *p, etl_plan *plan, int block);
  /// Encode tensor map `t` (etl_abi.h v9; tma.c checked the binding) of
  /// element type `elem` for the tensor at `dptr` of extents `dims`
  /// (outermost first) into the 128 bytes at `out` (64-byte aligned), as
  /// the loaded code's TMA copies read it (cuda: cuTensorMapEncodeTiled,
  /// only when that code is sm_90a's; sim: its own record, sim_tma.c).
  /// Leaves `out` untouched when the loaded code reads no tensor map.
  etlStatus (*encode_tma)(etl_program *p, const etl_tma_meta *t, uint32_t elem, uint64_t dptr,
                          const int64_t *dims, void *out);
} etl_device;

/* tma.c: the tensor maps of `m` for this run's binding into the argument
 * slots `args` (run.c's start, before the block is uploaded). */
etlStatus etl_tma_encode(etl_program *p, etl_plan *pl, uint64_t *args);

/* Each device's file defines its table; ctx.c's etl_devices[] lists them. */

/*===-- Objects ------------------------------------------------------------===*/

/// A block from etlMalloc (host == 0) or a range registered with
/// etlRegisterHostMemory (host == 1). `id` is unique per context and never
/// reused, so a binding can tell that its allocation was freed.
typedef struct etl_alloc {
  uint64_t dptr;
  uint64_t bytes; /* as requested */
  uint64_t id;
  int host;
} etl_alloc;

struct etl_context {
  uint64_t handle;
  const etl_device *dev;
  void *state; /* the device's */
  etlContextParams params;
  char device_name[256];
  uint32_t num_ctas;
  pthread_mutex_t mu;        /* allocations and the program list */
  pthread_mutex_t launch_mu; /* one launch at a time; the run fields below */
  etl_program *inflight;     /* whose run is in flight (run.c), or NULL */
  etl_alloc *allocs;
  size_t n_allocs, cap_allocs;
  uint64_t next_alloc_id;
  etl_program *programs;
  uint32_t *abort_host; /* host-visible control block: abort flag, progress */
  uint64_t abort_dptr;  /* as the kernel sees it */
};

typedef struct etl_tensor_binding {
  int bound;
  uint64_t dptr;
  uint64_t bytes;    /* of the bound shape, overflow-checked */
  uint64_t alloc_id; /* the allocation dptr pointed into at bind time; 0 = none */
  int64_t shape[ETL_MAX_RANK];
} etl_tensor_binding;

struct etl_program {
  uint64_t handle;
  etl_context *ctx;
  etl_program *next; /* in ctx->programs */
  etl_artifact art;
  int64_t *dim_values;
  uint8_t *dim_bound;
  etl_tensor_binding *tensors;
  uint64_t *scalar_bits; /* per scalar: its value's bits (etl_abi.h) */
  uint8_t *scalar_bound;
  etl_plan *plans; /* cache, most recent first */
  void *state;     /* the device's loaded code */
  /* timeline (etlProgramSetTimeline) */
  char *timeline_path; /* NULL = off */
  etlTimelineRecord *timeline;
  size_t timeline_count;
  int race_check;     /* etlProgramSetRaceCheck (sim only) */
  int poison_buffers; /* etlProgramSetPoisonBuffers (sim only; or ETL_SIM_POISON=1) */
  /* the last run's profile samples, for the timeline's counter tracks */
  struct etl_profile_sample_t *profile_samples;
  size_t n_profile_samples;
  char *profile_path; /* etlProgramSetProfile (sim only); NULL = off */
  char ***axis_text;  /* per tensor, per axis: the extent as text (describe.c) */
  /* an artifact of several variants (variant.c): a program of its own per
     variant (subs, with their own handles), bound from this one's
     bindings at each run; this one loads no code */
  uint32_t n_subs;
  etl_program **subs;
  uint32_t **sub_tensor; /* per sub: its index of each of this one's tensors */
  etl_program *ran;      /* the sub of the last run, NULL before any */
  int ran_variant;       /* its index, -1 before any run */
  /* the last run etlRunAsync launched (run.c; under ctx->launch_mu) */
  int run_inflight;     /* launched, not yet seen finished */
  etl_plan *run_plan;   /* its plan (not evicted while in flight) */
  uint64_t run_tl_dptr; /* its timeline records, 0 = none */
  etlStatus run_status; /* once finished */
  char *run_message;    /* its message when it failed (NULL = none) */
};

/*===-- For the artifact fuzzer (tests/fuzz/fuzz_artifact.cpp) -------------===*/

/// etlProgramLoadMemory, but the device code is loaded only when
/// `load_code` is non-zero (a program loaded without it must never reach
/// etlRun) (program.c); and etlRun's bind-time checks and per-shape plan
/// (with its device memory), without the launch (run.c).
etlStatus etl_program_load(etlContext c, const void *data, size_t size, int load_code,
                           etlProgram *out);
etlStatus etl_program_prepare(etlProgram p);

/*===-- Variants (variant.c) -----------------------------------------------===*/

/// A program per variant of p->art (load_code as etl_program_load's);
/// on failure the ones made are destroyed.
etlStatus etl_variants_load(etl_program *p, int load_code);
void etl_variants_destroy(etl_program *p);
/// The variant the bound dims select, its bindings copied from `p`'s:
/// *sub and *index. ETL_ERROR_UNBOUND for an unbound dim a range names,
/// ETL_ERROR_BINDING when no variant's ranges hold.
etlStatus etl_variant_bind(etl_program *p, etl_program **sub, int *index);
/// A program setter applied to every variant of `p` too: `call` names h_,
/// the variant's handle; the first failure is returned.
#define ETL_FOR_SUBS(p, call)                                                                      \
  for (uint32_t i_ = 0; i_ < (p)->n_subs; ++i_) {                                                  \
    etlProgram h_ = (etlProgram)(uintptr_t)(p)->subs[i_]->handle;                                  \
    etlStatus st_ = (call);                                                                        \
    if (st_)                                                                                       \
      return st_;                                                                                  \
  }
/// Shared by program.c for the subs: a program over a decoded artifact
/// (moved from `art`, which is left empty), registered with a handle.
etlStatus etl_program_new(etl_context *c, etl_artifact *art, int load_code, etl_program **out);

/*===-- Handles (handle.c) -------------------------------------------------===*/

typedef enum etl_handle_kind { ETL_HANDLE_CONTEXT = 1, ETL_HANDLE_PROGRAM = 2 } etl_handle_kind;

/// A new handle for `obj`; 0 when out of memory.
uint64_t etl_handle_new(etl_handle_kind kind, void *obj);
/// The live object of `h`, or NULL for 0, a destroyed handle, a handle of
/// another kind or a value that was never a handle. Reads only the table.
void *etl_handle_get(etl_handle_kind kind, uint64_t h);
/// Invalidate `h` (its slot's generation moves on).
void etl_handle_drop(uint64_t h);

static inline etl_context *etl_ctx_of(etlContext h) {
  return (etl_context *)etl_handle_get(ETL_HANDLE_CONTEXT, (uint64_t)(uintptr_t)h);
}
static inline etl_program *etl_prog_of(etlProgram h) {
  return (etl_program *)etl_handle_get(ETL_HANDLE_PROGRAM, (uint64_t)(uintptr_t)h);
}

#define ETL_GET_CTX(var, h)                                                                        \
  etl_context *var = etl_ctx_of(h);                                                                \
  if (!var)                                                                                        \
  return etl_error(ETL_ERROR_INVALID_HANDLE, "%s: invalid, NULL or destroyed context", __func__)
#define ETL_GET_PROG(var, h)                                                                       \
  etl_program *var = etl_prog_of(h);                                                               \
  if (!var)                                                                                        \
  return etl_error(ETL_ERROR_INVALID_HANDLE, "%s: invalid, NULL or destroyed program", __func__)

/*===-- Device memory (memory.c) -------------------------------------------===*/

/// Raw device memory for the runtime's own arrays (not tracked).
etlStatus etl_dev_alloc(etl_context *ctx, size_t bytes, uint64_t *dptr);
void etl_dev_free(etl_context *ctx, uint64_t dptr); /* 0 is ignored */
etlStatus etl_dev_htod(etl_context *ctx, uint64_t dst, const void *src, size_t n);
etlStatus etl_dev_dtoh(etl_context *ctx, void *dst, uint64_t src, size_t n);

/// The allocation holding address `addr` (copied to *out): 1, or 0 when
/// `addr` lies in no known allocation. Takes ctx->mu.
int etl_alloc_find(etl_context *ctx, uint64_t addr, etl_alloc *out);
/// Bytes of a tensor of `rank` extents `shape` of `elem` at address `dptr`
/// into *bytes: -1 (no message) when the size overflows 64 bits or the
/// range [dptr, dptr + bytes) wraps around the address space.
/// "etlMalloc" or "host memory registered with etlRegisterHostMemory".
const char *etl_alloc_origin(const etl_alloc *a);
int etl_tensor_bytes(uint32_t elem, int rank, const int64_t *shape, uint64_t dptr, uint64_t *bytes);

/*===-- The sim code section (elf.c) ---------------------------------------===*/

/// Check that `data` is an ELF shared object for this machine whose headers,
/// sections and segments all lie inside its `size` bytes, so the dynamic
/// loader never touches a byte past the image (a shortened image would
/// otherwise fault inside dlopen). 0, or -1 with a message in `err`.
int etl_elf_check(const uint8_t *data, uint64_t size, char *err, size_t errsz);

/*===-- Between the entry points' files ------------------------------------===*/

/// bind.c: every dim and tensor bound, constraints hold, shapes match the
/// program, every tensor still fits the allocation it was bound into.
etlStatus etl_bindings_validate(etl_program *p);
/// run.c: free a plan's device memory and host side.
void etl_plan_release(etl_context *c, etl_plan *pl, const etl_meta *m);
/// run.c: finish `p`'s run in flight, if any (blocking), before it is destroyed.
void etl_run_drain(etl_program *p);
/// timeline.c: copy the launch's records at `dptr` back into p->timeline.
etlStatus etl_timeline_collect(etl_program *p, const etl_plan *pl, uint64_t dptr);
/// describe.c: print every tensor's axis extents into p->axis_text.
etlStatus etl_describe_init(etl_program *p);
/// timeline.c: write p->timeline as Chrome trace JSON to `path`.
etlStatus etl_timeline_write(etl_program *p, const etl_plan *pl, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* ETL_RUNTIME_DEVICE_H */
