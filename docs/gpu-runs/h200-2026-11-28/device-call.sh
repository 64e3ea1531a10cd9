#!/usr/bin/env bash
# Device call: tools/gpu-check in full, the cuBLAS workspaces a GEMM takes on each thread, and the
# OOM boundary of experiments/gpu-oom-boundary.toml (micro-batch 1..8) for the estimate.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:?}
t0=$(date +%s)
mark() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$out/times.txt"; }
git log --oneline -1 > "$out/env.txt"
python3 docs/gpu-runs/h200-2026-11-28/workspaces.py > "$out/workspaces.txt" 2>&1; mark "workspaces rc=$?"
tools/gpu-check --debs .debs --out "$out/gpu-check" > "$out/gpu-check-stdout.log" 2>&1
mark "gpu-check rc=$?"; tail -3 "$out/gpu-check-stdout.log"
prefix=$(cat "${XDG_CACHE_HOME:-$HOME/.cache}/memsweep/prefix-path")
libdir=$prefix/usr/lib; for d in "$prefix"/usr/lib/*-linux-gnu; do [ -d "$d" ] && libdir=$d; done
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
left=$(( 560 - ($(date +%s) - t0) ))
if [ "$left" -gt 30 ]; then
  timeout "$left" build/gpu/memsweep run experiments/gpu-oom-boundary.toml --db /tmp/boundary.db \
    > "$out/boundary.log" 2>&1
  mark "boundary rc=$?"
  cp /tmp/boundary.db "$out/boundary.db"
  build/gpu/memsweep query --db /tmp/boundary.db --format csv "SELECT cell_index, status,
    peak_allocated_bytes, peak_reserved_bytes, tokens_per_s, error FROM run_summary ORDER BY cell_index" \
    > "$out/boundary.csv" 2>&1
fi
cat "$out/workspaces.txt"; grep -E "passed|failed|Summary|gpu-check:" "$out/gpu-check-stdout.log" | tail -8
mark done
