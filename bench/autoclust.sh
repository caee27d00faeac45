#!/usr/bin/env bash
# bench/autoclust.sh: the CLUSTER BY AUTO benchmark (bench/autoclust): a
# synthetic table of 8 columns (default 2M rows, 200 files at the target
# size), three workloads of 500 predicates; what the advisor picks from a
# 20k-row sample, files read by 500 held-out predicates before and after,
# the best key of at most two columns by exhaustive search, and the
# estimator's error. Results go to bench/out/autoclust/.
#
#   bash bench/autoclust.sh
#   ROWS=300000 PER_FILE=2000 bash bench/autoclust.sh
set -euo pipefail
WORK=${WORK:-bench/out/autoclust}
ROWS=${ROWS:-2000000}
PER_FILE=${PER_FILE:-10000}
mkdir -p "$WORK"
go build -o "$WORK/autoclust" ./bench/autoclust
"$WORK/autoclust" -rows "$ROWS" -rows-per-file "$PER_FILE" -json-out "$WORK/result.json" | tee "$WORK/result.txt"
