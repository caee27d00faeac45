#!/usr/bin/env bash
# bench/pagebomb.sh: peak RSS and time of `compactord compact` on tables
# holding one parquet decompression bomb (bench/cmd/pagebomb) beside an
# honest file: one page claiming 1.5 GiB (33 KB of file), and 4 GiB in
# 1 MiB pages (250 KB), each with its footer honest and hiding the totals.
# The bomb must be refused as a corrupt data file within the writer's
# memory budget (row_group_bytes, 64 MiB by default).
#
#   bash bench/pagebomb.sh                       # this tree
#   BEFORE=/tmp/compactord-before bash bench/pagebomb.sh   # and an older build
set -euo pipefail
WORK=${WORK:-bench/out/pagebomb}
mkdir -p "$WORK/bin"
WORK=$(cd "$WORK" && pwd)
go build -o "$WORK/bin/pagebomb" ./bench/cmd/pagebomb
go build -o "$WORK/bin/compactord" ./cmd/compactord

run() { # label binary table
  local label=$1 bin=$2 table=$3 tf out rc=0
  tf=$(mktemp); out=$(mktemp)
  /usr/bin/time -f '%M %e %U %S' -o "$tf" "$bin" compact "file://$table" >"$out" 2>&1 || rc=$?
  read -r kib wall user sys < <(tail -n 1 "$tf")
  printf '%-40s exit=%d peakRSS=%dMiB wall=%ss cpu=%ss  %s\n' "$label" "$rc" $((kib / 1024)) "$wall" \
    "$(echo "$user + $sys" | bc)" "$(grep -o 'corrupt data file[^:]*: [^:]*: [^(]*' "$out" | head -n 1 | cut -c1-120)"
  rm -f "$tf" "$out"
}

shape() { # name flags...
  local name=$1; shift
  local dir="$WORK/tables/$name"
  for bin in "$WORK/bin/compactord" ${BEFORE:+"$BEFORE"}; do
    rm -rf "$dir"
    "$WORK/bin/pagebomb" -dir "$dir" "$@"
    run "$name ($(basename "$bin"))" "$bin" "$dir"
  done
}

shape one-page-honest-footer -pages 1 -page-bytes $((1536 << 20))
shape one-page-hidden-totals -pages 1 -page-bytes $((1536 << 20)) -hide-totals
shape many-pages-honest-footer -pages 4096 -page-bytes $((1 << 20))
shape many-pages-hidden-totals -pages 4096 -page-bytes $((1 << 20)) -hide-totals
