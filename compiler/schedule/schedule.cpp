//===- schedule/schedule.cpp - Group order and cycle detection ------------===//
//
// What this owns: schedule_task_graph (see schedule.h). Groups are nodes; a
// group that notifies event E has an edge to every group that waits on E.
// Tarjan's algorithm splits the graph into strongly connected components; a
// component with a cycle is judged (judge): a stack of layers, or the cycle
// to report (with every group and event on it, and why it is not layered
// when some wait on it crosses layers). Kahn's algorithm over the
// components, taking the one with the lowest-numbered group first, gives a
// deterministic order that keeps source order where it can; a layered
// component's groups go together, in the order of its same-layer waits.
// Waits whose index reads tensor data have no edge here: which element they
// wait on is known only at run time (the watchdog catches a cycle through
// data). Nor do chains inside one group whose tasks wait only on earlier
// tasks of the same group (forward_chain).
//
//===----------------------------------------------------------------------===//
#include "schedule/schedule.h"

#include "schedule/coverage.h"
#include "schedule/races.h"

#include <algorithm>
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

//===-- Layered cycles --------------------------------------------------------===//

/// The layer shift of a group edge (notify edge of group A, wait edge of
/// group B on one event): a component whose notify index is `A.var0 + cA`
/// and whose wait index is `B.var0 + cB` (cB - cA a constant; no other
/// domain variable, no `*`, no data read) means a task j of B waits only on
/// tasks k of A with k.var0 = j.var0 + (cB - cA). Every task matched
/// satisfies every such component, so the smallest shift over them holds.
/// nullopt: no component names the layer.
std::optional<int64_t> layer_shift(const TaskGraph &g, const Succ &s) {
  const Edge &n = g.edges[size_t(s.notify_edge)], &w = g.edges[size_t(s.wait_edge)];
  const TaskGroup &a = g.groups[size_t(n.group)], &b = g.groups[size_t(w.group)];
  if (a.vars.empty() || b.vars.empty())
    return std::nullopt;
  auto rest = [](const TaskGroup &grp, const EdgeIndex &ix) -> std::optional<Sym> {
    if (ix.star || ix.reads_data)
      return std::nullopt;
    auto c = ix.value.linear_coeff(grp.vars[0]);
    if (!c || c->as_constant() != 1)
      return std::nullopt;
    Sym r = ix.value - Sym::symbol(grp.vars[0]);
    for (const std::string &v : grp.vars)
      if (r.mentions(v))
        return std::nullopt;
    return r;
  };
  std::optional<int64_t> best;
  for (size_t d = 0; d < n.indices.size() && d < w.indices.size(); ++d) {
    auto ra = rest(a, n.indices[d]), rb = rest(b, w.indices[d]);
    auto c = ra && rb ? (*rb - *ra).as_constant() : std::nullopt;
    if (c && (!best || *c < *best))
      best = c;
  }
  return best;
}

/// Strongly connected components (Tarjan): the component of each group.
std::vector<int> components(const std::vector<std::vector<Succ>> &succ, int &count) {
  size_t n = succ.size();
  std::vector<int> comp(n, -1), index(n, -1), low(n, 0), stack;
  std::vector<bool> on(n, false);
  int next = 0;
  count = 0;
  std::function<void(int)> visit = [&](int u) {
    index[size_t(u)] = low[size_t(u)] = next++;
    stack.push_back(u);
    on[size_t(u)] = true;
    for (const Succ &s : succ[size_t(u)]) {
      if (index[size_t(s.group)] < 0) {
        visit(s.group);
        low[size_t(u)] = std::min(low[size_t(u)], low[size_t(s.group)]);
      } else if (on[size_t(s.group)]) {
        low[size_t(u)] = std::min(low[size_t(u)], index[size_t(s.group)]);
      }
    }
    if (low[size_t(u)] != index[size_t(u)])
      return;
    int v;
    do {
      v = stack.back();
      stack.pop_back();
      on[size_t(v)] = false;
      comp[size_t(v)] = count;
    } while (v != u);
    ++count;
  };
  for (size_t u = 0; u < n; ++u)
    if (index[u] < 0)
      visit(int(u));
  return comp;
}

/// What schedule_task_graph decides for one component of the group graph
/// that has a cycle.
struct Verdict {
  bool layered = false;
  std::vector<Succ> cycle; ///< when not layered: the cycle to report
  std::string why;         ///< when some wait on it crosses layers: why it is no stack
  SourceRange where;
  std::vector<int> order; ///< when layered: its groups, by the same-layer edges
};

