/*===- src/sim_fiber.c - Context switches of the sim's fibers --------------===
 *
 * See sim_fiber.h. The x86-64 switch is etl_fiber_swap_sp below; a new
 * fiber's stack is laid out as if it had switched away just before calling
 * its entry function.
 *===----------------------------------------------------------------------===*/
#include "sim_fiber.h"

#include <stdint.h>

#ifdef ETL_SIM_UCONTEXT

/* Separate function: getcontext returns twice, keep it away from loops. */
__attribute__((noinline)) int etl_fiber_make(etl_fiber_ctx *f, void *stack, size_t size,
                                             void (*entry)(void)) {
  if (getcontext(&f->uc) != 0)
    return -1;
  f->uc.uc_stack.ss_sp = stack;
  f->uc.uc_stack.ss_size = size;
  f->uc.uc_link = NULL;
  makecontext(&f->uc, entry, 0);
  return 0;
}

void etl_fiber_switch(etl_fiber_ctx *from, etl_fiber_ctx *to) { swapcontext(&from->uc, &to->uc); }

#else

/* etl_fiber_swap_sp(save, sp): pushes rbp, rbx, r12-r15 and an 8-byte slot
 * with MXCSR (low half) and the x87 control word, stores rsp to *save, loads
 * rsp = sp and pops the same from there, then returns on the new stack. */
void etl_fiber_swap_sp(void **save, void *sp);
__asm__(".text\n"
        ".p2align 4\n"
        ".globl etl_fiber_swap_sp\n"
        ".hidden etl_fiber_swap_sp\n"
        ".type etl_fiber_swap_sp, @function\n"
        "etl_fiber_swap_sp:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  subq $8, %rsp\n"
        "  stmxcsr (%rsp)\n"
        "  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n"
        "  fldcw 4(%rsp)\n"
        "  addq $8, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size etl_fiber_swap_sp, .-etl_fiber_swap_sp\n");

int etl_fiber_make(etl_fiber_ctx *f, void *stack, size_t size, void (*entry)(void)) {
  if (size < 256)
    return -1;
  /* From the 16-byte aligned top down: a zero return address for entry()
   * (it never returns), entry() itself for the `ret`, the six registers
   * (zero) and the control slot. entry() then starts with rsp = top - 8,
   * as after a call. */
  uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
  uint64_t *sp = (uint64_t *)top;
  *--sp = 0;
  *--sp = (uint64_t)(uintptr_t)entry;
  for (int i = 0; i < 6; ++i)
    *--sp = 0;
  uint32_t mxcsr;
  uint16_t fpcw;
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
  __asm__ volatile("fnstcw %0" : "=m"(fpcw));
  *--sp = (uint64_t)mxcsr | (uint64_t)fpcw << 32;
  f->sp = sp;
  return 0;
}

void etl_fiber_switch(etl_fiber_ctx *from, etl_fiber_ctx *to) {
  etl_fiber_swap_sp(&from->sp, to->sp);
}

#endif
