/*===- abi/etl_abi.h - The contract between etlc and the runtime ----------===
 *
 * What this owns: every layout that both the compiler (C++) and the runtime
 * (C11) must agree on. Nothing here is public API; applications include only
 * <etl/etl.h>. Change a layout here and bump ETL_ARTIFACT_VERSION.
 *
 *   1. The artifact file (.etlb): header, section table, metadata encoding.
 *   2. The expression bytecode used in metadata (shapes, constraints, index
 *      maps, task domains) that the runtime evaluates at bind time.
 *   3. The megakernel's single argument: a block of 64-bit slots.
 *   4. The sim target's machine-operation table: the functions the sim code
 *      calls instead of PTX special registers, barriers and atomics.
 *
 * All integers are little-endian.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_ABI_H
#define ETL_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===-- 1. Artifact file ---------------------------------------------------===
 *
 *   etl_artifact_header                       (32 bytes, at offset 0)
 *   etl_section_entry[section_count]          (32 bytes each, right after)
 *   section payloads                          (at the offsets the entries give)
 *
 * `checksum` is FNV-1a (32-bit) over every byte after the header, so a
 * truncated or corrupted file is refused before anything is parsed.
 * `file_size` must equal the actual size.
 *
 * Sections:
 *   ETL_SECTION_META  exactly one, target "": the metadata (below).
 *   ETL_SECTION_CODE  one per target. target "sim": an x86-64 ELF shared
 *                     object exporting ETL_SIM_ENTRY and ETL_SIM_OPS_SYMBOL.
 *                     target "sm_80", "sm_90", ...: NUL-terminated PTX text
 *                     whose kernel entry is ETL_KERNEL_ENTRY.
 *
 * An artifact of several variants (v8; `etlc compile --variant`: the same
 * program compiled with other values of its tunable consts, each for a
 * range of the dims) holds instead, and nothing else:
 *   ETL_SECTION_VARIANTS  exactly one, target "": the variant table:
 *       u32 n_variants   1 .. ETL_MAX_VARIANTS
 *       { str label      as written on etlc's command line, e.g. "B<=1:TK=64"
 *         u32 n_ranges   0 .. the program's dims; 0: every binding
 *         { str dim; i64 lo; i64 hi }[n_ranges]   lo <= dim <= hi, lo <= hi;
 *                        dim names a dim of the program, each at most once }
 *       (encodings as in the metadata section below; no trailing bytes)
 *   ETL_SECTION_VARIANT   n_variants of them, in the table's order, target
 *       "": each a whole single-variant artifact (this header, META, CODE),
 *       of this version. Every variant has the same dims (names, order), the
 *       same scalars and the same parameters (name, element type, kind,
 *       shape expressions) in the same order; buffers, events, groups and
 *       code may differ. The runtime runs, per binding, the first variant
 *       whose ranges all hold.
 */
#define ETL_ARTIFACT_MAGIC "ETLB"
#define ETL_ARTIFACT_VERSION 9u
/* The oldest version this runtime still reads (v8: no tensor maps). */
#define ETL_ARTIFACT_VERSION_MIN 8u
#define ETL_MAX_VARIANTS 64u

typedef struct etl_artifact_header {
  char magic[4];      /* "ETLB" */
  uint32_t version;   /* ETL_ARTIFACT_VERSION */
  uint64_t file_size; /* total bytes, header included */
  uint32_t section_count;
  uint32_t checksum; /* FNV-1a 32 over bytes [32, file_size) */
  uint64_t reserved; /* 0 */
} etl_artifact_header;

enum {
  ETL_SECTION_META = 1,
  ETL_SECTION_CODE = 2,
  ETL_SECTION_VARIANTS = 3,
  ETL_SECTION_VARIANT = 4
};

typedef struct etl_section_entry {
  uint32_t kind;   /* ETL_SECTION_* */
  char target[12]; /* NUL-padded: "", "sim", "sm_90", ... */
  uint64_t offset; /* from file start */
  uint64_t size;
} etl_section_entry;

#define ETL_FNV1A_OFFSET 2166136261u
#define ETL_FNV1A_PRIME 16777619u

