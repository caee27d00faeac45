#!/usr/bin/env bash
# Simulated ingest into a clustered table, the planner run after every k
# batches: write amplification and pruning (files read by range predicates)
# for binpack, lightweight, zcube-every-run, re-cluster-every-run (the
# pruning ideal; minutes of CPU at the defaults, -strategies leaves it out)
# and auto, judged against issue 33's goals. Flags are passed through (see
# -h); results and the goals in bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./bench/clustering "$@"
