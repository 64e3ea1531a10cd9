set -uo pipefail
out=${OUT:?}; t0=$(date +%s)
tools/setup-deps --from .debs > /tmp/s.log 2>&1 || { tail -5 /tmp/s.log; exit 1; }
prefix=$(cat "${XDG_CACHE_HOME:-$HOME/.cache}/memsweep/prefix-path"); libdir=$prefix/usr/lib; for d in "$prefix"/usr/lib/*-linux-gnu; do [ -d "$d" ] && libdir=$d; done
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
MEMSWEEP_BUILD_DIR=build/gpu tools/build -j 16 --target memsweep memsweep-plugins memsweep_gpu_tests > $out/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-t0 )) s"
nvidia-smi -L
timeout $(( 285 - ($(date +%s)-t0) )) ctest --test-dir build/gpu -L gpu 2>&1 | tee $out/ctest-gpu.log | grep -E "Test +#|tests passed|tests failed"
echo "done $(( $(date +%s)-t0 )) s"
