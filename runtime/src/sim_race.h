/*===- src/sim_race.h - The sim's race check between tasks ----------------===
 *
 * What this owns: the sim device's race-detecting mode
 * (etlProgramSetRaceCheck). Tasks are ordered only by the event protocol:
 * a task's notify is a release on an event counter, a wait an acquire, and
 * the dynamic queue passes the order on through the dependency counters and
 * queue slots it pushes with release and pops with acquire. The check
 * follows those atomics like a happens-before race detector:
 *   - every task has a set of tasks ordered before it (a bitset over the
 *     run's task ids), starting with what its CTA acquired since the
 *     previous task ended (a popped queue slot) and growing with each
 *     acquire it makes (its waits);
 *   - every synchronising word (event counters, the dynamic state's
 *     dependency counters and slots; not its head/tail words, which every
 *     CTA touches) keeps the union of the sets released into it, each
 *     releasing task included;
 *   - shadow memory keeps, per element of every tensor and buffer, the last
 *     task that wrote it and the last that read it. A load of an element
 *     whose writer is not ordered before the loading task, or a store over
 *     a writer or reader that is not, is a race. Atomics (atomic_add, ...)
 *     count as stores, but two of them on one element never race.
 * The first race found fails the run with ETL_ERROR_RACE and a message
 * naming the tensor, the element, both tasks and what each did. Threads of
 * one task never race with each other here (the compiler orders them, see
 * compiler/sema/hazards.h). Reads are tracked one reader deep, so a write
 * after several unordered reads is caught only against the last of them.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_SIM_RACE_H
#define ETL_SIM_RACE_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

typedef struct etl_race etl_race;

/* For a launch of `plan` with `num_ctas` CTAs; `elems[i]` is the element
 * count of tensor i (meta order). NULL with `err` filled when the run is too
 * large to check (the sets take tasks^2 / 8 bytes) or memory runs out. */
etl_race *etl_race_create(const etl_meta *m, const etl_plan *plan, uint32_t num_ctas,
                          const uint64_t *elems, char *err, size_t err_size);
void etl_race_destroy(etl_race *r);

void etl_race_task_begin(etl_race *r, uint32_t cta, uint32_t group, uint32_t linear);
void etl_race_task_end(etl_race *r, uint32_t cta);
/* An atomic of the CTA's thread 0 on `addr`: acquire, release or both. */
void etl_race_sync(etl_race *r, uint32_t cta, const void *addr, int acquire, int release);
/* The run-wide id of task `linear` of `group`, or UINT32_MAX. */
uint32_t etl_race_task_id(const etl_race *r, uint32_t group, uint32_t linear);
/* An access by a thread of task `task` (an id; UINT32_MAX: outside a task,
 * not checked) to element `elem` of tensor `tensor`. Returns 1 and fills
 * `msg` when it races with an earlier access (only the first race is
 * reported). Each thread names its own task: thread 0 may have ended a task
 * while other threads of the CTA still run its body. */
int etl_race_access(etl_race *r, uint32_t task, uint32_t tensor, uint64_t elem, int is_store,
                    char *msg, size_t msg_size);
/* is_store of an atomic (atomic_add, ...; ETL_SIM_ACCESS_ATOMIC): a store,
 * except that an atomic over an element whose last writer also updated it
 * atomically is no race, whatever the order of the two tasks. */
#define ETL_RACE_ATOMIC 2

#endif
