#!/usr/bin/env bash
# bench/idle.sh: the daemon's resident memory per idle watched table.
#
# Builds the real binary (go build ./cmd/compactord), generates TABLES idle
# file:// tables of three files each (a protocol/metadata commit and three
# commits of one add: the files are never read, no trigger fires), starts
# `compactord run` on them with one policy file, waits until every table
# has polled (the first poll of each logs "no trigger crossed yet"), lets
# the process settle for SETTLE seconds and reads its RSS from /proc. It
# does the same with BASE_TABLES tables for the base, and prints the RSS
# per table above the base. /metrics is read only after the RSS (its
# answer for thousands of tables would be in the number otherwise), for
# the goroutine count and to check that every table polled.
#
#   bash bench/idle.sh                     # 10,000 tables, base 1
#   TABLES=2000 bash bench/idle.sh
#   GOGC=50 bash bench/idle.sh             # the daemon's GC setting is the operator's
set -euo pipefail
cd "$(dirname "$0")/.."

TABLES=${TABLES:-10000}
BASE_TABLES=${BASE_TABLES:-1}
POLL=${POLL:-10m}
SETTLE=${SETTLE:-20}
WORK=${WORK:-bench/out/idle}
mkdir -p "$WORK/bin"
WORK=$(cd "$WORK" && pwd)
go build -o "$WORK/bin/compactord" ./cmd/compactord

# gen_tables N: tables t00000 .. under $WORK/tables (kept between runs).
gen_tables() {
  local n=$1 i d v
  local schema='{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}'
  local stats='{\"numRecords\":10,\"minValues\":{\"id\":1},\"maxValues\":{\"id\":10},\"nullCount\":{\"id\":0}}'
  for ((i = 0; i < n; i++)); do
    printf -v d '%s/tables/t%05d/_delta_log' "$WORK" "$i"
    [ -f "$d/00000000000000000003.json" ] && continue
    mkdir -p "$d"
    printf '{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}\n{"metaData":{"id":"idle-%d","format":{"provider":"parquet","options":{}},"schemaString":"%s","partitionColumns":[],"configuration":{},"createdTime":1700000000000}}\n' \
      "$i" "$schema" >"$d/00000000000000000000.json"
    for v in 1 2 3; do
      printf '{"add":{"path":"part-%05d.parquet","partitionValues":{},"size":%d,"modificationTime":%d,"dataChange":true,"stats":"%s"}}\n' \
        "$v" $((1000 + v)) $((1700000000000 + v)) "$stats" >"$d/0000000000000000000$v.json"
    done
  done
}

# measure N: the daemon's RSS (KiB) on the first N tables, its goroutines
# and tables polled, as "rss_kib goroutines polled seconds".
measure() {
  local n=$1 i port pid start polls rss log dir
  dir=$WORK/policies-$n
  rm -rf "$dir"
  mkdir -p "$dir"
  port=$((20000 + RANDOM % 20000))
  {
    printf 'daemon {\n  poll = "%s"\n  http = "127.0.0.1:%d"\n}\n' "$POLL" "$port"
    for ((i = 0; i < n; i++)); do
      printf 'table "t%05d" {\n  url = "file://%s/tables/t%05d"\n}\n' "$i" "$WORK" "$i"
    done
  } >"$dir/tables.hcl"
  log=$WORK/daemon-$n.log
  : >"$log"
  start=$(date +%s)
  "$WORK/bin/compactord" run --policies "$dir" 2>"$log" &
  pid=$!
  until [ "$(grep -c 'no trigger crossed yet' "$log" || true)" -ge "$n" ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "the daemon exited; its log: $log" >&2
      exit 1
    fi
    sleep 1
  done
  local took=$(($(date +%s) - start))
  sleep "$SETTLE"
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
  local metrics
  metrics=$(curl -fsS "http://127.0.0.1:$port/metrics")
  polls=$(printf '%s\n' "$metrics" | awk '/^compactord_polls_total\{/ && $NF > 0 {n++} END {print n + 0}')
  local goroutines
  goroutines=$(printf '%s\n' "$metrics" | awk '/^go_goroutines / {print $2}')
  kill -TERM "$pid"
  wait "$pid" || true
  echo "$rss $goroutines $polls $took"
}

gen_tables "$TABLES"
echo "load: $(uptime)"
read -r base_rss base_g base_polled _ < <(measure "$BASE_TABLES")
read -r rss g polled took < <(measure "$TABLES")
if [ "$polled" -ne "$TABLES" ] || [ "$base_polled" -ne "$BASE_TABLES" ]; then
  echo "only $polled of $TABLES tables (base $base_polled of $BASE_TABLES) polled" >&2
  exit 1
fi
awk -v n="$TABLES" -v b="$BASE_TABLES" -v rss="$rss" -v base="$base_rss" -v g="$g" -v bg="$base_g" -v took="$took" 'BEGIN {
  printf "base (%d tables): RSS %.1f MiB, %d goroutines\n", b, base / 1024, bg
  printf "%d tables: RSS %.1f MiB, %d goroutines, all polled in %d s\n", n, rss / 1024, g, took
  printf "per table above the base: %.2f KiB RSS, %.4f goroutines\n", (rss - base) / (n - b), (g - bg) / (n - b)
}'
