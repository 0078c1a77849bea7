//===- schedule/coverage.h - Waits at the granularity of the data ---------===//
//
// What this owns: the check that each task waits for the tasks whose data it
// touches. schedule/races.h orders whole groups: a chain of events from
// group P to group C satisfies it even when task c of C waits for only some
// of the tasks of P. This check follows the index maps of the event tensors
// task by task: a task c that reads elements a task p of another group
// writes, p ordered before c's group, must wait for p (directly or through a
// chain of waits); and p, when it overwrites what an earlier group's task c
// reads, must wait for c.
//
// Shapes are symbolic, so the check runs on concrete bindings of the dims
// (a few tiles per dimension, chosen from the tiles the accesses move and
// the `where` clauses; every `where` holds for them): every task instance,
// every loop iteration of every access, every event element. A miss found
// on such a binding is a real one:
// - an error when both accesses are unconditional and unmasked, naming the
//   tensor, both groups, the binding, both tasks, the elements and the wait
//   that would cover them;
// - a warning when either access is masked or inside an `if` (the elements
//   may not be touched after all).
// In a layered block (schedule.h) the groups reach each other: of two of
// their tasks the one the static queues deal first (layer by layer) is the
// one that must be waited for, and a group's tasks of different layers are
// compared with each other too.
//
// What cannot be enumerated is not judged here (the sim's race check sees
// it at run time): gathers and data-dependent indices, data-dependent task
// ranges and wait indices (an instance whose chain of waits passes through
// one is left alone), bindings that no candidate satisfies, and programs
// past the enumeration budget.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "diag/diag.h"
#include "taskgraph/taskgraph.h"

namespace etl {

/// Reports WaitMissesWriter / WaitMissesReader (errors) and the Wait*May*
/// warnings for `g` (acyclic, groups already checked for races). Returns
/// false if an error was reported.
bool check_wait_coverage(const TaskGraph &g, Diag &diag);

} // namespace etl
