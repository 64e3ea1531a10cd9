#!/usr/bin/env bash
# memsweep's training throughput against a plain PyTorch eager loop (not run by ctest): the
# `small` preset, B x T packed rows (no padding), fp32, attention/eager unless ATTENTION says, 2 threads, in rounds
# that alternate which runs first. memsweep: `memsweep worker` on one cell; the plain loop:
# tests/bench/plain_eager_loop.py (Hugging Face transformers' LlamaForCausalLM, torch.optim.AdamW)
# in memsweep's torch environment (transformers pinned there). Prints tokens/s of both per
# round, memsweep's MFU, and the median over rounds of the per-round ratio.
# With BASELINE=/path/to/another/memsweep (an older build, say), that binary runs the same cell in
# every round too, so a change's before and after are measured in one run.
# ATTENTION picks memsweep's attention plugin (default eager) and PLAIN_ATTN the plain loop's
# attn_implementation (eager, the default, or sdpa: ATen's fused kernel, transformers' default).
# FP32_GEMM sets memsweep's [device] fp32_gemm (auto, the default; native; onednn).
# Usage: [BASELINE=...] [ATTENTION=flash] [PLAIN_ATTN=sdpa] [FP32_GEMM=native] tests/bench/plain_eager_bench.sh [rounds] [batch] [seq_len] [steps]
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$here/build/release/memsweep"
rounds="${1:-3}"
batch="${2:-4}"
seq="${3:-512}"
steps="${4:-8}"
attention="${ATTENTION:-eager}"
plain_attn="${PLAIN_ATTN:-eager}"
python=$("$here/tools/setup-references")
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/plain.toml" <<TOML
[experiment]
name = "plain-eager-bench"
steps = $((steps + 2))
warmup_steps = 2
seed = 1
[model]
preset = "small"
[data]
path = "$here/experiments/data/devils-dictionary.jsonl"
format = "jsonl"
[device]
type = "cpu"
threads = 2
memory_budget = "16GiB"
fp32_gemm = "${FP32_GEMM:-auto}"
[strategies.batching]
micro_batch_size = $batch
seq_len = $seq
[strategies.packing]
plugin = "concat"
[strategies.attention]
plugin = "$attention"
TOML
"$bin" plan "$work/plain.toml" --write-cells "$work/cells" > /dev/null
cell=$(ls "$work"/cells/*.toml | head -1)
echo "plain_eager_bench: small preset, ${batch}x${seq} packed, fp32, $steps measured steps, $rounds rounds; memsweep attention/$attention, plain loop attn_implementation=$plain_attn"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_bf16|amx_bf16)$' | tr '\n' ' ')load $(cut -d' ' -f1-3 /proc/loadavg)"
ratios=()
baseline_ratios=()
for round in $(seq 1 "$rounds"); do
  run_memsweep() {
    "$bin" worker --cell "$cell" --source "$work/plain.toml" --result "$work/r.json" \
      --summary "$work/s.txt" > /dev/null
    ms=$(awk '/tokens\/s/ {print $2; exit}' "$work/s.txt")
    mfu=$(awk '/MFU/ {print $2; exit}' "$work/s.txt")
    if [ -n "${BASELINE:-}" ]; then
      "$BASELINE" worker --cell "$cell" --source "$work/plain.toml" --result "$work/b.json" \
        --summary "$work/b.txt" > /dev/null
      base=$(awk '/tokens\/s/ {print $2; exit}' "$work/b.txt")
      base_mfu=$(awk '/MFU/ {print $2; exit}' "$work/b.txt")
    fi
  }
  run_plain() {
    plain=$("$python" "$here/tests/bench/plain_eager_loop.py" --batch "$batch" --seq-len "$seq" \
              --steps "$steps" --threads 2 --attn "$plain_attn" | sed -E 's/.*tokens\/s ([0-9.]+).*/\1/')
  }
  if [ $((round % 2)) -eq 1 ]; then run_memsweep; run_plain; else run_plain; run_memsweep; fi
  ratio=$(echo "$ms / $plain" | bc -l)
  ratios+=("$ratio")
  printf "round %d: memsweep %7.1f tokens/s (MFU %s%%)  plain eager %7.1f tokens/s  ratio %.3f  load %s\n" \
    "$round" "$ms" "$mfu" "$plain" "$ratio" "$(cut -d' ' -f1 /proc/loadavg)"
  if [ -n "${BASELINE:-}" ]; then
    baseline_ratios+=("$(echo "$ms / $base" | bc -l)")
    printf "         baseline %7.1f tokens/s (MFU %s%%)  memsweep / baseline %.3f\n" "$base" \
      "$base_mfu" "${baseline_ratios[-1]}"
  fi
done
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
if [ -n "${BASELINE:-}" ]; then
  printf "median ratio memsweep / baseline: %.3f\n" "$(printf '%s\n' "${baseline_ratios[@]}" | median)"
fi
printf "median ratio memsweep / plain eager: %.3f\n" "$(printf '%s\n' "${ratios[@]}" | median)"
