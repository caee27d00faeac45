#!/usr/bin/env bash
# Object-store emulators for compactord's integration tests: install (cached
# outside the checkout, keyed by version), start on loopback, wait until
# ready, export the env vars the tests read, stop.
#
# Source this file, then call emu_install, emu_start and (in a trap) emu_stop.
# Safe under `set -euo pipefail`.
#
#   S3    versitygw (posix backend in a temp dir)
#   GCS   fake-gcs-server (in-memory backend, http)
#   Azure azurite-blob (in-memory persistence)
#   DynamoDB dynalite (npm; in-memory), for the DynamoDB log store beside S3

# Pinned versions: bump here, the cache key follows.
EMU_VERSITYGW_VERSION=${EMU_VERSITYGW_VERSION:-v1.8.0}
EMU_FAKEGCS_VERSION=${EMU_FAKEGCS_VERSION:-v1.56.1}
EMU_AZURITE_VERSION=${EMU_AZURITE_VERSION:-3.37.0}
EMU_DYNALITE_VERSION=${EMU_DYNALITE_VERSION:-4.0.0}

EMU_CACHE=${COMPACTORD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/compactord}
EMU_BIN=$EMU_CACHE/bin

# Test-only credentials for the local servers (never real ones).
EMU_S3_ACCESS_KEY=compactord-test
EMU_S3_SECRET_KEY=compactord-test-secret
# Azurite's documented, public development account key.
EMU_AZURE_ACCOUNT=devstoreaccount1
EMU_AZURE_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

emu_log() { echo "emulators: $*" >&2; }

# _emu_go_install PKG VERSION NAME WHY: go install PKG@VERSION into the cache
# as NAME-VERSION unless it is already there; WHY says what it is for.
_emu_go_install() {
  local pkg=$1 version=$2 name=$3 why=$4
  local dst=$EMU_BIN/$name-$version
  [ -x "$dst" ] && return 0
  local tmp
  tmp=$(mktemp -d "$EMU_CACHE/tmp.XXXXXX")
  local start=$SECONDS
  emu_log "installing $pkg@$version into $EMU_BIN, $why (go install, cold cache; takes minutes)"
  if ! GOBIN=$tmp GOFLAGS=-buildvcs=false go install "$pkg@$version" >"$EMU_CACHE/logs/$name-install.log" 2>&1; then
    emu_log "go install $pkg@$version failed:"; tail -n 20 "$EMU_CACHE/logs/$name-install.log" >&2
    rm -rf "$tmp"; return 1
  fi
  mv "$tmp/$(basename "$pkg")" "$dst"
  rm -rf "$tmp"
  emu_log "installed $name $version in $((SECONDS - start))s"
}

# _emu_npm_install PACKAGE VERSION BIN WHAT: npm install PACKAGE@VERSION (and
# its dependencies) into the cache as npm/PACKAGE-VERSION unless BIN is
# there; WHAT says what it is for in the messages.
_emu_npm_install() {
  local pkg=$1 version=$2 bin=$3 what=$4
  local dir=$EMU_CACHE/npm/$pkg-$version
  [ -x "$dir/node_modules/.bin/$bin" ] && return 0
  local start=$SECONDS tmp
  if ! command -v npm >/dev/null 2>&1; then
    emu_log "npm is needed to install $pkg@$version, $what; install Node.js and npm, e.g.:"
    emu_log "  sudo sh -c 'apt-get update && apt-get install -y nodejs npm'"
    emu_log "or set COMPACTORD_SKIP_EMULATORS=1 (scripts/test.sh) to skip the store tests."
    return 1
  fi
  emu_log "installing $pkg@$version into $dir, $what (npm install, cold cache)"
  tmp=$(mktemp -d "$dir.XXXXXX")
  if ! npm install --prefix "$tmp" --no-audit --no-fund --no-save "$pkg@$version" >"$EMU_CACHE/logs/$pkg-install.log" 2>&1; then
    emu_log "npm install $pkg failed:"; tail -n 20 "$EMU_CACHE/logs/$pkg-install.log" >&2
    rm -rf "$tmp"; return 1
  fi
  # Another run may have finished first; keep its copy.
  if [ -x "$dir/node_modules/.bin/$bin" ]; then rm -rf "$tmp"; else rm -rf "$dir"; mv "$tmp" "$dir"; fi
  emu_log "installed $pkg $version in $((SECONDS - start))s"
}

