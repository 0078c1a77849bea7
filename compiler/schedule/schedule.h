//===- schedule/schedule.h - Order and checks of the task graph -----------===//
//
// What this owns: deciding in which order task groups may run. It proves the
// event graph acyclic at the level of groups (a group waiting, directly or
// through other groups, on an event it notifies itself is rejected, naming
// every group and event on the cycle; a chain inside one group whose tasks
// wait only on earlier tasks of it, `waits S[i] notifies S[i + 1]`, is not a
// cycle) and fixes a topological order, which the runtime uses to deal tasks
// round-robin into the per-CTA static queues: with every CTA resident, that
// order can never deadlock.
//
// A cycle of groups is accepted when it is a stack of layers: every group on
// it has a first domain variable (the layer, outermost, so one layer's tasks
// are a contiguous run of the linear order), every wait inside it names the
// layer (an index component `A.l + cA` where group A notifies, `B.l + cB`
// where group B waits: a task of B waits only on tasks of A whose l is
// cB - cA away), no wait reaches a later layer (cB - cA <= 0), and the waits
// within one layer (cB == cA) have no cycle. Its groups are consecutive in
// the order, sorted by those same-layer waits, and form a layered block
// (TaskGraph::layer_block): the runtime deals the block's static tasks layer
// by layer (for each l, each group of the block in order, its tasks whose
// first variable is l), so every task is still dealt after those it waits
// on. `down_sum[l] notifies X[l + 1]`, `norm[l] waits X[l]` is such a stack.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "diag/diag.h"
#include "taskgraph/taskgraph.h"

namespace etl {

/// Fills g.topo_order, g.layer_block and g.blocks. Returns false (after
/// reporting EventCycle) if the graph has a cycle that is not a stack of
/// layers.
bool schedule_task_graph(TaskGraph &g, Diag &diag);

} // namespace etl
