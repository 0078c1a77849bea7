#!/usr/bin/env python3
"""perf_model.py: a latency-aware timing model of an ETL megakernel on a GPU.

    python3 scripts/perf_model.py rows [--gpu h200] [--etlc ETLC]   the measured rows (model vs GPU), then
                                                                     the whole decode steps
    python3 scripts/perf_model.py steps                             the whole decode steps only
    python3 scripts/perf_model.py predict ROW_ID [--gpu h200] [-v]  one row, per group with -v
    import perf_model; perf_model.predict_row("gemm_bf16_4096")     (seconds, per group, info)

Where bench.sh's sim-profile model takes max(bytes / BW, FLOPs / peak,
wavefronts / clock), this one sees what the GPU spends time on
(docs/PERF_MODEL.md says how, with every constant):

  1. The task graph at the real binding, without running a body: the tasks
     of every group (`etlc --emit=taskgraph`: domains, ranges that read
     tensors evaluated on the row's values) and, per event element, the
     tasks that notify it and those that wait on it (the index maps
     evaluated per task, `*` covering its dimension).
  2. Per task, a duration: a fixed part (its fetch, wait, notify and fence
     round trips, its prologue and epilogue) plus K-loop steps, each the
     slowest of issue (SASS per warp per step, from the PTX counts per
     instruction class times stated expansions, over the schedulers at the
     issue efficiency the warps per scheduler allow, plus the step's
     dependent L2 round trips), the tensor pipe, the SM's share of HBM
     bandwidth, and the ring's latency bound (DRAM latency / stages ahead).
  3. A replay over the GPU's SMs (one persistent CTA each): static tasks
     dealt round-robin in the runtime's order (groups in topological order,
     tasks in linear order; a layered block layer by layer), each CTA
     running its queue in order and waiting
     for a task's events (notify -> wake latency on each edge); dynamic
     items (and the expanders of ranges that read data) go to a device
     queue when their waits are done and are popped by CTAs that are idle or
     waiting, at the queue's cost (`cas`: one pop at a time chip-wide, as
     the code the H200 rows were measured on; `ticket`: one atomic).

The per-group inputs (PTX counts per K step, steps, bytes, ring depth, the
rest of each task) are read from the code the given etlc compiles
(perf_model_code.py); perf_model_rows.py holds only the rows and the fitted
constants. No GPU, no sim run and no third-party package is needed (ptxas
and readelf for the SASS ratio, else it is 1).
"""
import argparse
import heapq
import math
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import def_facts  # noqa: E402

# ---------------------------------------------------------------------------
# 1. The task graph at a binding, from etlc --emit=taskgraph.


class Group:
    def __init__(self, name):
        self.name = name
        self.vars = []      # [(var, lo expr, hi expr)]
        self.waits = []     # [(event, [index exprs])]
        self.notifies = []  # [(event, [index exprs])]
        self.dynamic = False
        self.data_range = False  # a range reads tensor data: expanders per prefix
        self.layer_block = None  # a layered block's number: dealt layer by layer


def parse_taskgraph(text):
    """(events {name: [extent exprs]}, groups [Group], order [names])."""
    events, groups, order, cur = {}, [], [], None
    for line in text.splitlines():
        m = re.match(r"^event (\w+)\[(.*)\]\s*$", line)
        if m:
            events[m.group(1)] = split_top(m.group(2))
            cur = None
            continue
        m = re.match(r"^group (\w+)\[(.*)\]\s*$", line)
        if m:
            cur = Group(m.group(1))
            for v in split_top(m.group(2)):
                vm = re.match(r"^(\w+) in (.*?) \.\. (.*)$", v.strip())
                if not vm:
                    raise ValueError("perf_model: cannot read the domain variable '%s' of group %s"
                                     % (v, cur.name))
                cur.vars.append((vm.group(1), vm.group(2), vm.group(3)))
            groups.append(cur)
            continue
        m = re.match(r"^order: (.*)$", line)
        if m:
            order = m.group(1).split()
            cur = None
            continue
        if cur is None:
            continue
        m = re.match(r"^  (waits|notifies)\s+(\w+)\[(.*)\]\s*$", line)
        if m:
            (cur.waits if m.group(1) == "waits" else cur.notifies).append(
                (m.group(2), split_top(m.group(3))))
            continue
        m = re.match(r"^  layers:\s+block (\d+), layer (\w+)", line)
        if m:
            cur.layer_block = int(m.group(1))
            continue
        m = re.match(r"^  schedule:\s+(\w+)(.*)$", line)
        if m:
            cur.dynamic = m.group(1) == "dynamic"
            cur.data_range = "reads tensor data" in m.group(2)
    return events, groups, order