# emu_install installs the four servers in parallel (cache hits are instant).
# npm brings azurite and dynalite with their dependencies (dynalite: about
# 25 packages, 10 MB, among them memory-level and classic-level, whose
# prebuilt LevelDB binding is never loaded for an in-memory server).
emu_install() {
  mkdir -p "$EMU_BIN" "$EMU_CACHE/logs" "$EMU_CACHE/npm"
  local p1 p2 p3 p4 rc=0
  _emu_go_install github.com/versity/versitygw/cmd/versitygw "$EMU_VERSITYGW_VERSION" versitygw \
    "the S3 emulator of the store tests" & p1=$!
  _emu_go_install github.com/fsouza/fake-gcs-server "$EMU_FAKEGCS_VERSION" fake-gcs-server \
    "the GCS emulator of the store tests" & p2=$!
  _emu_npm_install azurite "$EMU_AZURITE_VERSION" azurite-blob "the Azure Blob emulator of the store tests" & p3=$!
  _emu_npm_install dynalite "$EMU_DYNALITE_VERSION" dynalite "the DynamoDB emulator of the store tests" & p4=$!
  wait "$p1" || rc=1
  wait "$p2" || rc=1
  wait "$p3" || rc=1
  wait "$p4" || rc=1
  return "$rc"
}

# _emu_free_port PREFERRED: PREFERRED if nothing listens there, else a free one.
_emu_free_port() {
  local p=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}

