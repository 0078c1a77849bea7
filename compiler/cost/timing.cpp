//===- cost/timing.cpp - The latency-aware timing model of a megakernel ---===//
//
// What this owns: model_time, replay and print_time (see cost/timing.h):
// per group the body a task runs (steps, one step's PTX, ring, bytes, the
// rest of the task; `bodies`), one task's time (`task_seconds`), the tasks
// in the runtime's dealing order with their event elements (`build_tasks`),
// and the list-scheduling replay over one persistent CTA per SM.
// docs/PERF_MODEL.md, sections 2 and 3, state the rules.
//
//===----------------------------------------------------------------------===//
#include "cost/timing.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <queue>
#include <sstream>
#include <tuple>
#include <unordered_map>

namespace etl {

const GpuTiming *find_gpu_timing(const std::string &gpu_id) {
  struct Key {
    const char *key, *id;
  };
  static const Key keys[] = {
#define ETL_GPU(ID, NAME, HBM, FP32, TC16, TF32, SMS, MHZ, SOURCE) {#ID, NAME},
#include "cost/gpus.def"
  };
  static const GpuTiming rows[] = {
#define ETL_GPU_TIMING(ID, L2, DRAM, ATOM, FENCE, WAKE, SCHED, IPC, EFF2W, MMAEFF, SMBW, LAUNCH,   \
                       CASPOP, SOURCE)                                                             \
  {#ID, L2, DRAM, ATOM, FENCE, WAKE, SCHED, IPC, EFF2W, MMAEFF, SMBW, LAUNCH, CASPOP, SOURCE},
#include "cost/gpus.def"
  };
  for (const Key &k : keys)
    if (gpu_id == k.id)
      for (const GpuTiming &t : rows)
        if (std::string(t.id) == k.key)
          return &t;
  return nullptr;
}

namespace {

using Env = std::map<std::string, int64_t>;

// Dependent round trips per task besides fetch, wait and notify: the
// control block and the arguments.
constexpr double kTripsTask = 2;
// SASS per PTX instruction by class: a 64-bit integer op is two 32-bit SASS
// (IADD3 + IADD3.X; mul.wide one IMAD.WIDE, a 64-bit mul three: 2 on
// average), every other class one.
double sass_of(const std::array<double, kPtxClasses> &c, double ratio) {
  double total = 0, sass = 0;
  for (int i = 0; i < kPtxClasses; ++i) {
    total += c[size_t(i)];
    sass += c[size_t(i)] * (PtxClass(i) == PtxClass::I64 ? 2.0 : 1.0);
  }
  return total ? ratio * sass : 0.0;
}

struct Body {
  unsigned threads = 128;
  double steps = 0;
  std::optional<Sym> steps_task; ///< per task: this / flops_step (work that varies by task)
  double flops_step = 0;
  std::array<double, kPtxClasses> ptx_step{}, ptx_fixed{};
  double mma_step = 0, flops_per_mma = 4096, bytes_step = 0, dep_step = 0, once_bytes = 0;
  bool tf32 = false;
  int ring = 0;
  std::string source = "code";
};

struct Model {
  unsigned sms;
  double clock, bw, tc_bf16, tf32, l2, dram, atomic, fence, wake, sched, ipc, eff2w, mma_eff,
      sm_bw, ratio;

  double issue_s(double sass_per_warp, double warps) const {
    double w = warps / sched;
    double eff = std::min(1.0, eff2w * w / 2.0);
    return sass_per_warp * w / (ipc * eff) / clock;
  }

