/*===- src/handle.c - Context and program handles ---------------------------===
 *
 * etlContext and etlProgram are opaque pointers to the application; their
 * values are not addresses but handles into one process-wide table the
 * runtime owns:
 *
 *   bits 0..3    kind (ETL_HANDLE_CONTEXT / ETL_HANDLE_PROGRAM), never 0
 *   bits 4..31   slot index
 *   bits 32..63  the slot's generation when the handle was made, never 0
 *
 * Destroying an object moves its slot's generation on, so a destroyed
 * handle, one of the other kind, or a value that was never a handle is
 * refused by comparing table entries: freed objects are never read. A slot
 * is reused with a new generation; the table only grows (one 16-byte entry
 * per live object at its peak) and lives as long as the process.
 *===----------------------------------------------------------------------===*/
#include <stdlib.h>

#include "device.h"

_Static_assert(sizeof(uintptr_t) >= sizeof(uint64_t), "handles are 64-bit values");

#define KIND_BITS 4u
#define INDEX_LIMIT (1u << 28)

typedef struct slot {
  uint32_t gen;  /* current generation, >= 1 */
  uint32_t kind; /* of the live object; 0 = free */
  void *obj;
} slot;

static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static slot *table;
static uint32_t n_slots, cap_slots;

uint64_t etl_handle_new(etl_handle_kind kind, void *obj) {
  pthread_mutex_lock(&table_mu);
  uint32_t i = 0;
  while (i < n_slots && table[i].kind != 0)
    ++i;
  if (i == n_slots) {
    if (n_slots == INDEX_LIMIT) {
      pthread_mutex_unlock(&table_mu);
      return 0;
    }
    if (n_slots == cap_slots) {
      uint32_t cap = cap_slots ? 2 * cap_slots : 64;
      slot *t = realloc(table, (size_t)cap * sizeof *t);
      if (!t) {
        pthread_mutex_unlock(&table_mu);
        return 0;
      }
      table = t;
      cap_slots = cap;
    }
    table[n_slots].gen = 1;
    table[n_slots].kind = 0;
    table[n_slots].obj = NULL;
    ++n_slots;
  }
  table[i].kind = (uint32_t)kind;
  table[i].obj = obj;
  uint64_t h = ((uint64_t)table[i].gen << 32) | ((uint64_t)i << KIND_BITS) | (uint64_t)kind;
  pthread_mutex_unlock(&table_mu);
  return h;
}

void *etl_handle_get(etl_handle_kind kind, uint64_t h) {
  if ((h & ((1u << KIND_BITS) - 1)) != (uint64_t)kind)
    return NULL;
  uint64_t i = (h & 0xffffffffu) >> KIND_BITS;
  uint32_t gen = (uint32_t)(h >> 32);
  void *obj = NULL;
  pthread_mutex_lock(&table_mu);
  if (i < n_slots && table[i].kind == (uint32_t)kind && table[i].gen == gen)
    obj = table[i].obj;
  pthread_mutex_unlock(&table_mu);
  return obj;
}

void etl_handle_drop(uint64_t h) {
  uint64_t i = (h & 0xffffffffu) >> KIND_BITS;
  uint32_t gen = (uint32_t)(h >> 32);
  pthread_mutex_lock(&table_mu);
  if (i < n_slots && table[i].kind != 0 && table[i].gen == gen) {
    table[i].kind = 0;
    table[i].obj = NULL;
    table[i].gen = gen == UINT32_MAX ? 1 : gen + 1;
  }
  pthread_mutex_unlock(&table_mu);
}