/* Metadata section encoding. Primitive encodings:
 *   u32, i64       little-endian
 *   str            u32 length, then that many bytes (no NUL)
 *   expr           u32 word count n, then n i64 words of bytecode (section 2)
 *
 *   u32 threads_per_cta
 *   u32 smem_bytes               dynamic shared memory a launch gives each CTA (v6; the
 *                                kernel's shared array is `extern`)
 *   str kernel_name
 *   str source_path              for messages
 *   u32 num_slots                slots in the argument block (>= ETL_SLOT_FIRST_PROGRAM)
 *   u32 n_dims      { str name; u32 slot }                        value slot: i64
 *   u32 n_tensors   { str name; u32 elem; u32 kind; u32 rank;
 *                     expr shape[rank]; u32 slot }                slot: pointer
 *                                       kind: enum etl_tensor_kind (BUFFER_ZEROS
 *                                       and INPUT came later in v6: older readers
 *                                       refuse them)
 *   u32 n_scalars   { str name; u32 elem; u32 slot }              slot: the value's
 *                                       bits in its low bytes (f32: 4, f16/bf16: 2,
 *                                       i32: 4, i64: 8; the rest zero)
 *   u32 n_constraints { expr cond; str text; str where }          where = "file:line:col"
 *   u32 n_events    { str name; u32 rank; expr shape[rank]; u32 slot }
 *                                       slot: element offset of E[0...] in the counter array
 *   u32 n_groups    { str name; u32 rank; { expr lo; expr hi }[rank];
 *                     u32 n_notifies { u32 event; u32 n; { u32 star; expr idx if star == 0 }[n] };
 *                     u32 n_waits    { same as notifies };
 *                     u32 schedule   ETL_SCHEDULE_STATIC or _DYNAMIC;
 *                     u32 data_var   ETL_NO_DATA_VAR, or the domain variable
 *                                    whose range reads tensor data (its hi
 *                                    here is the static bound; dynamic);
 *                     u32 layer_block  ETL_NO_LAYER_BLOCK, or k >= 1: the group
 *                                    belongs to layered block k (v7; rank >= 1,
 *                                    the block's groups consecutive in the
 *                                    order below; its static tasks are dealt
 *                                    layer by layer, by the first domain
 *                                    variable, then the groups in order) }
 *   u32 n_order     { u32 group }    groups in a topological order of the event graph
 *   u32 n_tma_maps  { u32 tensor; u32 slot; u32 rank; u32 box[rank] }   (v9; v8: none)
 *                                       a tensor map the runtime encodes at each run
 *                                       into slots [slot, slot + 16) (128 bytes, slot
 *                                       a multiple of 8: 64-byte aligned) for the
 *                                       TMA copies of the sm_90a code (and sim's):
 *                                       parameter or buffer `tensor` (rank = its rank,
 *                                       1 .. 2), boxes of box[] elements (outermost
 *                                       first, each 1 .. 256, the innermost of a
 *                                       multiple of 16 bytes), out-of-bounds elements
 *                                       read as zeros (device.h: encode_tma)
 *
 * Exprs in tensor/event shapes and constraints may use DIM; exprs in group
 * domains may use DIM (lo/hi of var k may use VAR j for j < k: not yet);
 * notify/wait indices may use DIM and VAR (the group's domain variables).
 * star (enum etl_index_kind): 0 = an expression, 1 = `*`, 2 = an index that reads tensor data
 * (waits of static groups; notifies without `*`): evaluated and
 * range-checked on the device, skipped by the runtime's bind-time checks; a
 * notify with one gives every element of the event one token per task,
 * which the task hands back on the elements it does not notify.
 */
/* The star flag of a wait/notify index (see above). */
typedef enum etl_index_kind {
  ETL_INDEX_EXPR = 0, /* an expression over dims and the group's variables */
  ETL_INDEX_STAR = 1, /* `*`: every element of that dimension */
  ETL_INDEX_DATA = 2  /* reads tensor data: evaluated and checked on the device */
} etl_index_kind;
enum { ETL_SCHEDULE_STATIC = 0, ETL_SCHEDULE_DYNAMIC = 1 };
/* A tensor's kind word: a parameter the caller binds, which some task may
 * write (PARAM: a store or atomic names it) or which the kernel only reads
 * (INPUT: read-only memory may be bound to it), or a buffer the runtime
 * allocates per binding shape, whose contents start undefined (BUFFER) or
 * are cleared to zero bytes before each run (BUFFER_ZEROS). */
