#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:?}
t0=$(date +%s)
mark() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$out/compare.txt"; }
tools/setup-deps --from .debs >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
prefix=$(cat "${XDG_CACHE_HOME:-$HOME/.cache}/memsweep/prefix-path")
libdir=$prefix/usr/lib; for d in "$prefix"/usr/lib/*-linux-gnu; do [ -d "$d" ] && libdir=$d; done
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CMAKE_PREFIX_PATH="$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
MEMSWEEP_BUILD_DIR=build/gpu tools/build -j 16 --target memsweep memsweep-plugins memsweep_gpu_tests \
  >>"$out/build.log" 2>&1 || { tail -60 "$out/build.log"; mark build failed; exit 1; }
mark build
m=build/gpu/memsweep
timeout 60 ctest --test-dir build/gpu -L gpu -R 'GpuLoss|GpuAdapter.Qlora' --output-on-failure >"$out/ctest-gpu.log" 2>&1
mark "ctest rc=$?"; grep -E "tests passed|Failed|\*\*\*|^budget" "$out/ctest-gpu.log" | tail -8
cp .devrun/diag.toml experiments/zz-diag.toml
db=$out/seeds.db
for e in zz-diag:40 gpu-seed-qwen-lora:180 gpu-seed-phi4mini-qlora:120; do
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
$m query --db "$db" "SELECT r.cell_index, t.seq, t.step, t.stage, t.allocated_bytes, t.peak_bytes
  FROM runs r JOIN experiments x ON x.id = r.experiment_id JOIN memory_timeline t ON t.run_id = r.id
  WHERE x.name = 'diag-qlora-small' AND t.step <= 0 ORDER BY r.id, t.seq" >"$out/diag.txt" 2>&1
grep "^\[" "$out/compare.txt"
