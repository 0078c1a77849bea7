"""perf_model_code.py: the timing model's per-group inputs, read from the code.

For one program (source, -D constants, etlc) it compiles once and reads:

  --emit=taskgraph    the groups (and the model's task graph: perf_model.Graph)
  --emit=ptx sm_90    per group, with scripts/kloop_stats.py's analysis: the K
                      loop (the outermost loop with mma.sync) and one interior
                      step's PTX by class, its mma.sync FLOPs, its global bytes
                      per thread, its cp.async ring depth (wait_group N: N + 2
                      stages) and whether it loads global memory outside the
                      ring; the group's other loops (hot path per iteration)
                      and its straight-line code (both arms of each branch);
                      the CTA's threads (.maxntid)
  the cubin           static SASS / expanded PTX (ptxas, readelf): what
                      ptxas shares and hoists (perf_model.sass_ratio)

and per binding (`bodies`) `--emit=cost --format=json`: each group's task
count, tensor-core FLOPs, other FLOPs and bytes. From those, per group:

  steps       K steps per task = tensor-core FLOPs per task (a tf32 K
              loop: other FLOPs, where --emit=cost counts its dot) / the
              step's (mma.sync FLOPs per warp x warps)
  other loops trips known from the PTX (a constant bound), else those of
              the task body's `for` loops (--emit=cost's `loops`), else 1
              (Program.loop_trips)
  once bytes  the task's bytes not streamed by its K loop (at the SM's share)

No per-group number is written by hand. A group whose code kloop_stats
cannot find (a dynamic group reached only through the queue's pop path has
no block its dispatch entry dominates) is timed from its cost: FP32 FLOPs
per task / threads as instructions per thread, and its bytes.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile

import kloop_stats as KS

CLASSES = KS.CLASSES
TRIPS_TASK = 2  # dependent round trips per task besides fetch/wait/notify: control block, arguments


def _run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        raise RuntimeError("perf_model: %s failed:\n%s" % (" ".join(cmd), p.stderr))
    return p.stdout


def _cmd(etlc, src, defines, *rest):
    cmd = [etlc, "compile", src] + list(rest)
    for d in defines:
        cmd += ["-D", d]
    return cmd


def classes(c):
    """The CLASSES part of a kloop_stats tally."""
    return {k: c.get(k, 0) for k in CLASSES if c.get(k, 0)}


class Program:
    """One program compiled once: its task graph text, threads, per-group
    K loop, other loops and straight-line code, and its SASS ratio."""

    def __init__(self, src, etlc, defines=(), sass=True):
        self.src, self.etlc, self.defines = src, etlc, tuple(defines)
        self.taskgraph = _run(_cmd(etlc, src, defines, "--emit=taskgraph"))
        names = [m.group(1) for m in re.finditer(r"^group (\w+)", self.taskgraph, re.M)]
        with tempfile.TemporaryDirectory() as tmp:
            ptx_path = os.path.join(tmp, "k.ptx")
            _run(_cmd(etlc, src, defines, "--emit=ptx", "--target", "sm_90", "-o", ptx_path))
            with open(ptx_path) as f:
                ptx = f.read()
            self.ratio, self.ratio_note = 1.0, "no ptxas: SASS taken as expanded PTX (ratio 1)"
            ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
            if sass and os.path.exists(ptxas) and shutil.which("readelf"):
                import perf_model
                self.ratio, ptx_n, sass_n = perf_model.cubin_ratio(ptx, ptx_path, ptxas)
                self.ratio_note = "SASS / expanded PTX from the cubin: %d / %d" % (sass_n, ptx_n)
            elif not sass:
                self.ratio_note = "ratio 1 (SASS not read: sass=False)"
        m = re.search(r"\.maxntid\s+(\d+)", ptx)
        self.threads = int(m.group(1)) if m else 128
        self.regions = {}
        rows = KS.analyse(ptx, names, all_loops=True, regions=self.regions)
        self.loops = {}
        for r in rows:
            if r["depth"] == 0:
                self.loops.setdefault(r["group"], []).append(r)
        self.names = names

    def kloop(self, g):
        """The group's K loop: its outermost loop with the most mma.sync
        FLOPs per step, or None."""
        cands = [r for r in self.loops.get(g, []) if r["counts"].get("_mma", 0)]
        return max(cands, key=lambda r: (r["counts"]["_mma_flops"], r["static"]), default=None)

    def loop_trips(self, g, k, src_loops):
        """[(row, trips)] for the group's loops other than its K loop `k`:
        a constant bound the PTX shows; else, for a loop that computes
        (floating-point arithmetic; a loop without is a tile copy the
        compiler made, counted once), the trips of the task body's own
        `for` loops (--emit=cost's `loops` at depth 0, the K loop's left
        out), matched in source order when their numbers agree, else each
        the largest of them; 1 without any."""
        trips = [l["trips"]["value"] for l in src_loops if l["depth"] == 0]
        rows = [r for r in self.loops.get(g, []) if r is not k]
        compute = [r for r in rows if not r["trips"] and r["counts"].get("_fp")]
        out = []
        for r in rows:
            if r["trips"]:
                t = r["trips"]
            elif r in compute and trips:
                t = trips[compute.index(r)] if len(trips) == len(compute) else max(trips)
            else:
                t = 1.0
            out.append((r, max(1.0, t)))
        return out

    def cost(self, binding, gpu):
        """--emit=cost --format=json at `binding` (dims; tensors read by a
        range bound to one value, as `kv_len=1024`): {group: json row}."""
        bind = ",".join("%s=%d" % (k, v) for k, v in sorted(binding.items()) if k != "_tensors")
        out = _run(_cmd(self.etlc, self.src, self.defines, "--emit=cost", "--gpu", gpu,
                        "--bind", bind, "--format=json"))
        d = json.loads(out)
        return {g["name"]: g for g in d["groups"]}, d["total"]

    def bodies(self, binding, gpu):
        """Per group, the body perf_model.Model.task_s times (see there)."""
        cost, _ = self.cost(binding, gpu)
        out = {}
        warps = self.threads // 32
        for g in self.names:
            c = cost.get(g)
            if c is None:
                raise KeyError("perf_model: --emit=cost has no group '%s'" % g)
            tasks = max(1, c["tasks"]["value"])
            tc = c["flops_tc"]["value"] / tasks
            other = c["flops_other"]["value"] / tasks
            rd, wr = c["bytes_read"]["value"] / tasks, c["bytes_written"]["value"] / tasks
            body = {"threads": self.threads, "steps": 0, "ptx_step": {}, "bytes_step": 0,
                    "ring": 0, "trips_task": TRIPS_TASK, "source": "code"}
            k = self.kloop(g)
            src_loops = [l for l in c.get("loops", []) if "value" in l["trips"]]
            src_k = None
            if k is not None:
                kc = k["counts"]
                flops_step = kc["_mma_flops"] * warps
                # --emit=cost counts f16/bf16 dots as tensor-core FLOPs and a
                # tf32 dot's as other FLOPs (its few other ops ride along)
                steps = (other if kc.get("_tf32") else tc) / flops_step if flops_step else 0
                # the source loop of the K loop: the body's own loop whose
                # trips are closest to the steps, unless another loop moves
                # more than twice its bytes (a short loop of the epilogue,
                # as a sum of norm partials, next to a K loop that LLVM
                # unrolled); its bytes per trip are the step's (the PTX's
                # copies may sit in inner loops of unknown trips)
                top = [l for l in c.get("loops", []) if l["depth"] == 0 and "value" in l["bytes"]]

                def moved(l):  # a loop of unknown trips (they vary by task): one per step
                    return l["bytes"]["value"] * l["trips"].get("value", steps)
                src_k = min(top, key=lambda l: abs(l["trips"].get("value", steps) - steps),
                            default=None)
                most = max(top, key=moved, default=None)
                if src_k is not None and moved(most) > 2 * moved(src_k):
                    src_k = most
                bytes_step = src_k["bytes"]["value"] if src_k else kc.get("_gbytes", 0) * self.threads
                # work that varies by task (a sum over the domain, as a causal
                # attention's): steps per task from its own expression
                m = re.fullmatch(r"sum\[\w+\]\((.*)\)", c["flops_tc"]["expr"].strip())
                if m and not kc.get("_tf32") and flops_step == int(flops_step):
                    body["steps_task"] = "(%s) / %d" % (m.group(1), flops_step)
                body.update(steps=steps, ptx_step=classes(kc),
                            mma_step=kc["_mma"], flops_per_mma=kc["_mma_flops"] / kc["_mma"],
                            tc="tf32" if kc.get("_tf32") else "bf16", bytes_step=bytes_step,
                            ring=KS.ring_depth(kc), dep_step=1 if kc.get("_ldg") else 0)
            fixed = dict(classes(self.regions.get(g, {})))
            for r, trips in self.loop_trips(g, k, [l for l in src_loops if l is not src_k]):
                for cl, n in classes(r["counts"]).items():
                    fixed[cl] = fixed.get(cl, 0) + n * trips
            if k is None and sum(fixed.values()) < 32:
                # no code of its own found (see the module's docstring)
                fixed = {"other": other / self.threads}
                body["source"] = "cost"
            body["ptx_fixed"] = fixed
            body["once_bytes"] = max(0.0, rd + wr - body["steps"] * body["bytes_step"])
            if "steps_task" in body:
                body["steps"] = body.pop("steps_task")  # (after once_bytes took the mean)
            out[g] = body
        return out


_programs = {}


def program(src, etlc, defines=(), sass=True):
    """Program(...) compiled once per process."""
    key = (src, etlc, tuple(defines), sass)
    if key not in _programs:
        _programs[key] = Program(src, etlc, defines, sass)
    return _programs[key]
