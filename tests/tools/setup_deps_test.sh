#!/usr/bin/env bash
# tools/setup-deps refuses a torch of another version than tools/torch-version pins (exit 2,
# naming both versions), and a folder that holds no LibTorch, before anything is built. Runs after
# the set-up (ctest comes after tools/build), so the Debian packages and gloo headers are present
# and nothing is installed here.
#   setup_deps_test.sh <source dir>
set -euo pipefail
source_dir=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pinned=$(tr -d ' \n' <"$source_dir/tools/torch-version")

mkdir -p "$work/torch/include/torch"
echo "__version__ = '2.10.0+cu128'" >"$work/torch/version.py"
set +e
out=$(MEMSWEEP_TORCH="$work/torch" "$source_dir/tools/setup-deps" 2>&1 >/dev/null)
code=$?
set -e
echo "$out"
[ "$code" -eq 2 ] || { echo "FAIL: exit code $code, expected 2"; exit 1; }
grep -q "2.10.0+cu128" <<<"$out" || { echo "FAIL: the found version is not named"; exit 1; }
grep -q "needs torch $pinned" <<<"$out" || { echo "FAIL: the needed version is not named"; exit 1; }

mkdir -p "$work/empty"
set +e
out=$(MEMSWEEP_TORCH="$work/empty" "$source_dir/tools/setup-deps" 2>&1 >/dev/null)
code=$?
set -e
echo "$out"
[ "$code" -eq 2 ] || { echo "FAIL: exit code $code for a folder without LibTorch"; exit 1; }
grep -q "holds no LibTorch" <<<"$out" || { echo "FAIL: no reason given"; exit 1; }
echo "setup-deps refuses another torch version and a folder without LibTorch: OK"
