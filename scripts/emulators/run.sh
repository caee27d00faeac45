#!/usr/bin/env bash
# Start the object-store emulators, run a command with the test env vars
# exported, stop the emulators. Examples:
#   scripts/emulators/run.sh go test ./integration/storetest -run 'TestEveryStore/s3'
#   scripts/emulators/run.sh env | grep COMPACTORD_TEST      # see the endpoints
#   scripts/emulators/run.sh bash                            # a shell with them up
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=lib.sh
source scripts/emulators/lib.sh
emu_install
trap emu_stop EXIT
emu_start
if [ "$#" -eq 0 ]; then set -- go test -count=1 ./integration/storetest/...; fi
"$@"
