#!/usr/bin/env bash
# bench/sorted.sh: the sorted shape. One sorted (Z-cube, Hilbert) rewrite job
# (one output) of compactord on two clustering columns of DuckDB-written
# sources (bench/gen.DuckShape "matched") against DuckDB's
#   COPY (SELECT * FROM read_parquet([...]) ORDER BY event_time, amount) TO ... (FORMAT parquet, COMPRESSION zstd)
# run as interleaved pairs, with compactord also at GOMAXPROCS=1 and through
# the external row sort (-nocopy: the path every sorted job took before the
# column path) beside it. Prints per run one JSON line (load average, CPU
# the rest of the machine used meanwhile), then the load and the medians:
# wall s, CPU s, peak RSS MiB, the ratios to DuckDB, GOMAXPROCS 2 vs 1.
# See bench/README.md.
#
#   bash bench/sorted.sh                     # 60 files x 60k rows (3.6M rows), 3 pairs
#   PAIRS=5 SORT=event_time,amount bash bench/sorted.sh
#   ROWSORT=0 bash bench/sorted.sh           # without the row-sort runs
#   BUDGET=1 bash bench/sorted.sh            # adds runs at a memory budget of a quarter of the data
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-3}
FILES=${FILES:-60}
ROWS=${ROWS:-60000}
SORT=${SORT:-event_time,amount}
ROWSORT=${ROWSORT:-1}
BUDGET=${BUDGET:-0}
# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_setup

bench_shape_table matched
# A quarter of the sources' bytes: past it the column path spills sorted
# runs to temp files and merges them.
QUARTER=$(( $(cat "$TABLE"/*.parquet | wc -c) / 4 ))
SHAPE="sorted($SORT)"
RESULTS="$WORK/sorted.jsonl"
: > "$RESULTS"
ONE=(-mode compactord -jobs 1 -target 1073741824 -table "$TABLE" -sort "$SORT")
for _ in $(seq "$PAIRS"); do
  sync
  timed compactord "$WORK/bin/rewritebench" "${ONE[@]}" >> "$RESULTS"
  timed_duckdb --order "${SORT//,/, }"
  GOMAXPROCS=1 timed compactord-P1 "$WORK/bin/rewritebench" "${ONE[@]}" >> "$RESULTS"
  if [ "$ROWSORT" = 1 ]; then
    timed rowsort "$WORK/bin/rewritebench" "${ONE[@]}" -nocopy >> "$RESULTS"
  fi
  if [ "$BUDGET" = 1 ]; then
    timed budget-quarter "$WORK/bin/rewritebench" "${ONE[@]}" -colmem "$QUARTER" -sortmem "$QUARTER" >> "$RESULTS"
  fi
done
cat "$RESULTS"
node -e '
  const { med, summary } = require("./bench/results.cjs");
  const { lines, m } = summary(process.argv[1]);
  const d = (k) => m("duckdb", k);
  console.log("| run | wall s | CPU s | peak RSS MiB | throughput vs DuckDB | CPU vs DuckDB | RSS vs DuckDB |");
  console.log("|---|---:|---:|---:|---:|---:|---:|");
  for (const label of ["compactord", "compactord-P1", "rowsort", "budget-quarter", "duckdb"]) {
    if (!lines.some((r) => r.label === label)) continue;
    const c = (k) => m(label, k);
    console.log(`| ${label} | ${c("seconds").toFixed(2)} | ${c("cpuSeconds").toFixed(2)} | ${c("peakRssMiB").toFixed(0)} | ${(d("seconds") / c("seconds")).toFixed(2)}x | ${(c("cpuSeconds") / d("cpuSeconds")).toFixed(2)}x | ${(c("peakRssMiB") / d("peakRssMiB")).toFixed(2)}x |`);
  }
  console.log(`GOMAXPROCS 2 vs 1 (column path): ${(m("compactord-P1", "seconds") / m("compactord", "seconds")).toFixed(2)}x`);
  if (lines.some((r) => r.label === "rowsort")) console.log(`column path vs row sort: ${(m("rowsort", "seconds") / m("compactord", "seconds")).toFixed(2)}x faster`);' "$RESULTS"