def split_top(s):
    """Split on the commas outside brackets and parentheses."""
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


class Const:
    """A tensor bound to one value at every element (`kv_len=1024`)."""

    def __init__(self, v):
        self.v = v

    def __getitem__(self, _):
        return self.v


def cdiv(a, b):
    return -(-a // b)


_compiled = {}


def ev(expr, env):
    """An index or extent expression of --emit=taskgraph at env (integers;
    `/` is integer division there)."""
    code = _compiled.get(expr)
    if code is None:
        code = compile(expr.replace("/", "//"), "<taskgraph>", "eval")
        _compiled[expr] = code
    return eval(code, {"cdiv": cdiv, "min": min, "max": max, "__builtins__": {}}, env)


class Graph:
    """Tasks (group, vars) in the runtime's order, and event elements."""

    def __init__(self, text, binding):
        self.events, self.groups, self.order = parse_taskgraph(text)
        self.env = {k: (Const(v) if k in binding.get("_tensors", ()) else v)
                    for k, v in binding.items() if k != "_tensors"}
        by = {g.name: g for g in self.groups}
        self.ordered = [by[n] for n in self.order] if self.order else self.groups
        self.tasks = {}  # group name -> [vars dict]
        for g in self.ordered:
            self.tasks[g.name] = list(self._domain(g))

    def _domain(self, g):
        def rec(i, env):
            if i == len(g.vars):
                yield {v: env[v] for v, _, _ in g.vars}
                return
            v, lo, hi = g.vars[i]
            for x in range(ev(lo, env), ev(hi, env)):
                env2 = dict(env)
                env2[v] = x
                yield from rec(i + 1, env2)
        return rec(0, dict(self.env))

    def elements(self, event, idx, tvars):
        """The event elements an edge of a task names (`*` spans the dim)."""
        env = dict(self.env)
        env.update(tvars)
        ext = [ev(e, self.env) for e in self.events[event]]
        axes = [range(ext[k]) if x.strip() == "*" else [ev(x, env)] for k, x in enumerate(idx)]
        out = [()]
        for a in axes:
            out = [o + (v,) for o in out for v in a]
        return [(event,) + o for o in out]


# ---------------------------------------------------------------------------
# 2. One task's duration.

# SASS per PTX instruction, by the classes of scripts/kloop_stats.py (PTX
# per K step, per warp). A 64-bit add/shift/compare is two 32-bit SASS
# (IADD3 + IADD3.X, ...), mul.wide one IMAD.WIDE, a 64-bit mul three:
# 2 on average. Everything else maps one to one (ld/st/cp.async -> LDG/STG/
# LDGSTS, mma.m16n8k16 -> one HMMA.16816, ldmatrix -> LDSM, setp -> ISETP).
# ptxas then removes what it can share (CSE, hoisting): Model.ptxas_keep,
# each program's static SASS / expanded PTX read from its cubin
# (sass_ratio; perf_model_rows.SASS_RATIO).
EXPAND = {"args": 1.0, "gmem": 1.0, "bar": 1.0, "mma": 1.0, "i64": 2.0, "pred": 1.0,
          "smem": 1.0, "other": 1.0}


class Model:
    """The GPU's constants (gpus.def: ETL_GPU and ETL_GPU_TIMING rows) and
    the fitted ones (perf_model_rows.FIT)."""

    def __init__(self, gpu="h200", fit=None, queue="cas", consts=None):
        g, t = def_facts.gpu(gpu), def_facts.timing(gpu)
        self.gpu = gpu
        self.sms = g["sms"]
        self.clock = g["boost_mhz"] * 1e6
        self.bw = g["hbm_gb_per_s"] * 1e9
        self.tc = {"bf16": g["tc16_tflops"] * 1e12, "tf32": g["tf32_tflops"] * 1e12}
        self.l2 = t["l2_ns"] * 1e-9
        self.dram = t["dram_ns"] * 1e-9
        self.atomic = t["atomic_ns"] * 1e-9
        self.fence = t["fence_ns"] * 1e-9
        self.wake = t["wake_ns"] * 1e-9
        self.sched = t["sched_per_sm"]
        self.ipc = t["issue_per_clk"]
        self.eff2w = t["issue_eff_2w"]
        self.mma_eff = t["mma_sync_eff"]
        self.sm_bw = t["sm_max_gb_per_s"] * 1e9
        fit = fit or {}
        self.ptxas_keep = fit.get("ptxas_keep", 1.0)
        self.launch = fit.get("launch_s", 0.0)
        self.pop_serial = fit.get("cas_pop_s", 0.0)
        self.queue = queue
        for k, v in (consts or {}).items():  # tests: stated constants instead of a GPU's
            if not hasattr(self, k):
                raise KeyError("perf_model: no model constant '%s'" % k)
            setattr(self, k, v)

    def issue_s(self, sass_per_warp, warps):
        """Seconds to issue sass_per_warp on each of `warps` warps of one CTA:
        warps share the SM's schedulers; with w warps per scheduler a
        dependent stream uses eff2w * w / 2 of the slots (latency hidden in
        proportion to the warps), at most all."""
        w = warps / self.sched
        eff = min(1.0, self.eff2w * w / 2.0)
        return sass_per_warp * w / (self.ipc * eff) / self.clock

    def sass(self, counts):
        """SASS per warp of a ptx_step (class counts, `edge` the part an
        interior step skips: the counts scaled by the interior share)."""
        total = sum(n for c, n in counts.items() if c != "edge")
        if not total:
            return 0.0
        sass = sum(n * EXPAND.get(c, 1.0) for c, n in counts.items() if c != "edge")
        return self.ptxas_keep * sass * (1.0 - counts.get("edge", 0) / total)

    def task_s(self, body, env, active):
        """One task of a group whose body is `body` (perf_model_code), at the
        task's env (dims and domain variables); `active`: SMs that stream at
        once (their share of HBM bandwidth). Returns (seconds, parts)."""
        warps = body["threads"] // 32
        steps = ev(body["steps"], env) if isinstance(body["steps"], str) else body["steps"]
        bw = min(self.sm_bw, self.bw / max(1, min(active, self.sms)))
        issue = self.issue_s(self.sass(body["ptx_step"]), warps) + body.get("dep_step", 0) * self.l2
        tc = 0.0
        if body.get("mma_step"):
            per_sm = self.tc[body.get("tc", "bf16")] * self.mma_eff / self.sms
            tc = body["mma_step"] * warps * body.get("flops_per_mma", 4096) / per_sm
        bytes_step = ev(body["bytes_step"], env) if isinstance(body["bytes_step"], str) \
            else body["bytes_step"]
        mem = bytes_step / bw
        ring = body.get("ring", 1)  # 0: nothing streamed per step
        lat = self.dram / (ring - 1) if ring > 1 else self.dram if ring == 1 else 0.0
        step = max(issue, tc, mem, lat)
        # fixed: fetch (one L2 round trip), the prologue/epilogue's
        # instructions, its dependent round trips (control block, edge
        # loads), the ring's first fill, a wait's acquire load, and each
        # notify's fence + atomic; writes at the SM's bandwidth share
        sass_fixed = body["sass_fixed"] if "sass_fixed" in body else self.sass(body.get("ptx_fixed", {}))
        fixed = self.l2 + self.issue_s(sass_fixed, warps)
        fixed += body.get("trips_task", 0) * self.l2 + self.dram
        fixed += body.get("waits", 0) * self.l2
        fixed += body.get("notifies", 0) * (self.fence + self.atomic)
        out = body.get("out_bytes", 0)
        out = (ev(out, env) if isinstance(out, str) else out) + body.get("once_bytes", 0)
        fixed += out / bw
        return fixed + steps * step, {"steps": steps, "step": step, "issue": issue, "tc": tc,
                                       "mem": mem, "lat": lat, "fixed": fixed}


# ---------------------------------------------------------------------------
# 3. The replay over the SMs.

def replay(tasks, n_ctas, pop_s, pop_serial_s, wake_s):
    """List-schedule `tasks` over n_ctas persistent CTAs as the runtime deals
    them. tasks: dicts in the runtime's order with
      dur     seconds the body runs (fetch included),
      waits   [element keys] it waits on,
      notifies[element keys] it notifies,
      dynamic True: a device-queue item (pushed once its waits are done,
              popped by any CTA at pop_s, pop_serial_s apart chip-wide),
      pushes  (dynamic expanders) indices of the items it pushes when it runs;
              those items have no waits of their own.
    Static tasks are dealt round-robin in list order; a CTA runs its own in
    order, and while one waits (or once its queue is empty) it pops ready
    dynamic items. An element is done when its last notifier ends; a waiter
    sees it wake_s later. Returns (makespan seconds, per-task (start, end)).
    Deterministic: ties go to the lower CTA, then to the earlier item."""
    n = len(tasks)
    remaining = {}  # element -> notifiers still to end
    done_at = {}    # element -> time its last notifier ended
    for t in tasks:
        for e in t["notifies"]:
            remaining[e] = remaining.get(e, 0) + 1
    pushed_by = set()
    for t in tasks:
        pushed_by.update(t.get("pushes", ()))
    static = [i for i, t in enumerate(tasks) if not t.get("dynamic")]
    queues = [[] for _ in range(n_ctas)]
    for k, i in enumerate(static):
        queues[k % n_ctas].append(i)
    # dynamic items: pending waits count per item
    dyn_need = {}
    waiters = {}  # element -> [dynamic item] waiting on it
    ready = []    # heap of (time available, order, item)
    for i, t in enumerate(tasks):
        if t.get("dynamic") and i not in pushed_by:
            need = [e for e in t["waits"] if e in remaining]
            dyn_need[i] = len(need)
            for e in need:
                waiters.setdefault(e, []).append(i)
            if not need:
                heapq.heappush(ready, (0.0, i, i))
    dyn_left = sum(1 for t in tasks if t.get("dynamic"))
    span = [None] * n
    head_free = [0.0]
    pos = [0] * n_ctas
    # each CTA has at most one live heap entry: pend[c] its time (inf: asleep
    # until woken), tok[c] its number (older entries are stale)
    pend = [0.0] * n_ctas
    tok = [0] * n_ctas
    clock = [(0.0, c, 0) for c in range(n_ctas)]
    heapq.heapify(clock)
    sleeping = {}  # element -> [cta] waiting for its notifiers
    idle = []      # ctas waiting for a dynamic push

    def at(c, when):
        """CTA c looks again at `when` (or earlier, if it already will)."""
        if when < pend[c]:
            pend[c] = when
            tok[c] += 1
            heapq.heappush(clock, (when, c, tok[c]))

    def sleep(c, elem=None):
        pend[c] = math.inf
        tok[c] += 1
        if elem is not None:
            sleeping.setdefault(elem, []).append(c)
        idle.append(c)
        if ready:
            at(c, ready[0][0])

    def element_ready(e):
        """Time a waiter sees e, or None while some notifier has not run."""
        if remaining.get(e, 0) > 0:
            return None
        return done_at[e] + wake_s if e in done_at else 0.0

    def finish(i, start, end):
        nonlocal dyn_left
        span[i] = (start, end)
        t = tasks[i]
        if t.get("dynamic"):
            dyn_left -= 1
        for e in t["notifies"]:
            remaining[e] -= 1
            done_at[e] = max(done_at.get(e, 0.0), end)
            if remaining[e] == 0:
                for j in waiters.pop(e, ()):
                    dyn_need[j] -= 1
                    if dyn_need[j] == 0:
                        avail = max(element_ready(x) or 0.0 for x in tasks[j]["waits"]) \
                            if tasks[j]["waits"] else 0.0
                        heapq.heappush(ready, (avail, j, j))
                for c in sleeping.pop(e, ()):
                    at(c, done_at[e] + wake_s)
        for j in t.get("pushes", ()):
            heapq.heappush(ready, (end, j, j))
        if ready:
            for c in idle:
                at(c, max(start, ready[0][0]))

    def run_dynamic(c, now):
        """Pop and run one ready item on CTA c at `now`; its end, or None."""
        if not ready or ready[0][0] > now:
            return None
        _, _, j = heapq.heappop(ready)
        begin = max(now, head_free[0]) if pop_serial_s else now
        head_free[0] = begin + pop_serial_s
        start = begin + pop_s
        end = start + tasks[j]["dur"]
        finish(j, start, end)
        return end

    while clock:
        now, c, k = heapq.heappop(clock)
        if k != tok[c]:
            continue
        pend[c] = math.inf
        if c in idle:
            idle.remove(c)
        if pos[c] < len(queues[c]):
            i = queues[c][pos[c]]
            t = tasks[i]
            seen = [element_ready(e) for e in t["waits"] if e in remaining]
            if any(s is None for s in seen) or max(seen, default=0.0) > now:
                end = run_dynamic(c, now)
                if end is not None:
                    at(c, end)
                elif any(s is None for s in seen):
                    e = next(e for e in t["waits"] if e in remaining and element_ready(e) is None)
                    sleep(c, e)
                else:
                    sleep(c)
                    at(c, max(seen))
                continue
            pos[c] += 1
            finish(i, now, now + t["dur"])
            at(c, now + t["dur"])
            continue
        if dyn_left == 0:
            continue
        end = run_dynamic(c, now)
        if end is not None:
            at(c, end)
        else:
            sleep(c)
    if any(s is None for s in span):
        stuck = [tasks[i].get("name", i) for i, s in enumerate(span) if s is None][:5]
        raise RuntimeError("perf_model: the replay left tasks unrun (a wait nothing notifies?): %s"
                           % stuck)
    return max((s[1] for s in span), default=0.0), span


# ---------------------------------------------------------------------------
# A row: program, binding, bodies -> predicted seconds.

def etlc_path(etlc=None):
    return etlc or os.environ.get("ETL_ETLC") or os.path.join(ROOT, "build", "compiler", "etlc")


def taskgraph_text(src, etlc=None, defines=()):
    cmd = [etlc_path(etlc), "compile", src, "--emit=taskgraph"]
    for d in defines:
        cmd += ["-D", d]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        raise RuntimeError("perf_model: %s failed:\n%s" % (" ".join(cmd), p.stderr))
    return p.stdout


def deal_order(graph):
    """[(group, [task vars])] in the order the runtime deals them
    (runtime/src/plan_queue.c): groups in topological order, each group's
    tasks in linear order; a layered block (`layers: block K, layer VAR` in
    the dump: consecutive groups of the order) layer by layer instead: for
    each value of the first domain variable, in increasing order, each group
    of the block in order, its tasks of that layer."""
    out, order, i = [], graph.ordered, 0
    while i < len(order):
        g = order[i]
        if g.layer_block is None:
            out.append((g, graph.tasks[g.name]))
            i += 1
            continue
        j = i
        while j < len(order) and order[j].layer_block == g.layer_block:
            j += 1
        by_layer = []
        for g2 in order[i:j]:
            first, per = g2.vars[0][0], {}
            for v in graph.tasks[g2.name]:
                per.setdefault(v[first], []).append(v)
            by_layer.append((g2, per))
        for layer in sorted({l for _, per in by_layer for l in per}):
            for g2, per in by_layer:
                if layer in per:
                    out.append((g2, per[layer]))
        i = j
    return out


def build_tasks(graph, model, bodies):
    """The replay's task list for a Graph in the runtime's dealing order
    (deal_order), each task's duration from its group's body (bodies[group
    name]; the SMs that stream at once: the tasks dealt together, one layer's
    in a layered block)."""
    _durs.clear()
    tasks = []
    for g, tv in deal_order(graph):
        body = bodies.get(g.name)
        if body is None:
            raise KeyError("perf_model: no body for group '%s'" % g.name)
        active = min(model.sms, len(tv))
        layer = tv[0][g.vars[0][0]] if g.layer_block is not None and tv else None
        first = len(tasks)
        if g.data_range:
            # one expander per prefix (the variables before the data range),
            # waiting on the group's edges, pushing that prefix's tasks
            k = min(i for i, (_, lo, hi) in enumerate(g.vars) if "[" in lo + hi)
            prefix = [v for v, _, _ in g.vars[:k]]
            by_prefix = {}
            for v in tv:
                by_prefix.setdefault(tuple(v[p] for p in prefix), []).append(v)
            for key, items in by_prefix.items():
                pv = dict(zip(prefix, key))
                exp = {"name": g.name + ".expand", "dynamic": True, "notifies": [],
                       "dur": model.l2 + model.atomic, "waits": [], "pushes": []}
                for ev_, idx in g.waits:
                    exp["waits"] += graph.elements(ev_, idx, dict(pv, **{v: 0 for v, _, _ in g.vars[k:]}))
                tasks.append(exp)
                for v in items:
                    tasks.append(_task(graph, g, v, model, body, active, dynamic=True, waits=False))
                    exp["pushes"].append(len(tasks) - 1)
        else:
            for v in tv:
                tasks.append(_task(graph, g, v, model, body, active, dynamic=g.dynamic, waits=True))
        for t in tasks[first:]:
            t["layer"] = layer
    return tasks


_durs = {}


def _task(graph, g, v, model, body, active, dynamic, waits):
    per_task = any(isinstance(x, str) for x in body.values())  # an expression of the task's vars
    key = (id(model), id(body), g.name, active, waits)
    dur, parts = (None, None) if per_task else _durs.get(key, (None, None))
    if dur is None:
        env = dict(graph.env)
        env.update(v)
        dur, parts = model.task_s(dict(body, waits=len(g.waits) if waits else 0,
                                       notifies=len(g.notifies)), env, active)
        if not per_task:
            _durs[key] = (dur, parts)
    t = {"name": g.name, "dur": dur, "parts": parts, "dynamic": dynamic, "waits": [],
         "notifies": []}
    if waits:
        for e, idx in g.waits:
            t["waits"] += graph.elements(e, idx, v)
    for e, idx in g.notifies:
        t["notifies"] += graph.elements(e, idx, v)
    return t


def predict(src, binding, bodies, model, etlc=None, defines=(), text=None):
    """Predicted seconds of one run (launch included) and per-group detail."""
    graph = Graph(text if text is not None else taskgraph_text(src, etlc, defines), binding)
    tasks = build_tasks(graph, model, bodies)
    pop = model.atomic if model.queue == "ticket" else 2 * model.l2 + model.atomic
    serial = model.pop_serial if model.queue == "cas" else 0.0
    span, spans = replay(tasks, model.sms, pop, serial, model.wake)
    per = {}
    for t, s in zip(tasks, spans):
        d = per.setdefault(t["name"], {"tasks": 0, "first": s[0], "last": s[1], "dur": t["dur"],
                                       "parts": t.get("parts"), "layers": {}})
        d["tasks"] += 1
        d["first"], d["last"] = min(d["first"], s[0]), max(d["last"], s[1])
        if t.get("layer") is not None:
            dl = d["layers"].setdefault(t["layer"], {"tasks": 0, "first": s[0], "last": s[1]})
            dl["tasks"] += 1
            dl["first"], dl["last"] = min(dl["first"], s[0]), max(dl["last"], s[1])
    return span + model.launch, per


def predict_code(src, binding, gpu="h200", etlc=None, defines=(), queue="ticket", sass=True):
    """One run of `src` (-D defines) at `binding` on `gpu`, every per-group
    input read from the code (perf_model_code.Program): (seconds, per-group
    detail, info) where info holds the cost's totals (bytes, SOL) and the
    SASS ratio used."""
    import perf_model_code
    import perf_model_rows as R
    etlc = etlc_path(etlc)
    prog = perf_model_code.program(src, etlc, defines, sass)
    bodies = prog.bodies(binding, gpu)
    model = Model(gpu, dict(R.FIT, ptxas_keep=prog.ratio), queue=queue)
    s, per = predict(src, binding, bodies, model, etlc, defines, text=prog.taskgraph)
    _, total = prog.cost(binding, gpu)
    info = {"bytes": total["bytes_read"]["value"] + total["bytes_written"]["value"],
            "sol_s": total["sol"]["seconds"], "ratio": prog.ratio, "ratio_note": prog.ratio_note,
            "bodies": bodies, "hbm": model.bw}
    return s, per, info


def predict_row(row_id, gpu="h200", etlc=None, queue=None, sass=True):
    """A row of perf_model_rows.ROWS or STEP_ROWS from today's code."""
    import perf_model_rows as R
    row = R.ROWS.get(row_id) or R.STEP_ROWS[row_id]
    return predict_code(os.path.join(ROOT, row["src"]), row["binding"], gpu, etlc,
                        row.get("defines", ()), queue or "ticket", sass)


def cubin_ratio(ptx, ptx_path, ptxas):
    """Static SASS over expanded PTX of one sm_90 PTX file: the cubin's
    instructions (ptxas; no disassembler needed: sm_90 encodes every
    instruction in 16 bytes, so a .text section's size / 16 counts them;
    `readelf -S` gives the sizes) over its PTX instructions weighted by
    EXPAND (classes of scripts/kloop_stats.py). Returns (ratio, ptx, sass)."""
    import collections
    import kloop_stats
    cubin = ptx_path + ".cubin"
    subprocess.run([ptxas, "-arch=sm_90", ptx_path, "-o", cubin], check=True)
    sections = subprocess.run(["readelf", "-SW", cubin], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, check=True).stdout
    sass = sum(int(m.group(1), 16) for m in
               re.finditer(r"\.text\.\S+\s+PROGBITS\s+\S+\s+\S+\s+(\S+)", sections)) // 16
    c = collections.Counter()
    for fn in kloop_stats.parse_funcs(ptx):
        regs = kloop_stats.args_registers(fn)
        for _, ins in fn.blocks:
            for i in ins:
                c[kloop_stats.classify(i, regs)] += 1
    expanded = sum(n * EXPAND.get(k, 1.0) for k, n in c.items())
    return sass / expanded, sum(c.values()), sass


def gpu_of(device_name):
    """The gpus.def id of a CUDA device name ("NVIDIA H200" -> "h200"), or None."""
    name = device_name.lower().replace(" ", "")
    for row in def_facts.gpus():
        if row["id"].split("-")[0].replace("-", "") in name:
            return row["id"]
    return None


def model_ms(program, binding, gpu="h200", etlc=None, queue="ticket", sass=True):
    """The model's milliseconds for one run of a gpu_bench program
    (perf_model_rows.PROGRAMS: its source) at `binding` (dims; `kv_len` a
    value every element takes), from today's code."""
    import perf_model_rows as R
    binding = dict(binding)
    if "kv_len" in binding:
        binding["_tensors"] = ("kv_len",)
    s, _, _ = predict_code(os.path.join(ROOT, R.PROGRAMS[program]), binding, gpu, etlc, queue=queue,
                           sass=sass)
    return s * 1e3


def step_metrics(s, info, batch):
    """Whole-step figures of a predicted run of `s` seconds: tokens/s, the
    share of HBM bandwidth its bytes (--emit=cost: each tensor's moved bytes,
    at most its size) take, and the speed of light (--emit=cost's SOL)."""
    return {"tok_s": batch / s, "hbm": info["bytes"] / s / info["hbm"], "sol_ms": info["sol_s"] * 1e3,
            "gb": info["bytes"] / 1e9}


def main(argv):
    import time
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cmd", choices=["rows", "steps", "predict", "sass"],
                    help="rows: every measured row, then the whole decode steps; steps: the whole "
                    "decode steps only; predict ROW: one row; sass: each program's static SASS / "
                    "expanded PTX (needs ptxas)")
    ap.add_argument("row", nargs="?")
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--etlc")
    ap.add_argument("--queue", choices=["cas", "ticket"], default="ticket",
                    help="the dynamic queue to model (default ticket: today's code; cas: the "
                    "head/tail/CAS queue the measured rows ran on)")
    ap.add_argument("--no-sass", action="store_true",
                    help="do not assemble the cubins (SASS ratio 1): fast, less exact")
    ap.add_argument("--only", default="", help="comma-separated row ids")
    ap.add_argument("-v", action="store_true", help="per group: tasks, one task's time, span")
    ap.add_argument("--layer", type=int, default=None,
                    help="with -v, a layered program: the per-group breakdown of this layer "
                    "(default: the middle one)")
    a = ap.parse_args(argv)
    import perf_model_rows as R
    etlc = etlc_path(a.etlc)
    if not os.path.exists(etlc):
        print("perf_model: no etlc at %s (build it, or pass --etlc)" % etlc, file=sys.stderr)
        return 2
    if a.cmd == "sass":
        import perf_model_code
        print("%-20s %7s  %s" % ("program", "ratio", "from"))
        for name, src in R.PROGRAMS.items():
            p = perf_model_code.program(os.path.join(ROOT, src), etlc)
            print("%-20s %7.2f  %s" % (name, p.ratio, p.ratio_note))
        return 0
    only = set(filter(None, a.only.split(",")))
    if a.cmd == "predict":
        if a.row not in R.ROWS and a.row not in R.STEP_ROWS:
            print("perf_model: no row '%s'; rows: %s" % (a.row, ", ".join(list(R.ROWS) + list(R.STEP_ROWS))),
                  file=sys.stderr)
            return 2
        only = {a.row}
    sass = not a.no_sass
    print("model: %s, queue %s, etlc %s%s" % (a.gpu, a.queue, os.path.relpath(etlc, ROOT),
                                           "" if sass else ", no SASS ratio (--no-sass)"))

    def detail(per, info):
        if not a.v:
            return
        print("    SASS ratio %.2f (%s)" % (info["ratio"], info["ratio_note"]))
        for name, d in per.items():
            b = info["bodies"].get(name.split(".")[0], {})
            st = b.get("steps", 0)
            print("    %-14s %7d tasks  %9.2f us each  %9.2f .. %9.2f us  steps %6s  %s" %
                  (name, d["tasks"], d["dur"] * 1e6, d["first"] * 1e6, d["last"] * 1e6,
                   "%.1f" % st if not isinstance(st, str) else "/task", b.get("source", "")))
        layer_detail(per)

    def layer_detail(per):
        """One layer of a layered block: per group, its tasks, one task's time
        (fixed part, steps x step and what bounds the step), and its span
        from the layer's start (the previous layer's last end)."""
        layers = sorted({l for d in per.values() for l in d["layers"]})
        if not layers:
            return
        n = a.layer if a.layer is not None else layers[len(layers) // 2]
        if n not in layers:
            print("    (no layer %d; layers %d .. %d)" % (n, layers[0], layers[-1]))
            return
        end = {l: max(d["layers"][l]["last"] for d in per.values() if l in d["layers"])
               for l in layers}
        t0 = end[n - 1] if n - 1 in end else min(d["layers"][n]["first"] for d in per.values()
                                                 if n in d["layers"])
        print("    layer %d: %.2f us (from layer %d's last end to its own; %d layers: "
              "%.2f .. %.2f us)" % (n, (end[n] - t0) * 1e6, n - 1, len(layers),
                                    min(end.values()) * 1e6, max(end.values()) * 1e6))
        print("      %-14s %6s %9s %8s %6s %8s %-24s %9s %9s" % (
            "group", "tasks", "us each", "fixed", "steps", "step us", "bound (issue/mem/lat/tc)",
            "start", "end"))
        for name, d in per.items():
            dl = d["layers"].get(n)
            if dl is None:
                continue
            pt = d.get("parts") or {}
            bound = ""
            if pt.get("steps"):
                parts = [(pt[k], k) for k in ("issue", "mem", "lat", "tc")]
                bound = "%s %s" % (max(parts)[1], "/".join("%.2f" % (x * 1e6) for x, _ in parts))
            print("      %-14s %6d %9.2f %8.2f %6s %8.3f %-24s %9.2f %9.2f" % (
                name, dl["tasks"], d["dur"] * 1e6, pt.get("fixed", 0) * 1e6,
                "%.0f" % pt["steps"] if pt.get("steps") else "-", pt.get("step", 0) * 1e6, bound,
                (dl["first"] - t0) * 1e6, (dl["last"] - t0) * 1e6))

    ids = [r for r in R.ROWS if (not only or r in only)] if a.cmd in ("rows", "predict") else []
    if ids:
        # the rows ran on the head/tail/CAS queue (30c4d87): beside today's
        # queue (a.queue), the same code's time with that queue
        print("%-20s %-40s %5s %9s %9s %9s %7s %7s %6s" % (
            "row", "what", "role", "model ms", "cas ms", "H200 ms", "error", "e(cas)", "wall s"))
    for rid in ids:
        row = R.ROWS[rid]
        t0 = time.time()
        s, per, info = predict_row(rid, a.gpu, etlc, a.queue, sass)
        s_cas = predict_row(rid, a.gpu, etlc, "cas", sass)[0] if a.queue != "cas" else s
        meas = row.get("measured_ms") if a.gpu == "h200" else None

        def err(x):
            return "%+.0f%%" % (100 * (x * 1e3 / meas - 1)) if meas else "-"
        print("%-20s %-40s %5s %9.3f %9.3f %9s %7s %7s %6.1f" % (
            rid, row["what"], row.get("role", "-"), s * 1e3, s_cas * 1e3,
            "%.3f" % meas if meas else "-", err(s), err(s_cas), time.time() - t0))
        detail(per, info)
    steps = [r for r in R.STEP_ROWS if not only or r in only]
    if steps:
        if ids:
            print()
        print("%-20s %-36s %9s %9s %8s %7s %8s %6s" % ("whole step", "what", "model ms", "tok/s",
                                                      "GB", "% HBM", "SOL ms", "wall s"))
    for rid in steps:
        row = R.STEP_ROWS[rid]
        t0 = time.time()
        s, per, info = predict_row(rid, a.gpu, etlc, a.queue, sass)
        m = step_metrics(s, info, row["binding"]["B"])
        print("%-20s %-36s %9.3f %9.0f %8.2f %6.1f%% %8.3f %6.1f" % (
            rid, row["what"], s * 1e3, m["tok_s"], m["gb"], 100 * m["hbm"], m["sol_ms"],
            time.time() - t0))
        detail(per, info)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
