//===- sema/hazards.h - Memory order inside one task ----------------------===//
//
// What this owns: program order for global memory inside a task body. The
// threads of a CTA run a task's statements without meeting, except where the
// lowering puts a barrier, and a tile's elements are spread over the threads.
// So a load that reads what an earlier store of the same task wrote (or a
// store that overwrites what an earlier load or store touched) sees stale
// data when the two accesses give the element to different threads. This
// pass finds every such pair and marks the later access
// (Expr::barrier_before): the lowering puts a CTA barrier (bar.sync, which
// orders the CTA's global memory accesses too) right before it.
//
// Two accesses of the same tensor, at least one a store, need nothing when
// - both move the same elements with the same tile shape in both dynamic
//   instances (same slice, no gather, no data-dependent index, no loop
//   variable that differs between them): each element stays with one thread,
//   whose own program order holds; or
// - the prover shows their boxes disjoint in some dimension (kernel `where`
//   facts, task ranges, loop bounds, the condition of each enclosing `if`
//   branch; a loop-carried pair compares an earlier iteration `j'` with
//   `j' < j`).
// - both are the same atomic operation (atomic_add twice, ...) used as
//   statements: the order between threads cannot change the result (an
//   atomic whose old values are used, or two different atomics, keep
//   program order like a store).
// Anything else (gathers, element reads, unprovable ranges) gets the barrier.
// A barrier orders everything before it, so the accesses pending against
// later ones start afresh after each one placed. Barriers the lowering adds
// for its own re-layouts are not counted (a redundant barrier is harmless).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "shape/symbolic.h"

namespace etl {

/// Sets Expr::barrier_before on the loads, stores and element reads of
/// `task` that must not start before every thread finished an earlier
/// conflicting access. `facts` hold the kernel's `where` facts and the task's
/// index ranges. Call after the body was checked (it reads the `sym`s).
void mark_task_hazards(TaskDecl &task, const Facts &facts);

/// Adds to `f` what the checked `if` condition `c` says inside the branch it
/// guards (`negated`: inside the else branch): comparisons of index
/// expressions joined by `&&`; under negation `!(a < b)` is `a >= b` and
/// `!(a || b)` is `!a && !b`. Anything else (`||`, `!=`, scalars, data
/// reads) adds nothing.
void add_condition_facts(Facts &f, const Expr &c, bool negated);

/// `a op b` as facts (op one of == <= < >= >; others add nothing).
void add_comparison_fact(Facts &f, BinOp op, const Sym &a, const Sym &b);

} // namespace etl
