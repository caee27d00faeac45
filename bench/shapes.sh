#!/usr/bin/env bash
# bench/shapes.sh: one rewrite job (one output) of compactord against DuckDB's
# COPY on the same DuckDB-written sources, per source shape (see
# bench/gen.DuckShape: matched, drift, reorder, alpha, widen, dv), run as
# interleaved pairs; also compactord at GOMAXPROCS=1 beside the default.
# Prints per run one JSON line (with the load average and the CPU the rest
# of the machine used meanwhile), then the load and per shape the medians:
# wall s, CPU s, peak RSS MiB, compactord/DuckDB ratios and the GOMAXPROCS
# 2 vs 1 speed-up. See bench/README.md.
#
#   bash bench/shapes.sh                       # 60 files x 50k rows, 3 pairs
#   SHAPES="drift dv" PAIRS=5 bash bench/shapes.sh
#   BEFORE=/path/to/older/rewritebench bash bench/shapes.sh   # adds its runs
set -euo pipefail
cd "$(dirname "$0")/.."
SHAPES=${SHAPES:-matched drift reorder alpha widen dv}
PAIRS=${PAIRS:-3}
FILES=${FILES:-60}
ROWS=${ROWS:-50000}
# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_setup

RESULTS="$WORK/shapes.jsonl"
: > "$RESULTS"
for SHAPE in $SHAPES; do
  bench_shape_table "$SHAPE"
  DELETED=()
  [ -f "$TABLE/deleted.csv" ] && DELETED=(--deleted "$TABLE/deleted.csv")
  # One job writing one output: the target holds the whole table.
  ONE=(-mode compactord -jobs 1 -target 1073741824 -table "$TABLE")
  for _ in $(seq "$PAIRS"); do
    sync
    timed compactord "$WORK/bin/rewritebench" "${ONE[@]}" >> "$RESULTS"
    timed_duckdb "${DELETED[@]}"
    GOMAXPROCS=1 timed compactord-P1 "$WORK/bin/rewritebench" "${ONE[@]}" >> "$RESULTS"
    if [ -n "${BEFORE:-}" ]; then # another build of rewritebench, to compare against
      timed compactord-before "$BEFORE" "${ONE[@]}" >> "$RESULTS"
      GOMAXPROCS=1 timed compactord-before-P1 "$BEFORE" "${ONE[@]}" >> "$RESULTS"
    fi
  done
done
cat "$RESULTS"
node -e '
  const { read, med, loadLine } = require("./bench/results.cjs");
  const lines = read(process.argv[1]);
  const shapes = [...new Set(lines.map((r) => r.shape))];
  console.log(loadLine(lines));
  console.log("| shape | compactord wall s | CPU s | peak RSS MiB | GOMAXPROCS=1 wall s | CPU s | DuckDB wall s | CPU s | peak RSS MiB | throughput vs DuckDB | CPU vs DuckDB | RSS vs DuckDB | GOMAXPROCS 2 vs 1 |");
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const s of shapes) {
    const m = (label, k) => med(lines.filter((r) => r.shape === s && r.label === label).map((r) => r[k]));
    const c = (k) => m("compactord", k), d = (k) => m("duckdb", k), p = (k) => m("compactord-P1", k), b = (k) => m("compactord-before", k), bp = (k) => m("compactord-before-P1", k);
    if (lines.some((r) => r.shape === s && r.label === "compactord-before")) {
      console.log(`before: ${s} wall ${b("seconds").toFixed(2)} s, CPU ${b("cpuSeconds").toFixed(2)} s, peak RSS ${b("peakRssMiB").toFixed(0)} MiB; GOMAXPROCS=1 wall ${bp("seconds").toFixed(2)} s (2 vs 1: ${(bp("seconds") / b("seconds")).toFixed(2)}x)`);
    }
    console.log(`| ${s} | ${c("seconds").toFixed(2)} | ${c("cpuSeconds").toFixed(2)} | ${c("peakRssMiB").toFixed(0)} | ${p("seconds").toFixed(2)} | ${p("cpuSeconds").toFixed(2)} | ${d("seconds").toFixed(2)} | ${d("cpuSeconds").toFixed(2)} | ${d("peakRssMiB").toFixed(0)} | ${(d("seconds") / c("seconds")).toFixed(2)}x | ${(c("cpuSeconds") / d("cpuSeconds")).toFixed(2)}x | ${(c("peakRssMiB") / d("peakRssMiB")).toFixed(2)}x | ${(p("seconds") / c("seconds")).toFixed(2)}x |`);
  }' "$RESULTS"
