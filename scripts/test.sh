#!/usr/bin/env bash
# The one command that runs every test: README's "run all tests".
# It installs what the tests need (Go modules, emulator binaries, npm packages),
# starts the object-store emulators on loopback, runs vet and the race-enabled
# test suite, and stops the emulators.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== go mod download (the modules go.sum pins, into the Go module cache)"
go mod download

echo "== gofmt / go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt needed:"; echo "$unformatted"; exit 1; fi
go vet ./...

# Optional stages (emulators, npm packages) source their own scripts.
for stage in scripts/test.d/*.sh; do
  [ -e "$stage" ] || continue
  echo "== $stage"
  # shellcheck disable=SC1090
  source "$stage"
done

echo "== go test -race"
# The events of every test go to a log of this run's own; tools/testsummary
# prints the package lines, the output of failed tests and how many tests
# ran, passed, failed and skipped. Three packages at once on two cores: the
# store suites and the daemon's end-to-end tests spend most of their time
# waiting on emulators, retries and child processes.
go build -o "${TMPDIR:-/tmp}/compactord-testsummary.$$" ./tools/testsummary
test_log=$(mktemp "${TMPDIR:-/tmp}/compactord-test.XXXXXX.json")
echo "test events: $test_log"
# The longest packages first (go test starts packages in the order given):
# the store suites take about 13 minutes alone, and started behind the
# others they finished last by minutes.
first=(./integration/storetest ./cmd/compactord ./writer ./clusteradvise)
go test -race -count=1 -p 3 -timeout 25m -json "${first[@]}" ./... 2>&1 | tee "$test_log" | "${TMPDIR:-/tmp}/compactord-testsummary.$$"
rm -f "${TMPDIR:-/tmp}/compactord-testsummary.$$"
