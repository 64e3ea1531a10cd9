#!/usr/bin/env bash
# One device call: set up from .debs, build, gpu tests, the three full-size seed experiments.
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
MEMSWEEP_BUILD_DIR=build/gpu tools/build -j 16 --target memsweep memsweep-plugins memsweep_gpu_tests \
  >>"$out/build.log" 2>&1 || { tail -60 "$out/build.log"; mark build failed; exit 1; }
mark build
m=build/gpu/memsweep
{ nvidia-smi; $m --version; lscpu | grep 'Model name'; } >"$out/env.txt" 2>&1
timeout 130 ctest --test-dir build/gpu -L gpu --output-on-failure >"$out/ctest-gpu.log" 2>&1
mark "ctest rc=$?"; grep -E "tests passed|Failed|\*\*\*" "$out/ctest-gpu.log" | tail -8
db=$out/seeds.db
for e in gpu-seed-llama-loss:70 gpu-seed-phi4mini-qlora:100 gpu-seed-qwen-lora:120; do
  name=${e%%:*}; lim=${e##*:}
  echo "=== $name" >>"$out/runs.log"
  timeout "$lim" $m run experiments/$name.toml --db "$db" >>"$out/runs.log" 2>&1
  mark "$name rc=$?"
  { echo "=== $name"; $m compare --db "$db" --experiment "$name"
    $m query --db "$db" "SELECT cell_index, status, peak_allocated_bytes, peak_reserved_bytes,
      largest_allocation_bytes, largest_allocation_stage, largest_allocation_what, tokens_per_s,
      final_loss, error FROM run_summary WHERE experiment = '$name' ORDER BY cell_index"
  } >>"$out/compare.txt" 2>&1
done
tail -5 "$out/compare.txt"; cat "$out/times.txt"
