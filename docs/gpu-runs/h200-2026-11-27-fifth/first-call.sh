#!/usr/bin/env bash
# One device call: build at HEAD, all gpu tests, the loss bench on CUDA, the GPU quickstart
# (estimate ground truth) and seed 001's plan with loss/fused.
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
mark setup
MEMSWEEP_BUILD_DIR=build/gpu tools/build -j 16 --target memsweep memsweep-plugins memsweep_gpu_tests memsweep_bench_loss \
  >>"$out/build.log" 2>&1 || { tail -60 "$out/build.log"; mark build failed; exit 1; }
mark build
m=build/gpu/memsweep
{ nvidia-smi; $m --version; lscpu | grep 'Model name'; git log --oneline -1; } >"$out/env.txt" 2>&1
timeout 100 ctest --test-dir build/gpu -L gpu --output-on-failure >"$out/ctest-gpu.log" 2>&1
mark "ctest rc=$?"; grep -E "tests passed|Failed|\*\*\*" "$out/ctest-gpu.log" | tail -8
timeout 40 build/gpu/memsweep_bench_loss --device cuda --rounds 5 --tokens 4096 >"$out/bench-loss-4096.txt" 2>&1
mark "bench 4096 rc=$?"
timeout 40 build/gpu/memsweep_bench_loss --device cuda --rounds 5 --tokens 8192 >"$out/bench-loss-8192.txt" 2>&1
mark "bench 8192 rc=$?"
cp .devrun/qwen-plan-fused.toml experiments/zz-qwen-plan-fused.toml
db=$out/gpu.db
for e in gpu-quickstart:110 zz-qwen-plan-fused:170; do
  f=${e%%:*}; lim=${e##*:}; name=$(awk -F'"' '/^name/ {print $2; exit}' experiments/$f.toml)
  echo "=== $name" >>"$out/runs.log"
  timeout "$lim" $m run experiments/$f.toml --db "$db" >>"$out/runs.log" 2>&1
  mark "$name rc=$?"
  { echo "=== $name"; $m compare --db "$db" --experiment "$name"
    $m query --db "$db" "SELECT cell_index, status, peak_allocated_bytes, peak_reserved_bytes,
      activations_bytes, largest_allocation_bytes, largest_allocation_stage, largest_allocation_what,
      tokens_per_s, final_loss, substr(error, 1, 120) FROM run_summary WHERE experiment = '$name' ORDER BY cell_index"
  } >>"$out/compare.txt" 2>&1
done
cat "$out/times.txt"