typedef enum etl_tensor_kind {
  ETL_TENSOR_PARAM = 0,
  ETL_TENSOR_BUFFER = 1,
  ETL_TENSOR_BUFFER_ZEROS = 2,
  ETL_TENSOR_INPUT = 3
} etl_tensor_kind;
#define ETL_NO_DATA_VAR 0xFFFFFFFFu
#define ETL_NO_LAYER_BLOCK 0u /* a group in no layered block */
/* Element types: ETL_ELEM_F32 = 0 ... from etl_elems.def (their codes,
 * names, widths and layouts in memory). 5 is not a code (the compiler's
 * bool, which no tensor or scalar has). */
enum {
#define ETL_ELEM_TYPE(K, CODE, SPELLING, BITS) ETL_ELEM_##K = CODE,
#include "etl_elems.def"
  ETL_ELEM_LAST = ETL_ELEM_F8E5M2 /* the largest code */
};

/*===-- 2. Expression bytecode ---------------------------------------------===
 *
 * Postfix over a stack of int64. An op word is followed by its immediate, if
 * any. Division, modulo and cdiv are floor-based and need a divisor > 0 (the
 * evaluator reports an error otherwise); comparisons push 0 or 1.
 */
enum etl_xop {
  ETL_XOP_CONST = 1, /* imm: value */
  ETL_XOP_DIM = 2,   /* imm: dim index (metadata order) */
  ETL_XOP_VAR = 3,   /* imm: domain variable index of the group */
  ETL_XOP_ADD = 10,
  ETL_XOP_SUB,
  ETL_XOP_MUL,
  ETL_XOP_FLOORDIV,
  ETL_XOP_MOD,
  ETL_XOP_CDIV,
  ETL_XOP_MIN,
  ETL_XOP_MAX,
  ETL_XOP_NEG,
  ETL_XOP_EQ = 30,
  ETL_XOP_NE,
  ETL_XOP_LT,
  ETL_XOP_LE,
  ETL_XOP_GT,
  ETL_XOP_GE,
  ETL_XOP_AND,
  ETL_XOP_OR,
  ETL_XOP_NOT
};

/*===-- 3. Kernel argument block --------------------------------------------===
 *
 * The megakernel takes one parameter: a pointer (in device memory on CUDA,
 * host memory on sim) to `num_slots` uint64 slots. Fixed slots first, then
 * the program's slots as the metadata assigns them.
 */
enum etl_slot {
  ETL_SLOT_EVENTS = 0,     /* uint32_t* event counters */
  ETL_SLOT_QUEUE = 1,      /* uint32_t* static queue entries, (group, linear) pairs */
  ETL_SLOT_QUEUE_OFFS = 2, /* uint32_t* per-CTA start, num_ctas+1 entries, in pairs */
  ETL_SLOT_ABORT = 3,      /* the control block (below): word 0 non-zero = stop now */
  ETL_SLOT_NUM_CTAS = 4,   /* uint64 value */
  ETL_SLOT_TIMELINE = 5,   /* etl_timeline_record*, one per queue entry (0 = off) */
  ETL_SLOT_DYN = 6,        /* uint32_t* dynamic-scheduling state (below); 0 = none */
  ETL_SLOT_ERROR = 7,      /* uint32_t[ETL_ERR_WORDS]: a device-side error record */
  ETL_SLOT_FIRST_PROGRAM = 8
};

