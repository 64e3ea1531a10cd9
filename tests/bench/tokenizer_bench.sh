#!/usr/bin/env bash
# Tokenizer throughput on the bundled corpus (not run by ctest): makes the tokenizer files the
# reference tests use (two trained byte-level BPE tokenizer.json and Qwen's published one; two
# trained SentencePiece models and Mistral-7B-v0.1's published tokenizer.model) with the pinned
# Python packages, then runs memsweep_bench_tokenizers on them beside the byte tokenizer, and
# times the reference implementations (tokenizers, sentencepiece) on the same files and texts,
# one thread, one text per call as memsweep calls its tokenizer, for comparison.
# Usage: tests/bench/tokenizer_bench.sh [rounds]   (after tools/build --target bench)
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
python=$("$here/tools/setup-references")
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
corpus="$here/experiments/data/devils-dictionary.jsonl"
"$python" "$here/tests/core/data/tokenizer_reference/make_references.py" "$corpus" "$work/bpe" > /dev/null
"$python" "$here/tests/core/data/sentencepiece_reference/make_references.py" "$corpus" "$work/sp" 2> /dev/null > /dev/null
"$here/build/release/memsweep_bench_tokenizers" --rounds "${1:-5}" \
  "$work"/bpe/llama3_style.json "$work"/bpe/gpt2_style.json "$work"/bpe/qwen_published.json \
  "$work"/sp/llama2_style.model "$work"/sp/unigram.model "$work"/sp/mistral_published.model
cd "$work" && RAYON_NUM_THREADS=1 "$python" - "$corpus" "${1:-5}" <<'PY'
import json, statistics, sys, time
import sentencepiece as spm
from tokenizers import Tokenizer
texts = [json.loads(l)["text"] for l in open(sys.argv[1]) if l.strip()]
rounds = int(sys.argv[2])
cases = {f"bpe/{n}.json (tokenizers)": lambda n=n: Tokenizer.from_file(f"bpe/{n}.json")
         for n in ["llama3_style", "gpt2_style", "qwen_published"]}
cases.update({f"sp/{n}.model (sentencepiece)": lambda n=n: spm.SentencePieceProcessor(model_file=f"sp/{n}.model")
              for n in ["llama2_style", "unigram", "mistral_published"]})
print("reference implementations, same texts, one text per call, one thread, loaded afresh every round:")
for name, load in cases.items():
    times = []
    for _ in range(rounds):
        tok = load()  # an empty cache every round, as memsweep's bench
        encode = (lambda t: tok.encode(t, add_special_tokens=False).ids) if isinstance(tok, Tokenizer) else tok.encode
        start = time.perf_counter()
        for t in texts:
            encode(t)
        times.append(time.perf_counter() - start)
    print(f"{name:60s} median {statistics.median(times):.3f} s  best {min(times):.3f} s")
PY
