/*===- etl/etl.h - The ETL runtime's public C API --------------------------===
 *
 * The one header an application includes to run programs compiled by etlc.
 * Shape: the CUDA Driver API / SQLite style. Opaque handles with create and
 * destroy pairs, every function returns an `etlStatus` (0 = success) and a
 * failing call leaves a detailed, per-thread message that
 * etlGetLastErrorMessage() returns.
 *
 * Typical use:
 *
 *   etlContext ctx;   etlContextCreate(&ctx, "auto", NULL);
 *   etlProgram prog;  etlProgramLoadFile(ctx, "model.etlb", &prog);
 *   etlBindDim(prog, "B", 8);
 *   etlBindTensor(prog, "x", x_dptr, ETL_F32, 2, shape);
 *   if (etlRun(prog) != ETL_SUCCESS) fprintf(stderr, "%s\n", etlGetLastErrorMessage());
 *   etlProgramDestroy(prog);  etlContextDestroy(ctx);
 *
 * Devices: "sim" runs the artifact's x86-64 code on the CPU (CTAs as worker
 * threads, CUDA threads as fibers, every global access checked); "cuda" runs
 * its PTX through libcuda.so.1, loaded at run time; "auto" picks "cuda" when a
 * driver and a device exist and "sim" otherwise.
 *
 * Handles: etlContext and etlProgram values are index + generation numbers
 * into a table the runtime owns, not addresses. A destroyed handle (or one
 * of a destroyed context's programs) is refused with
 * ETL_ERROR_INVALID_HANDLE; the runtime never reads freed memory to find out.
 *
 * Memory rules. The context records every etlMalloc block and every range
 * given to etlRegisterHostMemory. A pointer passed to etlBindTensor,
 * etlMemcpyHtoD or etlMemcpyDtoH that lies inside one of them must fit it:
 * the bound shape's bytes (or the copy's) from that pointer to the end of
 * the allocation, else ETL_ERROR_BINDING (bind) / ETL_ERROR_INVALID_VALUE
 * (copy) with a message naming the tensor, the bound shape and the
 * allocation's size. A pointer inside no known allocation is accepted
 * unchecked: on sim, plain host memory (arrays, std::vector); on CUDA,
 * device memory the application allocated itself. Register host memory on
 * sim to have it checked too. Byte sizes are computed with overflow checks
 * (a shape whose size overflows 64 bits is ETL_ERROR_BINDING). etlRun
 * refuses a tensor whose allocation was freed (or unregistered) after it
 * was bound. Inside a launch, sim checks every access against the bound
 * shapes (ETL_ERROR_MEMORY_VIOLATION); CUDA does not.
 *
 * Thread safety: handles may be used from any thread, but a program must not
 * be bound, run or waited for from two threads at once, nor destroyed while
 * in use (a run in flight is waited for by the destroy).
 *
 * Environment: settings a user may change without rebuilding the host.
 *   ETL_DEVICE=sim|cuda      what "auto" means in etlContextCreate (a host
 *                            that names a device keeps it)
 *   ETL_SIM_WORKERS=N        etlContextDefaultParams().sim_workers (1..1024)
 *   ETL_WATCHDOG_MS=N        etlContextDefaultParams().watchdog_ms (>= 1)
 * They apply where the host uses the defaults (params NULL or from
 * etlContextDefaultParams); a malformed value makes etlContextCreate fail
 * with ETL_ERROR_INVALID_VALUE naming the variable.
 *
 * Linking: `find_package(ETLRuntime)` and `target_link_libraries(app
 * ETL::runtime)` (or ETL::runtime_static), or `pkg-config --cflags --libs
 * etl-runtime`. Only the functions declared here are exported.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_ETL_H
#define ETL_ETL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define ETL_API __declspec(dllexport)
#elif defined(__GNUC__)
#define ETL_API __attribute__((visibility("default")))
#else
#define ETL_API
#endif

#define ETL_VERSION_MAJOR 0
#define ETL_VERSION_MINOR 1
#define ETL_VERSION_PATCH 0

/// Result of every API call. 0 is success.
typedef enum etlStatus {
  ETL_SUCCESS = 0,
  ETL_ERROR_INVALID_VALUE,       ///< a NULL pointer, a negative size, a bad option
  ETL_ERROR_INVALID_HANDLE,      ///< a NULL, destroyed or made-up context/program
  ETL_ERROR_NOT_FOUND,           ///< no dim/tensor/scalar/device/target by that name
  ETL_ERROR_INVALID_ARTIFACT,    ///< truncated, corrupted or malformed artifact
  ETL_ERROR_UNSUPPORTED_VERSION, ///< artifact written for another runtime version
  ETL_ERROR_NO_DEVICE,           ///< the driver exists but has no usable device
  ETL_ERROR_NO_CUDA_DRIVER,      ///< libcuda.so.1 cannot be loaded
  ETL_ERROR_OUT_OF_MEMORY,       ///< host or device allocation failed
  ETL_ERROR_BINDING,             ///< wrong dtype/rank/shape or a constraint violated
  ETL_ERROR_UNBOUND,             ///< a dim, tensor or scalar was not bound before etlRun
  ETL_ERROR_LAUNCH_FAILED,       ///< the kernel could not be loaded or launched
  ETL_ERROR_MEMORY_VIOLATION,    ///< sim: a load/store outside every bound buffer
  ETL_ERROR_TIMEOUT,             ///< watchdog: no task completed within the limit
  ETL_ERROR_CUDA,                ///< any other CUDA driver error
  ETL_ERROR_IO,                  ///< a file could not be written (timeline trace)
  ETL_ERROR_RACE,                ///< sim race check: tasks not ordered by events share an element;
                                 ///< sim: shared memory meets a cp.async not yet waited for
  ETL_ERROR_NOT_READY,           ///< etlRunQuery: the run is still in flight (not a failure)
  ETL_ERROR_DIVERGENCE           ///< sim: the lanes of a warp did not all reach one warp shuffle
} etlStatus;

/// Element types of tensors (the artifact's ETL_ELEM_* codes; 5 is unused).
/// Their home is the runtime's abi/etl_elems.def; this header, installed
/// alone, repeats the codes, and the runtime's build checks that it does.
/// ETL_I4 / ETL_U4 are packed two to a byte, element 2k in the low nibble of
/// byte k: a tensor of n elements takes ceil(n / 2) bytes (tensors only).
typedef enum etlDType {
  ETL_F32 = 0,
  ETL_F16 = 1,
  ETL_I32 = 2,
  ETL_I64 = 3,
  ETL_BF16 = 4,
  ETL_I8 = 6,
  ETL_U8 = 7,
  ETL_I16 = 8,
  ETL_U16 = 9,
  ETL_U32 = 10,
  ETL_I4 = 11,
  ETL_U4 = 12,
  ETL_F8E4M3 = 13, ///< OCP FP8 E4M3: bias 7, no infinities, max 448
  ETL_F8E5M2 = 14  ///< OCP FP8 E5M2: bias 15, the top byte of an IEEE half
} etlDType;

/// A device (sim or CUDA) with its memory; owns programs loaded into it.
typedef struct etlContext_st *etlContext;
/// A loaded artifact with its current bindings and per-shape caches.
typedef struct etlProgram_st *etlProgram;

/// Options for etlContextCreate. Get defaults with etlContextDefaultParams().
typedef struct etlContextParams {
  uint32_t sim_workers;     ///< sim: CTAs (one worker thread each); default 4
  uint32_t sim_stack_bytes; ///< sim: stack of each simulated thread; default 64 KiB
  uint32_t watchdog_ms;     ///< stop a launch when no task completes for this long; default 10000
  int32_t cuda_device;      ///< cuda: device ordinal; default 0 (see "CUDA contexts")
} etlContextParams;

/*===-- Errors and version ------------------------------------------------===*/

