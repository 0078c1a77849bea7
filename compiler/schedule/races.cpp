//===- schedule/races.cpp - Races between task groups ---------------------===//
//
// What this owns: check_group_races (see races.h).
//
//===----------------------------------------------------------------------===//
#include "schedule/races.h"

#include "sema/access.h"

#include <set>

namespace etl {
namespace {

/// One side of a comparison: a group's access with its variables (task
/// indices, then loops) renamed by `suffix`, so two groups' `i` stay apart.
struct Side {
  const TaskGroup *group;
  const Access *access;
  std::string suffix;

  Sym rename(Sym e) const {
    for (const AccessLoop &l : access->loops)
      e = e.substitute(l.var, Sym::symbol(l.var + suffix));
    for (const std::string &v : group->vars)
      e = e.substitute(v, Sym::symbol(v + suffix));
    return e;
  }
  void add_bounds(Facts &f) const {
    for (size_t k = 0; k < group->vars.size(); ++k)
      f.add_bounds(group->vars[k] + suffix, rename(group->lo[k]), rename(group->hi[k]) - 1);
    for (const AccessLoop &l : access->loops) {
      std::optional<Sym> lo, hi;
      if (l.lo)
        lo = rename(*l.lo);
      if (l.hi)
        hi = rename(*l.hi) - 1;
      f.add_bounds(l.var + suffix, lo, hi);
    }
  }
  /// e with every variable at its lower bound (loops first: their bounds
  /// may use the task indices), or nullopt when a bound is unknown.
  std::optional<Sym> at_first(Sym e) const {
    for (auto it = access->loops.rbegin(); it != access->loops.rend(); ++it) {
      if (!e.mentions(it->var))
        continue;
      if (!it->lo)
        return std::nullopt;
      e = e.substitute(it->var, *it->lo);
    }
    for (size_t k = 0; k < group->vars.size(); ++k)
      e = e.substitute(group->vars[k], group->lo[k]);
    return e;
  }
  bool masked() const { return has_mask(*access); }
};

enum class Overlap { None, Maybe, Certain };

Overlap overlap(const Facts &kernel_facts, const Side &a, const Side &b) {
  const Access &x = *a.access, &y = *b.access;
  if (x.box.size() != y.box.size())
    return Overlap::Maybe;
  Facts f = kernel_facts;
  a.add_bounds(f);
  b.add_bounds(f);
  bool certain = !a.masked() && !b.masked();
  for (size_t d = 0; d < x.box.size(); ++d) {
    if (!x.box[d].known || !y.box[d].known) {
      certain = false;
      continue;
    }
    Sym xs = a.rename(x.box[d].start), xe = a.rename(x.box[d].extent);
    Sym ys = b.rename(y.box[d].start), ye = b.rename(y.box[d].extent);
    if (f.prove_ge(ys, xs + xe) || f.prove_ge(xs, ys + ye))
      return Overlap::None;
    auto fx = a.at_first(x.box[d].start), fy = b.at_first(y.box[d].start);
    if (!fx || !fy || *fx != *fy)
      certain = false;
  }
  return certain ? Overlap::Certain : Overlap::Maybe;
}

} // namespace

std::vector<std::vector<bool>> group_reachability(const TaskGraph &g) {
  size_t n = g.groups.size();
  std::vector<std::vector<int>> succ(n);
  for (const EventTensor &ev : g.events)
    for (int p : ev.producers)
      for (int c : ev.consumers)
        if (g.edges[p].group != g.edges[c].group)
          succ[size_t(g.edges[p].group)].push_back(g.edges[c].group);
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  for (size_t s = 0; s < n; ++s) {
    std::vector<int> stack(succ[s].begin(), succ[s].end());
    while (!stack.empty()) {
      int u = stack.back();
      stack.pop_back();
      if (reach[s][size_t(u)])
        continue;
      reach[s][size_t(u)] = true;
      for (int v : succ[size_t(u)])
        stack.push_back(v);
    }
  }
  return reach;
}

bool check_group_races(const TaskGraph &g, Diag &diag) {
  if (!g.kernel)
    return true;
  const KernelDecl &k = *g.kernel;
  auto reach = group_reachability(g);
  std::vector<std::vector<Access>> acc;
  for (const TaskGroup &grp : g.groups)
    acc.push_back(grp.decl ? collect_accesses(grp.decl->body) : std::vector<Access>{});
  bool ok = true;
  for (size_t ga = 0; ga < g.groups.size(); ++ga)
    for (size_t gb = ga + 1; gb < g.groups.size(); ++gb) {
      if (reach[ga][gb] || reach[gb][ga])
        continue;
      std::set<int> reported; // one report per tensor and pair of groups
      for (const Access &x : acc[ga])
        for (const Access &y : acc[gb]) {
          if (x.tensor != y.tensor || (!x.write && !y.write) || reported.count(x.tensor))
            continue;
          if (x.atomic && y.atomic)
            continue; // concurrent atomics are the point (split-K, histograms)
          Side a{&g.groups[ga], &x, "'"}, b{&g.groups[gb], &y, ""};
          Overlap o = overlap(k.facts, a, b);
          if (o == Overlap::None)
            continue;
          reported.insert(x.tensor);
          // Report at the second access, with a note at the writing one;
          // the writer runs first in the suggested fix.
          const Side &writer = y.write && !x.write ? b : a;
          const Side &other = &writer == &a ? b : a;
          const std::string &tensor = k.tensors[size_t(x.tensor)].name;
          std::vector<std::string> args = {other.group->name,
                                           other.access->write ? "writes" : "reads", tensor,
                                           writer.group->name};
          if (o == Overlap::Certain) {
            diag.error(DiagId::GroupRace, other.access->node->range, args);
            ok = false;
          } else {
            diag.warning(DiagId::GroupMayRace, other.access->node->range, args);
          }
          diag.note(DiagId::NoteRaceAccess, writer.access->node->range,
                    {writer.group->name, tensor});
          diag.note(DiagId::NoteRaceFix, other.group->decl->name_range,
                    {writer.group->name, other.group->name, tensor + "_ready"});
        }
    }
  return ok;
}

} // namespace etl
