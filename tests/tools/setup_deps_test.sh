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

# expect_refusal <torch folder> <pattern>...: setup-deps exits 2 and says every pattern.
expect_refusal() {
  local folder=$1 out code
  shift
  set +e
  out=$(MEMSWEEP_TORCH="$folder" "$source_dir/tools/setup-deps" 2>&1 >/dev/null)
  code=$?
  set -e
  echo "$out"
  [ "$code" -eq 2 ] || { echo "FAIL: exit code $code for $folder, expected 2"; exit 1; }
  for pattern in "$@"; do
    grep -qF "$pattern" <<<"$out" || { echo "FAIL: '$pattern' not in the message"; exit 1; }
  done
}

mkdir -p "$work/torch/include/torch" "$work/empty"
echo "__version__ = '2.10.0+cu128'" >"$work/torch/version.py"
expect_refusal "$work/torch" "2.10.0+cu128" "needs torch $pinned"
expect_refusal "$work/empty" "holds no LibTorch"
echo "setup-deps refuses another torch version and a folder without LibTorch: OK"
