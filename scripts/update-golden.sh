#!/usr/bin/env bash
# Regenerates the `// CHECK:` lines of tests/diag/*.etl and tests/golden/*.etl
# from what the compiler prints now. Review the diff before committing.
#
#   scripts/update-golden.sh [BUILD_DIR] [NAME_FILTER]
#
# BUILD_DIR defaults to ./build; NAME_FILTER (optional) limits the update to
# files whose name contains it, e.g. `fail_syntax` or `rowsum`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
filter="${2:-}"
cmake --build "$build" --target etl_compiler_tests -j2
export ETL_UPDATE_GOLDEN=1
if [ -n "$filter" ]; then export ETL_GOLDEN_FILTER="$filter"; fi
"$build/tests/etl_compiler_tests" --test-case='golden:*' || true
unset ETL_UPDATE_GOLDEN
"$build/tests/etl_compiler_tests" --test-case='golden:*'
git -C "$root" diff --stat -- tests/diag tests/golden || true
