#!/bin/sh
# moe_layer vs PyTorch on sim: writes the references, then runs one artifact
# on all of them (see examples/moe_layer/moe_layer_host.c for the tolerance).
#
#   moe_layer_test.sh PYTHON HOST ARTIFACT WORKDIR [--profile FILE] [--race-check] -- T,H,E,F,K...
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
  PYTHONPATH="$here" "$py" "$here/moe_layer_ref.py" "$d" $(echo "$dims" | tr ',' ' ') || exit $?
  dirs="$dirs $d"
done
exec "$host" "$artifact" $dirs --device sim $extra
