#!/usr/bin/env bash
# setup.sh — install ETL's build dependencies (Debian 12 packages) and build into build/.
#
# Idempotent: packages already installed are not touched (no `apt-get update`
# unless something is missing), and a second run only re-runs CMake's
# incremental build. Works as root or through sudo.
#
#   scripts/setup.sh             install what is missing, configure + build build/
#   scripts/setup.sh --deps-only install what is missing, build nothing
#
# Environment: ETL_BUILD_DIR (default build), ETL_JOBS (default nproc),
# ETL_CMAKE_ARGS (extra arguments for the configure step), ETL_SKIP_TORCH=1
# (do not install python3-torch).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# Everything the build needs, as Debian 12 packages. antlr4 pulls in a Java
# runtime (default-jre-headless) through its own dependencies. The CUDA toolkit
# (ptxas) is optional and never installed here: tests that need it skip.
# The tests of the Python package and etlrun use Debian's /usr/bin/python3
# with python3-numpy and python3-torch (torch: ~150 MB of archives, ~100 s
# to install; ETL_SKIP_TORCH=1 leaves it out and its tests skip, saying so).
# pkg-config builds a host against the installed runtime (tests/install).
packages=(build-essential cmake antlr4 libantlr4-runtime-dev llvm-19-dev libcli11-dev doctest-dev
  pkg-config python3-numpy)
[[ ${ETL_SKIP_TORCH:-0} == 1 ]] || packages+=(python3-torch)
# The VS Code extension test (tests/editor/run.sh) needs node and npm: Debian's
# nodejs (18) and npm unless both commands exist already (a nodejs from
# elsewhere bundles its npm, and Debian's npm package would conflict with it).
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

log() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

missing_packages() {
  local p status
  for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
    [[ $status == ii* ]] || printf '%s\n' "$p"
  done
}

install_packages() {
  command -v dpkg-query >/dev/null 2>&1 ||
    die "dpkg-query not found: this script supports Debian 12 (or derivatives). Install by hand: ${packages[*]}"
  local missing
  mapfile -t missing < <(missing_packages)
  if ((${#missing[@]} == 0)); then
    log "all packages present (${packages[*]})"
    return
  fi
  log "missing packages: ${missing[*]}"
  command -v apt-get >/dev/null 2>&1 ||
    die "apt-get not found; install these packages by hand: ${missing[*]}"
  local sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 ||
      die "not root and sudo not found; as root run: apt-get install ${missing[*]}"
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q ||
    die "apt-get update failed (is the network or the package mirror reachable?)"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}" || die "apt-get install failed for: ${missing[*]}"
  mapfile -t missing < <(missing_packages)
  ((${#missing[@]} == 0)) || die "still missing after apt-get install: ${missing[*]}"
}

build() {
  local dir=${ETL_BUILD_DIR:-build} jobs=${ETL_JOBS:-$(nproc)}
  local extra=()
  [[ -n ${ETL_CMAKE_ARGS:-} ]] && read -r -a extra <<<"$ETL_CMAKE_ARGS"
  log "configuring $dir/"
  local configure=(cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DETL_WERROR=ON "${extra[@]}")
  if [[ -f $dir/CMakeCache.txt ]]; then
    "${configure[@]}" >/dev/null # quiet on reruns; errors still reach stderr
  else
    "${configure[@]}"
  fi || die "CMake configure failed (rerun: ${configure[*]})"
  log "building $dir/ with $jobs jobs"
  cmake --build "$dir" -j "$jobs" || die "build failed in $dir/"
}

deps_only=0
for arg in "$@"; do
  case $arg in
    --deps-only) deps_only=1 ;;
    -h | --help) sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $arg (try --help)" ;;
  esac
done

install_packages
((deps_only)) || build
