# Sourced by scripts/test.sh before `go test`: installs (cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/compactord, keyed by version) and starts the
# S3 (versitygw), GCS (fake-gcs-server), Azure (azurite) and DynamoDB
# (dynalite) emulators on loopback, exports the COMPACTORD_TEST_* variables the integration tests
# read, and stops the servers when test.sh exits.
# Set COMPACTORD_SKIP_EMULATORS=1 to skip (store tests then skip too, except
# under CI=true where a missing emulator fails them).

if [ "${COMPACTORD_SKIP_EMULATORS:-}" = 1 ]; then
  echo "emulators: skipped (COMPACTORD_SKIP_EMULATORS=1)"
else
  # shellcheck source=../emulators/lib.sh
  source scripts/emulators/lib.sh
  _emu_stage_t0=$SECONDS
  emu_install
  _emu_stage_t1=$SECONDS
  # Chain onto any EXIT trap an earlier stage registered.
  _emu_prev_trap=$(trap -p EXIT)
  if [ -n "$_emu_prev_trap" ]; then
    eval "_emu_prev_trap_args=($_emu_prev_trap)"
    _emu_prev_trap=${_emu_prev_trap_args[2]}
  fi
  # shellcheck disable=SC2064
  trap "emu_stop; ${_emu_prev_trap:-:}" EXIT
  emu_start
  echo "emulators: install $((_emu_stage_t1 - _emu_stage_t0))s, start $((SECONDS - _emu_stage_t1))s"
fi
