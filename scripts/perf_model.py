#!/usr/bin/env python3
"""perf_model.py: a latency-aware timing model of an ETL megakernel on a GPU.

    python3 scripts/perf_model.py rows [--gpu h200] [--etlc ETLC]   the measured rows: model vs GPU
    python3 scripts/perf_model.py predict ROW_ID [--gpu h200] [-v]  one row, per group with -v
    import perf_model; perf_model.predict_row("gemm_bf16_4096")     (seconds, details)

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
     tasks in linear order), each CTA running its queue in order and waiting
     for a task's events (notify -> wake latency on each edge); dynamic
     items (and the expanders of ranges that read data) go to a device
     queue when their waits are done and are popped by CTAs that are idle or
     waiting, at the queue's cost (`cas`: one pop at a time chip-wide, as
     the code the H200 rows were measured on; `ticket`: one atomic).

The per-group inputs (PTX counts per K step, steps, bytes, ring depth) are
in perf_model_rows.py, with the commit and etlc they were read from. No GPU,
no sim run and no third-party package is needed.
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
        """One task of a group whose body is `body` (perf_model_rows), at the
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
        fixed = self.l2 + self.issue_s(body.get("sass_fixed", 0), warps)
        fixed += body.get("trips_task", 0) * self.l2 + self.dram
        fixed += body.get("waits", 0) * self.l2
        fixed += body.get("notifies", 0) * (self.fence + self.atomic)
        out = body.get("out_bytes", 0)
        out = ev(out, env) if isinstance(out, str) else out
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


def build_tasks(graph, model, bodies):
    """The replay's task list for a Graph, each task's duration from its
    group's body (bodies[group name])."""
    tasks = []
    for g in graph.ordered:
        body = bodies.get(g.name)
        if body is None:
            raise KeyError("perf_model: no body for group '%s' (perf_model_rows)" % g.name)
        tv = graph.tasks[g.name]
        active = min(model.sms, len(tv))
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
            continue
        for v in tv:
            tasks.append(_task(graph, g, v, model, body, active, dynamic=g.dynamic, waits=True))
    return tasks


def _task(graph, g, v, model, body, active, dynamic, waits):
    env = dict(graph.env)
    env.update(v)
    dur, _ = model.task_s(dict(body, waits=len(g.waits) if waits else 0,
                               notifies=len(g.notifies)), env, active)
    t = {"name": g.name, "dur": dur, "dynamic": dynamic, "waits": [], "notifies": []}
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
        d = per.setdefault(t["name"], {"tasks": 0, "first": s[0], "last": s[1], "dur": t["dur"]})
        d["tasks"] += 1
        d["first"], d["last"] = min(d["first"], s[0]), max(d["last"], s[1])
    return span + model.launch, per


def predict_row(row_id, gpu="h200", etlc=None, text=None, queue=None):
    import perf_model_rows as R
    row = R.ROWS[row_id]
    model = Model(gpu, dict(R.FIT, ptxas_keep=R.SASS_RATIO[row["bodies"]]),
                  queue=queue or row.get("queue", "cas"))
    src = os.path.join(ROOT, row["src"])
    return predict(src, row["binding"], R.BODIES[row["bodies"]], model, etlc,
                   row.get("defines", ()), text)


