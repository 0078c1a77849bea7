//===- schedule/schedule.cpp - Group order and cycle detection ------------===//
//
// What this owns: schedule_task_graph (see schedule.h). Groups are nodes; a
// group that notifies event E has an edge to every group that waits on E.
// A depth-first search finds a cycle (reported with every group and event on
// it); otherwise Kahn's algorithm, taking the lowest-numbered ready group
// first, gives a deterministic order that keeps source order where it can.
// Waits whose index reads tensor data have no edge here: which element they
// wait on is known only at run time (the watchdog catches a cycle through
// data).
//
//===----------------------------------------------------------------------===//
#include "schedule/schedule.h"

#include <functional>
#include <queue>

namespace etl {
namespace {

/// A successor of a group through an event: (consumer group, notify edge,
/// wait edge).
struct Succ {
  int group, notify_edge, wait_edge;
};

std::vector<std::vector<Succ>> successors(const TaskGraph &g) {
  std::vector<std::vector<Succ>> succ(g.groups.size());
  for (const EventTensor &ev : g.events)
    for (int p : ev.producers)
      for (int c : ev.consumers)
        if (!g.edges[c].reads_data()) // a data-dependent wait: no static edge
          succ[g.edges[p].group].push_back(Succ{g.edges[c].group, p, c});
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
  return true;
}

} // namespace etl
