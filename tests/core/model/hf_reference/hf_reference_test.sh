#!/usr/bin/env bash
# ctest's HfReference: makes the Hugging Face reference models and their outputs with the pinned
# transformers (tools/setup-references installs it into memsweep's torch environment), then runs
# HfReferenceTest against them.
#   hf_reference_test.sh <memsweep_tests binary> <source dir>
set -euo pipefail
tests_binary=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=$("$source_dir/tools/setup-references")
"$python" "$source_dir/tests/core/model/hf_reference/make_references.py" "$work" 2>/dev/null
MEMSWEEP_HF_REFERENCE_DIR="$work" exec "$tests_binary" \
  --gtest_filter='HfReferenceTest.*' --gtest_fail_if_no_test_selected 2>&1
