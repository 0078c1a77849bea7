#!/usr/bin/env python3
"""def_facts.py: the compiler's tables of targets and GPUs, for scripts.

    python3 scripts/def_facts.py target sm_90 smem_limit   -> 232448
    python3 scripts/def_facts.py gpu h100-sxm hbm_gb_per_s -> 3350
    python3 scripts/def_facts.py json                      -> both tables
    import def_facts; def_facts.gpu("h100-sxm")["tc16_tflops"]  (from Python)

Reads the X-macro tables the compiler includes, so a script never keeps its
own copy of a number: compiler/target/targets.def (ETL_TARGET rows) and
compiler/cost/gpus.def (ETL_GPU rows, and ETL_GPU_TIMING rows: the
timing model's latencies and issue rates, scripts/perf_model.py;
`python3 scripts/def_facts.py timing h200 l2_ns`). Field names follow the
macros' parameters in lower case; a field that is a product (`227 * 1024`) is
evaluated. tests/unit/driver/facts_test.cpp checks that what this prints
equals what etlc reads from the same files (all_targets, known_gpus).
"""
import json
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TARGET_FIELDS = ["name", "kind", "sm", "ptx", "smem_limit", "regs_per_sm", "regs_per_thread",
                 "wide_tile", "what"]
GPU_FIELDS = ["key", "id", "hbm_gb_per_s", "fp32_tflops", "tc16_tflops", "tf32_tflops", "sms",
              "boost_mhz", "source"]
TIMING_FIELDS = ["key", "l2_ns", "dram_ns", "atomic_ns", "fence_ns", "wake_ns", "sched_per_sm",
                 "issue_per_clk", "issue_eff_2w", "mma_sync_eff", "sm_max_gb_per_s", "launch_us",
                 "cas_pop_us", "source"]


def _args(text):
    """The comma-separated arguments of one macro call: strings, names, numbers, products."""
    out = []
    for tok in re.findall(r'\s*("(?:[^"\\]|\\.)*"|[^,]+)', text):
        tok = tok.strip()
        if tok.startswith('"'):
            out.append(json.loads(tok))
        elif re.fullmatch(r"[0-9.]+(\s*\*\s*[0-9.]+)*", tok):
            value = 1
            for f in tok.split("*"):
                f = f.strip()
                value *= float(f) if "." in f else int(f)
            out.append(value)
        else:
            out.append(tok)
    return out


def _rows(path, macro, fields):
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    rows = []
    # A row is MACRO(...) at the start of a line (the #define lines are not).
    for m in re.finditer(r"^%s\((.*?)\)\s*$" % macro, text, re.M | re.S):
        values = _args(m.group(1))
        if len(values) != len(fields):
            raise SystemExit("def_facts: %s: a %s row with %d fields, expected %d" %
                             (path, macro, len(values), len(fields)))
        rows.append(dict(zip(fields, values)))
    return rows


def targets():
    return _rows("compiler/target/targets.def", "ETL_TARGET", TARGET_FIELDS)


def gpus():
    return _rows("compiler/cost/gpus.def", "ETL_GPU", GPU_FIELDS)


def timings():
    return _rows("compiler/cost/gpus.def", "ETL_GPU_TIMING", TIMING_FIELDS)


def gpu(gpu_id):
    """The gpus.def row of `gpu_id` ("h100-sxm"), as a dict of GPU_FIELDS."""
    for row in gpus():
        if row["id"] == gpu_id:
            return row
    raise KeyError("def_facts: no GPU '%s' in compiler/cost/gpus.def" % gpu_id)


def timing(gpu_id):
    """The ETL_GPU_TIMING row of `gpu_id` (the timing model's latencies and
    issue rates, scripts/perf_model.py), as a dict of TIMING_FIELDS."""
    key = gpu(gpu_id)["key"]
    for row in timings():
        if row["key"] == key:
            return row
    raise KeyError("def_facts: no ETL_GPU_TIMING row for GPU '%s' in compiler/cost/gpus.def" % gpu_id)


def main(argv):
    if argv == ["json"]:
        print(json.dumps({"targets": targets(), "gpus": gpus(), "timings": timings()}, indent=1))
        return 0
    if len(argv) == 3 and argv[0] == "timing":
        try:
            row = timing(argv[1])
        except KeyError as e:
            print(e.args[0], file=sys.stderr)
            return 1
        if argv[2] in row:
            print(row[argv[2]])
            return 0
        print("def_facts: no timing field '%s'" % argv[2], file=sys.stderr)
        return 1
    if len(argv) == 3 and argv[0] in ("target", "gpu"):
        table, key = (targets(), "name") if argv[0] == "target" else (gpus(), "id")
        for row in table:
            if row[key] == argv[1]:
                if argv[2] not in row:
                    break
                print(row[argv[2]])
                return 0
        print("def_facts: no %s '%s' with a field '%s'" % tuple(argv), file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
