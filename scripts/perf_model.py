#!/usr/bin/env python3
"""perf_model.py: the latency-aware timing model's rows, through etlc.

    python3 scripts/perf_model.py rows [--gpu h200] [--etlc ETLC]   the measured rows (model vs GPU), then
                                                                     the whole decode steps
    python3 scripts/perf_model.py steps                             the whole decode steps only
    python3 scripts/perf_model.py predict ROW_ID [--gpu h200] [-v]  one row, per group with -v
    python3 scripts/perf_model.py sass                              each program's SASS ratio
    import perf_model; perf_model.predict_row("gemm_bf16_4096")     (seconds, per group, info)

The model itself lives in etlc (compiler/cost/timing.cpp, ptx_loops.cpp):
`etlc compile PROG --emit=time --format=json --bind ... --gpu ...` reads
the task graph at the binding, each group's cost, one K step's PTX by class
from the code it generates, the SASS ratio from ptxas's cubin, the GPU's
latencies and issue rates from compiler/cost/gpus.def, and replays the task
queues and events over the GPU's SMs (docs/PERF_MODEL.md states the rules).
`etlc tune` ranks candidates with the same model. This script only holds the
rows (perf_model_rows.py), runs etlc on each and prints the table beside
the measurements; gpu_bench.py prints the model beside every GPU time
through model_ms.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import def_facts  # noqa: E402


def etlc_path(etlc=None):
    return etlc or os.environ.get("ETL_ETLC") or os.path.join(ROOT, "build", "compiler", "etlc")


def etlc_time(src, binding, gpu="h200", etlc=None, defines=(), queue="ticket", sass=True,
              target="sm_90"):
    """etlc's --emit=time JSON for `src` (-D defines) at `binding` (dims;
    an integer tensor a range reads, as kv_len, bound to one value)."""
    bind = ",".join("%s=%d" % (k, v) for k, v in sorted(binding.items()) if k != "_tensors")
    cmd = [etlc_path(etlc), "compile", src, "--target", target, "--emit=time", "--format=json",
           "--gpu", gpu, "--bind", bind, "--queue", queue,
           "--sass-ratio=%s" % ("true" if sass else "false")]
    for d in defines:
        cmd += ["-D", d]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        raise RuntimeError("perf_model: %s failed:\n%s" % (" ".join(cmd), p.stderr))
    return json.loads(p.stdout)


def predict_code(src, binding, gpu="h200", etlc=None, defines=(), queue="ticket", sass=True):
    """One run of `src` (-D defines) at `binding` on `gpu`, by etlc's model:
    (seconds, per-group detail {name: tasks, first, last, dur}, info) where
    info holds the run's bytes and SOL (--emit=cost's), the SASS ratio's
    note and each group's steps and source."""
    d = etlc_time(src, binding, gpu, etlc, defines, queue, sass)
    per = {g["name"]: {"tasks": g["tasks"], "first": g["first"], "last": g["last"],
                       "dur": g["task_seconds"]} for g in d["groups"]}
    info = {"bytes": d["bytes"], "sol_s": d["sol_seconds"], "ratio_note": d["sass"],
            "bodies": {g["name"]: {"steps": g["steps"], "source": g["source"]} for g in d["groups"]},
            "hbm": def_facts.gpu(gpu)["hbm_gb_per_s"] * 1e9}
    return d["seconds"], per, info


def predict_row(row_id, gpu="h200", etlc=None, queue=None, sass=True):
    """A row of perf_model_rows.ROWS or STEP_ROWS from today's code."""
    import perf_model_rows as R
    row = R.ROWS.get(row_id) or R.STEP_ROWS[row_id]
    return predict_code(os.path.join(ROOT, row["src"]), row["binding"], gpu, etlc,
                        row.get("defines", ()), queue or "ticket", sass)


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
    a = ap.parse_args(argv)
    import perf_model_rows as R
    etlc = etlc_path(a.etlc)
    if not os.path.exists(etlc):
        print("perf_model: no etlc at %s (build it, or pass --etlc)" % etlc, file=sys.stderr)
        return 2
    if a.cmd == "sass":
        print("%-20s  %s" % ("program", "SASS ratio (etlc --emit=time, at its first row)"))
        rows = dict(R.ROWS, **R.STEP_ROWS)
        for name, src in R.PROGRAMS.items():
            rid = next((r for r, row in rows.items() if row["src"] == src), None)
            if rid:
                print("%-20s  %s" % (name, predict_row(rid, a.gpu, etlc)[2]["ratio_note"]))
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
        print("    %s" % info["ratio_note"])
        for name, d in per.items():
            b = info["bodies"].get(name.split(".")[0], {})
            st = b.get("steps", 0)
            print("    %-14s %7d tasks  %9.2f us each  %9.2f .. %9.2f us  steps %6s  %s" %
                  (name, d["tasks"], d["dur"] * 1e6, d["first"] * 1e6, d["last"] * 1e6,
                   "%.1f" % st if not isinstance(st, str) else "/task", b.get("source", "")))

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