/// Enum name of a status, e.g. "ETL_ERROR_BINDING". Never NULL.
ETL_API const char *etlGetErrorName(etlStatus status);
/// One-line description of a status. Never NULL.
ETL_API const char *etlGetErrorString(etlStatus status);
/// Detailed message of the last call that failed on the calling thread
/// ("" if none). Successful calls do not clear it. Valid until the next
/// failing call on this thread.
ETL_API const char *etlGetLastErrorMessage(void);
/// Runtime version as major*10000 + minor*100 + patch.
ETL_API int etlVersion(void);
/// Artifact format version this runtime reads.
ETL_API uint32_t etlArtifactVersion(void);

/*===-- Contexts ----------------------------------------------------------===*/

/// Default context options (see etlContextParams).
ETL_API etlContextParams etlContextDefaultParams(void);
/// Create a context on `device`: "sim", "cuda" or "auto" ("cuda" when a
/// driver and a device exist, else "sim"). `params` may be NULL (defaults).
/// Fails with ETL_ERROR_NO_CUDA_DRIVER / ETL_ERROR_NO_DEVICE for "cuda"
/// where none exists, ETL_ERROR_NOT_FOUND for an unknown device name.
///
/// CUDA contexts: a "cuda" context runs in the CUDA context current on the
/// calling thread when there is one on device `cuda_device` (the caller's
/// context, e.g. the one PyTorch made current; it must outlive the etl
/// context), else in the device's primary context, which it retains
/// (cuDevicePrimaryCtxRetain) until etlContextDestroy releases it. Every
/// call pushes that context for its duration and pops it again, so the
/// context current on the calling thread afterwards is the one that was
/// current before (from any thread); the runtime never creates a context of
/// its own nor leaves one current. Memory from cudaMalloc / torch in the
/// same (primary) context binds directly with etlBindTensor.
ETL_API etlStatus etlContextCreate(etlContext *ctx, const char *device,
                                   const etlContextParams *params);