# _emu_wait NAME URL PID: wait up to 60s for any HTTP answer from URL
# (a TCP connection when curl is missing).
_emu_wait() {
  local name=$1 url=$2 pid=$3 i
  for i in $(seq 1 600); do
    if ! kill -0 "$pid" 2>/dev/null; then
      emu_log "$name exited during startup; log:"; tail -n 30 "$EMU_RUN/$name.log" >&2; return 1
    fi
    if command -v curl >/dev/null 2>&1; then
      curl -s -o /dev/null --max-time 1 "$url" && return 0
    else
      # No curl: an accepted TCP connection is the best readiness signal.
      local hostport=${url#http://}; hostport=${hostport%%/*}
      (exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}") 2>/dev/null && return 0
    fi
    sleep 0.1
  done
  emu_log "$name not ready after 60s; log:"; tail -n 30 "$EMU_RUN/$name.log" >&2
  return 1
}

# emu_start starts the servers on loopback and exports:
#   COMPACTORD_TEST_S3_ENDPOINT     http://127.0.0.1:PORT (versitygw)
#   AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION (test credentials)
#   COMPACTORD_TEST_GCS_ENDPOINT    http://127.0.0.1:PORT, and STORAGE_EMULATOR_HOST
#   COMPACTORD_TEST_AZURE_ENDPOINT  http://127.0.0.1:PORT/devstoreaccount1
#   AZURE_STORAGE_ACCOUNT, AZURE_STORAGE_KEY (azurite's public dev account)
#   COMPACTORD_TEST_DYNAMODB_ENDPOINT http://127.0.0.1:PORT (dynalite; the
#                                   tests pass it as dynamodb_endpoint, the
#                                   AWS credentials above sign its requests)
emu_start() {
  EMU_RUN=$(mktemp -d "${TMPDIR:-/tmp}/compactord-emulators.XXXXXX")
  export EMU_RUN
  EMU_PIDS=""
  local s3port gcsport azport ddbport

  s3port=$(_emu_free_port "${EMU_S3_PORT:-7070}")
  # The same invocation as docker-compose.yml's s3 service (root account
  # only, posix backend), bound to loopback.
  mkdir -p "$EMU_RUN/s3/root"
  ROOT_ACCESS_KEY=$EMU_S3_ACCESS_KEY ROOT_SECRET_KEY=$EMU_S3_SECRET_KEY \
    "$EMU_BIN/versitygw-$EMU_VERSITYGW_VERSION" --port "127.0.0.1:$s3port" \
    posix "$EMU_RUN/s3/root" >"$EMU_RUN/versitygw.log" 2>&1 &
  EMU_PIDS="$EMU_PIDS $!"
  _emu_wait versitygw "http://127.0.0.1:$s3port/" "$!" || return 1

  gcsport=$(_emu_free_port "${EMU_GCS_PORT:-4443}")
  "$EMU_BIN/fake-gcs-server-$EMU_FAKEGCS_VERSION" -scheme http -host 127.0.0.1 -port "$gcsport" \
    -backend memory -public-host "127.0.0.1:$gcsport" -external-url "http://127.0.0.1:$gcsport" \
    -log-level warn >"$EMU_RUN/fake-gcs-server.log" 2>&1 &
  EMU_PIDS="$EMU_PIDS $!"
  _emu_wait fake-gcs-server "http://127.0.0.1:$gcsport/storage/v1/b" "$!" || return 1

  azport=$(_emu_free_port "${EMU_AZURE_PORT:-10000}")
  "$EMU_CACHE/npm/azurite-$EMU_AZURITE_VERSION/node_modules/.bin/azurite-blob" --blobHost 127.0.0.1 \
    --blobPort "$azport" --inMemoryPersistence --silent \
    --disableTelemetry --skipApiVersionCheck >"$EMU_RUN/azurite.log" 2>&1 &
  EMU_PIDS="$EMU_PIDS $!"
  _emu_wait azurite "http://127.0.0.1:$azport/" "$!" || return 1

  ddbport=$(_emu_free_port "${EMU_DYNAMODB_PORT:-4567}")
  # In memory (no --path); tables are ACTIVE at once.
  "$EMU_CACHE/npm/dynalite-$EMU_DYNALITE_VERSION/node_modules/.bin/dynalite" --host 127.0.0.1 \
    --port "$ddbport" --createTableMs 0 --deleteTableMs 0 --updateTableMs 0 >"$EMU_RUN/dynalite.log" 2>&1 &
  EMU_PIDS="$EMU_PIDS $!"
  _emu_wait dynalite "http://127.0.0.1:$ddbport/" "$!" || return 1

  export COMPACTORD_TEST_S3_ENDPOINT="http://127.0.0.1:$s3port"
  export AWS_ACCESS_KEY_ID=$EMU_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$EMU_S3_SECRET_KEY AWS_REGION=us-east-1
  export COMPACTORD_TEST_GCS_ENDPOINT="http://127.0.0.1:$gcsport" STORAGE_EMULATOR_HOST="127.0.0.1:$gcsport"
  export COMPACTORD_TEST_AZURE_ENDPOINT="http://127.0.0.1:$azport/$EMU_AZURE_ACCOUNT"
  export AZURE_STORAGE_ACCOUNT=$EMU_AZURE_ACCOUNT AZURE_STORAGE_KEY=$EMU_AZURE_KEY
  export COMPACTORD_TEST_DYNAMODB_ENDPOINT="http://127.0.0.1:$ddbport"
  emu_log "S3 $COMPACTORD_TEST_S3_ENDPOINT, GCS $COMPACTORD_TEST_GCS_ENDPOINT, Azure $COMPACTORD_TEST_AZURE_ENDPOINT, DynamoDB $COMPACTORD_TEST_DYNAMODB_ENDPOINT (logs in $EMU_RUN)"
}

# emu_stop stops what emu_start started and removes its temp dir. Never fails.
emu_stop() {
  local pid
  for pid in ${EMU_PIDS:-}; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in ${EMU_PIDS:-}; do
    wait "$pid" 2>/dev/null || true
  done
  EMU_PIDS=""
  if [ -n "${EMU_RUN:-}" ] && [ -d "$EMU_RUN" ]; then rm -rf "$EMU_RUN"; fi
  return 0
}
