#!/usr/bin/env bash
# run.sh BUILD_DIR SOURCE_DIR PYTHON
# `cmake --install` of BUILD_DIR into a prefix outside the source and build
# trees (a temporary directory, removed when the test passes), then, using
# only the installed tree and with no LD_LIBRARY_PATH: etlc compiles examples
# (mlp imports std.math: the stdlib is found relative to the installed
# etlc); hosts are built the ways README.md's "Installing" section says and
# each one starts and runs rowsum on sim, with the runtime it loads checked
# to be the prefix's: find_package(ETLRuntime) with ETL::runtime (CMake's
# build-tree RUNPATH) and ETL::runtime_static, that host installed with
# CMAKE_INSTALL_RPATH_USE_LINK_PATH, pkg-config with -Wl,-rpath, and
# without it under LD_LIBRARY_PATH (and not at all without either), and the
# static archive; etlrun runs; the Python package imports from the prefix
# and runs rowsum (skipped with a reason without numpy).
set -euo pipefail
build=$1 src=$2 python=$3
unset LD_LIBRARY_PATH
work=$(mktemp -d "${TMPDIR:-/tmp}/etl-install-test.XXXXXX")
trap 'if (($? == 0)); then rm -rf "$work"; else echo "install test: FAILED; left $work"; fi' EXIT
prefix=$work/opt/etl
set -x
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
lib=$(ls -d "$prefix"/lib*/libetl_runtime.so.0.1 2>/dev/null || ls "$prefix"/lib/*/libetl_runtime.so.0.1)
libdir=$(dirname "$lib")
test -f "$libdir/libetl_runtime.a"
test "$(readelf -d "$lib" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')" = libetl_runtime.so.0.1
test -f "$prefix/share/etl/stdlib/std/math.etl"
test -f "$prefix/share/doc/etl/LICENSE"
test -f "$prefix/include/etl/etl.h"

# starts BINARY ARGS...: it runs rowsum on sim and loads the prefix's runtime
starts() {
  "$@" | tee "$work/run.log"
  grep -q OK "$work/run.log"
  if ldd "$1" | grep -q libetl_runtime; then
    ldd "$1" | grep -F "libetl_runtime.so.0.1 => $libdir/libetl_runtime.so.0.1"
  fi
}

# the installed etlc, run from outside the source tree, finds the installed stdlib
cp "$src/examples/mlp/mlp.etl" "$src/examples/rowsum/rowsum.etl" "$work/"
(cd "$work" && "$prefix/bin/etlc" compile mlp.etl -o mlp.etlb --target sim &&
  "$prefix/bin/etlc" compile rowsum.etl -o rowsum.etlb --target sim)
"$prefix/bin/etlc" compile --help >"$work/etlc-help.txt"
grep "$prefix/share/etl/stdlib" "$work/etlc-help.txt"
etlb=$work/rowsum.etlb

# find_package, as README.md's "Installing" says: the build tree's binaries
# start (CMake's RUNPATH; none needed for the static one), and so does the
# installed one with CMAKE_INSTALL_RPATH_USE_LINK_PATH
cmake -S "$src/tests/install/host" -B "$work/host" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_INSTALL_RPATH_USE_LINK_PATH=ON -DETL_EXAMPLES_DIR="$src/examples" \
  -DCMAKE_BUILD_TYPE=Release >"$work/host.log"
cmake --build "$work/host" >>"$work/host.log"
starts "$work/host/rowsum_host" "$etlb" --device sim
starts "$work/host/rowsum_host_static" "$etlb" --device sim
if ldd "$work/host/rowsum_host_static" | grep libetl_runtime; then exit 1; fi
cmake --install "$work/host" --prefix "$work/app" >>"$work/host.log"
starts "$work/app/bin/rowsum_host" "$etlb" --device sim

# pkg-config, README.md's lines with $prefix for /opt/etl ($libdir for /opt/etl/lib):
# app.c is rowsum_host.c, beside the examples' common headers it includes
mkdir -p "$work/consumer/app"
cp -r "$src/examples/common" "$work/consumer/"
cp "$src/examples/rowsum/rowsum_host.c" "$work/consumer/app/app.c"
(
  cd "$work/consumer/app"
  export PKG_CONFIG_PATH=$libdir/pkgconfig
  cc app.c -o app $(pkg-config --cflags --libs etl-runtime) -Wl,-rpath,$libdir
  starts ./app "$etlb" --device sim
  # without the RUNPATH the binary does not start, unless LD_LIBRARY_PATH names the prefix
  cc app.c -o app_norpath $(pkg-config --cflags --libs etl-runtime)
  if ./app_norpath "$etlb" --device sim 2>"$work/norpath.err"; then exit 1; fi
  grep 'libetl_runtime.so.0.1: cannot open shared object file' "$work/norpath.err"
  LD_LIBRARY_PATH=$libdir starts ./app_norpath "$etlb" --device sim
  # the static archive: nothing to find at run time
  cc app.c -o app_static $(pkg-config --cflags etl-runtime) $libdir/libetl_runtime.a \
    -ldl -lpthread -lm
  starts ./app_static "$etlb" --device sim
)
"$prefix/bin/etlrun" "$work/mlp.etlb" --device sim --dim T=5 --dim D=32 --dim F=40
ldd "$prefix/bin/etlrun" | grep -F "libetl_runtime.so.0.1 => $prefix/bin/../lib/libetl_runtime.so.0.1"

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
