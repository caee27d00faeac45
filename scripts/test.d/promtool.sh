# shellcheck shell=bash
# Sourced by scripts/test.sh: installs Prometheus' promtool (go install of
# github.com/prometheus/prometheus/cmd/promtool, cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/compactord/bin, keyed by version) for the
# monitoring kit's rule unit tests (cmd/compactord/monitoring_test.go runs
# `promtool check rules` and `promtool test rules` on deploy/monitoring), and
# exports COMPACTORD_PROMTOOL. A cold build compiles much of Prometheus and
# takes minutes on two cores (built with -tags remove_all_sd: rule checks and
# rule unit tests need none of Prometheus' service discovery plugins, which
# are most of its dependencies); later runs hit the cache.
# Set COMPACTORD_SKIP_PROMTOOL=1 to skip (the test then skips too, except
# under CI=true where it fails).
if [ "${COMPACTORD_SKIP_PROMTOOL:-}" = 1 ]; then
  echo "promtool: skipped (COMPACTORD_SKIP_PROMTOOL=1)"
else
  _pt_version=v0.316.0
  _pt_cache=${COMPACTORD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/compactord}
  _pt_bin=$_pt_cache/bin/promtool-$_pt_version-nosd
  if [ ! -x "$_pt_bin" ]; then
    mkdir -p "$_pt_cache/bin" "$_pt_cache/logs"
    echo "promtool: installing github.com/prometheus/prometheus/cmd/promtool@$_pt_version with go install -tags remove_all_sd into $_pt_bin (cold cache: builds Prometheus' rule engine without its service discovery plugins, minutes; log $_pt_cache/logs/promtool-install.log)"
    _pt_tmp=$(mktemp -d "$_pt_cache/tmp.XXXXXX")
    _pt_t0=$SECONDS
    if ! GOBIN=$_pt_tmp GOFLAGS=-buildvcs=false go install -tags remove_all_sd "github.com/prometheus/prometheus/cmd/promtool@$_pt_version" >"$_pt_cache/logs/promtool-install.log" 2>&1; then
      echo "promtool: go install failed:" >&2; tail -n 20 "$_pt_cache/logs/promtool-install.log" >&2
      rm -rf "$_pt_tmp"; exit 1
    fi
    mv "$_pt_tmp/promtool" "$_pt_bin"; rm -rf "$_pt_tmp"
    echo "promtool: installed in $((SECONDS - _pt_t0))s"
  else
    echo "promtool: $_pt_version cached in $_pt_bin"
  fi
  export COMPACTORD_PROMTOOL=$_pt_bin
fi
