#!/usr/bin/env bash
# The estimate against the measurement (not run by ctest; docs/estimate.md, docs/benchmarks.md):
# runs each experiment with `memsweep run` on this machine's CPU, estimates it with `memsweep
# estimate`, and prints per cell the measured and estimated peak allocated and reserved bytes and
# the signed error, then the distribution over every cell both measured (status ok) and
# estimated: median and max |error|, and how many OOM/fit verdicts agree.
# Usage: tests/bench/estimate_accuracy.sh EXPERIMENT.toml... (default: experiments/quickstart.toml)
# Needs jq. Cells the estimate cannot run (unsupported) are listed and left out of the figures.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${MEMSWEEP:-$here/build/release/memsweep}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
[ $# -gt 0 ] || set -- "$here/experiments/quickstart.toml"
rows="$work/rows.tsv"
: >"$rows"
for file in "$@"; do
  name=$(awk -F'"' '/^name *=/ {print $2; exit}' "$file")
  "$bin" run "$file" --db "$work/m.db" >"$work/run.log" 2>&1 || true
  "$bin" query --db "$work/m.db" --format csv "SELECT cell_index, status, peak_allocated_bytes,
    peak_reserved_bytes FROM run_summary WHERE experiment = '$name' ORDER BY cell_index" |
    tr -d '\r' | tail -n +2 | tr ',' '\t' | sort -k1,1 >"$work/measured.tsv"
  "$bin" estimate "$file" --format json |
    jq -r '.cells[] | [.cell, .status, (.peak_allocated_bytes // ""), (.peak_reserved_bytes // ""),
      ((.message // "") | .[0:90])] | @tsv' | sort -k1,1 >"$work/estimated.tsv"
  join -t $'\t' "$work/measured.tsv" "$work/estimated.tsv" | sed "s/^/$name\t/" >>"$rows"
done
awk -F'\t' '
  function abs(x) { return x < 0 ? -x : x }
  BEGIN { printf "%-24s %4s %-8s %-11s %16s %16s %9s %16s %16s %9s\n", "experiment", "cell",
          "measured", "estimate", "alloc measured", "alloc estimated", "error", "reserved meas.",
          "reserved est.", "error" }
  {
    ex = $1; cell = $2; ms = $3; ma = $4; mr = $5; es = $6; ea = $7; er = $8; why = $9
    if (es == "unsupported" || es == "failed") {
      printf "%-24s %4s %-8s %-11s %s\n", ex, cell, ms, es, why; unsupported++; next
    }
    if (ms != "ok" && ms != "oom") {  # pending, failed, timeout: no measurement to compare
      printf "%-24s %4s %-8s %-11s (not measured)\n", ex, cell, ms, es; next
    }
    verdict_m = (ms == "oom") ? "oom" : "fit"; verdict_e = (es == "oom") ? "oom" : "fit"
    verdicts++; if (verdict_m == verdict_e) agree++
    if (ms != "ok" || es == "oom") {
      printf "%-24s %4s %-8s %-11s\n", ex, cell, ms, es; next
    }
    ea_err = (ea - ma) / ma; er_err = (er - mr) / mr
    printf "%-24s %4s %-8s %-11s %16.0f %16.0f %+8.3f%% %16.0f %16.0f %+8.3f%%\n", ex, cell, ms, es, ma,
           ea, 100 * ea_err, mr, er, 100 * er_err
    n++; a[n] = abs(ea_err); r[n] = abs(er_err)
  }
  function median(v, k,   i, j, t) {
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
  }
  END {
    if (n == 0) { print "no cell both measured and estimated"; exit }
    amax = 0; rmax = 0
    for (i = 1; i <= n; i++) { if (a[i] > amax) amax = a[i]; if (r[i] > rmax) rmax = r[i] }
    printf "\n%d cells measured ok and estimated: peak allocated |error| median %.3f%%, max %.3f%%; ", n, 100 * median(a, n), 100 * amax
    printf "peak reserved |error| median %.3f%%, max %.3f%%\n", 100 * median(r, n), 100 * rmax
    printf "OOM/fit verdicts agree in %d of %d cells; %d cells not estimated (unsupported or failed)\n", agree, verdicts, unsupported
  }' "$rows"