  /// One task: (seconds, one step's seconds).
  std::pair<double, double> task_s(const Body &b, double steps, int waits, int notifies,
                                   int64_t active) const {
    double warps = b.threads / 32;
    double share = bw / double(std::max<int64_t>(1, std::min<int64_t>(active, sms)));
    double bw_sm = std::min(sm_bw, share);
    double issue = issue_s(sass_of(b.ptx_step, ratio), warps) + b.dep_step * l2;
    double tc = 0;
    if (b.mma_step) {
      double per_sm = (b.tf32 ? tf32 : tc_bf16) * mma_eff / sms;
      tc = b.mma_step * warps * b.flops_per_mma / per_sm;
    }
    double mem = b.bytes_step / bw_sm;
    double lat = b.ring > 1 ? dram / (b.ring - 1) : b.ring == 1 ? dram : 0.0;
    double step = std::max({issue, tc, mem, lat});
    double fixed = l2 + issue_s(sass_of(b.ptx_fixed, ratio), warps);
    fixed += kTripsTask * l2 + dram;
    fixed += waits * l2;
    fixed += notifies * (fence + atomic);
    fixed += b.once_bytes / bw_sm;
    return {fixed + steps * step, step};
  }
};

std::optional<double> value(const Sym &s, const Env &env, const Cost &c) {
  return eval_cost(s, env, c.sums);
}

/// The group's K loop: its outermost loop with the most mma.sync FLOPs per
/// step (then the most code), or null.
const PtxLoop *kloop(const std::vector<const PtxLoop *> &loops) {
  const PtxLoop *best = nullptr;
  for (const PtxLoop *r : loops)
    if (r->step.mma && (!best || std::tie(r->step.mma_flops, r->static_count) >
                                     std::tie(best->step.mma_flops, best->static_count)))
      best = r;
  return best;
}

/// Per group the body its tasks run, from its cost and its code.
std::optional<Body> body_of(const Cost &c, const std::vector<const PtxLoop *> &rows,
                            const PtxTally *region, unsigned threads, const Env &env,
                            std::string &error) {
  auto tasks_v = value(c.tasks, env, c), tc_v = value(c.flops_tc, env, c),
       other_v = value(c.flops_other, env, c), rd_v = value(c.bytes_read, env, c),
       wr_v = value(c.bytes_written, env, c);
  if (!tasks_v || !tc_v || !other_v || !rd_v || !wr_v) {
    error = "group " + c.name + ": its cost could not be evaluated at the binding";
    return std::nullopt;
  }
  double tasks = std::max(1.0, *tasks_v);
  double tc = *tc_v / tasks, other = *other_v / tasks, rdwr = *rd_v / tasks + *wr_v / tasks;
  Body b;
  b.threads = threads;
  double warps = threads / 32;
  struct SrcLoop {
    std::optional<double> trips, bytes;
    int depth;
  };
  std::vector<SrcLoop> loops;
  for (const LoopTrips &l : c.loops)
    loops.push_back({value(l.trips, env, c), value(l.bytes, env, c), l.depth});
  const PtxLoop *k = kloop(rows);
  int src_k = -1;
  if (k) {
    const PtxTally &kc = k->step;
    b.flops_step = kc.mma_flops * warps;
    b.steps = b.flops_step ? (kc.tf32 ? other : tc) / b.flops_step : 0;
    double best = 0;
    for (size_t i = 0; i < loops.size(); ++i) {
      if (loops[i].depth != 0 || !loops[i].bytes)
        continue;
      double d = std::fabs(loops[i].trips.value_or(b.steps) - b.steps);
      if (src_k < 0 || d < best)
        src_k = int(i), best = d;
    }
    // ... unless another loop moves more than twice its bytes (a short
    // epilogue loop, as a sum of norm partials, next to a K loop LLVM
    // unrolled); a loop of unknown trips moves its bytes once per step
    auto moved = [&](const SrcLoop &l) { return *l.bytes * l.trips.value_or(b.steps); };
    int most = -1;
    for (size_t i = 0; i < loops.size(); ++i)
      if (loops[i].depth == 0 && loops[i].bytes &&
          (most < 0 || moved(loops[i]) > moved(loops[size_t(most)])))
        most = int(i);
    if (src_k >= 0 && moved(loops[size_t(most)]) > 2 * moved(loops[size_t(src_k)]))
      src_k = most;
    b.bytes_step = src_k >= 0 ? *loops[size_t(src_k)].bytes : kc.gbytes * threads;
    auto sum = c.sums.find(c.flops_tc.str());
    if (sum != c.sums.end() && !kc.tf32 && b.flops_step == std::floor(b.flops_step))
      b.steps_task = sum->second.per_task;
    b.ptx_step = kc.cls;
    b.mma_step = kc.mma;
    b.flops_per_mma = kc.mma_flops / kc.mma;
    b.tf32 = kc.tf32 > 0;
    b.ring = kc.ring_depth();
    b.dep_step = kc.ldg > 0 ? 1 : 0;
  }
  if (region)
    b.ptx_fixed = region->cls;
  // the other loops: a constant bound the PTX shows; else, for a loop that
  // computes, the body's own loops' trips in source order; else once
  std::vector<double> trips;
  for (size_t i = 0; i < loops.size(); ++i)
    if (int(i) != src_k && loops[i].trips && loops[i].depth == 0)
      trips.push_back(*loops[i].trips);
  std::vector<const PtxLoop *> others, compute;
  for (const PtxLoop *r : rows)
    if (r != k) {
      others.push_back(r);
      if (!r->trips && r->step.fp)
        compute.push_back(r);
    }
  double fixed_total = 0;
  for (const PtxLoop *r : others) {
    double t = 1.0;
    if (r->trips) {
      t = *r->trips;
    } else if (auto at = std::find(compute.begin(), compute.end(), r);
               at != compute.end() && !trips.empty()) {
      t = trips.size() == compute.size() ? trips[size_t(at - compute.begin())]
                                         : *std::max_element(trips.begin(), trips.end());
    }
    t = std::max(1.0, t);
    for (int i = 0; i < kPtxClasses; ++i)
      b.ptx_fixed[size_t(i)] += r->step.cls[size_t(i)] * t;
  }
  for (double v : b.ptx_fixed)
    fixed_total += v;
  if (!k && fixed_total < 32) { // no code of its own found: timed from its cost
    b.ptx_fixed = {};
    b.ptx_fixed[size_t(PtxClass::Other)] = other / threads;
    b.source = "cost";
  }
  b.once_bytes = std::max(0.0, rdwr - b.steps * b.bytes_step);
  return b;
}

struct Elements {
  std::vector<std::vector<int64_t>> ext; ///< per event
  std::vector<int64_t> base;             ///< per event: its first key
};

/// The event elements an edge of a task names (`*` spans the dimension).
bool elements(const TaskGraph &g, const Elements &el, const Edge &e, const Env &env,
              std::vector<int64_t> &out) {
  const auto &ext = el.ext[size_t(e.event)];
  std::vector<int64_t> keys = {0};
  for (size_t d = 0; d < e.indices.size(); ++d) {
    std::vector<int64_t> vals;
    if (e.indices[d].star) {
      for (int64_t v = 0; v < ext[d]; ++v)
        vals.push_back(v);
    } else {
      auto v = eval_cost(e.indices[d].value, env, {});
      if (!v)
        return false;
      vals.push_back(int64_t(*v));
    }
    std::vector<int64_t> next;
    for (int64_t k : keys)
      for (int64_t v : vals)
        next.push_back(k * ext[d] + v);
    keys = std::move(next);
  }
  (void)g;
  for (int64_t k : keys)
    out.push_back(el.base[size_t(e.event)] + k);
  return true;
}

} // namespace

std::optional<double> replay(const std::vector<ReplayTask> &tasks, int n_ctas, double pop_s,
                             double pop_serial_s, double wake_s,
                             std::vector<std::pair<double, double>> &span) {
  const double inf = std::numeric_limits<double>::infinity();
  size_t n = tasks.size();
  std::unordered_map<int64_t, int> remaining;
  std::unordered_map<int64_t, double> done_at;
  for (const ReplayTask &t : tasks)
    for (int64_t e : t.notifies)
      ++remaining[e];
  std::vector<bool> pushed(n, false);
  for (const ReplayTask &t : tasks)
    for (int j : t.pushes)
      pushed[size_t(j)] = true;
  std::vector<std::vector<int>> queues(static_cast<size_t>(n_ctas));
  size_t k = 0;
  for (size_t i = 0; i < n; ++i)
    if (!tasks[i].dynamic)
      queues[k++ % size_t(n_ctas)].push_back(int(i));
  using Item = std::tuple<double, int, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready, clock;
  std::unordered_map<int, int> dyn_need;
  std::unordered_map<int64_t, std::vector<int>> waiters, sleeping;
  int64_t dyn_left = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!tasks[i].dynamic)
      continue;
    ++dyn_left;
    if (pushed[i])
      continue;
    int need = 0;
    for (int64_t e : tasks[i].waits)
      if (remaining.count(e)) {
        ++need;
        waiters[e].push_back(int(i));
      }
    dyn_need[int(i)] = need;
    if (!need)
      ready.push({0.0, int(i), int(i)});
  }
  span.assign(n, {-1.0, -1.0});
  double head_free = 0;
  std::vector<size_t> pos(size_t(n_ctas), 0);
  std::vector<double> pend(size_t(n_ctas), 0.0);
  std::vector<int> tok(size_t(n_ctas), 0);
  for (int c = 0; c < n_ctas; ++c)
    clock.push({0.0, c, 0});
  std::vector<int> idle;
  auto at = [&](int c, double when) {
    if (when < pend[size_t(c)]) {
      pend[size_t(c)] = when;
      clock.push({when, c, ++tok[size_t(c)]});
    }
  };
  auto sleep = [&](int c, std::optional<int64_t> elem) {
    pend[size_t(c)] = inf;
    ++tok[size_t(c)];
    if (elem)
      sleeping[*elem].push_back(c);
    idle.push_back(c);
    if (!ready.empty())
      at(c, std::get<0>(ready.top()));
  };
  auto element_ready = [&](int64_t e) -> std::optional<double> {
    auto r = remaining.find(e);
    if (r != remaining.end() && r->second > 0)
      return std::nullopt;
    auto d = done_at.find(e);
    return d != done_at.end() ? d->second + wake_s : 0.0;
  };
  auto finish = [&](int i, double start, double end) {
    span[size_t(i)] = {start, end};
    const ReplayTask &t = tasks[size_t(i)];
    if (t.dynamic)
      --dyn_left;
    for (int64_t e : t.notifies) {
      --remaining[e];
      done_at[e] = std::max(done_at.count(e) ? done_at[e] : 0.0, end);
      if (remaining[e] != 0)
        continue;
      if (auto w = waiters.find(e); w != waiters.end()) {
        std::vector<int> js = std::move(w->second);
        waiters.erase(w);
        for (int j : js)
          if (--dyn_need[j] == 0) {
            double avail = 0.0;
            for (int64_t x : tasks[size_t(j)].waits)
              avail = std::max(avail, element_ready(x).value_or(0.0));
            ready.push({avail, j, j});
          }
      }
      if (auto s = sleeping.find(e); s != sleeping.end()) {
        std::vector<int> cs = std::move(s->second);
        sleeping.erase(s);
        for (int c : cs)
          at(c, done_at[e] + wake_s);
      }
    }
    for (int j : t.pushes)
      ready.push({end, j, j});
    if (!ready.empty())
      for (int c : idle)
        at(c, std::max(start, std::get<0>(ready.top())));
  };
  auto run_dynamic = [&](double now) -> std::optional<double> {
    if (ready.empty() || std::get<0>(ready.top()) > now)
      return std::nullopt;
    int j = std::get<2>(ready.top());
    ready.pop();
    double begin = pop_serial_s ? std::max(now, head_free) : now;
    head_free = begin + pop_serial_s;
    double start = begin + pop_s, end = start + tasks[size_t(j)].dur;
    finish(j, start, end);
    return end;
  };
  while (!clock.empty()) {
    auto [now, c, kk] = clock.top();
    clock.pop();
    if (kk != tok[size_t(c)])
      continue;
    pend[size_t(c)] = inf;
    if (auto it = std::find(idle.begin(), idle.end(), c); it != idle.end())
      idle.erase(it);
    if (pos[size_t(c)] < queues[size_t(c)].size()) {
      int i = queues[size_t(c)][pos[size_t(c)]];
      const ReplayTask &t = tasks[size_t(i)];
      bool unknown = false;
      std::optional<int64_t> first_unknown;
      double latest = 0.0;
      for (int64_t e : t.waits) {
        if (!remaining.count(e))
          continue;
        auto s = element_ready(e);
        if (!s) {
          if (!unknown)
            first_unknown = e;
          unknown = true;
        } else {
          latest = std::max(latest, *s);
        }
      }
      if (unknown || latest > now) {
        if (auto end = run_dynamic(now))
          at(c, *end);
        else if (unknown)
          sleep(c, first_unknown);
        else {
          sleep(c, std::nullopt);
          at(c, latest);
        }
        continue;
      }
      ++pos[size_t(c)];
      finish(i, now, now + t.dur);
      at(c, now + t.dur);
      continue;
    }
    if (dyn_left == 0)
      continue;
    if (auto end = run_dynamic(now))
      at(c, *end);
    else
      sleep(c, std::nullopt);
  }
  double makespan = 0;
  for (const auto &s : span) {
    if (s.first < 0)
      return std::nullopt; // a wait nothing notifies
    makespan = std::max(makespan, s.second);
  }
  return makespan;
}

