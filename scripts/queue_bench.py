#!/usr/bin/env python3
"""The task switch against task count: queue operations and dependent round
trips per task, from the sim profile (docs/PROFILE.md: "Task switch"), with
the timing model's cost of them beside (compiler/cost/gpus.def's ETL_GPU_TIMING constants).

    scripts/queue_bench.py [--build build]

Rows: a synthetic dynamic program (tests/unit/runtime/programs/
queue_counts.etl: NB static producers, NB dynamic consumers, a static task
whose wait runs them) at several NB, decode_layer (one layer, tiny dims) and
qwen3_decode (the whole step, tiny dims, 2 layers, 1 step) at batch 1, 4
and 16, each on 4 sim workers. Counts are the launch's totals (a run with
more CTAs than work shows more empty looks and retries: CTAs that found
nothing; with several workers every count but tasks, pushes, claims and
notifies depends on timing). qwen3_decode's check runs with
--min-margin 0: only its profile is read here. Model columns: the ticket pop (one atomic) and the head/tail/CAS
pop the GPU rows were measured on (two L2 reads and an atomic, plus the
fitted serialisation); switch = round trips per task x the atomic's
latency, each round trip one the task switch waits for. Asserts nothing.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import def_facts  # noqa: E402

COLS = ["tasks", "queue_pops", "queue_pushes", "queue_push_claims", "queue_empty_looks",
        "queue_retries", "event_notifies", "waits_spun", "round_trips"]


def totals(profile):
    with open(profile) as f:
        doc = json.load(f)
    t = dict.fromkeys(COLS, 0)
    for g in doc["groups"]:
        for k in COLS:
            t[k] += g["sync"].get(k, 0)
    return t


def run_synthetic(build, nb, tmp):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import numpy as np
    import etl
    art = os.path.join(tmp, "queue_counts.etlb")
    if not os.path.exists(art):
        subprocess.run([os.path.join(build, "compiler", "etlc"), "compile",
                        os.path.join(ROOT, "tests/unit/runtime/programs/queue_counts.etl"),
                        "--target", "sim", "-o", art], check=True)
    prog = etl.load(art, device="sim")
    x = np.arange(nb * 16, dtype=np.float32) % 7
    y, z, o = np.zeros_like(x), np.zeros_like(x), np.zeros(16, np.float32)
    prof = os.path.join(tmp, "syn.json")
    prog.run(x=x, y=y, z=z, o=o, NB=nb, profile=prof)
    return totals(prof)


def run_check(script, artifact, args, tmp):
    prof = os.path.join(tmp, "check.json")
    subprocess.run(["/usr/bin/python3", script, artifact, "--profile", prof] + args, check=True,
                   stdout=subprocess.DEVNULL)
    return totals(prof)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    os.environ.setdefault("ETL_SIM_WORKERS", "4")
    t = def_facts.timing("h200")
    ticket_us = t["atomic_ns"] * 1e-3
    cas_us = (2 * t["l2_ns"] + t["atomic_ns"]) * 1e-3 + t["cas_pop_us"]
    print("%-14s %-10s %6s %6s %6s %6s %6s %6s %6s %6s %7s %8s | %8s %8s %9s" % (
        "program", "size", "tasks", "pops", "pushes", "claims", "empty", "retry", "notify",
        "spun", "trips", "trips/tk", "ticket", "cas", "switch"))
    print("%-14s %-10s %62s %8s | %8s %8s %9s" % ("", "", "", "", "us/pop", "us/pop", "us/task"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for nb in (4, 16, 64):
            rows.append(("synthetic", "NB=%d" % nb, lambda nb=nb: run_synthetic(a.build, nb, tmp)))
        dl = os.path.join(a.build, "examples", "decode_layer.etlb")
        qd = os.path.join(a.build, "examples", "qwen3_decode.etlb")
        for b in (1, 4, 16):
            lens = ",".join(str(17 + 23 * i % 61) for i in range(b))
            rows.append(("decode_layer", "B=%d" % b, lambda lens=lens, b=b: run_check(
                os.path.join(ROOT, "examples/decode_layer/decode_layer_check.py"), dl,
                ["--dims", "tiny", "--case", "%d:%s" % (b, lens)], tmp)))
            rows.append(("qwen3_decode", "B=%d" % b, lambda lens=lens: run_check(
                os.path.join(ROOT, "examples/qwen3_decode/qwen3_decode_check.py"), qd,
                ["--steps", "1", "--kv", lens, "--min-margin", "0"], tmp)))
        for name, size, fn in rows:
            try:
                t = fn()
            except Exception as e:  # no torch, no artifact: say so, go on
                print("%-14s %-10s skipped: %s" % (name, size, str(e).splitlines()[0][:80]))
                continue
            per = t["round_trips"] / max(1, t["tasks"])
            print("%-14s %-10s %6d %6d %6d %6d %6d %6d %6d %6d %7d %8.2f | %8.2f %8.2f %9.2f" % (
                name, size, t["tasks"], t["queue_pops"], t["queue_pushes"],
                t["queue_push_claims"], t["queue_empty_looks"], t["queue_retries"],
                t["event_notifies"], t["waits_spun"], t["round_trips"], per, ticket_us, cas_us,
                per * ticket_us))
    return 0


if __name__ == "__main__":
    sys.exit(main())
