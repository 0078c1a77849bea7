#!/usr/bin/env bash
# run_example.sh ETLRUN PYTHON ARTIFACT EXAMPLE WORKDIR
# Runs one example's artifact with etlrun on sim from .npy files written by
# make_inputs.py: against numpy references where it has them (--check),
# and always twice, with 1 and 3 workers, the second run checked against
# every tensor the first one wrote (--out). Exits 77 (ctest: skipped) with
# the reason when numpy is missing.
set -euo pipefail
etlrun=$1 python=$2 artifact=$3 example=$4 dir=$5
if ! "$python" -c 'import numpy' 2>/dev/null; then
  echo "SKIP: numpy is not installed for $python (apt-get install python3-numpy)"
  exit 77
fi
rm -rf "$dir" && mkdir -p "$dir/first"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
read -r -a args < <("$python" "$here/make_inputs.py" "$example" "$dir")
outs=() checks=() inputs=()
for ((i = 0; i < ${#args[@]}; ++i)); do
  [[ ${args[i]} == --check ]] || [[ ${args[i - 1]:-} == --check ]] || inputs+=("${args[i]}")
  if [[ ${args[i]} == --in ]]; then
    name=${args[i + 1]%%=*}
    outs+=(--out "$name=$dir/first/$name.npy")
    checks+=(--check "$name=$dir/first/$name.npy")
  fi
done
set -x
"$etlrun" "$artifact" --device sim --sim-workers 1 "${args[@]}" --rtol 1e-3 --atol 1e-4 "${outs[@]}"
"$etlrun" "$artifact" --device sim --sim-workers 3 "${inputs[@]}" --rtol 0 --atol 0 \
  --trace "$dir/trace.json" "${checks[@]}"
