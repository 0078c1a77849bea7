/*===- src/sim_load.h - Loading the sim code object -----------------------===
 *
 * What this owns: turning an artifact's "sim" code section into running
 * code: the ELF check (elf.c), a memfd (kept open while the program lives, so
 * its /proc/self/fd name stays unique) or a temporary file, dlopen, and the
 * store of the runtime's machine-operation table into the object's
 * ETL_SIM_OPS_SYMBOL. sim.c's device table calls these.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_SIM_LOAD_H
#define ETL_SIM_LOAD_H

#include "device.h"

/* Loads `p`'s sim section, installs `ops`; p->state holds the result. */
etlStatus etl_sim_load(etl_program *p, const etl_sim_ops *ops);
void etl_sim_unload(etl_program *p);
/* The kernel entry of a loaded program. */
void (*etl_sim_entry(const etl_program *p))(uint64_t *);

#endif
