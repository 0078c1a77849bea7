/*===- src/sim_fiber.h - Context switches of the sim's fibers --------------===
 *
 * What this owns: switching a CTA's worker thread between its scheduler and
 * the fibers (one per simulated thread) that sim.c runs on their own stacks.
 * A fiber switches at every barrier, warp shuffle, mma, ldmatrix and spin
 * pause, millions of times in one run, so the switch is the sim's hot path.
 *
 * On x86-64 a switch saves the callee-saved registers, the SSE control
 * register and the x87 control word on the old stack and loads them from
 * the new one (the System V ABI: everything else is the caller's). glibc's
 * swapcontext also saves and restores the signal mask, two system calls per
 * switch, which cost most of a sim run's time (the fibers never change
 * their mask). Elsewhere, and with ETL_SIM_UCONTEXT defined, the ucontext
 * calls remain.
 *
 * The sanitizer annotations of a switch (__sanitizer_*_switch_fiber,
 * __tsan_switch_to_fiber) are sim.c's, around etl_fiber_switch.
 *===----------------------------------------------------------------------===*/
#ifndef ETL_SIM_FIBER_H
#define ETL_SIM_FIBER_H

#include <stddef.h>

#if !defined(__x86_64__) && !defined(ETL_SIM_UCONTEXT)
#define ETL_SIM_UCONTEXT 1
#endif

#ifdef ETL_SIM_UCONTEXT
#include <ucontext.h>
#endif

/* A saved execution context: a fiber's, or the scheduler's while a fiber runs. */
typedef struct etl_fiber_ctx {
#ifdef ETL_SIM_UCONTEXT
  ucontext_t uc;
#else
  void *sp; /* the stack pointer, the saved registers just above it */
#endif
} etl_fiber_ctx;

/* Prepares `f` to run entry() on [stack, stack + size) at its first switch;
 * entry must never return (it switches away for good). 0, or -1 on error. */
int etl_fiber_make(etl_fiber_ctx *f, void *stack, size_t size, void (*entry)(void));

/* Saves the running context into `from` and resumes `to`. */
void etl_fiber_switch(etl_fiber_ctx *from, etl_fiber_ctx *to);

#endif /* ETL_SIM_FIBER_H */
