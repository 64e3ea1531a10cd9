#!/usr/bin/env bash
# Platform.CompilesCudaSourcesWithoutAToolkit: configures the tree as on a machine without a CUDA
# toolkit (MEMSWEEP_IGNORE_CUDA_TOOLKIT=ON: CUDA headers from the torch wheel, plus the crt/
# headers tools/setup-deps installs) and compiles every translation unit that includes a CUDA or
# c10d-NCCL header (the object library memsweep_cuda_header_sources, core/CMakeLists.txt). A
# header such a machine lacks fails here, not in a user's first build (docs/building.md).
#   cuda_without_toolkit_test.sh SOURCE_DIR TORCH_DIR GLOO_INCLUDE
set -euo pipefail
source_dir=$1 torch_dir=$2 gloo_include=$3
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
if ! out=$(cmake -S "$source_dir" -B "$d" -G Ninja -DMEMSWEEP_TORCH="$torch_dir" \
             -DMEMSWEEP_IGNORE_CUDA_TOOLKIT=ON -DMEMSWEEP_BUILD_TESTS=OFF \
             -DMEMSWEEP_BUILD_BENCH=OFF -DMEMSWEEP_GLOO_INCLUDE="$gloo_include" 2>&1); then
  echo "$out"
  echo "FAIL: configuring without a CUDA toolkit failed"
  exit 1
fi
if ! grep -q 'CUDA: ON (wheel headers' <<<"$out"; then
  grep 'memsweep:' <<<"$out" || true
  echo "FAIL: without a toolkit the build has no CUDA (run tools/setup-deps: it installs the" \
       "crt/ headers the wheel lacks)"
  exit 1
fi
grep 'CUDA: ON' <<<"$out"
# Only the wheel's headers: no toolkit folder on any include path of the tree.
if grep -E -- '-I[^ ]*/usr/local/cuda|-isystem [^ ]*/usr/local/cuda' "$d/compile_commands.json"; then
  echo "FAIL: a CUDA toolkit's include folder is on the include path"
  exit 1
fi
# (pipefail: the build's own status decides)
if ! cmake --build "$d" --target memsweep_cuda_header_sources 2>&1 | tail -n 40; then
  echo "FAIL: a source that includes CUDA headers does not compile without a toolkit"
  exit 1
fi
# Every header those sources read (ninja's record of the compiler's dependencies): none may come
# from a toolkit copy the compiler finds on its own (some images put CUDA's headers in
# /usr/local/include, where a machine without the toolkit has none).
deps=$(ninja -C "$d" -t deps)
headers=$(grep -cE '^ +/' <<<"$deps" || true)
echo "the CUDA sources read $headers headers"
[ "$headers" -gt 100 ] || { echo "FAIL: ninja recorded no headers for them"; exit 1; }
if grep -E '^ +/usr/local/(include|cuda)' <<<"$deps" | sort -u | head -5 | grep .; then
  echo "FAIL: headers above came from outside the wheel and memsweep's cache (a toolkit copy);" \
       "a machine without the toolkit lacks them"
  exit 1
fi
objects=$(find "$d" -path '*memsweep_cuda_header_sources.dir*' -name '*.o' | wc -l)
echo "compiled $objects translation units with CUDA or c10d-NCCL headers, without a toolkit"
[ "$objects" -ge 2 ] || { echo "FAIL: expected at least 2 (cuda_meter.cc, nccl_communicator.cc)"; exit 1; }
