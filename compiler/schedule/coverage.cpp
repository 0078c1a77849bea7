//===- schedule/coverage.cpp - Waits at the granularity of the data -------===//
//
// What this owns: check_wait_coverage (see coverage.h). In order: pick a
// binding of the dims, enumerate every group's tasks, the event elements
// each task notifies and waits for, each task's ancestors (the tasks a chain
// of its waits orders before it), the elements each access touches, then
// compare every writer/reader pair of tasks of two ordered groups.
//
//===----------------------------------------------------------------------===//
#include "schedule/coverage.h"

#include "schedule/races.h"
#include "sema/access.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

namespace etl {
namespace {

/// Budgets: past them the check says nothing (coverage.h).
constexpr size_t kMaxTasks = 2048;             ///< task instances, all groups together
constexpr int64_t kMaxEventElements = 1 << 16; ///< per event tensor
constexpr size_t kMaxIterations = 4096;        ///< loop iterations of one access in one task
/// Box pairs compared plus access iterations evaluated, per kernel: the
/// check stays under ~0.1 s on any input (the fuzzers run it; the examples
/// take under 1,000).
constexpr uint64_t kMaxWork = 200000;
/// A dim is given this many of its largest tile; fallbacks follow.
constexpr int64_t kTilesPerDim[] = {3, 4, 2, 5, 6, 1};

using Env = std::map<std::string, int64_t>;

std::optional<int64_t> eval(const Sym &s, const Env &env) {
  return s.eval([&](const std::string &n) -> std::optional<int64_t> {
    auto it = env.find(n);
    if (it == env.end())
      return std::nullopt;
    return it->second;
  });
}

//===-- The binding ---------------------------------------------------------===//

bool where_holds(const Expr &w, const Env &env) {
  if (w.kind != ExprKind::Binary || w.args.size() != 2)
    return false;
  if (w.bin_op == BinOp::And)
    return where_holds(*w.args[0], env) && where_holds(*w.args[1], env);
  if (!w.args[0]->sym || !w.args[1]->sym)
    return false;
  std::optional<int64_t> a = eval(*w.args[0]->sym, env), b = eval(*w.args[1]->sym, env);
  if (!a || !b)
    return false;
  switch (w.bin_op) {
  case BinOp::Eq:
    return *a == *b;
  case BinOp::Ne:
    return *a != *b;
  case BinOp::Lt:
    return *a < *b;
  case BinOp::Le:
    return *a <= *b;
  case BinOp::Gt:
    return *a > *b;
  case BinOp::Ge:
    return *a >= *b;
  default:
    return false;
  }
}

/// What the `where` clauses ask of each dim: `D % c == 0` (divisors) and
/// `D == e` (definitions, evaluated after the others).
struct WhereShape {
  std::map<std::string, int64_t> divisor;
  std::vector<std::pair<std::string, Sym>> defs;
};

void read_where(const Expr &w, WhereShape &out) {
  if (w.kind != ExprKind::Binary || w.args.size() != 2)
    return;
  if (w.bin_op == BinOp::And) {
    read_where(*w.args[0], out);
    read_where(*w.args[1], out);
    return;
  }
  if (w.bin_op != BinOp::Eq)
    return;
  const Expr &l = *w.args[0], &r = *w.args[1];
  auto dim = [](const Expr &e) { return e.kind == ExprKind::Name && e.ref == NameRef::Dim; };
  if (l.kind == ExprKind::Binary && l.bin_op == BinOp::Mod && dim(*l.args[0]) && l.args[1]->sym &&
      r.sym && r.sym->as_constant() == 0) {
    if (auto c = l.args[1]->sym->as_constant(); c && *c > 0 && *c <= (1 << 16)) {
      int64_t &d = out.divisor[l.args[0]->name];
      d = std::lcm(d ? d : 1, *c);
    }
  } else if (dim(l) && r.sym) {
    out.defs.push_back({l.name, *r.sym});
  } else if (dim(r) && l.sym) {
    out.defs.push_back({r.name, *l.sym});
  }
}

/// Each dim: a few of the largest tile an access moves along a tensor
/// dimension of exactly that size, a multiple of its `where` divisor, the
/// definitions applied; the first candidate every `where` accepts, scaled
/// up by 4, 16, ... when none is.
std::optional<Env> pick_binding(const KernelDecl &k,
                                const std::vector<std::vector<Access>> &accesses) {
  std::map<std::string, int64_t> tile;
  for (const std::vector<Access> &as : accesses)
    for (const Access &a : as) {
      const std::vector<Sym> &shape = k.tensors[size_t(a.tensor)].shape;
      for (size_t d = 0; d < a.box.size() && d < shape.size(); ++d) {
        std::set<std::string> syms = shape[d].symbols();
        if (syms.size() != 1 || shape[d] != Sym::symbol(*syms.begin()) || !a.box[d].known)
          continue;
        if (auto e = a.box[d].extent.as_constant(); e && *e > 0 && *e <= (1 << 12))
          tile[*syms.begin()] = std::max(tile[*syms.begin()], *e);
      }
    }
  WhereShape ws;
  for (const ExprPtr &w : k.where)
    read_where(*w, ws);
  // Larger scales for `where` lower bounds (`where N >= 1024`).
  for (int64_t scale = 1; scale <= 1024; scale *= 4)
    for (int64_t tiles : kTilesPerDim) {
      Env env;
      for (const DimDecl &d : k.dims) {
        int64_t t = tile.count(d.name) ? tile[d.name] : 1;
        int64_t div = ws.divisor.count(d.name) ? ws.divisor[d.name] : 1;
        env[d.name] = scale * tiles * std::lcm(t, div);
      }
      for (int round = 0; round < 3; ++round)
        for (const auto &[name, value] : ws.defs)
          if (auto v = eval(value, env))
            env[name] = *v;
      bool ok = true;
      for (const DimDecl &d : k.dims)
        ok = ok && env[d.name] >= 1;
      for (const ExprPtr &w : k.where)
        ok = ok && where_holds(*w, env);
      if (ok)
        return env;
    }
  return std::nullopt;
}

//===-- Tasks, events, ancestors --------------------------------------------===//

/// Every task of the graph under one binding, numbered across groups.
struct Tasks {
  struct Task {
    int group;
    std::vector<int64_t> index; ///< one value per domain variable
  };
  std::vector<Task> all;
  std::vector<std::vector<size_t>> of_group; ///< ids, per group
  std::vector<bool> group_known;
  /// The tasks a chain of waits orders before each task (a bit per id), and
  /// whether that set may miss some (a data-dependent wait on the way).
  std::vector<std::vector<uint64_t>> before;
  std::vector<bool> partial;

