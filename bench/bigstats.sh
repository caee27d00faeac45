#!/usr/bin/env bash
# bench/bigstats.sh: size, footer size, peak RSS and time of `compactord
# checkpoint` on a table whose one add carries a stats string with a string
# min and max of BYTES each (bench/cmd/bigstats; default 100 MiB, a 200 MiB
# stats string), as a writer that does not truncate its statistics leaves.
#
#   bash bench/bigstats.sh
#   BEFORE=/tmp/compactord-before BYTES=$((10 << 20)) bash bench/bigstats.sh
set -euo pipefail
WORK=${WORK:-bench/out/bigstats}
BYTES=${BYTES:-$((100 << 20))}
mkdir -p "$WORK/bin"
WORK=$(cd "$WORK" && pwd)
go build -o "$WORK/bin/bigstats" ./bench/cmd/bigstats
go build -o "$WORK/bin/compactord" ./cmd/compactord

for bin in "$WORK/bin/compactord" ${BEFORE:+"$BEFORE"}; do
  dir="$WORK/table"
  rm -rf "$dir"
  "$WORK/bin/bigstats" -dir "$dir" -bytes "$BYTES"
  tf=$(mktemp)
  /usr/bin/time -f '%M %e' -o "$tf" "$bin" checkpoint "file://$dir" >/dev/null
  read -r kib wall < <(tail -n 1 "$tf"); rm -f "$tf"
  cp="$dir/_delta_log/00000000000000000000.checkpoint.parquet"
  size=$(stat -c %s "$cp")
  footer=$(tail -c 8 "$cp" | head -c 4 | od -An -tu4 | tr -d ' ')
  printf '%-14s stats=%dMiB checkpoint=%dB footer=%dB peakRSS=%dMiB wall=%ss\n' "$(basename "$bin")" \
    $((2 * BYTES >> 20)) "$size" "$footer" $((kib / 1024)) "$wall"
done
