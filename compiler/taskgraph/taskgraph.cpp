//===- taskgraph/taskgraph.cpp - Building and printing the task graph -----===//
//
// What this owns: build_task_graph (groups, events, edges, wait counts),
// its text and Graphviz dumps, and the argument-block layout.
//
// Wait counts. Element e of event E receives one notification from every
// (task, notify edge) pair whose index map hits e. When each non-`*`
// component of an edge is a distinct task variable ranging exactly over the
// event's extent in that dimension, every element receives the same number:
// the product of the extents of the task variables the edge does not use.
// That covers the common maps (`partial[i, j] notifies E[i]`); for any other
// map the count varies by element and is left to the runtime, which counts
// per element for the bound shape by enumeration.
//
//===----------------------------------------------------------------------===//
#include "taskgraph/taskgraph.h"

#include <algorithm>

#include <sstream>

namespace etl {
namespace {

/// The uniform per-element count contributed by one notify edge, if any.
std::optional<Sym> uniform_count(const TaskGroup &g, const Edge &e, const EventTensor &ev,
                                 std::string &why) {
  if (g.decl && g.decl->data_var >= 0) {
    why = "the number of tasks of " + g.name + " is known at run time";
    return std::nullopt;
  }
  if (e.reads_data()) {
    why = "which element each task of " + g.name + " notifies is read from tensor data";
    return std::nullopt;
  }
  std::vector<bool> used(g.vars.size(), false);
  for (size_t d = 0; d < e.indices.size(); ++d) {
    const EdgeIndex &ix = e.indices[d];
    if (ix.star)
      continue;
    int var = -1;
    for (size_t v = 0; v < g.vars.size(); ++v)
      if (ix.value == Sym::symbol(g.vars[v]))
        var = int(v);
    if (var < 0) {
      why = "index '" + ix.value.str() + "' of " + g.name + " is not a plain task index";
      return std::nullopt;
    }
    if (used[var]) {
      why = "task index '" + g.vars[var] + "' is used twice";
      return std::nullopt;
    }
    used[var] = true;
    if (g.lo[var] != Sym(0) || g.hi[var] != ev.shape[d]) {
      why =
          "the range of '" + g.vars[var] + "' is not the extent of dimension " + std::to_string(d);
      return std::nullopt;
    }
  }
  Sym count(1);
  for (size_t v = 0; v < g.vars.size(); ++v)
    if (!used[v])
      count = count * (g.hi[v] - g.lo[v]);
  return count;
}

std::string edge_str(const TaskGraph &g, const Edge &e) {
  std::string s = g.events[e.event].name + "[";
  for (size_t i = 0; i < e.indices.size(); ++i)
    s += (i ? ", " : "") + (e.indices[i].star ? std::string("*") : e.indices[i].value.str());
  return s + "]";
}

std::string shape_str(const std::vector<Sym> &s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + s[i].str();
  return r;
}

/// Schedule kind of a task: its own clause, else the kernel's, else static.
void pick_schedule(const KernelDecl &k, const TaskDecl &t, TaskGroup &grp) {
  if (t.data_var >= 0) {
    grp.dynamic = true;
    grp.schedule_reason = "range of " + t.domain[size_t(t.data_var)].name + " reads tensor data";
  } else if (t.schedule != ScheduleKind::None) {
    grp.dynamic = t.schedule == ScheduleKind::Dynamic;
    grp.schedule_reason = "declared";
  } else if (k.schedule != ScheduleKind::None) {
    grp.dynamic = k.schedule == ScheduleKind::Dynamic;
    grp.schedule_reason = "declared on kernel " + k.name;
  } else {
    grp.dynamic = false;
    grp.schedule_reason = "default";
  }
}

std::string inverse_str(const TaskGroup &grp, const Edge &e) {
  std::string s;
  size_t nv = grp.decl && grp.decl->data_var >= 0 ? size_t(grp.decl->data_var) : grp.vars.size();
  for (size_t v = 0; v < nv; ++v) {
    s += v ? "; " : "";
    int d = e.inverse.solved_by[v];
    if (d >= 0)
      s += grp.vars[v] + " solved from component " + std::to_string(d);
    else
      s += grp.vars[v] + " enumerated over " + grp.lo[v].str() + " .. " + grp.hi[v].str();
  }
  for (size_t d = 0; d < e.inverse.unsolving.size(); ++d)
    if (e.inverse.unsolving[d])
      s += "; component " + std::to_string(d) + " not invertible, checked per task";
  return s.empty() ? "every task" : s;
}

} // namespace

EdgeInverse derive_inverse(const TaskGroup &g, const Edge &e) {
  EdgeInverse inv;
  inv.solved_by.assign(g.vars.size(), -1);
  inv.coeff.assign(g.vars.size(), 0);
  inv.unsolving.assign(e.indices.size(), false);
  for (size_t d = 0; d < e.indices.size(); ++d) {
    const EdgeIndex &ix = e.indices[d];
    if (ix.star)
      continue;
    bool solves = false;
    if (ix.expr && ix.expr->sym) {
      for (size_t v = 0; v < g.vars.size() && !solves; ++v) {
        if (inv.solved_by[v] >= 0)
          continue;
        std::optional<Sym> a = ix.value.linear_coeff(g.vars[v]);
        std::optional<int64_t> ac = a ? a->as_constant() : std::nullopt;
        if (!ac || *ac == 0)
          continue;
        Sym c = ix.value - Sym(*ac) * Sym::symbol(g.vars[v]);
        bool free = true;
        for (const std::string &w : g.vars)
          free = free && !c.mentions(w);
        if (!free)
          continue;
        inv.solved_by[v] = int(d);
        inv.coeff[v] = *ac;
        solves = true;
      }
    }
    inv.unsolving[d] = !solves;
  }
  return inv;
}

TaskGraph build_task_graph(const KernelDecl &k, Diag &diag) {
  TaskGraph g;
  g.kernel = &k;
  for (const EventDecl &e : k.events) {
    EventTensor ev;
    ev.name = e.name;
    ev.decl = &e;
    ev.shape = e.sym_shape;
    ev.num_elements = Sym(1);
    for (const Sym &s : ev.shape)
      ev.num_elements = ev.num_elements * s;
    g.events.push_back(std::move(ev));
  }
  for (const TaskDecl &t : k.tasks) {
    TaskGroup grp;
    grp.name = t.name;
    grp.decl = &t;
    grp.task_count = Sym(1);
    pick_schedule(k, t, grp);
    for (const TaskIndexDecl &d : t.domain) {
      grp.vars.push_back(d.name);
      grp.lo.push_back(d.lo->sym.value_or(Sym(0)));
      grp.hi.push_back(d.hi->sym.value_or(Sym(1)));
      grp.task_count = grp.task_count * (grp.hi.back() - grp.lo.back());
    }
    int gi = int(g.groups.size());
    auto add_edges = [&](const std::vector<EventRef> &refs, bool notify) {
      for (const EventRef &r : refs) {
        if (r.event_index < 0)
          continue;
        Edge e;
        e.group = gi;
        e.event = r.event_index;
        e.notify = notify;
        e.ref = &r;
        for (const ExprPtr &ix : r.indices) {
          EdgeIndex ei;
          ei.star = !ix;
          if (ix) {
            ei.value = ix->sym.value_or(Sym(0));
            ei.expr = ix.get();
            ei.reads_data = ix->reads_data;
          }
          e.indices.push_back(ei);
        }
        int ei = int(g.edges.size());
        g.edges.push_back(std::move(e));
        (notify ? grp.notifies : grp.waits).push_back(ei);
        (notify ? g.events[r.event_index].producers : g.events[r.event_index].consumers)
            .push_back(ei);
      }
    };
    add_edges(t.waits, false);
    add_edges(t.notifies, true);
    // A notify index may read data (counted on the device, lower_kernel.cpp),
    // except beside a `*` or in a group whose range reads data.
    for (int n : grp.notifies) {
      const Edge &ne = g.edges[size_t(n)];
      bool star = std::any_of(ne.indices.begin(), ne.indices.end(),
                              [](const EdgeIndex &ix) { return ix.star; });
      for (const EdgeIndex &ix : ne.indices)
        if (ix.reads_data && (star || t.data_var >= 0))
          diag.error(DiagId::DataDependentNotify, ix.expr->range,
                     {ix.expr->sym ? ix.expr->sym->str() : "?", grp.name,
                      g.events[size_t(ne.event)].name,
                      star ? "beside a `*` in the same reference"
                           : "in a group whose task range reads data"});
    }
    if (grp.dynamic)
      for (int w : grp.waits) {
        const Edge &e = g.edges[size_t(w)];
        if (e.reads_data()) {
          diag.error(DiagId::DynamicDataDependentWait, e.ref->range,
                     {grp.name, g.events[size_t(e.event)].name});
          if (t.schedule_range.valid())
            diag.note(DiagId::NoteUseScheduleStatic, t.schedule_range, {grp.name});
          else
            diag.note(DiagId::NoteUseScheduleStatic, t.name_range, {grp.name});
          continue;
        }
        g.edges[size_t(w)].inverse = derive_inverse(grp, e);
      }
    g.groups.push_back(std::move(grp));
  }

  for (EventTensor &ev : g.events) {
    if (ev.producers.empty()) {
      for (int c : ev.consumers) {
        const Edge &e = g.edges[c];
        diag.error(DiagId::EventNeverNotified, e.ref->range, {g.groups[e.group].name, ev.name});
      }
      if (!ev.consumers.empty())
        diag.note(DiagId::NoteDeclaredHere, ev.decl->name_range, {ev.name});
      ev.wait_count = Sym(0);
      continue;
    }
    if (ev.consumers.empty())
      diag.warning(DiagId::EventNeverAwaited, ev.decl->name_range, {ev.name});
    Sym total(0);
    bool uniform = true;
    for (int p : ev.producers) {
      const Edge &e = g.edges[p];
      auto c = uniform_count(g.groups[e.group], e, ev, ev.wait_count_note);
      if (!c) {
        uniform = false;
        break;
      }
      total = total + *c;
    }
    if (uniform)
      ev.wait_count = total;
  }
  return g;
}

std::string print_task_graph(const TaskGraph &g) {
  std::ostringstream os;
  const KernelDecl &k = *g.kernel;
  os << "kernel " << k.name << "<";
  for (size_t i = 0; i < k.dims.size(); ++i)
    os << (i ? ", " : "") << k.dims[i].name;
  os << ">\n";
  for (const EventTensor &ev : g.events) {
    os << "event " << ev.name << "[" << shape_str(ev.shape) << "]\n";
    os << "  elements:   " << ev.num_elements.str() << "\n";
    if (ev.wait_count)
      os << "  wait count: " << ev.wait_count->str() << " per element\n";
    else
      os << "  wait count: varies by element (" << ev.wait_count_note
         << "); counted by the runtime\n";
    for (int p : ev.producers)
      os << "  notified by " << g.groups[g.edges[p].group].name << " as " << edge_str(g, g.edges[p])
         << "\n";
    for (int c : ev.consumers)
      os << "  awaited by  " << g.groups[g.edges[c].group].name << " as " << edge_str(g, g.edges[c])
         << "\n";
  }
  for (const TaskGroup &grp : g.groups) {
    os << "group " << grp.name << "[";
    for (size_t i = 0; i < grp.vars.size(); ++i) {
      const Expr *dd = grp.decl->domain[i].data_bound;
      os << (i ? ", " : "") << grp.vars[i] << " in " << grp.lo[i].str() << " .. "
         << (dd && dd->sym ? "min(" + dd->sym->str() + ", " + grp.hi[i].str() + ")"
                           : grp.hi[i].str());
    }
    os << "]\n  tasks:      " << (grp.decl->data_var >= 0 ? "at most " : "") << grp.task_count.str()
       << "\n";
    for (int w : grp.waits)
      os << "  waits       " << edge_str(g, g.edges[w])
         << (g.edges[w].reads_data()
                 ? " (reads data: evaluated when the task waits, range-checked on the device, "
                   "not part of the cycle check)"
                 : "")
         << "\n";
    for (int n : grp.notifies)
      os << "  notifies    " << edge_str(g, g.edges[n]) << "\n";
    if (grp.dynamic) {
      os << "  schedule:   dynamic (" << grp.schedule_reason << ")\n";
      if (grp.decl->data_var >= 0) {
        std::string prefix;
        for (int v = 0; v < grp.decl->data_var; ++v)
          prefix += (v ? ", " : "") + grp.vars[size_t(v)];
        os << "  expansion:  one expander per (" << prefix
           << ") once its waits are done: evaluates the range, pushes the tasks, settles the "
              "counts of what they notify\n";
      }
      for (int w : grp.waits)
        os << "  consumers of " << edge_str(g, g.edges[w]) << ": " << inverse_str(grp, g.edges[w])
           << "\n";
    } else {
      os << "  schedule:   static (" << grp.schedule_reason << ")\n";
    }
    size_t gi = size_t(&grp - g.groups.data());
    if (gi < g.layer_block.size() && g.layer_block[gi] >= 0)
      os << "  layers:     block " << g.layer_block[gi] << ", layer " << grp.vars[0] << "\n";
  }
  os << "order:";
  for (int gi : g.topo_order)
    os << " " << g.groups[gi].name;
  os << "\n";
  for (size_t b = 0; b < g.blocks.size(); ++b) {
    os << "layer block " << b << ":";
    for (int gi : g.blocks[b])
      os << " " << g.groups[size_t(gi)].name;
    os << " (static tasks dealt layer by layer: for each value of the first task index, each "
          "group in this order)\n";
  }
  return os.str();
}

std::string print_dot(const TaskGraph &g) {
  std::ostringstream os;
  os << "digraph \"" << g.kernel->name << "\" {\n  rankdir=LR;\n";
  for (const TaskGroup &grp : g.groups)
    os << "  \"task:" << grp.name << "\" [shape=box, label=\"" << grp.name << "\\n"
       << grp.task_count.str() << " tasks\"];\n";
  for (size_t b = 0; b < g.blocks.size(); ++b) {
    os << "  subgraph \"cluster_layers" << b << "\" {\n    label=\"layer block " << b
       << " (dealt layer by layer)\";\n";
    for (int gi : g.blocks[b])
      os << "    \"task:" << g.groups[size_t(gi)].name << "\";\n";
    os << "  }\n";
  }
  for (const EventTensor &ev : g.events)
    os << "  \"event:" << ev.name << "\" [shape=ellipse, label=\"" << ev.name << "["
       << shape_str(ev.shape) << "]\"];\n";
  for (const Edge &e : g.edges) {
    std::string label = edge_str(g, e);
    if (e.notify)
      os << "  \"task:" << g.groups[e.group].name << "\" -> \"event:" << g.events[e.event].name
         << "\" [label=\"" << label << "\"];\n";
    else
      os << "  \"event:" << g.events[e.event].name << "\" -> \"task:" << g.groups[e.group].name
         << "\" [label=\"" << label << "\"];\n";
  }
  os << "}\n";
  return os.str();
}

ArgLayout arg_layout(const KernelDecl &k) {
  ArgLayout l;
  l.num_dims = unsigned(k.dims.size());
  l.num_tensors = unsigned(k.tensors.size());
  l.num_events = unsigned(k.events.size());
  l.num_scalars = unsigned(k.scalars.size());
  return l;
}

} // namespace etl
