/*===- src/internal.h - Private types shared by the runtime's files --------===
 *
 * The decoded artifact (etl_artifact, etl_meta), the expression evaluator
 * and the per-shape plan (event offsets, wait counts, static queues). Tests
 * may include this file to exercise the pieces directly. Contexts,
 * programs, handles and the device table are in device.h.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_RUNTIME_INTERNAL_H
#define ETL_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "etl/etl.h"
#include "etl_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ETL_MAX_RANK 16          /* tensors, events and group domains */
#define ETL_MAX_EXPR_STACK 64    /* deepest expression stack accepted */
#define ETL_MAX_TASKS (1u << 27) /* tasks in one launch (queue entries) */
#define ETL_MAX_COUNTERS (1u << 30)

/*===-- Errors (error.c) ---------------------------------------------------===*/

/// Record a message for the calling thread and return `st`.
etlStatus etl_error(etlStatus st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/// Record a message verbatim.
etlStatus etl_error_str(etlStatus st, const char *msg);

/*===-- Arena: everything a decoded artifact owns --------------------------===*/

typedef struct etl_arena_block etl_arena_block;
typedef struct etl_arena {
  etl_arena_block *head;
} etl_arena;
void *etl_arena_alloc(etl_arena *a, size_t bytes); /* zeroed, NULL on OOM */
void etl_arena_free(etl_arena *a);

/*===-- Decoded metadata (artifact.c) --------------------------------------===*/

typedef struct etl_expr {
  uint32_t n;
  int64_t *code;
} etl_expr;

typedef struct etl_dim_meta {
  char *name;
  uint32_t slot;
} etl_dim_meta;

typedef struct etl_tensor_meta {
  char *name;
  uint32_t elem, is_buffer, rank, slot;
  uint32_t zeros;   /* a buffer cleared before each run (ETL_TENSOR_BUFFER_ZEROS) */
  uint32_t written; /* some task may write it (all but ETL_TENSOR_INPUT) */
  etl_expr *shape;
} etl_tensor_meta;

typedef struct etl_scalar_meta {
  char *name;
  uint32_t elem, slot;
} etl_scalar_meta;

typedef struct etl_constraint_meta {
  etl_expr cond;
  char *text, *where;
} etl_constraint_meta;

typedef struct etl_event_meta {
  char *name;
  uint32_t rank, slot;
  etl_expr *shape;
} etl_event_meta;

typedef struct etl_index_meta {
  uint32_t star; /* enum etl_index_kind */
  etl_expr idx;
} etl_index_meta;

typedef struct etl_edge_meta {
  uint32_t event, n;
  etl_index_meta *idx;
} etl_edge_meta;

typedef struct etl_group_meta {
  char *name;
  uint32_t rank;
  etl_expr *lo, *hi;
  uint32_t n_notifies, n_waits;
  etl_edge_meta *notifies, *waits;
  uint32_t schedule; /* ETL_SCHEDULE_* */
  uint32_t data_var; /* ETL_NO_DATA_VAR or the variable whose range reads data */
  uint32_t layer_block; /* ETL_NO_LAYER_BLOCK or k >= 1: in layered block k */
} etl_group_meta;

/* A tensor map of TMA copies (etl_abi.h, v9): tensor `tensor`, boxes of
   box[0 .. rank) elements (outermost first), encoded into slots
   [slot, slot + 16) of the argument block. */
typedef struct etl_tma_meta {
  uint32_t tensor, slot, rank;
  uint32_t box[2];
} etl_tma_meta;

typedef struct etl_meta {
  uint32_t threads_per_cta, smem_bytes;
  char *kernel_name, *source_path;
  uint32_t num_slots;
  uint32_t n_dims, n_tensors, n_scalars, n_constraints, n_events, n_groups, n_order;
  etl_dim_meta *dims;
  etl_tensor_meta *tensors;
  etl_scalar_meta *scalars;
  etl_constraint_meta *constraints;
  etl_event_meta *events;
  etl_group_meta *groups;
  uint32_t *order;
  uint32_t n_tma_maps;
  etl_tma_meta *tma_maps;
} etl_meta;

typedef struct etl_code_section {
  char target[13];
  const uint8_t *data; /* points into etl_artifact.bytes */
  uint64_t size;
} etl_code_section;

/* A variant of an artifact of several (etl_abi.h, v8): the binding range
   it is for (lo <= dims[dim_index] <= hi for every range) and its own
   whole artifact. */
typedef struct etl_variant_range {
  char *dim;
  uint32_t dim_index; /* in the variants' common dims */
  int64_t lo, hi;
} etl_variant_range;

typedef struct etl_artifact etl_artifact;
typedef struct etl_variant {
  char *label; /* "B<=1:TK=64" */
  uint32_t n_ranges;
  etl_variant_range *ranges;
  etl_artifact *art; /* owned (calloc); NULL once a program took it */
} etl_variant;

struct etl_artifact {
  uint8_t *bytes; /* owned copy of the file */
  uint64_t size;
  etl_meta meta; /* with variants: a shallow copy of variant 0's (the
                    interface every variant shares) */
  uint32_t n_code;
  etl_code_section *code;
  uint32_t n_variants; /* 0: a single-variant artifact */
  etl_variant *variants;
  etl_arena arena;
};

/// Validate and decode an artifact (copies `data`). On failure returns
/// ETL_ERROR_INVALID_ARTIFACT / _UNSUPPORTED_VERSION / _OUT_OF_MEMORY with
/// the message set, and leaves `out` empty.
etlStatus etl_artifact_parse(const void *data, size_t size, etl_artifact *out);
void etl_artifact_free(etl_artifact *a);
uint32_t etl_fnv1a(const uint8_t *p, size_t n);

/*===-- Expressions (expr.c) -----------------------------------------------===*/

/// Check bytecode: known ops, immediates present, DIM < n_dims,
/// VAR < n_vars, stack never underflows, ends with depth 1, depth <=
/// ETL_MAX_EXPR_STACK. Returns 0 or -1 with a message in `err`.
int etl_expr_check(const etl_expr *e, uint32_t n_dims, uint32_t n_vars, char *err, size_t errsz);
/// Evaluate checked bytecode. Overflow, division by a divisor <= 0 and a
/// malformed program are errors: returns -1 with a message in `err`.
int etl_expr_eval(const etl_expr *e, const int64_t *dims, uint32_t n_dims, const int64_t *vars,
                  uint32_t n_vars, int64_t *out, char *err, size_t errsz);

/*===-- Per-shape plan (plan.c) --------------------------------------------===*/

typedef struct etl_plan {
  struct etl_plan *next;
  int64_t *dims; /* key: the dim values it was built for */
  uint32_t num_ctas;
  /* events */
  uint64_t n_counters;
  uint64_t *event_offset; /* per event: element offset of its first element */
  uint64_t *event_elems;  /* per event: number of elements */
  int64_t *event_shape;   /* per event: ETL_MAX_RANK extents */
  uint32_t *wait_counts;  /* n_counters initial values */
  /* groups */
  int64_t *group_lo, *group_hi; /* per group: ETL_MAX_RANK bounds */
  uint64_t *group_tasks;        /* with a data-dependent range: the largest count */
  uint64_t *group_prefix;       /* data-dependent range: expanders (tasks of the
                                   variables before it), else 0 */
  /* static queue */
  uint64_t n_entries;   /* tasks, static and dynamic (timeline records) */
  uint64_t n_static;    /* tasks of static groups: queue entries */
  uint32_t *queue;      /* 2 * n_entries: (group, linear) */
  uint32_t *queue_offs; /* num_ctas + 1, in pairs */
  /* dynamic scheduling (etl_abi.h "Dynamic scheduling"); dyn == NULL when
     no group is dynamic */
  uint64_t n_dynamic; /* tasks of dynamic groups: queue capacity */
  uint32_t *dyn;      /* initial image of the state array, dyn_words words */
  uint64_t dyn_words;
  uint64_t dyn_dptr;
  uint64_t err_dptr; /* the device error record: ETL_ERR_WORDS words */
  /* buffers: per tensor, elements for runtime buffers (0 for parameters) */
  uint64_t *buffer_bytes;
  /* device memory, filled by run.c */
  uint64_t *buffer_dptr; /* per tensor; 0 for parameters */
  uint64_t queue_dptr, offs_dptr;
  /* the per-run state, one allocation of state_bytes at state_dptr: the
     event counters (counters_dptr), the error record (err_dptr), the
     dynamic state (dyn_dptr); reset before each launch, on the run's
     stream, from its pristine image at init_dptr (run.c) */
  uint64_t counters_dptr, state_dptr, init_dptr, state_bytes;
  struct etl_args_block *args_blocks; /* device argument blocks (run.c) */
  int captured;         /* a CUDA graph holds its memory: never evicted */
  uint64_t *args_host;  /* num_slots */
} etl_plan;

/// Bytes of the argument block: the slots.
#define ETL_ARGS_BYTES(m) ((size_t)(m)->num_slots * sizeof(uint64_t))

/// Evaluate shapes, count tasks, compute event offsets and wait counts and
/// build the static queue for `dims` over `num_ctas` CTAs (host side only).
etlStatus etl_plan_build(const etl_meta *m, const int64_t *dims, uint32_t num_ctas, etl_plan **out);
/// How etl_plan_build counts: ETL_PLAN_FAST (per projection point of each
/// edge, plan.c) or ETL_PLAN_ENUMERATE (every element of every edge of
/// every task: the reference the tests compare against). Same results.
typedef enum etl_plan_mode { ETL_PLAN_FAST = 0, ETL_PLAN_ENUMERATE = 1 } etl_plan_mode;
etlStatus etl_plan_build_mode(const etl_meta *m, const int64_t *dims, uint32_t num_ctas,
                              etl_plan_mode mode, etl_plan **out);
/// Deal the static groups' tasks into p->queue and p->queue_offs (group
/// domains and n_static already computed): plan_queue.c.
etlStatus etl_plan_deal_static(const etl_meta *m, etl_plan *p);
/// Free the host side of a plan (device memory is the caller's).
void etl_plan_free_host(etl_plan *p);
/// Row-major domain indices of task `linear` of group `g`, printed as
/// "name[i, j]" into buf.
void etl_plan_task_name(const etl_meta *m, const etl_plan *p, uint32_t g, uint32_t linear,
                        char *buf, size_t n);
/// Print "E[i, j]" for counter `offset`.
void etl_plan_counter_name(const etl_meta *m, const etl_plan *p, uint64_t offset, char *buf,
                           size_t n);
/* Bytes of one element (a packed i4/u4 type: 1, the byte of two elements). */
size_t etl_elem_size(uint32_t elem);
/* Whether `elem` is an ETL_ELEM_* code; whether it is packed (i4, u4). */
int etl_elem_valid(uint32_t elem);
int etl_elem_packed(uint32_t elem);
/* Bytes of `n` elements (packed: ceil(n / 2)). */
uint64_t etl_elems_bytes(uint32_t elem, uint64_t n);

#ifdef __cplusplus
}
#endif
#endif /* ETL_RUNTIME_INTERNAL_H */