/// The edges of `succ` inside component `c`; with `same_layer`, only those
/// of shift 0.
std::vector<std::vector<Succ>> inside(const TaskGraph &g, const std::vector<std::vector<Succ>> &succ,
                                      const std::vector<int> &comp, int c, bool same_layer) {
  std::vector<std::vector<Succ>> out(succ.size());
  for (size_t u = 0; u < succ.size(); ++u)
    for (const Succ &s : succ[u])
      if (comp[u] == c && comp[size_t(s.group)] == c && (!same_layer || layer_shift(g, s) == 0))
        out[u].push_back(s);
  return out;
}

/// A cycle through edge `e` inside the component whose edges are `in`: the
/// edge, then a shortest path back to its notifying group.
std::vector<Succ> cycle_through(const TaskGraph &g, const Succ &e,
                                const std::vector<std::vector<Succ>> &in) {
  int from = g.edges[size_t(e.notify_edge)].group;
  std::vector<std::optional<Succ>> via(in.size());
  std::vector<int> queue = {e.group};
  std::vector<bool> seen(in.size(), false);
  seen[size_t(e.group)] = true;
  for (size_t q = 0; q < queue.size(); ++q)
    for (const Succ &s : in[size_t(queue[q])])
      if (!seen[size_t(s.group)]) {
        seen[size_t(s.group)] = true;
        via[size_t(s.group)] = s;
        queue.push_back(s.group);
      }
  std::vector<Succ> back;
  for (int u = from; u != e.group && via[size_t(u)]; u = g.edges[size_t(via[size_t(u)]->notify_edge)].group)
    back.push_back(*via[size_t(u)]);
  std::vector<Succ> cycle = {e};
  cycle.insert(cycle.end(), back.rbegin(), back.rend());
  return cycle;
}

/// Whether component `c` (with a cycle) is a stack of layers: every group
/// has a first domain variable and every edge inside a layer shift <= 0,
/// and the edges of shift 0 have no cycle. Otherwise the cycle to report,
/// and why it is not layered when some edge crosses layers.
Verdict judge(const TaskGraph &g, const std::vector<std::vector<Succ>> &succ,
              const std::vector<int> &comp, int c) {
  Verdict v;
  auto in = inside(g, succ, comp, c, false);
  bool crosses = false;
  std::optional<Succ> bad;
  for (const auto &ss : in)
    for (const Succ &s : ss) {
      auto sh = layer_shift(g, s);
      crosses = crosses || (sh && *sh != 0);
      if (!bad && (!sh || *sh > 0))
        bad = s;
    }
  if (!crosses) { // an ordinary cycle, as the depth-first search meets it
    v.cycle = find_cycle(g, in);
    return v;
  }
  if (bad) {
    v.cycle = cycle_through(g, *bad, in);
    const Edge &n = g.edges[size_t(bad->notify_edge)], &w = g.edges[size_t(bad->wait_edge)];
    const TaskGroup &a = g.groups[size_t(n.group)], &b = g.groups[size_t(w.group)];
    const std::string &ev = g.events[size_t(w.event)].name;
    v.where = w.ref->range;
    if (a.vars.empty() || b.vars.empty()) {
      v.why = "'" + (a.vars.empty() ? a : b).name + "' has no task index to number its layers by";
    } else if (auto sh = layer_shift(g, *bad)) {
      v.why = "the wait on '" + ev + "' reaches later layers: a task of '" + b.name +
              "' waits on tasks of '" + a.name + "' whose '" + a.vars[0] + "' is " +
              std::to_string(*sh) + " greater than its own '" + b.vars[0] + "'";
    } else {
      v.why = "no index of the wait of '" + b.name + "' on '" + ev + "' is its first task index '" +
              b.vars[0] + "' plus a constant where '" + a.name + "' notifies its own '" +
              a.vars[0] + "' plus a constant, so the wait may reach any layer";
    }
    return v;
  }
  auto same = inside(g, succ, comp, c, true);
  v.cycle = find_cycle(g, same);
  if (!v.cycle.empty()) {
    v.where = g.edges[size_t(v.cycle[0].wait_edge)].ref->range;
    v.why = "every wait on this cycle stays within one layer (the first task indices of its "
            "groups equal), so the tasks of a layer would wait on each other";
    return v;
  }
  // Layered: the component's groups by its shift-0 edges, lowest index first.
  std::vector<int> indegree(g.groups.size(), 0);
  for (const auto &ss : same)
    for (const Succ &s : ss)
      ++indegree[size_t(s.group)];
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t u = 0; u < g.groups.size(); ++u)
    if (comp[u] == c && indegree[u] == 0)
      ready.push(int(u));
  while (!ready.empty()) {
    int u = ready.top();
    ready.pop();
    v.order.push_back(u);
    for (const Succ &s : same[size_t(u)])
      if (--indegree[size_t(s.group)] == 0)
        ready.push(s.group);
  }
  v.layered = true;
  return v;
}

