#!/bin/sh
# prefill_attention vs PyTorch on sim: writes the references, then runs one
# artifact on all of them (see examples/prefill_attention/
# prefill_attention_host.c for the tolerance).
#
#   prefill_attention_test.sh PYTHON HOST ARTIFACT WORKDIR [--profile FILE] [--race-check] -- S,NKV,G,D,HID...
# Exits 77 (skip) when python3-torch is missing.
set -eu
py=$1 host=$2 artifact=$3 work=$4
shift 4
extra=""
while [ "$1" != "--" ]; do extra="$extra $1"; shift; done
shift
here=$(cd "$(dirname "$0")" && pwd)
dirs=""
for dims in "$@"; do
  d="$work/$(echo "$dims" | tr ',' '_')"
  PYTHONPATH="$here" "$py" "$here/prefill_attention_ref.py" "$d" $(echo "$dims" | tr ',' ' ') || exit $?
  dirs="$dirs $d"
done
exec "$host" "$artifact" $dirs --device sim $extra
