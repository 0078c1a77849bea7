#!/usr/bin/env bash
# run.sh BUILD_DIR SOURCE_DIR WORK_DIR PYTHON
# `cmake --install` of BUILD_DIR into WORK_DIR/prefix, then, using only the
# installed tree: etlc compiles examples (mlp imports std.math: the stdlib
# is found relative to the installed etlc), a host is built with
# find_package(ETLRuntime) and another with pkg-config --cflags --libs
# etl-runtime, and both run on sim; etlrun runs; the Python package imports
# from the prefix and runs rowsum (skipped with a reason without numpy).
set -euo pipefail
build=$1 src=$2 work=$3 python=$4
prefix=$work/prefix
rm -rf "$work" && mkdir -p "$work"
set -x
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
lib=$(ls -d "$prefix"/lib*/libetl_runtime.so.0.1 2>/dev/null || ls "$prefix"/lib/*/libetl_runtime.so.0.1)
libdir=$(dirname "$lib")
test -f "$libdir/libetl_runtime.a"
test "$(readelf -d "$lib" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')" = libetl_runtime.so.0.1
test -f "$prefix/share/etl/stdlib/std/math.etl"
test -f "$prefix/share/doc/etl/LICENSE"
test -f "$prefix/include/etl/etl.h"
# the installed etlc, run from outside the source tree, finds the installed stdlib
cp "$src/examples/mlp/mlp.etl" "$src/examples/rowsum/rowsum.etl" "$work/"
(cd "$work" && "$prefix/bin/etlc" compile mlp.etl -o mlp.etlb --target sim &&
  "$prefix/bin/etlc" compile rowsum.etl -o rowsum.etlb --target sim)
"$prefix/bin/etlc" compile --help >"$work/etlc-help.txt"
grep "$prefix/share/etl/stdlib" "$work/etlc-help.txt"
# find_package
cmake -S "$src/tests/install/host" -B "$work/host" -DCMAKE_PREFIX_PATH="$prefix" \
  -DETL_EXAMPLES_DIR="$src/examples" -DCMAKE_BUILD_TYPE=Release >"$work/host.log"
cmake --build "$work/host" >>"$work/host.log"
"$work/host/rowsum_host" "$work/rowsum.etlb" --device sim
# pkg-config
export PKG_CONFIG_PATH=$libdir/pkgconfig
cc -std=gnu11 -O1 -o "$work/rowsum_pc" "$src/examples/rowsum/rowsum_host.c" \
  $(pkg-config --cflags --libs etl-runtime) -lm -Wl,-rpath,"$libdir"
"$work/rowsum_pc" "$work/rowsum.etlb" --device sim
"$prefix/bin/etlrun" "$work/mlp.etlb" --device sim --dim T=5 --dim D=32 --dim F=40
# the Python package, from the prefix alone
pydir=$(dirname "$(find "$prefix" -name __init__.py -path '*/etl/*' | head -n 1)")
if "$python" -c 'import numpy' 2>/dev/null; then
  PYTHONPATH=$(dirname "$pydir") "$python" -c "
import numpy as np, etl, sys
assert etl.__file__.startswith('$prefix'), etl.__file__
assert etl._lib.path.startswith('$prefix'), etl._lib.path
p = etl.compile('$work/rowsum.etl', targets=['sim'], device='sim')
x = np.ones((9, 200), np.float32); y = np.zeros(9, np.float32)
p(x=x, y=y); assert (y == 200).all(), y
print('python: etl from the prefix ran rowsum: OK')"
else
  echo "python check skipped: numpy is not installed for $python"
fi
echo "install test: OK"
