#!/usr/bin/env bash
# bench/lightweight.sh: the lightweight tier measured as bench/sorted.sh
# measures the sorted rewrite. On the same DuckDB-written sources
# (bench/gen.DuckShape "matched", 60 files x 60k rows), one job, one output:
#   lightweight     the planner's lightweight plan (rewritebench -plan
#                   lightweight): the sources in the (min, max) order of
#                   $COLUMN, rows not sorted;
#   lightweight-P1  the same at GOMAXPROCS=1;
#   unsorted        the unsorted rewrite of the same files (bins in file order);
#   duckdb          COPY (SELECT * FROM read_parquet([...]) ORDER BY $ORDER) TO ... (FORMAT parquet, COMPRESSION zstd)
# run as interleaved rounds. Prints per run one JSON line (load average,
# CPU the rest of the machine used meanwhile), then the load and the
# medians: wall s, CPU s, peak RSS MiB, the ratios to DuckDB and to the
# unsorted rewrite, GOMAXPROCS 2 vs 1. See bench/README.md.
#
#   bash bench/lightweight.sh                # 60 files x 60k rows (3.6M rows), 3 rounds
#   PAIRS=5 ORDER=event_time,amount bash bench/lightweight.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-3}
FILES=${FILES:-60}
ROWS=${ROWS:-60000}
COLUMN=${COLUMN:-event_time}
ORDER=${ORDER:-$COLUMN}
# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_setup

bench_shape_table matched
SHAPE="lightweight($COLUMN)"
RESULTS="$WORK/lightweight.jsonl"
: > "$RESULTS"
ONE=(-mode compactord -jobs 1 -target 1073741824 -table "$TABLE")
LW=("${ONE[@]}" -plan lightweight -sort "$COLUMN" -lightweight-column "$COLUMN")
for _ in $(seq "$PAIRS"); do
  sync
  timed lightweight "$WORK/bin/rewritebench" "${LW[@]}" >> "$RESULTS"
  timed_duckdb --order "${ORDER//,/, }"
  timed unsorted "$WORK/bin/rewritebench" "${ONE[@]}" >> "$RESULTS"
  GOMAXPROCS=1 timed lightweight-P1 "$WORK/bin/rewritebench" "${LW[@]}" >> "$RESULTS"
done
cat "$RESULTS"
node -e '
  const { med, summary } = require("./bench/results.cjs");
  const { lines, m } = summary(process.argv[1]);
  const lw = lines.find((r) => r.label === "lightweight");
  console.log(`lightweight plan: ${lw.jobs} job(s), files ordered by ${lw.orderedBy || "size"}, ${lw.outputs} output(s), ${lw.rows} rows`);
  console.log("| run | wall s | CPU s | peak RSS MiB | throughput vs DuckDB | CPU vs DuckDB | RSS vs DuckDB | throughput vs unsorted | CPU vs unsorted |");
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const label of ["lightweight", "lightweight-P1", "unsorted", "duckdb"]) {
    const c = (k) => m(label, k);
    const d = (k) => m("duckdb", k), u = (k) => m("unsorted", k);
    console.log(`| ${label} | ${c("seconds").toFixed(2)} | ${c("cpuSeconds").toFixed(2)} | ${c("peakRssMiB").toFixed(0)} | ${(d("seconds") / c("seconds")).toFixed(2)}x | ${(c("cpuSeconds") / d("cpuSeconds")).toFixed(2)}x | ${(c("peakRssMiB") / d("peakRssMiB")).toFixed(2)}x | ${(u("seconds") / c("seconds")).toFixed(2)}x | ${(c("cpuSeconds") / u("cpuSeconds")).toFixed(2)}x |`);
  }
  // Per-round ratios (interleaved pairs), then their medians.
  const rounds = (label) => lines.filter((r) => r.label === label);
  const pair = (a, b, k) => rounds(a).map((r, i) => rounds(b)[i][k] / r[k]);
  console.log(`medians of the interleaved pairs: lightweight throughput vs DuckDB ${med(pair("lightweight", "duckdb", "seconds")).toFixed(2)}x, CPU vs DuckDB ${(1 / med(pair("lightweight", "duckdb", "cpuSeconds"))).toFixed(2)}x, throughput vs unsorted ${med(pair("lightweight", "unsorted", "seconds")).toFixed(2)}x, GOMAXPROCS 2 vs 1 ${med(pair("lightweight", "lightweight-P1", "seconds")).toFixed(2)}x`);' "$RESULTS"
