#!/usr/bin/env bash
# Installs memsweep into a temporary prefix and builds two plugins against it as a third party
# would: the guide's example (callbacks/peak-logger, its code taken from docs/plugin-guide.md) and
# memsweep's own packing/pack from its folder (tests/sdk/pack_plugin). Runs an experiment with each through the installed binary;
# the out-of-tree pack must give the same losses and peaks as the built-in one.
#   sdk_test.sh <build dir> <source dir>
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
# The example's two files come from docs/plugin-guide.md's text: the first ```cpp and the first
# ```cmake block after its heading "## The example".
guide_block() {
  awk -v lang="$1" '/^## The example/ {in_example = 1}
    in_example && !done && $0 == "```" lang {copy = 1; next}
    copy && $0 == "```" {copy = 0; done = 1}
    copy' "$source_dir/docs/plugin-guide.md"
}
mkdir -p "$work/example"
guide_block cpp > "$work/example/plugin.cc"
guide_block cmake > "$work/example/CMakeLists.txt"
[ -s "$work/example/plugin.cc" ] && [ -s "$work/example/CMakeLists.txt" ] || {
  echo "FAIL: docs/plugin-guide.md has no example code blocks"; exit 1; }
sed "s#@MEMSWEEP_SOURCE_DIR@#$source_dir#" "$source_dir/tests/sdk/example_plugin/experiment.toml" \
  > "$work/example/experiment.toml"
# Configured as the guide says, with no build type: find_package(memsweep) makes it Release.
cmake -S "$work/example" -B "$work/example/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
grep -qx "CMAKE_BUILD_TYPE:STRING=Release" "$work/example/build/CMakeCache.txt" || {
  echo "FAIL: the example's build type is not Release by default:"
  grep "^CMAKE_BUILD_TYPE" "$work/example/build/CMakeCache.txt"; exit 1; }
ninja -C "$work/example/build" -t commands peak_logger.so | grep -- " -O3 .*plugin.cc" >/dev/null || {
  echo "FAIL: the example plugin is not compiled optimised:"
  ninja -C "$work/example/build" -t commands peak_logger.so; exit 1; }
cmake --build "$work/example/build" >/dev/null

"$work/prefix/bin/memsweep" plugins --path "$work/example/build/peak_logger.so" \
  | grep -A3 "peak-logger 0.1.0"
cd "$work/example"
"$work/prefix/bin/memsweep" run experiment.toml --db "$work/r.db"
figures=$("$work/prefix/bin/memsweep" query --db "$work/r.db" --format csv \
  "SELECT p.name, m.value FROM run_plugins p JOIN plugin_metrics m ON m.run_id = p.run_id
   WHERE p.slot = 'callbacks' AND m.name = 'peak_logger.samples'")
echo "$figures"
grep -q "peak-logger,2.0" <<<"$figures" || {
  echo "FAIL: the plugin's figures are not in the results database"; exit 1; }
echo "SDK example plugin built against the installed SDK and ran: OK"

# Only the SDK is installed: no core header, nothing under include/ but memsweep/*.h.
if find "$work/prefix/include" -path '*/core/*' | grep -q .; then
  echo "FAIL: core headers are installed with the SDK"; exit 1
fi

# packing/pack out of tree: first the built-in one, then the same sources built against the SDK.
sed "s#@MEMSWEEP_SOURCE_DIR@#$source_dir#" "$source_dir/tests/sdk/pack_plugin/experiment.toml" \
  > "$work/pack.toml"
steps_of() {
  "$work/prefix/bin/memsweep" query --db "$1" --format csv \
    "SELECT step, loss, peak_allocated_bytes FROM step_metrics ORDER BY step"
}
(cd "$work" && "$work/prefix/bin/memsweep" run pack.toml --db "$work/builtin.db" > /dev/null)
cmake -S "$source_dir/tests/sdk/pack_plugin" -B "$work/pack-build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release \
  -DPACK_SOURCE_DIR="$source_dir/plugins/packing/pack" >/dev/null
cmake --build "$work/pack-build" >/dev/null
rm "$work/prefix/lib/memsweep/plugins/packing-pack.so"
printf '\n[plugins]\npaths = ["%s"]\n' "$work/pack-build/packing_pack.so" >> "$work/pack.toml"
"$work/prefix/bin/memsweep" plugins --path "$work/pack-build/packing_pack.so" | grep -A1 "pack "
(cd "$work" && "$work/prefix/bin/memsweep" run pack.toml --db "$work/oot.db" > /dev/null)
builtin=$(steps_of "$work/builtin.db")
oot=$(steps_of "$work/oot.db")
echo "$oot"
[ "$(wc -l <<<"$oot")" -ge 4 ] || { echo "FAIL: the out-of-tree pack run has no steps"; exit 1; }
[ "$builtin" = "$oot" ] || {
  echo "FAIL: out-of-tree packing/pack differs from the built-in one:"; echo "$builtin"; exit 1; }
echo "packing/pack built out of tree against the installed SDK: same losses and peaks: OK"
