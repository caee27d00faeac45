#!/usr/bin/env bash
# bench/events.sh: object-store requests and commit-to-poll latency of one
# daemon watching TABLES small Delta tables on versitygw, polling only and
# with change events (versitygw -> RabbitMQ -> rabbit://). See
# bench/README.md.
#
# Starts Debian's rabbitmq-server as scripts/test.d/rabbitmq.sh does (it
# installs it with apt-get when missing, as root) and versitygw (installed
# into the emulators' cache by scripts/emulators/lib.sh), builds compactord
# and bench/cmd/eventsbench, and runs the driver: TABLES tables of COMMITS
# commits each, then a run per entry of RUNS: the real daemon binary reads
# the tables through a counting reverse proxy in front of versitygw while
# WRITE_PCT percent of the tables get a commit each minute for WINDOW
# (rounded up to whole poll intervals of the run).
#
#   bash bench/events.sh                           # 1000 tables, 1m poll vs events + 10m reconcile
#   TABLES=100 WINDOW=2m POLL=20s RECONCILE=2m WRITE_PCT=5 bash bench/events.sh   # quick
set -euo pipefail
cd "$(dirname "$0")/.."
TABLES=${TABLES:-1000}
COMMITS=${COMMITS:-3}
WINDOW=${WINDOW:-5m}
POLL=${POLL:-1m}
RECONCILE=${RECONCILE:-10m}
WRITE_PCT=${WRITE_PCT:-1}
RUNS=${RUNS:-poll,events}
WORK=${WORK:-bench/out/events}
mkdir -p "$WORK/bin"
WORK=$(cd "$WORK" && pwd)
# A fresh store and fresh runs each time (only what this script writes).
rm -rf "$WORK/s3" "$WORK"/run-* "$WORK/results.jsonl" "$WORK/versitygw.log"

# shellcheck source=../scripts/emulators/lib.sh
source scripts/emulators/lib.sh
mkdir -p "$EMU_BIN" "$EMU_CACHE/logs"
_emu_go_install github.com/versity/versitygw/cmd/versitygw "$EMU_VERSITYGW_VERSION" versitygw \
  "the S3 server of the events benchmark"
VERSITYGW=$EMU_BIN/versitygw-$EMU_VERSITYGW_VERSION

# Starts the broker (booting while the binaries build) and stops it on exit.
# shellcheck source=../scripts/test.d/rabbitmq.sh
source scripts/test.d/rabbitmq.sh
if [ -z "${COMPACTORD_TEST_RABBITMQ_URL:-}" ]; then
  echo "events.sh: no RabbitMQ broker (see the messages above)" >&2
  exit 1
fi

go build -o "$WORK/bin/compactord" ./cmd/compactord
go build -o "$WORK/bin/eventsbench" ./bench/cmd/eventsbench

echo "uptime before: $(uptime)"
"$WORK/bin/eventsbench" -versitygw "$VERSITYGW" -compactord "$WORK/bin/compactord" \
  -rabbit "$COMPACTORD_TEST_RABBITMQ_URL" -work "$WORK" -out "$WORK/results.jsonl" \
  -tables "$TABLES" -commits "$COMMITS" -window "$WINDOW" -poll "$POLL" -reconcile "$RECONCILE" \
  -write-pct "$WRITE_PCT" -runs "$RUNS"
echo "uptime after: $(uptime)"
echo "per-run JSON (per-minute counts, events counters): $WORK/results.jsonl"