std::optional<TimeReport> model_time(const KernelCost &kc, const TaskGraph &g,
                                     const PtxAnalysis &ptx, const Env &env, const GpuSpec &gpu,
                                     const TimingOptions &opts, std::string &error) {
  const GpuTiming *t = find_gpu_timing(gpu.id);
  if (!t) {
    error = std::string("no timing constants for GPU '") + gpu.id +
            "' (cost/gpus.def has ETL_GPU_TIMING rows for h100-sxm and h200)";
    return std::nullopt;
  }
  Model m{gpu.sms,
          gpu.boost_mhz * 1e6,
          gpu.hbm_gbps * 1e9,
          gpu.tc16_tflops * 1e12,
          gpu.tf32_tflops * 1e12,
          t->l2_ns * 1e-9,
          t->dram_ns * 1e-9,
          t->atomic_ns * 1e-9,
          t->fence_ns * 1e-9,
          t->wake_ns * 1e-9,
          double(t->sched_per_sm),
          double(t->issue_per_clk),
          t->issue_eff_2w,
          t->mma_sync_eff,
          t->sm_max_gb_per_s * 1e9,
          opts.sass_ratio};
  // per group: its body
  std::vector<Body> bodies;
  for (size_t gi = 0; gi < g.groups.size(); ++gi) {
    const std::string &name = g.groups[gi].name;
    auto c = std::find_if(kc.groups.begin(), kc.groups.end(),
                          [&](const Cost &x) { return x.name == name; });
    if (c == kc.groups.end()) {
      error = "the cost has no group '" + name + "'";
      return std::nullopt;
    }
    std::vector<const PtxLoop *> rows;
    for (const PtxLoop &l : ptx.loops)
      if (l.group == name && l.depth == 0)
        rows.push_back(&l);
    auto r = ptx.regions.find(name);
    auto b = body_of(*c, rows, r == ptx.regions.end() ? nullptr : &r->second, ptx.threads, env,
                     error);
    if (!b)
      return std::nullopt;
    bodies.push_back(std::move(*b));
  }
  // the event elements: each event's extents at the binding
  Elements el;
  int64_t next = 0;
  for (const EventTensor &e : g.events) {
    std::vector<int64_t> ext;
    int64_t n = 1;
    for (const Sym &d : e.shape) {
      auto v = eval_cost(d, env, {});
      if (!v) {
        error = "event " + e.name + ": its shape could not be evaluated at the binding";
        return std::nullopt;
      }
      ext.push_back(int64_t(*v));
      n *= int64_t(*v);
    }
    el.ext.push_back(ext);
    el.base.push_back(next);
    next += n;
  }
  // every task of every group, at the binding
  std::vector<std::vector<Env>> domain(g.groups.size());
  for (size_t gi = 0; gi < g.groups.size(); ++gi) {
    const TaskGroup &grp = g.groups[gi];
    std::function<bool(size_t, Env &)> rec = [&](size_t i, Env &e) {
      if (i == grp.vars.size()) {
        domain[gi].push_back(e);
        return true;
      }
      // a range that reads data runs to min(its data bound, its static one)
      const Expr *dd = grp.decl ? grp.decl->domain[i].data_bound : nullptr;
      Sym hi_sym = dd && dd->sym ? Sym::min(*dd->sym, grp.hi[i]) : grp.hi[i];
      auto lo = eval_cost(grp.lo[i], e, {}), hi = eval_cost(hi_sym, e, {});
      if (!lo || !hi)
        return false;
      for (int64_t x = int64_t(*lo); x < int64_t(*hi); ++x) {
        e[grp.vars[i]] = x;
        if (!rec(i + 1, e))
          return false;
      }
      e.erase(grp.vars[i]);
      return true;
    };
    Env e = env;
    if (!rec(0, e)) {
      error = "group " + grp.name + ": its domain could not be evaluated at the binding (bind "
              "every dim, and an integer tensor a range reads: kv_len=1024)";
      return std::nullopt;
    }
  }
  // the runtime's dealing order: groups in topological order, a layered
  // block layer by layer
  std::vector<std::pair<int, std::vector<const Env *>>> deal;
  std::vector<int> order = g.topo_order;
  if (order.empty())
    for (size_t gi = 0; gi < g.groups.size(); ++gi)
      order.push_back(int(gi));
  auto block_of = [&](int gi) {
    return size_t(gi) < g.layer_block.size() ? g.layer_block[size_t(gi)] : -1;
  };
  for (size_t i = 0; i < order.size();) {
    int gi = order[i];
    if (block_of(gi) < 0) {
      std::vector<const Env *> all;
      for (const Env &e : domain[size_t(gi)])
        all.push_back(&e);
      deal.push_back({gi, all});
      ++i;
      continue;
    }
    size_t j = i;
    while (j < order.size() && block_of(order[j]) == block_of(gi))
      ++j;
    std::map<int64_t, std::vector<std::pair<int, std::vector<const Env *>>>> layers;
    for (size_t x = i; x < j; ++x) {
      const TaskGroup &grp = g.groups[size_t(order[x])];
      std::map<int64_t, std::vector<const Env *>> per;
      for (const Env &e : domain[size_t(order[x])])
        per[e.at(grp.vars[0])].push_back(&e);
      for (auto &[layer, tasks] : per)
        layers[layer].push_back({order[x], tasks});
    }
    for (auto &[layer, groups] : layers)
      for (auto &p : groups)
        deal.push_back(p);
    i = j;
  }
  // the replay's tasks
  std::vector<ReplayTask> tasks;
  std::vector<std::string> names;
  std::map<std::string, double> first_dur;
  auto add = [&](int gi, const Env &e, int64_t active, bool dynamic, bool waits) -> bool {
    const TaskGroup &grp = g.groups[size_t(gi)];
    const Body &b = bodies[size_t(gi)];
    double steps = b.steps;
    if (b.steps_task) {
      auto v = eval_cost(*b.steps_task, e, {});
      if (!v)
        return false;
      steps = std::floor(*v / b.flops_step);
    }
    ReplayTask rt;
    rt.dur = m.task_s(b, steps, waits ? int(grp.waits.size()) : 0, int(grp.notifies.size()), active)
                 .first;
    rt.dynamic = dynamic;
    if (waits)
      for (int ei : grp.waits)
        if (!elements(g, el, g.edges[size_t(ei)], e, rt.waits))
          return false;
    for (int ei : grp.notifies)
      if (!elements(g, el, g.edges[size_t(ei)], e, rt.notifies))
        return false;
    first_dur.emplace(grp.name, rt.dur);
    tasks.push_back(std::move(rt));
    names.push_back(grp.name);
    return true;
  };
  for (auto &[gi, tv] : deal) {
    const TaskGroup &grp = g.groups[size_t(gi)];
    int64_t active = std::min<int64_t>(m.sms, int64_t(tv.size()));
    int data_var = grp.decl ? grp.decl->data_var : -1;
    bool ok = true;
    if (data_var >= 0) {
      // one expander per prefix of the domain (the variables before the
      // range that reads data), waiting on the group's edges, pushing that
      // prefix's tasks
      std::map<std::vector<int64_t>, std::vector<const Env *>> by_prefix;
      std::vector<std::vector<int64_t>> prefixes;
      for (const Env *e : tv) {
        std::vector<int64_t> key;
        for (int v = 0; v < data_var; ++v)
          key.push_back(e->at(grp.vars[size_t(v)]));
        if (!by_prefix.count(key))
          prefixes.push_back(key);
        by_prefix[key].push_back(e);
      }
      for (const auto &key : prefixes) {
        Env pv = env;
        for (size_t v = 0; v < grp.vars.size(); ++v)
          pv[grp.vars[v]] = v < key.size() ? key[v] : 0;
        ReplayTask exp;
        exp.dynamic = true;
        exp.dur = m.l2 + m.atomic;
        for (int ei : grp.waits)
          ok = ok && elements(g, el, g.edges[size_t(ei)], pv, exp.waits);
        size_t at = tasks.size();
        tasks.push_back(std::move(exp));
        names.push_back(grp.name + ".expand");
        for (const Env *e : by_prefix[key]) {
          tasks[at].pushes.push_back(int(tasks.size()));
          ok = ok && add(gi, *e, active, true, false);
        }
      }
    } else {
      for (const Env *e : tv)
        ok = ok && add(gi, *e, active, grp.dynamic, true);
    }
    if (!ok) {
      error = "group " + grp.name + ": an edge or its work could not be evaluated at the binding";
      return std::nullopt;
    }
  }
  std::vector<std::pair<double, double>> spans;
  double pop = opts.cas_queue ? 2 * m.l2 + m.atomic : m.atomic;
  auto span =
      replay(tasks, int(m.sms), pop, opts.cas_queue ? t->cas_pop_us * 1e-6 : 0.0, m.wake, spans);
  if (!span) {
    error = "the replay left tasks unrun (a wait nothing notifies?)";
    return std::nullopt;
  }
  TimeReport r;
  r.launch_s = t->launch_us * 1e-6;
  r.seconds = *span + r.launch_s;
  r.gpu = gpu.id;
  r.queue = opts.cas_queue ? "cas" : "ticket";
  r.sass_note = opts.sass_note;
  if (auto s = speed_of_light(kc.total, env, gpu)) {
    r.bytes = s->bytes;
    r.sol_s = s->sol_s;
  }
  std::map<std::string, size_t> row;
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto [it, fresh] = row.emplace(names[i], r.groups.size());
    if (fresh) {
      GroupTime gt;
      gt.name = names[i];
      gt.task_s = tasks[i].dur;
      gt.first = spans[i].first;
      gt.last = spans[i].second;
      std::string base = names[i].substr(0, names[i].find('.'));
      for (size_t gi = 0; gi < g.groups.size(); ++gi)
        if (g.groups[gi].name == base && base == names[i]) {
          const Body &b = bodies[gi];
          gt.steps = b.steps;
          gt.ring = b.ring;
          for (double v : b.ptx_step)
            gt.ptx_step += v;
          gt.step_s = m.task_s(b, 0, 0, 0, 1).second;
          gt.source = b.source;
        }
      r.groups.push_back(gt);
    }
    GroupTime &gt = r.groups[it->second];
    ++gt.tasks;
    gt.first = std::min(gt.first, spans[i].first);
    gt.last = std::max(gt.last, spans[i].second);
  }
  return r;
}