void report_cycle(const TaskGraph &g, const Verdict &v, Diag &diag) {
  const std::vector<Succ> &cycle = v.cycle;
  std::string path = g.groups[size_t(g.edges[size_t(cycle[0].notify_edge)].group)].name;
  for (const Succ &s : cycle)
    path += " -> " + g.events[size_t(g.edges[size_t(s.notify_edge)].event)].name + " -> " +
            g.groups[size_t(s.group)].name;
  const Edge &first = g.edges[size_t(cycle[0].wait_edge)];
  diag.error(DiagId::EventCycle, first.ref->range, {path});
  for (const Succ &s : cycle) {
    const Edge &n = g.edges[size_t(s.notify_edge)];
    diag.note(DiagId::NoteCycleEdge, n.ref->range,
              {"'" + g.groups[size_t(n.group)].name + "' notifies '" +
               g.events[size_t(n.event)].name + "' here"});
  }
  if (!v.why.empty())
    diag.note(DiagId::NoteCycleNotLayered, v.where, {v.why});
}

} // namespace

bool schedule_task_graph(TaskGraph &g, Diag &diag) {
  auto succ = successors(g);
  int ncomp = 0;
  std::vector<int> comp = components(succ, ncomp);
  size_t ng = g.groups.size();
  // Each component: its groups, whether it has a cycle, and its verdict.
  auto members = std::vector<std::vector<int>>(size_t(ncomp));
  std::vector<bool> cyclic(size_t(ncomp), false);
  for (size_t u = 0; u < ng; ++u) {
    members[size_t(comp[u])].push_back(int(u));
    for (const Succ &s : succ[u])
      if (s.group == int(u))
        cyclic[size_t(comp[u])] = true;
  }
  auto verdicts = std::vector<Verdict>(size_t(ncomp));
  for (int c = 0; c < ncomp; ++c) {
    if (members[size_t(c)].size() > 1)
      cyclic[size_t(c)] = true;
    if (cyclic[size_t(c)])
      verdicts[size_t(c)] = judge(g, succ, comp, c);
  }
  // Report the cycle of the component holding the lowest-numbered group.
  for (size_t u = 0; u < ng; ++u) {
    int c = comp[u];
    if (cyclic[size_t(c)] && !verdicts[size_t(c)].layered) {
      report_cycle(g, verdicts[size_t(c)], diag);
      return false;
    }
  }
  // Components in a topological order, the one with the lowest-numbered
  // ready group first (every component a single group: Kahn's order of the
  // groups, source order where it can); a layered block's groups together.
  std::vector<int> indegree(size_t(ncomp), 0);
  for (size_t u = 0; u < ng; ++u)
    for (const Succ &s : succ[u])
      if (comp[u] != comp[size_t(s.group)])
        ++indegree[size_t(comp[size_t(s.group)])];
  using Ready = std::pair<int, int>; // lowest group, component
  std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>> ready;
  for (int c = 0; c < ncomp; ++c)
    if (indegree[size_t(c)] == 0)
      ready.push({members[size_t(c)][0], c});
  g.topo_order.clear();
  g.layer_block.assign(ng, -1);
  g.blocks.clear();
  while (!ready.empty()) {
    int c = ready.top().second;
    ready.pop();
    const std::vector<int> &groups =
        cyclic[size_t(c)] ? verdicts[size_t(c)].order : members[size_t(c)];
    if (cyclic[size_t(c)]) {
      for (int u : groups)
        g.layer_block[size_t(u)] = int(g.blocks.size());
      g.blocks.push_back(groups);
    }
    for (int u : groups) {
      g.topo_order.push_back(u);
      for (const Succ &s : succ[size_t(u)]) {
        int d = comp[size_t(s.group)];
        if (d != c && --indegree[size_t(d)] == 0)
          ready.push({members[size_t(d)][0], d});
      }
    }
  }
  bool ok = check_group_races(g, diag);
  return check_wait_coverage(g, diag) && ok;
}

} // namespace etl
