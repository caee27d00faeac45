#!/usr/bin/env bash
# bench/autoclust.sh: the CLUSTER BY AUTO benchmark (bench/autoclust) on
# real tables: a synthetic table of 8 long columns (default 2M rows)
# written as 1000 small parquet files, copied once per workload; three
# workloads of 500 predicates pushed as evidence; the daemon's runner runs
# the autocluster operation (sample, advise, decide, set the
# delta.clustering key) and the compaction that clusters the table on it
# with the Z-cube writer at a 512 KiB target. Files read by 500 held-out
# predicates are counted with the files' min/max statistics from the Delta
# log, before, binpacked and after, against the best key of at most two
# columns found by clustering a copy on each of the 36 keys for real; the
# estimator's error is its figure against the measured one. Results go to
# bench/out/autoclust/ (the tables under bench/out/autoclust/tables, the
# per-key copies removed as they are measured).
#
#   bash bench/autoclust.sh
#   ROWS=300000 INGEST_ROWS=500 TARGET=64KiB MIN_TABLE=2MiB MAX_UNCLUSTERED=1MiB bash bench/autoclust.sh
#   SHORTLIST=3 bash bench/autoclust.sh   # cluster only each workload's 3 best estimated keys
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${WORK:-bench/out/autoclust}
mkdir -p "$WORK"
go build -o "$WORK/autoclust" ./bench/autoclust
uptime | tee "$WORK/uptime.txt"
nice "$WORK/autoclust" -rows "${ROWS:-2000000}" -ingest-rows "${INGEST_ROWS:-2000}" -target "${TARGET:-512KiB}" \
  -min-table-size "${MIN_TABLE:-16MiB}" -max-unclustered "${MAX_UNCLUSTERED:-8MiB}" -shortlist "${SHORTLIST:-0}" \
  -work "$WORK/tables" -json-out "$WORK/result.json" | tee "$WORK/result.txt"
uptime | tee -a "$WORK/uptime.txt"
