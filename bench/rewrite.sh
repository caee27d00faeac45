#!/usr/bin/env bash
# bench/rewrite.sh: rewrite throughput and memory of compactord vs DuckDB vs a
# bare parquet-go loop on the same small files. See docs/benchmarks.md, "Rewrite benchmark".
#
#   bash bench/rewrite.sh            # ~1 GiB of 1-4 MiB files, plus the 2 GiB RSS run
#   SIZE=256MiB BIG=512MiB bash bench/rewrite.sh   # quicker
#
# Tables are generated once under $WORK (default bench/out, gitignored) and
# reused. Each tool is run under /usr/bin/time for its peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE=${SIZE:-1GiB}
BIG=${BIG:-2GiB}
# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_setup

gen() { # gen SIZE -> table dir
  local dir="$WORK/table-$1"
  if [ ! -f "$dir/_delta_log/00000000000000000000.json" ]; then
    rm -rf "$dir"
    echo "generating $1 of 1-4 MiB parquet files in $dir" >&2
    "$WORK/bin/gendata" -dir "$dir" -size "$1" -min 1MiB -max 4MiB
  fi
  echo "$dir"
}

TABLE=$(gen "$SIZE")
BYTES=$(find "$TABLE" -maxdepth 1 -name '*.parquet' -printf '%s\n' | awk '{s+=$1} END {print s}')
NFILES=$(find "$TABLE" -maxdepth 1 -name '*.parquet' | wc -l)
echo "input: $NFILES files, $((BYTES / 1048576)) MiB ($TABLE)" >&2
find "$TABLE" -maxdepth 1 -name '*.parquet' | sort > "$WORK/files.txt"

RESULTS="$WORK/results.jsonl"
: > "$RESULTS"
sync
timed compactord "$WORK/bin/rewritebench" -mode compactord -table "$TABLE" >> "$RESULTS"
sync
timed compactord-1job "$WORK/bin/rewritebench" -mode compactord -jobs 1 -table "$TABLE" >> "$RESULTS"
rm -rf "$WORK/pq-out"; sync
timed parquet-go "$WORK/bin/rewritebench" -mode parquetgo -table "$TABLE" -out "$WORK/pq-out" >> "$RESULTS"
rm -rf "$WORK/pq-out" "$WORK/duck.parquet"; sync
line=$(timed duckdb node tools/duckcheck/copy.mjs "$WORK/duck.parquet" "@$WORK/files.txt")
node -e '
  const r = JSON.parse(process.argv[1]); const bytes = Number(process.argv[2]);
  r.bytesIn = bytes; r.mbps = bytes / 1048576 / r.seconds; console.log(JSON.stringify(r));' "$line" "$BYTES" >> "$RESULTS"
rm -f "$WORK/duck.parquet"

BIGTABLE=$(gen "$BIG")
sync
timed "compactord-$BIG" "$WORK/bin/rewritebench" -mode compactord -table "$BIGTABLE" >> "$RESULTS"

node -e '
  const lines = require("./bench/results.cjs").read(process.argv[1]);
  console.log("tool                    input MiB   seconds      MB/s   CPU s   MB per CPU s   peak RSS MiB");
  for (const r of lines) {
    console.log(r.label.padEnd(22), (r.bytesIn / 1048576).toFixed(0).padStart(10),
      r.seconds.toFixed(2).padStart(9), r.mbps.toFixed(1).padStart(9), r.cpuSeconds.toFixed(1).padStart(7),
      (r.bytesIn / 1048576 / r.cpuSeconds).toFixed(1).padStart(14), r.peakRssMiB.toFixed(0).padStart(14));
  }
  const c = lines.find(r => r.label === "compactord"), d = lines.find(r => r.label === "duckdb");
  console.log(`compactord/DuckDB: throughput ${(c.mbps / d.mbps).toFixed(2)}, CPU efficiency ${(d.cpuSeconds / c.cpuSeconds).toFixed(2)}, peak RSS ${(c.peakRssMiB / d.peakRssMiB).toFixed(2)}`);
' "$RESULTS"
