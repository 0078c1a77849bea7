//===- schedule/races.h - Races between task groups -----------------------===//
//
// What this owns: the check that two task groups touching the same elements
// of a tensor, one of them writing, are ordered by events. Groups run
// concurrently unless a chain of events leads from one to the other (a
// `notifies` edge of one group and a `waits` edge of another on the same
// event, data-dependent waits included); for every pair of unordered groups
// the accesses of their bodies (sema/access.h) are compared:
// - the prover shows them disjoint (the two groups' task and loop variables
//   kept apart, each in its own range): nothing to report;
// - both touch the first element of their boxes for the first task of each
//   group and neither is masked (a certain overlap): an error;
// - otherwise (a gather, a data-dependent index, a box the prover cannot
//   separate): a warning.
// Two atomics (atomic_add, _max, _min, _cas; sema/access.h) never race
// with each other: accumulating from concurrent tasks without an event is
// what they are for; an atomic and a plain load or store of the same
// elements are compared like a store and that access.
// Each report names both groups, the tensor and both accesses, and suggests
// the event that orders them. Order is at the level of groups: a chain from
// one group to the other counts even if it orders only some of their tasks
// (the sim's race-detecting mode checks tasks). The groups of a layered
// block (schedule.h) reach each other, so none of their pairs is compared
// here; schedule/coverage.h compares their tasks.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "diag/diag.h"
#include "taskgraph/taskgraph.h"

namespace etl {

/// reach[a][b]: a chain of events leads from group a to group b (also what
/// schedule/coverage.h compares tasks of).
std::vector<std::vector<bool>> group_reachability(const TaskGraph &g);

/// Reports GroupRace / GroupMayRace for `g` (acyclic, see schedule.h).
/// Returns false if an error was reported.
bool check_group_races(const TaskGraph &g, Diag &diag);

} // namespace etl
