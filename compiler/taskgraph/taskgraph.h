//===- taskgraph/taskgraph.h - Task groups, event tensors, edges ----------===//
//
// What this owns: the program as a graph. Built from a checked kernel
// (build_task_graph), it lists the task groups with their symbolic domains,
// the event tensors with their symbolic shapes, and the edges between them:
// a `notifies` edge from a group to an event and a `waits` edge from an
// event to a group, each with its index map (one index expression per event
// dimension, or `*`). It derives each event element's wait count and checks
// that every awaited event has producers.
//
// Downstream: schedule/ checks acyclicity and picks the group order, lower/
// generates the waits and
// notifies from the edges, artifact/ serialises the edges for the runtime
// (which counts notifications per element at bind time).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "diag/diag.h"
#include "shape/symbolic.h"

#include "etl_abi.h"

#include <optional>
#include <string>
#include <vector>

namespace etl {

/// One component of an edge's index map: `*` or an expression of the task's
/// indices and the dims.
struct EdgeIndex {
  bool star = false;
  Sym value;                  ///< when !star
  const Expr *expr = nullptr; ///< the source expression (for lowering)
  bool reads_data = false;    ///< depends on tensor contents (evaluated at wait time)
};

/// The inverse of a `waits` edge of a dynamic group: how to find the tasks
/// i of the group with f(i) == e for one event element e. Per domain
/// variable v: the component d solving it when component d is `a*v + c`
/// (a a nonzero constant, c free of domain variables): v = (e_d - c) / a,
/// checked for divisibility and range; otherwise v is enumerated over its
/// range. Every non-`*` component is then verified by re-evaluating f, so
/// non-invertible components (i / 2, i + j) still work, by enumeration.
struct EdgeInverse {
  std::vector<int> solved_by;  ///< per variable: component, or -1 (enumerated)
  std::vector<int64_t> coeff;  ///< per variable: a, when solved
  std::vector<bool> unsolving; ///< per component: not `*` and solves no variable
};

/// `group waits E[...]` or `group notifies E[...]`.
struct Edge {
  int group = -1;
  int event = -1;
  bool notify = false;            ///< a `notifies` edge (else `waits`)
  std::vector<EdgeIndex> indices; ///< one per event dimension
  const EventRef *ref = nullptr;
  EdgeInverse inverse; ///< waits edges of dynamic groups
  /// Some index reads tensor data: the edge is left out of the cycle check
  /// (schedule/) and range-checked on the device.
  bool reads_data() const {
    for (const EdgeIndex &i : indices)
      if (i.reads_data)
        return true;
    return false;
  }
};

struct TaskGroup {
  std::string name;
  const TaskDecl *decl = nullptr;
  std::vector<std::string> vars; ///< domain variable names
  std::vector<Sym> lo, hi;       ///< var k ranges over [lo[k], hi[k])
  Sym task_count;                ///< product of (hi - lo)
  std::vector<int> waits;        ///< indices into TaskGraph::edges
  std::vector<int> notifies;     ///< indices into TaskGraph::edges
  /// Dynamic: the tasks run from the device queue as they become ready
  /// (see lower_kernel.cpp); static: dealt to the per-CTA queues.
  bool dynamic = false;
  std::string schedule_reason; ///< "declared", "default", ...
};

struct EventTensor {
  std::string name;
  const EventDecl *decl = nullptr;
  std::vector<Sym> shape;
  Sym num_elements;
  /// The wait count of every element, when it is the same for all elements
  /// (e.g. cdiv(N, TN) for `partial[i, j] notifies E[i]`); nullopt when it
  /// varies by element (the runtime counts per element either way).
  std::optional<Sym> wait_count;
  std::string wait_count_note; ///< why it varies, for --emit=taskgraph
  std::vector<int> producers;  ///< edges that notify it
  std::vector<int> consumers;  ///< edges that wait on it
};

struct TaskGraph {
  const KernelDecl *kernel = nullptr;
  std::vector<TaskGroup> groups;
  std::vector<EventTensor> events;
  std::vector<Edge> edges;
  /// Groups in a topological order (producers before consumers); filled by
  /// schedule_task_graph (schedule/schedule.h) when the graph is acyclic
  /// but for layered cycles, whose groups are consecutive here.
  std::vector<int> topo_order;
  /// Per group: -1, or the layered block it belongs to (0, 1, ... in
  /// topo_order): a cycle of groups along which the first domain variable
  /// (the layer) never decreases, whose static tasks are dealt layer by
  /// layer (schedule/schedule.h).
  std::vector<int> layer_block;
  /// The groups of each layered block, in topo_order.
  std::vector<std::vector<int>> blocks;
};

/// Builds the graph of a checked kernel. Reports waits on events nothing
/// notifies. Returns the graph even on error so dumps can show it; check
/// diag.has_errors().
TaskGraph build_task_graph(const KernelDecl &k, Diag &diag);

/// The inverse of `waits` edge `e` of group `g` (see EdgeInverse).
EdgeInverse derive_inverse(const TaskGroup &g, const Edge &e);

/// `--emit=taskgraph`: stable text for golden tests.
std::string print_task_graph(const TaskGraph &g);
/// `--emit=dot`: Graphviz.
std::string print_dot(const TaskGraph &g);

//===-- Argument block layout (see runtime/abi/etl_abi.h) -----------------===//

/// Slot numbers of the kernel's argument block for one kernel: dims first,
/// then tensors (parameters, then buffers), then events.
struct ArgLayout {
  unsigned first = ETL_SLOT_FIRST_PROGRAM; ///< the fixed slots come first
  unsigned num_dims = 0, num_tensors = 0, num_events = 0, num_scalars = 0;
  unsigned dim(unsigned i) const { return first + i; }
  unsigned tensor(unsigned i) const { return first + num_dims + i; }
  unsigned event(unsigned i) const { return first + num_dims + num_tensors + i; }
  /// A scalar parameter's slot holds its value's bits in the low bytes.
  unsigned scalar(unsigned i) const { return first + num_dims + num_tensors + num_events + i; }
  unsigned num_slots() const { return first + num_dims + num_tensors + num_events + num_scalars; }
  /// Tensor map `i` of a TMA copy (TileModule::tma_maps): 16 slots (a
  /// 128-byte CUtensorMap the runtime encodes at bind time), 64-byte
  /// aligned, after every other slot.
  unsigned tma_map(unsigned i) const { return (num_slots() + 7) / 8 * 8 + 16 * i; }
  /// The slots of a kernel with `maps` tensor maps.
  unsigned num_slots(unsigned maps) const { return maps ? tma_map(maps) : num_slots(); }
};
ArgLayout arg_layout(const KernelDecl &k);

} // namespace etl
