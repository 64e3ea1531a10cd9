#!/usr/bin/env bash
# Device call: the loss benchmark (loss/fused in token chunks and in vocabulary blocks, with each
# product timed alone) at 4,096 and 8,192 tokens, then tools/gpu-check in full. Everything comes
# back as a few files: the two benchmark tables, gpu-check's stdout and a tarball of its logs.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:?}
t0=$(date +%s)
mark() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$out/times.txt"; }
nvidia-smi -L > "$out/times.txt" 2>&1
tools/setup-deps --from .debs > /tmp/setup.log 2>&1; mark "setup-deps rc=$?"
prefix=$(cat "${XDG_CACHE_HOME:-$HOME/.cache}/memsweep/prefix-path")
libdir=$prefix/usr/lib; for d in "$prefix"/usr/lib/*-linux-gnu; do [ -d "$d" ] && libdir=$d; done
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
MEMSWEEP_BUILD_DIR=build/gpu tools/build -j "$(nproc)" --target memsweep_bench_loss \
  > /tmp/build-bench.log 2>&1; mark "bench build rc=$?"
tail -5 /tmp/build-bench.log
for n in 4096 8192; do
  timeout 150 build/gpu/memsweep_bench_loss --device cuda --rounds 5 --tokens $n --gemms 1 \
    > "$out/bench-loss-$n.txt" 2>&1
  mark "bench $n rc=$?"
done
timeout $(( 575 - ($(date +%s) - t0) )) tools/gpu-check --debs .debs --out /tmp/gc \
  > "$out/gpu-check-stdout.log" 2>&1
mark "gpu-check rc=$?"
cp /tmp/build-bench.log /tmp/gc/ 2>/dev/null
tar -czf "$out/gpu-check-logs.tgz" -C /tmp gc --exclude='*.db' 2>/dev/null
cat "$out/bench-loss-4096.txt"
grep -E "gpu-check:|Passed|Failed|tests passed" "$out/gpu-check-stdout.log" | tail -40
mark done