/// Destroy a context, every program still loaded in it and every allocation
/// made with etlMalloc. NULL is accepted and ignored.
ETL_API etlStatus etlContextDestroy(etlContext ctx);
/// Human-readable device name, e.g. "sim (4 workers)" or the CUDA device
/// name. NULL for a NULL context.
ETL_API const char *etlContextDeviceName(etlContext ctx);
/// 1 if the context runs on a GPU, 0 for sim (and for NULL).
ETL_API int etlContextIsGpu(etlContext ctx);

/*===-- Device memory -----------------------------------------------------===*/

/// Allocate `bytes` of device memory (sim: host memory, 256-byte aligned).
ETL_API etlStatus etlMalloc(etlContext ctx, size_t bytes, void **dptr);
/// Free memory from etlMalloc. NULL is accepted; an unknown pointer is
/// ETL_ERROR_INVALID_VALUE. Tensors still bound into it must be bound again
/// before the next etlRun.
ETL_API etlStatus etlFree(etlContext ctx, void *dptr);
/// Copy `bytes` from host memory to device memory. A destination (and, on
/// sim, a source) inside a known allocation must fit it (see "Memory rules"
/// above), else ETL_ERROR_INVALID_VALUE and nothing is copied.
ETL_API etlStatus etlMemcpyHtoD(etlContext ctx, void *dst_dptr, const void *src, size_t bytes);
/// Copy `bytes` from device memory to host memory, checked like
/// etlMemcpyHtoD.
ETL_API etlStatus etlMemcpyDtoH(etlContext ctx, void *dst, const void *src_dptr, size_t bytes);
/// sim only: record `bytes` of host memory at `ptr` (the caller keeps
/// owning it) so binds and copies into it are checked against its size.
/// ETL_ERROR_INVALID_VALUE for NULL, 0 bytes, a range overlapping another
/// allocation or registration, or a device that cannot address host memory
/// (CUDA: copy into etlMalloc memory instead).
ETL_API etlStatus etlRegisterHostMemory(etlContext ctx, void *ptr, size_t bytes);
/// Forget a range registered with etlRegisterHostMemory (the memory is not
/// freed). An unknown pointer is ETL_ERROR_INVALID_VALUE.
ETL_API etlStatus etlUnregisterHostMemory(etlContext ctx, void *ptr);

