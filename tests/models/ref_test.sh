#!/bin/sh
# An example vs PyTorch on sim: writes the references with
# tests/models/MODEL_ref.py, one directory per binding, then runs one
# artifact on all of them with the example's host, which compares (see
# examples/MODEL/MODEL_host.c for the tolerance).
#
#   ref_test.sh MODEL PYTHON HOST ARTIFACT WORKDIR [--profile FILE] [--race-check] -- DIMS...
# DIMS: the reference script's arguments after OUTDIR, comma-separated
# (moe_layer: T,H,E,F,K; prefill_attention: S,NKV,G,D,HID).
# Exits 77 (skip) when python3-torch is missing.
set -eu
model=$1 py=$2 host=$3 artifact=$4 work=$5
shift 5
extra=""
while [ "$1" != "--" ]; do extra="$extra $1"; shift; done
shift
here=$(cd "$(dirname "$0")" && pwd)
dirs=""
for dims in "$@"; do
  d="$work/$(echo "$dims" | tr ',' '_')"
  PYTHONPATH="$here" "$py" "$here/${model}_ref.py" "$d" $(echo "$dims" | tr ',' ' ') || exit $?
  dirs="$dirs $d"
done
exec "$host" "$artifact" $dirs --device sim $extra
