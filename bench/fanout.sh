#!/usr/bin/env bash
# bench/fanout.sh: BenchmarkFanout (cmd/compactord) RUNS times (default 3),
# each run measuring 8 units with 1 and then 2 `compactord run-unit` worker
# processes (ProcessLauncher, Parallelism 1 vs 2), so the two settings
# interleave; prints every run, then the median seconds per plan of each
# setting and the speed-up (median 1 worker / median 2 workers).
# See bench/README.md.
#
#   bash bench/fanout.sh
#   RUNS=5 BENCHTIME=5x bash bench/fanout.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
BENCHTIME=${BENCHTIME:-3x}
OUT=$(mktemp)
for i in $(seq "$RUNS"); do
  go test -run '^$' -bench '^BenchmarkFanout$' -benchtime "$BENCHTIME" -count 1 ./cmd/compactord \
    | grep '^BenchmarkFanout/' | tee -a "$OUT"
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
one=$(grep 'workers=1' "$OUT" | awk '{print $3/1e9}' | median)
two=$(grep 'workers=2' "$OUT" | awk '{print $3/1e9}' | median)
rm -f "$OUT"
echo "median of $RUNS runs: 1 worker ${one} s/plan, 2 workers ${two} s/plan, speed-up $(awk -v a="$one" -v b="$two" 'BEGIN {printf "%.2f", a/b}')x"