/* Dynamic scheduling (args[ETL_SLOT_DYN], groups with schedule dynamic).
 * One uint32 array, initialised by the runtime before every launch:
 *   [ETL_DYN_TAIL]      items pushed so far (next free slot)
 *   [ETL_DYN_HEAD]      tickets taken so far (a popping CTA takes head++
 *                       and runs the item of that slot; up to one per CTA
 *                       may wait past tail, or past the last push)
 *   [ETL_DYN_REMAINING] dynamic items not yet finished; 0 = CTAs may exit
 *   [ETL_DYN_CAPACITY]  slots = total dynamic tasks (each is pushed once)
 *   [ETL_DYN_ERROR]     non-zero: a push found the queue full (the kernel
 *                       also raises the abort flag)
 *   [ETL_DYN_NSTATIC]   static queue entries: a dynamic item run from slot s
 *                       writes timeline record NSTATIC + s
 *   [ETL_DYN_GROUP_OFF + g]  per group: first item id of group g (dynamic
 *                       groups; ids are dense in group order, task t of
 *                       group g has id off[g] + t)
 *   [ETL_DYN_GROUP_OFF + n_groups + g]  per group: P = its expanders (a
 *                       group whose range reads data; else 0). Its ids:
 *                       off[g] + p for the expander of prefix task p (the
 *                       variables before the data-dependent one), then
 *                       off[g] + P + t for task t of its largest domain.
 *                       An expander waits like a task; when run it
 *                       evaluates the range, adds its tasks to REMAINING,
 *                       settles the counts of the elements they notify
 *                       (each holds one token per expander: + n - 1) and
 *                       pushes them.
 *   then slots[capacity]: 0 = empty, id + 1 once pushed (release);
 *   then deps[capacity]: per item id, waited event elements not yet
 *                       complete; whoever brings it to 0 pushes the item.
 * Slots start at ETL_DYN_GROUP_OFF + 2 * n_groups. Items with no pending
 * dependency are in slots [0, tail) at launch. */
enum {
  ETL_DYN_TAIL = 0,
  ETL_DYN_HEAD = 1,
  ETL_DYN_REMAINING = 2,
  ETL_DYN_CAPACITY = 3,
  ETL_DYN_ERROR = 4,
  ETL_DYN_NSTATIC = 5,
  ETL_DYN_GROUP_OFF = 8
};

/* The device error record (args[ETL_SLOT_ERROR]), zeroed before each launch.
 * A task that finds an event index read from tensor data outside the
 * event's extent claims it (compare-and-swap of SET from 0 to ETL_ERR_SET_WAIT or _NOTIFY: the
 * first writer wins), fills the other words, and raises the abort flag; the runtime turns it into
 * the etlRun error message. */
enum {
  ETL_ERR_SET = 0,
  ETL_ERR_GROUP = 1,
  ETL_ERR_LINEAR = 2,
  ETL_ERR_EVENT = 3,
  ETL_ERR_DIM = 4,
  ETL_ERR_VALUE_LO = 5, /* the index value, two's complement, low word */
  ETL_ERR_VALUE_HI = 6,
  ETL_ERR_EXTENT = 7, /* the event's extent along DIM (low 32 bits) */
  ETL_ERR_WORDS = 8
};
/* What ETL_ERR_SET holds once claimed: which clause's index was out of range. */
enum { ETL_ERR_SET_WAIT = 1, ETL_ERR_SET_NOTIFY = 2 };

/* The timeline (args[ETL_SLOT_TIMELINE] != 0): an array of records, one per
 * static-queue entry, indexed by the entry's queue position p (the index of
 * its (group, linear) pair in args[ETL_SLOT_QUEUE]). Thread 0 of the CTA that
 * runs entry p writes record p: start_ns and sm/cta once the task's waits
 * are satisfied (before its body), end_ns after its body (every thread done)
 * and before its notifies. So a task that waits on another starts no
 * earlier than that one ends. Clock: %globaltimer on CUDA (ns), the sim op
 * clock_ns (CLOCK_MONOTONIC) on sim; sm: %smid on CUDA, the CTA (worker)
 * index on sim. The runtime zeroes the array before the launch; a record
 * left with start_ns == 0 was not run. 24 bytes, 8-byte aligned:
 *   offset 0: u64 start_ns   8: u64 end_ns   16: u32 sm   20: u32 cta
 * With dynamic groups the array has one more record per dynamic task,
 * indexed by static entries + queue slot (see ETL_DYN_NSTATIC). */
typedef struct etl_timeline_record {
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t sm;
  uint32_t cta;
} etl_timeline_record;

#define ETL_TIMELINE_RECORD_BYTES 24u
#define ETL_TIMELINE_OFF_START 0u
#define ETL_TIMELINE_OFF_END 8u
#define ETL_TIMELINE_OFF_SM 16u
#define ETL_TIMELINE_OFF_CTA 20u