def sass_ratio(src, etlc=None, defines=(), ptxas=None):
    """Static SASS over expanded PTX for one program's sm_90 kernel: the
    cubin's instructions (ptxas; no disassembler needed: sm_90 encodes every
    instruction in 16 bytes, so a .text section's size / 16 counts them;
    `readelf -S` gives the sizes) over its PTX instructions weighted by
    EXPAND (classes of scripts/kloop_stats.py). Returns (ratio, ptx, sass)."""
    import collections
    import shutil
    import tempfile
    try:
        import kloop_stats
    except ImportError:
        raise RuntimeError("perf_model: sass needs scripts/kloop_stats.py (its PTX classes)")
    ptxas = ptxas or shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    with tempfile.TemporaryDirectory() as tmp:
        ptx_path, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        cmd = [etlc_path(etlc), "compile", src, "--emit=ptx", "--target", "sm_90", "-o", ptx_path]
        for d in defines:
            cmd += ["-D", d]
        subprocess.run(cmd, check=True)
        subprocess.run([ptxas, "-arch=sm_90", ptx_path, "-o", cubin], check=True)
        sections = subprocess.run(["readelf", "-SW", cubin], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, check=True).stdout
        with open(ptx_path) as f:
            ptx = f.read()
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


def model_ms(program, binding, gpu="h200", etlc=None, queue="cas"):
    """The model's milliseconds for one run of a gpu_bench program
    (perf_model_rows.PROGRAMS) at `binding` (dims; `kv_len` a value every
    element takes). Raises on a program or group the rows do not describe."""
    import perf_model_rows as R
    src, bodies = R.PROGRAMS[program]
    binding = dict(binding)
    if "kv_len" in binding:
        binding["_tensors"] = ("kv_len",)
    model = Model(gpu, dict(R.FIT, ptxas_keep=R.SASS_RATIO[bodies]), queue)
    s, _ = predict(os.path.join(ROOT, src), binding, R.BODIES[bodies], model, etlc)
    return s * 1e3


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cmd", choices=["rows", "predict", "sass"],
                    help="rows: every measured row; predict ROW: one; sass: each program's "
                    "static SASS / expanded PTX (needs ptxas and scripts/kloop_stats.py)")
    ap.add_argument("row", nargs="?")
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--etlc")
    ap.add_argument("--queue", choices=["cas", "ticket"],
                    help="the dynamic queue to model (default: the row's, cas: what the rows ran)")
    ap.add_argument("-v", action="store_true", help="per group: tasks, one task's time, span")
    a = ap.parse_args(argv)
    import perf_model_rows as R
    if a.cmd == "sass":
        print("%-20s %9s %9s %7s %7s" % ("program", "PTX", "SASS", "ratio", "rows"))
        seen = set()
        for row in R.ROWS.values():
            if row["bodies"] in seen:
                continue
            seen.add(row["bodies"])
            ratio, ptx, sass = sass_ratio(os.path.join(ROOT, row["src"]), a.etlc,
                                          row.get("defines", ()))
            print("%-20s %9d %9d %7.2f %7.2f" % (row["bodies"], ptx, sass, ratio,
                                                R.SASS_RATIO.get(row["bodies"], math.nan)))
        return 0
    ids = [a.row] if a.cmd == "predict" else list(R.ROWS)
    if a.cmd == "predict" and a.row not in R.ROWS:
        print("perf_model: no row '%s'; rows: %s" % (a.row, ", ".join(R.ROWS)), file=sys.stderr)
        return 2
    print("%-22s %-44s %6s %10s %10s %8s" % ("row", "what", "role", "model ms", "GPU ms", "error"))
    for rid in ids:
        row = R.ROWS[rid]
        s, per = predict_row(rid, a.gpu, a.etlc, queue=a.queue)
        meas, role = row.get("measured_ms"), row.get("role", "-")
        if a.queue and a.queue != row.get("queue", "cas"):
            meas, role = None, "pred"  # measured on another queue: a prediction for today's code
        err = "%+.0f%%" % (100 * (s * 1e3 / meas - 1)) if meas else "-"
        print("%-22s %-44s %6s %10.3f %10s %8s" % (rid, row["what"], role, s * 1e3,
                                                 "%.3f" % meas if meas else "-", err))
        if a.v:
            for name, d in per.items():
                print("    %-14s %6d tasks  %9.2f us each  %9.2f .. %9.2f us" %
                      (name, d["tasks"], d["dur"] * 1e6, d["first"] * 1e6, d["last"] * 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
