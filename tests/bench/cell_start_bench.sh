#!/usr/bin/env bash
# Per-cell start cost (not run by ctest): a sweep of N one-step `tiny` cells, run with CPU cells
# forked from the runner (the default) and with --exec-workers (every cell a new memsweep
# process), alternating for R rounds. Prints per round: the sweep's wall time, the median cell
# wall time (the runs table's claim-to-finish time: start, model, data, one step, result), and
# the median step time; then the medians over rounds and the fork/exec ratio.
# TOKENIZER=path (with VOCAB=its ids, e.g. 151936 for Qwen's tokenizer.json) tokenizes the data
# with that tokenizer file instead of bytes (BUDGET=1GiB then: the vocabulary makes the tiny model
# big); MEMSWEEP=path runs another memsweep build; FP32_GEMM=native|onednn sets [device] fp32_gemm
# (default auto).
# Usage: [TOKENIZER=... VOCAB=... BUDGET=...] [MEMSWEEP=...] [FP32_GEMM=...] tests/bench/cell_start_bench.sh [cells] [rounds]
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${MEMSWEEP:-$here/build/release/memsweep}"
cells="${1:-8}"
rounds="${2:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
seeds=$(seq -s, 1 "$cells")
cat > "$work/start.toml" <<TOML
[experiment]
name = "cell-start"
steps = 1
warmup_steps = 0
seed = 1
[model]
preset = "tiny"
${VOCAB:+vocab_size = $VOCAB}
[data]
path = "$here/experiments/data/devils-dictionary.jsonl"
format = "jsonl"
${TOKENIZER:+tokenizer = \"$TOKENIZER\"}
[device]
type = "cpu"
memory_budget = "${BUDGET:-64MiB}"
fp32_gemm = "${FP32_GEMM:-auto}"
[strategies.batching]
plugin = "default"
micro_batch_size = 2
seq_len = 128
[matrix]
"experiment.seed" = [$seeds]
TOML
echo "cell_start_bench: $cells one-step tiny cells, $rounds rounds, tokenizer ${TOKENIZER:-bytes}, fp32_gemm ${FP32_GEMM:-auto}, $bin; cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
declare -A wall cell step
for round in $(seq 1 "$rounds"); do
  for mode in fork exec; do
    db="$work/$mode-$round.db"
    flag=()
    [ "$mode" = exec ] && flag=(--exec-workers)
    start=$(date +%s.%N)
    "$bin" run "$work/start.toml" --db "$db" "${flag[@]}" > /dev/null 2>&1
    end=$(date +%s.%N)
    w=$(echo "$end - $start" | bc -l)
    c=$("$bin" query --db "$db" --format csv "SELECT (julianday(finished_at) - julianday(started_at)) * 86400 FROM runs" | tail -n +2 | median)
    s=$("$bin" query --db "$db" --format csv "SELECT seconds FROM step_metrics" | tail -n +2 | median)
    printf "round %d %-4s  sweep %6.2f s  cell median %.3f s  step median %.3f s\n" "$round" "$mode" "$w" "$c" "$s"
    wall[$mode]+="$w "; cell[$mode]+="$c "; step[$mode]+="$s "
  done
done
for mode in fork exec; do
  printf "median %-4s  sweep %6.2f s  cell %.3f s  step %.3f s\n" "$mode" \
    "$(echo ${wall[$mode]} | tr ' ' '\n' | median)" "$(echo ${cell[$mode]} | tr ' ' '\n' | median)" \
    "$(echo ${step[$mode]} | tr ' ' '\n' | median)"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
