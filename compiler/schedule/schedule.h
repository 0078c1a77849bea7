//===- schedule/schedule.h - Order and checks of the task graph -----------===//
//
// What this owns: deciding in which order task groups may run. It proves the
// event graph acyclic at the level of groups (a group waiting, directly or
// through other groups, on an event it notifies itself is rejected, naming
// every group and event on the cycle; a chain inside one group whose tasks
// wait only on earlier tasks of it, `waits S[i] notifies S[i + 1]`, is not a
// cycle) and fixes a topological order, which
// the runtime uses to deal tasks round-robin into the per-CTA static queues:
// with every CTA resident, that order can never deadlock.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "diag/diag.h"
#include "taskgraph/taskgraph.h"

namespace etl {

/// Fills g.topo_order. Returns false (after reporting EventCycle) if the
/// graph has a cycle.
bool schedule_task_graph(TaskGraph &g, Diag &diag);

} // namespace etl