/*===-- Programs ----------------------------------------------------------===*/

/// Load an artifact (.etlb) written by etlc. Validates the whole file
/// (version, size, checksum, metadata, bytecode) and loads the code for the
/// context's device.
ETL_API etlStatus etlProgramLoadFile(etlContext ctx, const char *path, etlProgram *prog);
/// Same as etlProgramLoadFile from bytes in memory (copied; the caller keeps
/// ownership of `data`).
ETL_API etlStatus etlProgramLoadMemory(etlContext ctx, const void *data, size_t size,
                                       etlProgram *prog);
/// Destroy a program and the buffers, counters and queues it cached. NULL
/// is accepted and ignored.
ETL_API etlStatus etlProgramDestroy(etlProgram prog);
/// Number of shape dimensions (symbols such as "B", "S") the program takes.
ETL_API etlStatus etlProgramNumDims(etlProgram prog, int *count);
/// Name of dimension `index` (0-based, metadata order).
ETL_API etlStatus etlProgramDimName(etlProgram prog, int index, const char **name);
/// Number of tensor parameters (runtime-allocated buffers are not counted).
ETL_API etlStatus etlProgramNumTensors(etlProgram prog, int *count);
/// Name of tensor parameter `index` (0-based).
ETL_API etlStatus etlProgramTensorName(etlProgram prog, int index, const char **name);

/// A tensor parameter as the program declares it. The strings belong to the
/// program and live until it is destroyed.
typedef struct etlTensorInfo {
  const char *name;
  etlDType dtype;
  int rank;
  /// `rank` strings: each axis' extent in the program's symbols, a dim name
  /// ("M") or an expression of dims and constants ("cdiv(N, 128)",
  /// "NP * 16", "2 * D2"), as the language writes it.
  const char *const *dims;
} etlTensorInfo;

/// Describe tensor parameter `index` (0-based, the order of
/// etlProgramTensorName).
ETL_API etlStatus etlProgramTensorInfo(etlProgram prog, int index, etlTensorInfo *info);
/// Does the kernel write tensor parameter `index`? `*written` is 1 when some
/// task stores to it or updates it atomically, 0 when the kernel only reads
/// it (memory that must not change, a read-only array, may be bound to it
/// then). The runtime cannot see whether memory is read-only: callers that
/// can (the Python package) refuse such memory for a written tensor.
ETL_API etlStatus etlProgramTensorWritten(etlProgram prog, int index, int *written);
/// The shape tensor parameter `index` must be bound with, from the dims
/// bound now: `shape` receives its rank extents. ETL_ERROR_UNBOUND naming
/// a dim that is not bound yet; ETL_ERROR_BINDING when an extent cannot be
/// evaluated (overflow). Lets a caller allocate outputs before etlRun.
ETL_API etlStatus etlProgramTensorShape(etlProgram prog, int index, int64_t *shape);
/// Number of scalar parameters (`eps: f32`, `n: i32`), bound with
/// etlBindScalar.
ETL_API etlStatus etlProgramNumScalars(etlProgram prog, int *count);

/// A scalar parameter as the program declares it. `name` belongs to the
/// program and lives until it is destroyed.
typedef struct etlScalarInfo {
  const char *name;
  etlDType dtype;
} etlScalarInfo;

