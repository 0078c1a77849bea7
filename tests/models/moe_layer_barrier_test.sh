#!/bin/sh
# moe_layer fine-grained vs --events=barrier on sim: both artifacts match
# PyTorch on the same binding, and the profiles' time spent waiting on
# events (wait_ns, summed over groups) differs; prints both, per group.
#
#   moe_layer_barrier_test.sh PYTHON HOST FINE.etlb BARRIER.etlb WORKDIR T,H,E,F,K
set -eu
py=$1 host=$2 fine=$3 barrier=$4 work=$5 dims=$6
here=$(cd "$(dirname "$0")" && pwd)
"$here/ref_test.sh" moe_layer "$py" "$host" "$fine" "$work/fine" --profile "$work/fine.json" -- "$dims"
"$here/ref_test.sh" moe_layer "$py" "$host" "$barrier" "$work/barrier" --profile "$work/barrier.json" -- "$dims"
"$py" - "$work/fine.json" "$work/barrier.json" <<'PY'
import json, sys
waits = []
for path in sys.argv[1:3]:
    doc = json.load(open(path))
    waits.append({g["name"]: g["sync"]["wait_ns"] for g in doc["groups"]})
for name in waits[0]:
    print("  %-16s wait_ns fine %12d barrier %12d" % (name, waits[0][name], waits[1].get(name, -1)))
tf, tb = sum(waits[0].values()), sum(waits[1].values())
print("moe_layer event-wait time: fine %.3f ms, barrier %.3f ms (host time of the simulator)"
      % (tf / 1e6, tb / 1e6))
sys.exit(0 if tf != tb else 1)
PY