  bool ordered(size_t first, size_t then) const {
    return (before[then][first / 64] >> (first % 64)) & 1u;
  }
  Env env(const TaskGroup &g, size_t id, const Env &dims) const {
    Env e = dims;
    for (size_t v = 0; v < g.vars.size(); ++v)
      e[g.vars[v]] = all[id].index[v];
    return e;
  }
};

/// Enumerates group `gi`'s tasks; false when its range reads data, cannot be
/// evaluated, or the budget runs out.
bool enumerate_group(const TaskGraph &g, size_t gi, const Env &dims, Tasks &t) {
  const TaskGroup &grp = g.groups[gi];
  if (grp.decl && grp.decl->data_var >= 0)
    return false;
  std::vector<size_t> ids;
  Env env = dims;
  std::vector<int64_t> index(grp.vars.size());
  bool ok = true;
  auto walk = [&](auto &&self, size_t v) -> void {
    if (!ok)
      return;
    if (v == grp.vars.size()) {
      if (t.all.size() >= kMaxTasks) {
        ok = false;
        return;
      }
      t.all.push_back({int(gi), index});
      ids.push_back(t.all.size() - 1);
      return;
    }
    std::optional<int64_t> lo = eval(grp.lo[v], env), hi = eval(grp.hi[v], env);
    if (!lo || !hi) {
      ok = false;
      return;
    }
    for (int64_t x = *lo; x < *hi && ok; ++x) {
      env[grp.vars[v]] = x;
      index[v] = x;
      self(self, v + 1);
    }
  };
  walk(walk, 0);
  t.of_group[gi] = ok ? ids : std::vector<size_t>{};
  return ok;
}

/// The event elements an edge names for one task: every combination of its
/// components (`*`: the whole dimension), flattened; nullopt when an index
/// cannot be evaluated. Elements out of the event's range are dropped (the
/// runtime reports those).
std::optional<std::vector<int64_t>> edge_elements(const Edge &e, const std::vector<int64_t> &shape,
                                                  const Env &env) {
  std::vector<int64_t> flat = {0};
  for (size_t d = 0; d < e.indices.size() && d < shape.size(); ++d) {
    std::vector<int64_t> values;
    if (e.indices[d].star) {
      for (int64_t x = 0; x < shape[d]; ++x)
        values.push_back(x);
    } else {
      if (e.indices[d].reads_data)
        return std::nullopt;
      std::optional<int64_t> x = eval(e.indices[d].value, env);
      if (!x)
        return std::nullopt;
      if (*x >= 0 && *x < shape[d])
        values.push_back(*x);
    }
    std::vector<int64_t> next;
    for (int64_t f : flat)
      for (int64_t x : values)
        next.push_back(f * shape[d] + x);
    flat = std::move(next);
  }
  return flat;
}

/// Every task in the order the static queues deal them: groups in
/// topological order, a layered block's tasks layer by layer (by their
/// first index, then the block's group order; schedule.h), which is a
/// topological order of the tasks.
std::vector<size_t> deal_order(const TaskGraph &g, const Tasks &t) {
  std::vector<size_t> out;
  for (size_t i = 0; i < g.topo_order.size();) {
    int gi = g.topo_order[i], b = g.layer_block.empty() ? -1 : g.layer_block[size_t(gi)];
    if (b < 0) {
      out.insert(out.end(), t.of_group[size_t(gi)].begin(), t.of_group[size_t(gi)].end());
      ++i;
      continue;
    }
    size_t first = out.size();
    for (int bg : g.blocks[size_t(b)])
      out.insert(out.end(), t.of_group[size_t(bg)].begin(), t.of_group[size_t(bg)].end());
    std::stable_sort(out.begin() + long(first), out.end(),
                     [&](size_t x, size_t y) { return t.all[x].index[0] < t.all[y].index[0]; });
    i += g.blocks[size_t(b)].size();
  }
  return out;
}

/// The ancestors of every task: its waits' producers and theirs, tasks in
/// deal_order. False when the work budget runs out.
bool order_tasks(const TaskGraph &g, const Env &dims, Tasks &t, uint64_t &work) {
  size_t n = t.all.size(), words = (n + 63) / 64;
  t.before.assign(n, std::vector<uint64_t>(words, 0));
  t.partial.assign(n, false);
  // Per event: its shape, then who notifies each element.
  std::vector<std::optional<std::vector<int64_t>>> shapes(g.events.size());
  std::vector<std::vector<std::vector<size_t>>> notifiers(g.events.size());
  std::vector<bool> event_partial(g.events.size(), false);
  for (size_t ev = 0; ev < g.events.size(); ++ev) {
    std::vector<int64_t> s;
    int64_t count = 1;
    for (const Sym &d : g.events[ev].shape) {
      std::optional<int64_t> x = eval(d, dims);
      if (!x || *x < 0 || (count *= std::max<int64_t>(*x, 1)) > kMaxEventElements) {
        event_partial[ev] = true;
        break;
      }
      s.push_back(*x);
    }
    if (event_partial[ev])
      continue;
    shapes[ev] = s;
    notifiers[ev].resize(size_t(count));
    for (int pe : g.events[ev].producers) {
      const Edge &edge = g.edges[size_t(pe)];
      if (!t.group_known[size_t(edge.group)]) {
        event_partial[ev] = true;
        continue;
      }
      const TaskGroup &grp = g.groups[size_t(edge.group)];
      for (size_t id : t.of_group[size_t(edge.group)]) {
        auto elems = edge_elements(edge, s, t.env(grp, id, dims));
        if (!elems) {
          event_partial[ev] = true;
          continue;
        }
        for (int64_t x : *elems) {
          if (++work > kMaxWork)
            return false;
          notifiers[ev][size_t(x)].push_back(id);
        }
      }
    }
  }
  std::vector<bool> done(n, false);
  for (size_t id : deal_order(g, t)) {
    const TaskGroup &grp = g.groups[size_t(t.all[id].group)];
    Env env = t.env(grp, id, dims);
    for (int we : grp.waits) {
      const Edge &edge = g.edges[size_t(we)];
      size_t ev = size_t(edge.event);
      if (event_partial[ev])
        t.partial[id] = true;
      if (!shapes[ev])
        continue;
      auto elems = edge_elements(edge, *shapes[ev], env);
      if (!elems) {
        t.partial[id] = true;
        continue;
      }
      for (int64_t x : *elems)
        for (size_t p : notifiers[ev][size_t(x)]) {
          if (++work > kMaxWork)
            return false;
          if (!done[p]) { // not dealt yet (an invalid order): not followed
            t.partial[id] = true;
            continue;
          }
          if (t.ordered(p, id))
            continue; // already through another wait
          t.before[id][p / 64] |= uint64_t(1) << (p % 64);
          work += words;
          for (size_t w = 0; w < words; ++w)
            t.before[id][w] |= t.before[p][w];
          t.partial[id] = t.partial[id] || t.partial[p];
        }
    }
    done[id] = true;
  }
  return true;
}

//===-- Elements an access touches ------------------------------------------===//

/// [lo, hi) per tensor dimension.
using Box = std::vector<std::pair<int64_t, int64_t>>;

/// Joins boxes that continue each other along one dimension (a K loop's
/// slices become one box).
void merge_boxes(std::vector<Box> &boxes) {
  if (boxes.empty())
    return;
  size_t rank = boxes[0].size();
  for (size_t d = 0; d < rank; ++d) {
    std::sort(boxes.begin(), boxes.end(), [&](const Box &a, const Box &b) {
      for (size_t e = 0; e < rank; ++e)
        if (e != d && a[e] != b[e])
          return a[e] < b[e];
      return a[d] < b[d];
    });
    std::vector<Box> out;
    for (Box &b : boxes) {
      if (!out.empty()) {
        Box &p = out.back();
        bool same = true;
        for (size_t e = 0; e < rank && same; ++e)
          same = e == d || p[e] == b[e];
        if (same && b[d].first <= p[d].second) {
          p[d].second = std::max(p[d].second, b[d].second);
          continue;
        }
      }
      out.push_back(std::move(b));
    }
    boxes = std::move(out);
  }
}

/// The boxes access `a` touches in one task (its loops enumerated), clipped
/// to the tensor's shape `shape`; nullopt when they cannot be enumerated.
std::optional<std::vector<Box>> touched(const Access &a, const std::vector<int64_t> &shape, Env env,
                                        uint64_t &work) {
  if (a.box.size() != shape.size())
    return std::nullopt;
  for (const AccessBox &b : a.box)
    if (!b.known)
      return std::nullopt;
  // A loop whose variable nothing below it mentions runs once here.
  std::vector<bool> matters(a.loops.size(), false);
  for (size_t l = 0; l < a.loops.size(); ++l) {
    const std::string &v = a.loops[l].var;
    for (const AccessBox &b : a.box)
      matters[l] = matters[l] || b.start.mentions(v) || b.extent.mentions(v);
    for (size_t m = l + 1; m < a.loops.size(); ++m)
      for (const std::optional<Sym> &s : {a.loops[m].lo, a.loops[m].hi, a.loops[m].step})
        matters[l] = matters[l] || (s && s->mentions(v));
  }
  std::vector<Box> out;
  size_t iterations = 0;
  bool ok = true;
  auto walk = [&](auto &&self, size_t l) -> void {
    if (!ok)
      return;
    if (l == a.loops.size()) {
      if (++work > kMaxWork || ++iterations > kMaxIterations) {
        ok = false;
        return;
      }
      Box b;
      for (size_t d = 0; d < shape.size(); ++d) {
        std::optional<int64_t> s = eval(a.box[d].start, env), e = eval(a.box[d].extent, env);
        if (!s || !e) {
          ok = false;
          return;
        }
        int64_t lo = std::max<int64_t>(*s, 0), hi = std::min<int64_t>(*s + *e, shape[d]);
        if (lo >= hi)
          return; // nothing of the tensor (pad or skipped elements)
        b.push_back({lo, hi});
      }
      out.push_back(std::move(b));
      return;
    }
    const AccessLoop &loop = a.loops[l];
    if (!loop.lo || !loop.hi || !loop.step) {
      ok = false;
      return;
    }
    std::optional<int64_t> lo = eval(*loop.lo, env), hi = eval(*loop.hi, env),
                           step = eval(*loop.step, env);
    if (!lo || !hi || !step || *step <= 0) {
      ok = false;
      return;
    }
    for (int64_t x = *lo; x < *hi && ok; x += *step) {
      env[loop.var] = x;
      self(self, l + 1);
      if (!matters[l])
        break;
    }
  };
  walk(walk, 0);
  if (!ok)
    return std::nullopt;
  merge_boxes(out);
  return out;
}

/// The first element box two lists share, if any; counts the comparisons.
std::optional<Box> shared(const std::vector<Box> &x, const std::vector<Box> &y, uint64_t &work) {
  for (const Box &a : x)
    for (const Box &b : y) {
      ++work;
      Box c;
      for (size_t d = 0; d < a.size(); ++d) {
        int64_t lo = std::max(a[d].first, b[d].first), hi = std::min(a[d].second, b[d].second);
        if (lo >= hi)
          break;
        c.push_back({lo, hi});
      }
      if (c.size() == a.size())
        return c;
    }
  return std::nullopt;
}

//===-- Reports -------------------------------------------------------------===//

std::string task_name(const TaskGroup &g, const Tasks::Task &t) {
  std::string s = g.name + "[";
  for (size_t i = 0; i < t.index.size(); ++i)
    s += (i ? ", " : "") + std::to_string(t.index[i]);
  return s + "]";
}

std::string box_text(const std::string &tensor, const Box &b) {
  std::string s = tensor + "[";
  for (size_t d = 0; d < b.size(); ++d) {
    s += d ? ", " : "";
    s += b[d].second == b[d].first + 1
             ? std::to_string(b[d].first)
             : std::to_string(b[d].first) + " .. " + std::to_string(b[d].second);
  }
  return s + "]";
}

std::string signed_offset(const std::string &var, int64_t k) {
  if (k == 0)
    return var;
  return var + (k > 0 ? " + " : " - ") + std::to_string(k > 0 ? k : -k);
}

/// The event elements `waiter` would wait on to be ordered after `first`:
/// one per event `first`'s group notifies, each component written in
/// `waiter`'s variables where it can be (`E[j - 1]`: the variable the
/// waiter's own wait on E uses there, else the one at the same position).
std::vector<std::string> wait_suggestions(const TaskGraph &g, const Tasks &t, const Env &dims,
                                          size_t first, size_t waiter) {
  const TaskGroup &fg = g.groups[size_t(t.all[first].group)];
  const TaskGroup &wg = g.groups[size_t(t.all[waiter].group)];
  Env env = t.env(fg, first, dims);
  std::vector<std::string> out;
  for (int ne : fg.notifies) {
    const Edge &n = g.edges[size_t(ne)];
    const EventTensor &ev = g.events[size_t(n.event)];
    std::string s = ev.name + "[";
    bool ok = true;
    for (size_t d = 0; d < n.indices.size(); ++d) {
      s += d ? ", " : "";
      if (n.indices[d].star) {
        s += "*";
        continue;
      }
      std::optional<int64_t> x = eval(n.indices[d].value, env);
      if (!x) {
        ok = false;
        break;
      }
      // The waiter's variable for this component.
      int var = d < wg.vars.size() ? int(d) : -1;
      for (int we : wg.waits) {
        const Edge &w = g.edges[size_t(we)];
        if (w.event != n.event || d >= w.indices.size() || w.indices[d].star)
          continue;
        for (size_t v = 0; v < wg.vars.size(); ++v)
          if (w.indices[d].value.mentions(wg.vars[v]))
            var = int(v);
      }
      s += var >= 0 ? signed_offset(wg.vars[size_t(var)], *x - t.all[waiter].index[size_t(var)])
                    : std::to_string(*x);
    }
    if (ok)
      out.push_back(s + "]");
  }
  return out;
}

/// "waits for E[1], E[2]" or "waits for no task of 'p'".
std::string waits_text(const TaskGraph &g, const Tasks &t, const Env &dims, size_t id) {
  const TaskGroup &grp = g.groups[size_t(t.all[id].group)];
  Env env = t.env(grp, id, dims);
  std::vector<std::string> names;
  for (int we : grp.waits) {
    const Edge &e = g.edges[size_t(we)];
    std::string s = g.events[size_t(e.event)].name + "[";
    for (size_t d = 0; d < e.indices.size(); ++d) {
      std::optional<int64_t> x = e.indices[d].star ? std::nullopt : eval(e.indices[d].value, env);
      s += (d ? ", " : "") + (e.indices[d].star ? std::string("*") : x ? std::to_string(*x) : "?");
    }
    names.push_back(s + "]");
  }
  if (names.empty())
    return "waits on no event";
  std::string s = "waits only on ";
  for (size_t i = 0; i < names.size(); ++i)
    s += (i ? i + 1 == names.size() ? " and " : ", " : "") + names[i];
  return s;
}

std::string env_text(const KernelDecl &k, const Env &env) {
  std::string s;
  for (size_t i = 0; i < k.dims.size(); ++i)
    s += (i ? ", " : "") + k.dims[i].name + " = " + std::to_string(env.at(k.dims[i].name));
  return s.empty() ? "these extents" : s;
}

/// It may touch fewer elements than its boxes: masked, or inside an `if`.
bool masked(const Access &a) { return has_mask(a) || a.conditional; }

/// One pair of groups and one tensor: `first`'s access `fa` must be ordered
/// before `then`'s access `ta` wherever they touch the same elements.
struct Pair {
  size_t first, then;    ///< groups
  const Access *fa, *ta; ///< the first group's access and the later one's
  bool writer_first;     ///< read-after-write (else write-after-read)
};

} // namespace

bool check_wait_coverage(const TaskGraph &g, Diag &diag) {
  if (!g.kernel || g.topo_order.size() != g.groups.size())
    return true;
  const KernelDecl &k = *g.kernel;
  std::vector<std::vector<Access>> acc;
  for (const TaskGroup &grp : g.groups)
    acc.push_back(grp.decl ? collect_accesses(grp.decl->body) : std::vector<Access>{});
  std::optional<Env> dims = pick_binding(k, acc);
  if (!dims)
    return true;

  size_t ng = g.groups.size();
  std::vector<std::vector<bool>> reach = group_reachability(g);

  // Groups of one layered block reach each other (and themselves): which
  // of two of their tasks comes first is their place in deal_order.
  auto block = [&](size_t gi) { return g.layer_block.empty() ? -1 : g.layer_block[gi]; };
  std::vector<Pair> pairs;
  for (size_t a = 0; a < ng; ++a)
    for (size_t b = 0; b < ng; ++b) {
      if (!reach[a][b] && !(a == b && block(a) >= 0))
        continue;
      for (const Access &x : acc[a])
        for (const Access &y : acc[b])
          if (x.tensor == y.tensor && x.write != y.write)
            pairs.push_back({a, b, &x, &y, x.write});
    }
  if (pairs.empty())
    return true;

  Tasks t;
  t.of_group.resize(ng);
  t.group_known.assign(ng, false);
  for (size_t gi = 0; gi < ng; ++gi)
    t.group_known[gi] = enumerate_group(g, gi, *dims, t);
  if (t.all.size() >= kMaxTasks)
    return true;
  uint64_t work = 0;
  if (!order_tasks(g, *dims, t, work))
    return true;
  std::vector<size_t> place(t.all.size());
  {
    std::vector<size_t> order = deal_order(g, t);
    for (size_t i = 0; i < order.size(); ++i)
      place[order[i]] = i;
  }

  // The boxes of an access in each task, computed once.
  std::map<std::pair<const Access *, size_t>, std::optional<std::vector<Box>>> boxes;
  // Each tensor's shape under the binding (nullopt: it cannot be evaluated).
  std::vector<std::optional<std::vector<int64_t>>> shapes;
  for (const TensorDecl &td : k.tensors) {
    std::vector<int64_t> shape;
    for (const Sym &d : td.shape)
      if (std::optional<int64_t> x = eval(d, *dims))
        shape.push_back(*x);
    shapes.push_back(shape.size() == td.shape.size() ? std::optional(shape) : std::nullopt);
  }
  auto boxes_of = [&](const Access &a, size_t id) -> const std::optional<std::vector<Box>> & {
    auto key = std::make_pair(&a, id);
    auto it = boxes.find(key);
    if (it != boxes.end())
      return it->second;
    const auto &shape = shapes[size_t(a.tensor)];
    const TaskGroup &grp = g.groups[size_t(t.all[id].group)];
    return boxes[key] = shape ? touched(a, *shape, t.env(grp, id, *dims), work) : std::nullopt;
  };

  bool ok = true;
  // Pairs of one tensor between the same two groups, in the same direction,
  // are judged together: one report, every wait that is missing.
  std::map<std::tuple<size_t, size_t, int, bool>, std::vector<const Pair *>> by_key;
  for (const Pair &p : pairs)
    by_key[{p.first, p.then, p.fa->tensor, p.writer_first}].push_back(&p);
  for (const auto &[key, group_pairs] : by_key) {
    auto [gfirst, gthen, tensor_index, writer_first] = key;
    if (!t.group_known[gfirst] || !t.group_known[gthen])
      continue;
    // Inside a layered block: only pairs in deal order, of other layers
    // within one group (a group's own tasks of a layer are not compared, as
    // outside blocks).
    bool layered = block(gfirst) >= 0 && block(gfirst) == block(gthen);
    // The first task pair that touches the same elements unordered, and the
    // waits that would order each such pair.
    const Pair *hit = nullptr;
    std::optional<Box> where;
    size_t wf = 0, wt = 0;
    bool may = false;
    std::vector<std::string> fixes; // in the order the pairs are found
    for (const Pair *p : group_pairs)
      for (size_t then : t.of_group[gthen]) {
        if (t.partial[then])
          continue;
        const auto &tb = boxes_of(*p->ta, then);
        if (!tb)
          continue;
        for (size_t first : t.of_group[gfirst]) {
          if (++work > kMaxWork)
            return ok;
          if (layered && (place[first] >= place[then] ||
                          (gfirst == gthen && t.all[first].index[0] == t.all[then].index[0])))
            continue;
          if (t.ordered(first, then))
            continue;
          const auto &fb = boxes_of(*p->fa, first);
          if (!fb)
            continue;
          std::optional<Box> s = shared(*fb, *tb, work);
          if (work > kMaxWork)
            return ok;
          if (!s)
            continue;
          // An unconditional pair, if there is one, is the one reported.
          bool m = masked(*p->fa) || masked(*p->ta);
          if (!hit || (may && !m)) {
            hit = p;
            where = s;
            wf = first;
            wt = then;
            may = m;
          }
          for (std::string &f : wait_suggestions(g, t, *dims, first, then))
            if (std::find(fixes.begin(), fixes.end(), f) == fixes.end())
              fixes.push_back(std::move(f));
        }
      }
    if (!hit)
      continue;
    const TaskGroup &fg = g.groups[gfirst], &tg = g.groups[gthen];
    const std::string &tensor = k.tensors[size_t(tensor_index)].name;
    DiagId id = writer_first ? (may ? DiagId::WaitMayMissWriter : DiagId::WaitMissesWriter)
                             : (may ? DiagId::WaitMayMissReader : DiagId::WaitMissesReader);
    std::vector<std::string> args = {tg.name, tensor, fg.name};
    if (may) {
      diag.warning(id, hit->ta->node->range, args);
    } else {
      diag.error(id, hit->ta->node->range, args);
      ok = false;
    }
    diag.note(DiagId::NoteWaitWitness, tg.decl->name_range,
              {env_text(k, *dims), task_name(tg, t.all[wt]), writer_first ? "reads" : "overwrites",
               box_text(tensor, *where), task_name(fg, t.all[wf]),
               writer_first ? "writes" : "reads", waits_text(g, t, *dims, wt)});
    std::string fix;
    if (fixes.empty()) {
      fix = "'" + fg.name + "' notifies no event '" + tg.name +
            "' could wait on: give it one per task (`notifies E[...]`) and make '" + tg.name +
            "' wait on the elements its tasks need";
    } else {
      fix = "waiting also on ";
      size_t i = 0;
      for (const std::string &f : fixes)
        fix += (i++ ? ", " : "") + ("`" + f + "`");
      fix += " (clamped to the event's range at the edges) would order every such pair";
    }
    SourceRange at = tg.decl->waits.empty() ? tg.decl->name_range : tg.decl->waits[0].range;
    diag.note(DiagId::NoteWaitFix, at, {fix});
  }
  return ok;
}

} // namespace etl