/// Describe scalar parameter `index` (0-based, declaration order).
ETL_API etlStatus etlProgramScalarInfo(etlProgram prog, int index, etlScalarInfo *info);
/// Number of `where` facts the program checks when it runs.
ETL_API etlStatus etlProgramNumConstraints(etlProgram prog, int *count);
/// Fact `index` as the source writes it ("E <= TE") and,
/// when `where` is non-NULL, where it is declared ("moe.etl:25:9").
ETL_API etlStatus etlProgramConstraint(etlProgram prog, int index, const char **text,
                                       const char **where);
/// Variants (`etlc compile --variant`): an artifact may hold the program
/// compiled several times with other values of its tunable consts, each for
/// a range of the dims; etlRun runs the first variant whose ranges hold for
/// the bound dims (no recompilation), and a binding no variant's ranges
/// hold fails with ETL_ERROR_BINDING listing them. Every variant takes the
/// same dims, tensors and scalars. An artifact compiled without --variant
/// has one variant, labelled "".
ETL_API etlStatus etlProgramNumVariants(etlProgram prog, int *count);
/// Variant `index`'s label as etlc's command line wrote it ("B<=1:TK=64").
ETL_API etlStatus etlProgramVariantLabel(etlProgram prog, int index, const char **label);
/// The variant etlRun would run for the dims bound now: ETL_ERROR_UNBOUND
/// when a dim a variant's range names is not bound, ETL_ERROR_BINDING when
/// no variant is for them.
ETL_API etlStatus etlProgramSelectVariant(etlProgram prog, int *index);
/// The variant the program's last run (etlRun/etlRunAsync) ran; -1 before
/// any run.
ETL_API etlStatus etlProgramLastVariant(etlProgram prog, int *index);
/// "f32", "f16", "i32", "i64" or "bf16"; "?" for a value outside etlDType.
ETL_API const char *etlDTypeName(etlDType dtype);

/*===-- Binding and running -----------------------------------------------===*/

/// Bind a shape dimension. `value` must be >= 1. A failed call keeps the
/// previous binding.
ETL_API etlStatus etlBindDim(etlProgram prog, const char *name, int64_t value);
/// Bind a tensor parameter to device memory. `dtype` and `rank` must match
/// the program, the shape's byte size must not overflow and, when `dptr`
/// lies inside a known allocation, the tensor must fit in it (all checked
/// now, ETL_ERROR_BINDING); `shape` is checked against the program's shape
/// expressions at etlRun. A failed call keeps the previous binding.
///
/// Lifetime: the runtime stores `dptr`; it never copies, owns or retains the
/// memory. A binding stays in effect for every later etlRun/etlRunAsync of
/// `prog` until the tensor is bound again, and the memory must stay allocated
/// until every run that uses it has ended (etlRun returns; etlRunWait or
/// etlRunQuery for etlRunAsync). Freeing it and then running again without
/// rebinding is a use-after-free the runtime cannot always detect. (The
/// Python package, python/etl, holds a strong reference to every array it
/// binds until that tensor is rebound or the program is closed.)
ETL_API etlStatus etlBindTensor(etlProgram prog, const char *name, void *dptr, etlDType dtype,
                                int rank, const int64_t *shape);
/// Bind a scalar parameter. `value` points to one value of `dtype`, which
/// must be the parameter's: a float for ETL_F32, an int32_t for ETL_I32, an
/// int64_t for ETL_I64, and the 16 bits (uint16_t) of an IEEE half for
/// ETL_F16 or of a bfloat16 for ETL_BF16. The value is copied; it is passed
/// to every later etlRun until bound again. ETL_ERROR_BINDING for another
/// dtype, ETL_ERROR_NOT_FOUND for a name that is no scalar parameter (the
/// message lists them), ETL_ERROR_INVALID_VALUE for a NULL value. A failed
/// call keeps the previous binding.
ETL_API etlStatus etlBindScalar(etlProgram prog, const char *name, etlDType dtype,
                                const void *value);
