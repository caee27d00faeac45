#!/usr/bin/env bash
# Simulated ingest into a clustered table, the planner run after every k
# batches: write amplification and pruning for binpack, lightweight,
# zcube-every-run and auto. Flags are passed through (see -h).
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./bench/clustering "$@"
