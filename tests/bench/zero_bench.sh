#!/usr/bin/env bash
# ZeRO benchmark (not run by ctest): tokens/s of the group and per-rank peak memory and model
# state for each sharding stage, `small` preset, N ranks (default 2), plus the ZeRO formula check
# for the precision plugin in use (docs/metrics.md).
# Usage: tests/bench/zero_bench.sh [world_size] [steps] [precision: fp32 (default) | bf16]
# Figures are from one loaded 2-core machine: compare cells within one run, not across runs.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$here/build/release/memsweep"
world="${1:-2}"
steps="${2:-4}"
precision="${3:-fp32}"
case "$precision" in
  # Bytes per parameter of params, grads and optimizer state (docs/metrics.md); ddp under bf16
  # holds the masters' fp32 gradients at the update.
  fp32) p=4; g=4; k=8; ddp=16 ;;
  bf16) p=2; g=2; k=12; ddp=18 ;;
  *) echo "precision must be fp32 or bf16" >&2; exit 2 ;;
esac
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/zero-bench.toml" <<TOML
[experiment]
name = "zero-bench"
steps = $steps
warmup_steps = 1
seed = 1
[model]
preset = "small"
[data]
path = "$here/experiments/data/devils-dictionary.jsonl"
[device]
threads = 1
world_size = $world
[strategies.precision]
plugin = "$precision"
[strategies.batching]
seq_len = 128
micro_batch_size = 2
[matrix]
"strategies.sharding" = [
  {plugin = "ddp", reduce_bucket_size = 50000000},
  {plugin = "zero1", reduce_bucket_size = 50000000},
  {plugin = "zero2", reduce_bucket_size = 50000000},
  {plugin = "zero3", reduce_bucket_size = 50000000},
  {plugin = "zero3", reduce_bucket_size = 50000000, offload_optimizer = "cpu", offload_param = "cpu"},
]
TOML
echo "load before: $(uptime)"
"$bin" run "$work/zero-bench.toml" --db "$work/r.db" >/dev/null
echo "load after:  $(uptime)"
"$bin" query --db "$work/r.db" "
SELECT r.cell_index AS cell, json_extract(r.config_json, '\$.strategies.sharding.plugin') AS sharding,
       json_extract(r.config_json, '\$.strategies.sharding.offload_param') AS offload,
       m.tokens_per_s AS group_tokens_per_s, k.rank,
       k.peak_allocated_bytes AS peak, k.params_bytes + k.grads_bytes + k.optimizer_bytes AS model_state,
       k.host_pool_peak_bytes AS host_pool, k.comm_seconds / m.steps_completed AS comm_s_per_step,
       k.comm_bytes / m.steps_completed AS comm_bytes_per_step
FROM run_ranks k JOIN runs r ON r.id = k.run_id JOIN run_metrics m ON m.run_id = r.id
ORDER BY r.cell_index, k.rank"
echo
echo "model state per rank against the $precision ZeRO formulas (psi = parameters, N = $world):"
"$bin" query --db "$work/r.db" "
SELECT r.cell_index AS cell, json_extract(r.config_json, '\$.strategies.sharding.plugin') AS sharding, k.rank,
       k.params_bytes + k.grads_bytes + k.optimizer_bytes AS measured,
       CASE json_extract(r.config_json, '\$.strategies.sharding.plugin')
         WHEN 'ddp' THEN $ddp.0 * m.parameters
         WHEN 'zero1' THEN ($p.0 + $g.0) * m.parameters + $k.0 * m.parameters / $world
         WHEN 'zero2' THEN $p.0 * m.parameters + ($g.0 + $k.0) * m.parameters / $world
         ELSE ($p.0 + $g.0 + $k.0) * m.parameters / $world END AS formula
FROM run_ranks k JOIN runs r ON r.id = k.run_id JOIN run_metrics m ON m.run_id = r.id
WHERE json_extract(r.config_json, '\$.strategies.sharding.offload_param') IS NULL
ORDER BY r.cell_index, k.rank"