/// Validate every binding (all dims, tensors and scalars bound, shapes match, all
/// constraints hold, no bound allocation freed since), then prepare intermediates, event counters
/// and queues (cached per shape binding), launch the megakernel and wait for it. Nothing is
/// launched when validation fails. After any failure the context and program stay usable.
/// Same as etlRunAsync(prog, NULL) followed by etlRunWait(prog).
ETL_API etlStatus etlRun(etlProgram prog);
/// Validate and prepare as etlRun, then launch the megakernel on `stream`
/// (a CUstream of the context's CUDA context, cast to void*; NULL = the
/// default stream) and return without waiting: the kernel runs after the
/// work queued on `stream` before it, and the program's run stays "in
/// flight" until etlRunWait or etlRunQuery sees it finish. The run's setup
/// is asynchronous on `stream` (its event counters and queue state reset by
/// a copy there); the argument block is uploaded (synchronously) only for a
/// binding that has not run before; the bound tensors are only touched by
/// the kernel.
/// CUDA graphs: when `stream` is capturing (cuStreamIsCapturing, e.g.
/// inside torch.cuda.graph), the run is recorded into the graph, not run,
/// and each replay runs it with the binding of this call and a fresh
/// state. Nothing is allocated, uploaded or waited for while capturing, so
/// the binding (dims, tensors, scalars) must have run once before the
/// capture (a warm-up run), and the timeline must be off: else
/// ETL_ERROR_INVALID_VALUE and nothing is recorded. The recorded run is
/// not in flight (etlRunWait returns at once; a run left in flight before
/// the capture stays so, for etlRunWait after it); no watchdog and no
/// device error record cover a replay. The program and the bound memory
/// must outlive the graph's replays, and a replay must not overlap a
/// direct run of the same program and dims.
/// A program has one run in flight at a time, and so does a context:
/// etlRunAsync first finishes the context's run in flight (blocking, with
/// the watchdog); if that run was this program's and it failed, its status
/// and message are returned ("the previous run ... failed") and nothing is
/// launched; another program's outcome is kept for its own etlRunWait.
/// The watchdog and the abort logic (stop a launch when no task completes
/// for watchdog_ms) run only inside etlRunWait and etlRunQuery (and the
/// calls above that finish a run): a host that never waits gets no
/// watchdog. Destroying the program or its context waits for its run.
/// sim: runs the launch to completion before returning (its status is
/// returned here and by etlRunWait); a non-NULL `stream` is
/// ETL_ERROR_INVALID_VALUE (sim has no CUDA streams).
ETL_API etlStatus etlRunAsync(etlProgram prog, void *stream);
/// Wait for the program's run in flight (with the watchdog) and return its
/// status: what etlRun would have returned, with the same message (device
/// error records, dynamic queue overflow, timeline write). Without a run in
/// flight, that status again (it is kept until the next etlRunAsync that
/// passes validation), or ETL_SUCCESS when no run was made.
ETL_API etlStatus etlRunWait(etlProgram prog);
/// Like etlRunWait without blocking: ETL_ERROR_NOT_READY while the run is
/// in flight (the watchdog is checked and may abort it), else the finished
/// run's status. Poll it to overlap host work with a run.
ETL_API etlStatus etlRunQuery(etlProgram prog);

/*===-- Timeline ----------------------------------------------------------===*/

/// One task of a run recorded with the timeline on. Times are the device's
/// clock in nanoseconds (CUDA: %globaltimer; sim: CLOCK_MONOTONIC), comparable
/// across SMs within a run: start is taken once the task's waits are
/// satisfied, end once its body is done and before its notifies, so a task
/// that waits on another starts no earlier than that one ends.
typedef struct etlTimelineRecord {
  uint64_t start_ns; ///< 0 when the task did not run
  uint64_t end_ns;
  uint32_t sm;     ///< CUDA: the SM (%smid); sim: the worker (CTA) index
  uint32_t cta;    ///< the CTA that ran the task
  uint32_t group;  ///< task group, in metadata order
  uint32_t linear; ///< row-major index of the task in its group's domain
} etlTimelineRecord;

