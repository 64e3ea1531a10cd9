#!/usr/bin/env bash
# Second device call: the loss/fused CUDA path (h·Wᵀ layout, fp32-output GEMM), the GpuKernels
# fix, the loss bench at 4096 and 8192 tokens, seed 002's loss cells.
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
MEMSWEEP_BUILD_DIR=build/gpu tools/build -j 16 --target memsweep memsweep-plugins memsweep_gpu_tests memsweep_bench_loss \
  >>"$out/build.log" 2>&1 || { tail -60 "$out/build.log"; mark build failed; exit 1; }
mark build
m=build/gpu/memsweep
{ nvidia-smi; $m --version; git log --oneline -1; } >"$out/env.txt" 2>&1
timeout 60 ctest --test-dir build/gpu -L gpu -R 'GpuKernels|GpuLoss|GpuAdapter' --output-on-failure >"$out/ctest-gpu.log" 2>&1
mark "ctest rc=$?"; grep -E "tests passed|Failed|\*\*\*" "$out/ctest-gpu.log" | tail -8
for n in 4096 8192; do
  timeout 40 build/gpu/memsweep_bench_loss --device cuda --rounds 5 --tokens $n >"$out/bench-loss-$n.txt" 2>&1
  mark "bench $n rc=$?"
done
db=/tmp/gpu.db
timeout 90 $m run experiments/gpu-seed-llama-loss.toml --db "$db" >/tmp/runs.log 2>&1
mark "gpu-seed-llama-loss rc=$?"; tail -8 /tmp/runs.log > "$out/runs-tail.txt"
{ $m compare --db "$db" --experiment gpu-seed-llama-loss
  $m query --db "$db" "SELECT cell_index, status, peak_allocated_bytes, peak_reserved_bytes,
      largest_allocation_bytes, largest_allocation_what, tokens_per_s, final_loss, substr(error, 1, 120)
      FROM run_summary WHERE experiment = 'gpu-seed-llama-loss' ORDER BY cell_index"; } >"$out/compare.txt" 2>&1
cat "$out/times.txt"