/* The control block args[ETL_SLOT_ABORT] points to: host-mapped memory on
 * CUDA, so both sides see it while the kernel runs. Bytes [0, 4): the abort
 * flag (non-zero = stop now). From byte ETL_CONTROL_PROGRESS: one u32 per
 * CTA, the number of tasks it has finished in this launch, which the runtime
 * zeroes before each launch and only that CTA's thread 0 writes (volatile
 * stores, never read back: a host-mapped read is a PCIe round trip); the
 * host's watchdog reads them to tell a slow run from a stuck one. Size:
 * ETL_CONTROL_BYTES(num_ctas). */
#define ETL_CONTROL_PROGRESS 64u
#define ETL_CONTROL_BYTES(num_ctas) (ETL_CONTROL_PROGRESS + 4u * (uint32_t)(num_ctas))

/* Kernel entry symbol, on every target: void etl_main(uint64_t *args). */
#define ETL_KERNEL_ENTRY "etl_main"

/*===-- 4. Sim machine operations ------------------------------------------===
 *
 * The sim object calls these through a table the runtime installs: after
 * dlopen, the runtime stores a pointer to its `etl_sim_ops` in the object's
 * global ETL_SIM_OPS_SYMBOL (type `const etl_sim_ops *`). Each simulated
 * thread runs `etl_main(args)`; "current thread/CTA" is the runtime's
 * business (per worker thread state). Order matters: the compiler calls
 * entries by position, so only ever append.
 *
 * ETL_SIM_OP(name, return type, parameter list)
 */
#define ETL_SIM_OPS(X)                                                                             \
  X(tid, uint32_t, (void))       /* thread index in the CTA */                                     \
  X(ctaid, uint32_t, (void))     /* CTA index in the grid */                                       \
  X(barrier, void, (void))       /* bar.sync 0 over the CTA */                                     \
  X(shared_base, void *, (void)) /* this CTA's shared memory */                                    \
  X(check_access, void,          /* before every global load/store/atomic (is_store: below) */     \
    (const void *ptr, uint64_t bytes, uint32_t is_store))                                          \
  X(atomic_add_release, uint32_t, /* returns the old value */                                      \
    (uint32_t * ptr, uint32_t value))                                                              \
  X(load_acquire, uint32_t, (const uint32_t *ptr))                                                 \
  X(fence, void, (void))      /* fence.acq_rel.gpu */                                              \
  X(spin_pause, void, (void)) /* nanosleep in a spin-wait loop */                                  \
  X(task_begin, void, (uint32_t group, uint32_t linear))                                           \
  X(task_end, void, (void))                                                                        \
  X(clock_ns, uint64_t, (void))   /* monotonic time in ns (timeline) */                            \
  X(sm_id, uint32_t, (void))      /* the worker (CTA) index (timeline) */                          \
  X(atomic_add_acq_rel, uint32_t, /* returns the old value */                                      \
    (uint32_t * ptr, uint32_t value))                                                              \
  X(atomic_cas, uint32_t, /* acq_rel compare-and-swap; returns the old value */                    \
    (uint32_t * ptr, uint32_t expected, uint32_t desired))                                         \
  X(shared_access, void, /* before a scratch (shared memory) access; profile only */               \
    (const void *ptr, uint64_t bytes, uint32_t is_store))                                          \
  X(shuffle, uint32_t, /* shfl.sync: a per-warp rendezvous (etl_shfl_mode, below) */               \
    (uint32_t value, uint32_t mode, uint32_t b, uint32_t c, uint32_t mask, uint32_t line))         \
  X(mma, void, /* mma.sync m16n8k16 (etl_mma_kind): a per-warp rendezvous */                       \
    (uint32_t kind, const uint32_t *in, uint32_t *out, uint32_t line))                             \
  X(ldmatrix, void, /* ldmatrix.sync m8n8: a per-warp rendezvous */                                \
    (const void *addr, uint32_t variant, uint32_t *out, uint32_t line))                            \
  X(async_copy, void, /* cp.async: lands at the wait_group that covers it (below) */               \
    (void *dst, const void *src, uint32_t bytes))                                                  \
  X(async_commit, void, (void))           /* cp.async.commit_group */                              \
  X(async_wait, void, (uint32_t pending)) /* cp.async.wait_group pending */                        \
  X(mbar_init, void, (void *bar, uint32_t count)) /* mbarrier.init (TMA rings, below) */           \
  X(mbar_arrive_tx, void, (void *bar, uint32_t tx_bytes)) /* mbarrier.arrive.expect_tx */          \
  X(mbar_wait, void, (void *bar, uint32_t parity, uint32_t line)) /* try_wait.parity loop */       \
  X(mbar_inval, void, (void *bar))                                /* mbarrier.inval */             \
  X(tma_load, void, /* cp.async.bulk.tensor: lands when its mbarrier phase completes */            \
    (void *dst, const void *map, const int32_t *coords, uint32_t rank, void *bar))                \
  X(wgmma_fence, void, (void))            /* wgmma.fence.sync.aligned (below) */                   \
  X(wgmma_mma, void, /* wgmma.mma_async m64nNk16, A and B by descriptor */                         \
    (uint64_t desc_a, uint64_t desc_b, float *acc, uint32_t shape, uint32_t line))                 \
  X(wgmma_commit, void, (void))           /* wgmma.commit_group.sync.aligned */                    \
  X(wgmma_wait, void, (uint32_t pending)) /* wgmma.wait_group.sync.aligned pending */              \
  X(wgmma_read, void, (const float *acc, uint32_t line)) /* before reading accumulators */