std::string print_time(const TimeReport &r, const Env &env, bool json) {
  if (json) {
    std::string out;
    llvm::raw_string_ostream os(out);
    llvm::json::OStream j(os, 2);
    j.object([&] {
      j.attribute("seconds", r.seconds);
      j.attribute("launch_seconds", r.launch_s);
      j.attribute("gpu", r.gpu);
      j.attribute("queue", r.queue);
      j.attribute("sass", r.sass_note);
      j.attribute("bytes", r.bytes);
      j.attribute("sol_seconds", r.sol_s);
      j.attributeObject("binding", [&] {
        for (auto &[k, v] : env)
          j.attribute(k, v);
      });
      j.attributeArray("groups", [&] {
        for (const GroupTime &g : r.groups)
          j.object([&] {
            j.attribute("name", g.name);
            j.attribute("tasks", g.tasks);
            j.attribute("task_seconds", g.task_s);
            j.attribute("first", g.first);
            j.attribute("last", g.last);
            j.attribute("steps", g.steps);
            j.attribute("step_seconds", g.step_s);
            j.attribute("ring", int64_t(g.ring));
            j.attribute("ptx_step", g.ptx_step);
            j.attribute("source", g.source);
          });
      });
    });
    os << "\n";
    return os.str();
  }
  std::ostringstream os;
  char line[256];
  os << "modelled time on " << r.gpu << " (docs/PERF_MODEL.md; " << r.queue << " queue; "
     << r.sass_note << "), binding:";
  for (auto &[k, v] : env)
    os << " " << k << "=" << v;
  os << "\n";
  std::snprintf(line, sizeof line, "%-18s %8s %11s %8s %6s %11s %4s %11s %11s %s\n", "group", "tasks",
                "task us", "steps", "PTX", "step us", "ring", "first us", "last us", "from");
  os << line;
  for (const GroupTime &g : r.groups) {
    std::snprintf(line, sizeof line, "%-18s %8lld %11.2f %8.1f %6.0f %11.4f %4d %11.2f %11.2f %s\n",
                  g.name.c_str(), (long long)g.tasks, g.task_s * 1e6, g.steps, g.ptx_step,
                  g.step_s * 1e6, g.ring, g.first * 1e6, g.last * 1e6, g.source.c_str());
    os << line;
  }
  std::snprintf(line, sizeof line,
                "total %.4f ms (launch %.0f us included); speed of light %.4f ms, %.3f GB\n",
                r.seconds * 1e3, r.launch_s * 1e6, r.sol_s * 1e3, r.bytes / 1e9);
  os << line;
  return os.str();
}

} // namespace etl