/// Turn the per-task timeline on (`json_path` non-NULL) or off (NULL; also
/// drops the last run's records). While on, each etlRun gives the kernel a
/// per-launch record buffer (device memory on CUDA, copied back after the
/// launch) and, after a successful launch, writes Chrome trace JSON (opens in
/// chrome://tracing and Perfetto) to `json_path`, atomically (a temporary
/// file in the same directory, then rename): one complete ("ph":"X") event
/// per task, named like "partial[3, 1]", with "tid" = SM, "ts"/"dur" in
/// microseconds relative to the earliest start, and args group, linear and
/// cta. Fails with ETL_ERROR_INVALID_VALUE for an empty path and
/// ETL_ERROR_IO when the path's directory is not writable; when the trace
/// cannot be written after a successful launch, etlRun returns ETL_ERROR_IO
/// (its results and the records are still valid).
ETL_API etlStatus etlProgramSetTimeline(etlProgram prog, const char *json_path);

/// Turn the sim device's race check on (non-zero) or off. While on, each
/// etlRun follows the event protocol (notifies release, waits acquire, the
/// dynamic queue passes the order on) and keeps, per tensor element, the
/// last task that wrote and read it: an access from a task that no chain of
/// events orders after that writer (or, for a store, that reader) fails the
/// run with ETL_ERROR_RACE, naming the tensor, the element and both tasks.
/// Much slower, and its memory grows with tasks^2 / 8 bytes (a run too
/// large to check fails with ETL_ERROR_OUT_OF_MEMORY before launching).
/// ETL_ERROR_INVALID_VALUE on a program of a GPU context.
ETL_API etlStatus etlProgramSetRaceCheck(etlProgram prog, int enable);

/// Buffers (`buffer x: tensor<...>[...];` in a kernel) are allocated by the
/// runtime per binding shape; one declared `= zeros` is cleared before each
/// run (on the run's stream on a GPU), every other one starts undefined (it
/// may hold an earlier run's values). Turn the sim device's poison check on
/// (non-zero) or off: while on, each etlRun first fills the undefined
/// buffers with a quiet NaN (f32 0x7FC00000, f16 0x7E00, bf16 0x7FC0) or
/// 0xDEADBEEF... (i32, i64), so a read before a write shows in the results.
/// The environment variable ETL_SIM_POISON=1 turns it on for every program.
/// ETL_ERROR_INVALID_VALUE on a program of a GPU context.
ETL_API etlStatus etlProgramSetPoisonBuffers(etlProgram prog, int enable);

/// Turn the sim device's profile counters on (`json_path` non-NULL) or off.
/// While on, each successful etlRun writes `json_path` (atomically) and a
/// readable table to `json_path`.txt: per task group and per access site,
/// the quantities Nsight Compute reports with its definitions (warp-level
/// global requests, bytes requested, 32-byte sectors per request,
/// efficiency, lane utilisation, unique DRAM bytes of the launch) and the
/// synchronisation (tasks, barriers, atomics, fences, spin-wait iterations
/// and time). docs/PROFILE.md documents the JSON schema. Slower runs; the
/// results of the run are unaffected. ETL_ERROR_INVALID_VALUE on a program of
/// a GPU context or for an empty path, ETL_ERROR_IO for a directory that is
/// not writable.
ETL_API etlStatus etlProgramSetProfile(etlProgram prog, const char *json_path);
/// Records of the last successful etlRun with the timeline on, one per task
/// in static-queue order. `*count` receives the number of records; at most
/// `capacity` are copied into `records` (which may be NULL when `capacity`
/// is 0, to query the count). `*count` is 0 when nothing was recorded.
ETL_API etlStatus etlProgramGetTimeline(etlProgram prog, etlTimelineRecord *records,
                                        size_t capacity, size_t *count);

#ifdef __cplusplus
}
#endif
#endif /* ETL_ETL_H */