/* The mbarrier and TMA ops (sim_tma.c) model PTX's mbarrier objects in
 * shared memory and cp.async.bulk.tensor: mbar_init(bar, count) starts phase
 * 0 with `count` pending arrivals; mbar_arrive_tx(bar, n) adds n expected
 * transaction bytes and arrives; tma_load(dst, map, coords, rank, bar) reads
 * the box of tensor map `map` (the runtime's encoding in the argument block)
 * at `coords` (innermost first; outside the tensor: zeros) at once, but its
 * bytes land at `dst` only when the phase of `bar` completes (its pending
 * arrivals 0 and its transaction bytes all delivered), which a mbar_wait of
 * that phase brings about; mbar_wait(bar, parity, line) returns once the
 * phase of that parity has completed (else the fiber yields); a shared-memory
 * access of a destination before its phase completes fails the run with
 * ETL_ERROR_RACE. mbar_inval(bar) ends the object (no copy may be pending). */
/* shuffle(value, mode, b, c, mask, line) is PTX `shfl.sync.MODE.b32 d, value,
 * b, c, mask`: every lane of `mask` (bits = lanes of the caller's warp, which
 * must include the caller) calls it with the same mode, c, mask and line;
 * lane l receives the value of lane j, where, with segmask = c[12:8],
 * maxLane = (l & segmask) | (c[4:0] & ~segmask), minLane = l & segmask:
 * up j = l - b (valid j >= maxLane), down j = l + b, bfly j = l ^ b,
 * idx j = minLane | (b[4:0] & ~segmask) (valid j <= maxLane); an invalid j
 * reads the lane's own value. `line` is the source line of the operation
 * that needed it (diagnostics only). A lane of the mask that never arrives
 * (it exited, or waits at a barrier) or that calls with other operands is
 * ETL_ERROR_DIVERGENCE. */
/* check_access(ptr, bytes, is_store): 0 before a load, 1 before a store,
 * ETL_SIM_ACCESS_ATOMIC before a tensor atomic (atomic_add, ...: checked
 * like a store; the race check lets atomics of unordered tasks meet). A
 * runtime that predates it treats the atomic as a store. */
#define ETL_SIM_ACCESS_ATOMIC 2u

enum etl_shfl_mode { ETL_SHFL_UP = 0, ETL_SHFL_DOWN = 1, ETL_SHFL_BFLY = 2, ETL_SHFL_IDX = 3 };

