//===- schedule/schedule.cpp - Group order and cycle detection ------------===//
//
// What this owns: schedule_task_graph (see schedule.h). Groups are nodes; a
// group that notifies event E has an edge to every group that waits on E.
// A depth-first search finds a cycle (reported with every group and event on
// it); otherwise Kahn's algorithm, taking the lowest-numbered ready group
// first, gives a deterministic order that keeps source order where it can.
// Waits whose index reads tensor data have no edge here: which element they
// wait on is known only at run time (the watchdog catches a cycle through
// data). Nor do chains inside one group whose tasks wait only on earlier
// tasks of the same group (forward_chain).
//
//===----------------------------------------------------------------------===//
#include "schedule/schedule.h"

#include "schedule/coverage.h"
#include "schedule/races.h"

#include <functional>
#include <optional>
#include <queue>

namespace etl {
namespace {

/// A successor of a group through an event: (consumer group, notify edge,
/// wait edge).
struct Succ {
  int group, notify_edge, wait_edge;
};

/// A group that notifies an event it also waits on is a chain, not a cycle,
/// when every task depends only on tasks before it in the row-major order of
/// the domain (the order of the static queues): `scan[i in 0 .. N] waits
/// S[i] notifies S[i + 1]`. Sufficient condition, checked per component d:
/// the wait index is `c*v + f` and the notify index `c*v + f + D` for one
/// domain variable v (c, D constants; f free of domain variables), so a task
/// j waits on tasks k with k_v = j_v - D/c. Scanning the variables from the
/// most significant, the first that is not fixed (shift 0) must have a
/// negative shift; a variable no component fixes lets k differ anywhere.
/// A component whose indices never meet (constants differing) means no
/// dependency at all.
bool forward_chain(const TaskGroup &grp, const Edge &n, const Edge &w) {
  size_t nv = grp.vars.size();
  std::vector<std::optional<int64_t>> shift(nv);
  for (size_t d = 0; d < n.indices.size(); ++d) {
    const EdgeIndex &a = w.indices[d], &b = n.indices[d];
    if (a.star || b.star || a.reads_data || b.reads_data)
      return false;
    auto diff = (b.value - a.value).as_constant();
    if (!diff)
      return false;
    int var = -1;
    int64_t c = 0;
    for (size_t v = 0; v < nv; ++v) {
      if (!a.value.mentions(grp.vars[v]))
        continue;
      auto lc = a.value.linear_coeff(grp.vars[v]);
      auto k = lc ? lc->as_constant() : std::nullopt;
      if (var >= 0 || !k || *k == 0)
        return false;
      var = int(v), c = *k;
    }
    if (var < 0) {
      if (*diff != 0)
        return true; // this component never matches: no task waits on another
      continue;
    }
    if (*diff % c != 0)
      return true; // never matches either
    int64_t s = -*diff / c;
    if (shift[size_t(var)] && *shift[size_t(var)] != s)
      return true; // two components disagree: no task matches
    shift[size_t(var)] = s;
  }
  for (size_t v = 0; v < nv; ++v) {
    if (!shift[v])
      return false; // free: k may be later than j
    if (*shift[v] < 0)
      return true;
    if (*shift[v] > 0)
      return false;
  }
  return false; // every shift 0: a task would wait on itself
}

std::vector<std::vector<Succ>> successors(const TaskGraph &g) {
  std::vector<std::vector<Succ>> succ(g.groups.size());
  for (const EventTensor &ev : g.events)
    for (int p : ev.producers)
      for (int c : ev.consumers) {
        const Edge &n = g.edges[p], &w = g.edges[c];
        if (w.reads_data()) // a data-dependent wait: no static edge
          continue;
        if (n.group == w.group && forward_chain(g.groups[n.group], n, w))
          continue; // a chain inside the group: tasks wait only on earlier ones
        succ[n.group].push_back(Succ{w.group, p, c});
      }
  return succ;
}

/// Returns the edges (notify, wait pairs) of one cycle, or empty.
std::vector<Succ> find_cycle(const TaskGraph &g, const std::vector<std::vector<Succ>> &succ) {
  enum { White, Grey, Black };
  std::vector<int> color(g.groups.size(), White);
  std::vector<Succ> stack, cycle;
  std::function<bool(int)> dfs = [&](int u) {
    color[u] = Grey;
    for (const Succ &s : succ[u]) {
      stack.push_back(s);
      if (color[s.group] == Grey) {
        // The cycle is the suffix of `stack` starting at the edge leaving s.group.
        size_t start = stack.size() - 1;
        while (start > 0 && g.edges[stack[start].notify_edge].group != s.group)
          --start;
        cycle.assign(stack.begin() + long(start), stack.end());
        return true;
      }
      if (color[s.group] == White && dfs(s.group))
        return true;
      stack.pop_back();
    }
    color[u] = Black;
    return false;
  };
  for (size_t u = 0; u < g.groups.size(); ++u)
    if (color[u] == White && dfs(int(u)))
      return cycle;
  return {};
}

} // namespace

bool schedule_task_graph(TaskGraph &g, Diag &diag) {
  auto succ = successors(g);
  std::vector<Succ> cycle = find_cycle(g, succ);
  if (!cycle.empty()) {
    std::string path = g.groups[g.edges[cycle[0].notify_edge].group].name;
    for (const Succ &s : cycle)
      path +=
          " -> " + g.events[g.edges[s.notify_edge].event].name + " -> " + g.groups[s.group].name;
    const Edge &first = g.edges[cycle[0].wait_edge];
    diag.error(DiagId::EventCycle, first.ref->range, {path});
    for (const Succ &s : cycle) {
      const Edge &n = g.edges[s.notify_edge];
      diag.note(
          DiagId::NoteCycleEdge, n.ref->range,
          {"'" + g.groups[n.group].name + "' notifies '" + g.events[n.event].name + "' here"});
    }
    return false;
  }
  std::vector<int> indegree(g.groups.size(), 0);
  for (const auto &ss : succ)
    for (const Succ &s : ss)
      ++indegree[s.group];
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t u = 0; u < g.groups.size(); ++u)
    if (indegree[u] == 0)
      ready.push(int(u));
  g.topo_order.clear();
  while (!ready.empty()) {
    int u = ready.top();
    ready.pop();
    g.topo_order.push_back(u);
    for (const Succ &s : succ[u])
      if (--indegree[s.group] == 0)
        ready.push(s.group);
  }
  bool ok = check_group_races(g, diag);
  return check_wait_coverage(g, diag) && ok;
}

} // namespace etl
