#!/usr/bin/env bash
# Runs a test against a reference implementation from PyPI: the pinned Hugging Face packages
# (tools/setup-references installs them into memsweep's torch environment) make the references
# into a fresh folder with a maker script, and the named GoogleTest cases read them from the
# folder given in an environment variable (they skip, saying so, without it).
#   reference_test.sh <memsweep_tests> <source dir> <maker.py> <ENV_VAR> <gtest filter> [maker args]
# The maker is called as: maker.py [maker args...] OUT_DIR
set -euo pipefail
tests_binary=$1 source_dir=$2 maker=$3 env_var=$4 filter=$5
shift 5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=$("$source_dir/tools/setup-references")
"$python" "$maker" "$@" "$work" 2>/dev/null
out="$work/gtest.out"
status=0
env "$env_var=$work" "$tests_binary" --gtest_filter="$filter" > "$out" 2>&1 || status=$?
cat "$out"
# Fail unless the cases ran: none selected, or skipped (the folder not seen), is a failure.
[ "$status" -eq 0 ] || exit "$status"
grep -q '^\[  PASSED  \] [1-9]' "$out" || { echo "FAIL: no test of $filter ran"; exit 1; }
if grep -q '^\[  SKIPPED \]' "$out"; then echo "FAIL: a test of $filter skipped"; exit 1; fi