/* mma(kind, in, out, line) is PTX `mma.sync.aligned.m16n8k16.row.col.f32.T.T.f32`
 * (T = f16 or bf16 by `kind`): every lane of a full 32-lane warp calls it with
 * the same kind and line; in[0..3] are its A fragment registers, in[4..5] its
 * B ones (two 16-bit values each, the lower-indexed in bits 0-15), in[6..9]
 * its C accumulators (f32 bits); out[0..3] receive D (f32 bits). Fragment
 * layouts are PTX's (g = lane >> 2, t = lane & 3): A reg j holds row
 * g + 8(j & 1), cols 2t + 8(j >> 1) and +1; B reg j holds rows k = 2t + 8j
 * and +1 of column g; C/D reg i holds row g + 8(i >> 1), col 2t + (i & 1).
 * Products are exact; D = C + the 16 products summed in f32 in k order
 * (sim_warp.h, etl_mma_m16n8k16_ref; hardware order is unspecified).
 *
 * ldmatrix(addr, variant, out, line) is PTX `ldmatrix.sync.aligned.m8n8.xN
 * [.trans].shared.b16`, N = variant & 7 (1, 2 or 4), .trans if variant &
 * ETL_LDMATRIX_TRANS: lane l gives the 16-byte-aligned shared address of row
 * l & 7 of matrix l >> 3 (lanes >= 8N: ignored); out[m] (m < N) of lane l
 * receives {M_m[l>>2][2(l&3)], M_m[l>>2][2(l&3)+1]}, transposed
 * {M_m[2(l&3)][l>>2], M_m[2(l&3)+1][l>>2]}. A lane that never arrives or
 * arrives elsewhere is ETL_ERROR_DIVERGENCE, as for shuffles. */
/* ETL_MMA_TF32 is `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`:
 * in[0..3] hold one tf32 each (f32 bits), A reg j = row g + 8(j & 1), col
 * t + 4(j >> 1); in[4..5] B reg j = k t + 4j at n = g; C/D as above. Each
 * operand is first rounded to tf32 as cvt.rna.tf32.f32 does (10 mantissa
 * bits, nearest, ties away from zero: the identity on cvt's result); the
 * products are exact; D = C + the 8 products summed in f32 in k order. */
enum etl_mma_kind { ETL_MMA_F16 = 0, ETL_MMA_BF16 = 1, ETL_MMA_TF32 = 2 };
#define ETL_LDMATRIX_TRANS 16u

/* async_copy(dst, src, bytes) is PTX `cp.async.{ca,cg}.shared.global [dst],
 * [src], bytes` (4, 8 or 16; dst inside the CTA's shared memory, aligned to
 * `bytes`) in the calling thread's open group; the compiled code has
 * check_access'ed the global read before the call. async_commit closes the
 * thread's open group; async_wait(n) returns when all but the newest n of the
 * thread's committed groups have landed. The sim reads the source at issue
 * and writes the destination only when a wait covers the copy; until then
 * the destination holds 0xFF bytes, and a shared-memory access to it, or a
 * task that ends with copies in flight, is ETL_ERROR_RACE (sim_async.h). */

/* wgmma_mma(desc_a, desc_b, acc, shape, line) is PTX `wgmma.mma_async.sync.
 * aligned.m64nNk16.f32.T.T` (N = shape & 0x1FF; T = bf16 if shape bit 16,
 * else f16; B transposed (MN-major, [K, N] rows) if bit 17; scale-d 1) with
 * A and B in shared memory by 64-bit matrix descriptors (the shared-memory
 * offset from shared_base); `acc` is the calling thread's N/2 accumulator
 * registers (the m16n8 accumulator fragment of mma.sync per warp and n8
 * tile j, registers 4j .. 4j+3). The result is written to `acc` only by the
 * wgmma_wait that covers its group (commit_group closes the thread's open
 * group); wgmma_read(acc, line), called before the registers are read,
 * fails the run (ETL_ERROR_RACE) while a wgmma that will write them is in
 * flight, and so does a wgmma_mma without a wgmma_fence since the thread's
 * last wgmma_wait (runtime/src/sim_wgmma.h). */

/* In C++ every field defaults to null, so a host table written as a
 * positional initializer before an op was appended stays warning-free
 * (-Wmissing-field-initializers); the runtime's table sets every op. */
#ifdef __cplusplus
#define ETL_SIM_OP_DEFAULT = nullptr
#else
#define ETL_SIM_OP_DEFAULT
#endif
typedef struct etl_sim_ops {
#define ETL_SIM_OP_FIELD(name, ret, params) ret(*name) params ETL_SIM_OP_DEFAULT;
  ETL_SIM_OPS(ETL_SIM_OP_FIELD)
#undef ETL_SIM_OP_FIELD
} etl_sim_ops;

#define ETL_SIM_OPS_SYMBOL "__etl_sim_ops"

#ifdef __cplusplus
}
#endif
#endif /* ETL_ABI_H */
