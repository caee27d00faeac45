# Sourced by scripts/test.sh before `go test` (after emulators.sh): RabbitMQ
# for the change-event test (events/rabbit_e2e_test.go), where versitygw
# publishes its bucket events to RabbitMQ and compactord reads them through
# rabbit://.
#
# Installs Debian's rabbitmq-server (and Erlang with it, about 40 MB) with
# apt-get when it is missing (as root; otherwise it says what to install and
# the test skips), starts one broker on loopback on free ports with its
# state in a temp dir owned by the rabbitmq user (the server drops root),
# without waiting for it: it boots (~10-15s) while the tests compile, and the
# Go test waits for its port. Exports
#   COMPACTORD_TEST_RABBITMQ_URL  amqp://guest:guest@127.0.0.1:PORT/
#   COMPACTORD_TEST_RABBITMQ_LOG  the broker's console log
#   COMPACTORD_TEST_VERSITYGW     the versitygw binary emulators.sh installed
# and stops the broker when test.sh exits.
# COMPACTORD_SKIP_RABBITMQ=1 or COMPACTORD_SKIP_EMULATORS=1 skips it (the
# test then skips, except under CI=true, where it fails).

_rmq_log() { echo "rabbitmq: $*" >&2; }

# _rmq_install makes sure rabbitmq-server is installed.
_rmq_install() {
  command -v rabbitmq-server >/dev/null 2>&1 && return 0
  if [ "$(id -u)" != 0 ]; then
    _rmq_log "rabbitmq-server is not installed; install Debian's package: sudo apt-get install -y rabbitmq-server"
    return 1
  fi
  _rmq_log "installing Debian's rabbitmq-server (apt-get install -y rabbitmq-server: the broker and Erlang) for the change-event test"
  local t0=$SECONDS
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q rabbitmq-server >"${TMPDIR:-/tmp}/compactord-rabbitmq-install.log" 2>&1; then
    apt-get update -q >>"${TMPDIR:-/tmp}/compactord-rabbitmq-install.log" 2>&1 || true
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q rabbitmq-server >>"${TMPDIR:-/tmp}/compactord-rabbitmq-install.log" 2>&1; then
      _rmq_log "apt-get install rabbitmq-server failed:"; tail -n 20 "${TMPDIR:-/tmp}/compactord-rabbitmq-install.log" >&2
      return 1
    fi
  fi
  _rmq_log "installed in $((SECONDS - t0))s"
}

# The emulators' helpers (_emu_free_port); sourcing it only defines them.
# shellcheck source=../emulators/lib.sh
source scripts/emulators/lib.sh

_rmq_start() {
  if [ "$(id -u)" != 0 ] && [ "$(id -un)" != rabbitmq ]; then
    _rmq_log "the broker must be started as root (it then runs as the rabbitmq user); skipping"
    return 1
  fi
  RMQ_RUN=$(mktemp -d "${TMPDIR:-/tmp}/compactord-rabbitmq.XXXXXX")
  local amqp dist epmd
  amqp=$(_emu_free_port 5782)
  dist=$(_emu_free_port $((amqp + 20000)))
  epmd=$(_emu_free_port 4479)
  echo '[].' >"$RMQ_RUN/enabled_plugins"
  chown -R rabbitmq:rabbitmq "$RMQ_RUN" 2>/dev/null || true
  RMQ_NODE="compactord-test-$$@localhost"
  RMQ_EPMD_PORT=$epmd
  # Its own epmd port and node name: nothing shared with another broker.
  RABBITMQ_MNESIA_BASE=$RMQ_RUN/mnesia RABBITMQ_LOG_BASE=$RMQ_RUN/log \
    RABBITMQ_FEATURE_FLAGS_FILE=$RMQ_RUN/feature_flags RABBITMQ_ENABLED_PLUGINS_FILE=$RMQ_RUN/enabled_plugins \
    RABBITMQ_PID_FILE=$RMQ_RUN/pid RABBITMQ_CONFIG_FILE=$RMQ_RUN/rabbitmq RABBITMQ_ADVANCED_CONFIG_FILE=$RMQ_RUN/advanced.config \
    RABBITMQ_NODENAME=$RMQ_NODE RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
    RABBITMQ_NODE_PORT=$amqp RABBITMQ_DIST_PORT=$dist ERL_EPMD_PORT=$epmd \
    setsid rabbitmq-server >"$RMQ_RUN/console.log" 2>&1 </dev/null &
  RMQ_PID=$!
  export COMPACTORD_TEST_RABBITMQ_URL="amqp://guest:guest@127.0.0.1:$amqp/"
  export COMPACTORD_TEST_RABBITMQ_LOG="$RMQ_RUN/console.log"
  _rmq_log "starting a broker on 127.0.0.1:$amqp (node $RMQ_NODE, state and logs in $RMQ_RUN); the test waits for it"
}

# _rmq_stop stops the broker (the Erlang VM named in its pid file, then the
# wrapper and the epmd it started) and removes its temp dir. Never fails.
_rmq_stop() {
  local pid
  if [ -n "${RMQ_RUN:-}" ] && [ -s "$RMQ_RUN/pid" ]; then
    pid=$(cat "$RMQ_RUN/pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  if [ -n "${RMQ_PID:-}" ]; then kill "$RMQ_PID" 2>/dev/null || true; wait "$RMQ_PID" 2>/dev/null || true; fi
  if [ -n "${RMQ_EPMD_PORT:-}" ] && command -v epmd >/dev/null 2>&1; then
    ERL_EPMD_PORT=$RMQ_EPMD_PORT epmd -kill >/dev/null 2>&1 || true
  fi
  if [ -n "${RMQ_RUN:-}" ] && [ -d "$RMQ_RUN" ]; then rm -rf "$RMQ_RUN"; fi
  return 0
}

if [ "${COMPACTORD_SKIP_RABBITMQ:-}" = 1 ] || [ "${COMPACTORD_SKIP_EMULATORS:-}" = 1 ]; then
  echo "rabbitmq: skipped (COMPACTORD_SKIP_RABBITMQ or COMPACTORD_SKIP_EMULATORS is 1)"
elif _rmq_install && _rmq_start; then
  _rmq_prev_trap=$(trap -p EXIT)
  if [ -n "$_rmq_prev_trap" ]; then
    eval "_rmq_prev_trap_args=($_rmq_prev_trap)"
    _rmq_prev_trap=${_rmq_prev_trap_args[2]}
  fi
  # shellcheck disable=SC2064
  trap "_rmq_stop; ${_rmq_prev_trap:-:}" EXIT
  if [ -n "${EMU_BIN:-}" ] && [ -x "$EMU_BIN/versitygw-${EMU_VERSITYGW_VERSION:-}" ]; then
    export COMPACTORD_TEST_VERSITYGW="$EMU_BIN/versitygw-$EMU_VERSITYGW_VERSION"
  fi
fi
