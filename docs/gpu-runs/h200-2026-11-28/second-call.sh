#!/usr/bin/env bash
# Device call: memsweep run on CUDA stores each cell's estimate (run_summary's estimated_* columns),
# estimated for this GPU (its compute capability from the worker's result).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:?}
t0=$(date +%s)
mark() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$out/times.txt"; }
tools/setup-deps --from .debs >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
prefix=$(cat "${XDG_CACHE_HOME:-$HOME/.cache}/memsweep/prefix-path")
libdir=$prefix/usr/lib; for d in "$prefix"/usr/lib/*-linux-gnu; do [ -d "$d" ] && libdir=$d; done
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CMAKE_PREFIX_PATH="$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
MEMSWEEP_BUILD_DIR=build/gpu tools/build -j 16 --target memsweep memsweep-plugins \
  >>"$out/build.log" 2>&1 || { tail -60 "$out/build.log"; mark build failed; exit 1; }
mark build
git log --oneline -1 > "$out/env.txt"
sed 's/^"strategies.batching.micro_batch_size" = .*/"strategies.batching.micro_batch_size" = [1, 6, 7]/' \
  experiments/gpu-oom-boundary.toml > experiments/gpu-oom-boundary-3.toml
timeout 150 build/gpu/memsweep run experiments/gpu-oom-boundary-3.toml --db /tmp/b.db > "$out/run.log" 2>&1
mark "run rc=$?"
build/gpu/memsweep query --db /tmp/b.db --format csv "SELECT cell_index, status, estimate_status,
  peak_allocated_bytes, estimated_peak_allocated_bytes, peak_reserved_bytes,
  estimated_peak_reserved_bytes, estimate_error FROM run_summary ORDER BY cell_index" \
  > "$out/run-estimates.csv" 2>&1
build/gpu/memsweep query --db /tmp/b.db --format csv "SELECT run_id, status, target, device,
  blas_workspace_bytes, oom_requested_bytes, seconds FROM run_estimates ORDER BY run_id" \
  >> "$out/run-estimates.csv" 2>&1
build/gpu/memsweep compare --db /tmp/b.db > "$out/compare.txt" 2>&1
cat "$out/run-estimates.csv"; tail -3 "$out/run.log"
mark done
