#!/usr/bin/env bash
# Installs memsweep into a temporary prefix, builds tests/sdk/example_plugin against it as a
# third party would, and runs an experiment with the plugin through the installed binary.
#   sdk_test.sh <build dir> <source dir>
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cp -r "$source_dir/tests/sdk/example_plugin" "$work/example"
sed "s#@MEMSWEEP_SOURCE_DIR@#$source_dir#" "$source_dir/tests/sdk/example_plugin/experiment.toml" \
  > "$work/example/experiment.toml"
cmake -S "$work/example" -B "$work/example/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
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
