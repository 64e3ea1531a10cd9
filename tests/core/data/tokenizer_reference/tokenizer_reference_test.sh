#!/usr/bin/env bash
# ctest's TokenizerReference: trains byte-level BPE tokenizers on the bundled corpus with the
# pinned Hugging Face `tokenizers` (tools/setup-references), records their ids, and runs
# BpeTokenizerTest against them.
#   tokenizer_reference_test.sh <memsweep_tests binary> <source dir>
set -euo pipefail
tests_binary=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=$("$source_dir/tools/setup-references")
"$python" "$source_dir/tests/core/data/tokenizer_reference/make_references.py" \
  "$source_dir/experiments/data/devils-dictionary.jsonl" "$work" 2>/dev/null
MEMSWEEP_TOKENIZER_REFERENCE_DIR="$work" exec "$tests_binary" \
  --gtest_filter='BpeTokenizerTest.*' --gtest_fail_if_no_test_selected 2>&1
