# shellcheck shell=bash
# Sourced by scripts/test.sh: installs what the web view's browser test
# (cmd/compactord/browser_test.go) drives: Debian's chromium (a headless
# browser; never a downloaded build) and node, with apt-get, and the npm
# package playwright-core (a driver only: it ships no browser) into the cache
# dir ${XDG_CACHE_HOME:-$HOME/.cache}/compactord/npm, keyed by version. It
# exports COMPACTORD_PLAYWRIGHT_CORE and COMPACTORD_CHROMIUM for the test.
# Set COMPACTORD_SKIP_BROWSER=1 to skip (the test then skips too, except under
# CI=true where it fails).
if [ "${COMPACTORD_SKIP_BROWSER:-}" = 1 ]; then
  echo "browser: skipped (COMPACTORD_SKIP_BROWSER=1)"
else
  _br_pw_version=1.65.1
  _br_cache=${COMPACTORD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/compactord}
  _br_pkgs=""
  [ -x /usr/bin/chromium ] || _br_pkgs="$_br_pkgs chromium"
  command -v node >/dev/null 2>&1 || _br_pkgs="$_br_pkgs nodejs"
  command -v npm >/dev/null 2>&1 || _br_pkgs="$_br_pkgs npm"
  if [ -n "$_br_pkgs" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "browser: installing the Debian packages$_br_pkgs (headless Chromium and node for the web view's browser test)"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $_br_pkgs >/dev/null
    else
      echo "browser: missing$_br_pkgs and cannot install them here (not root, or no apt-get); install them, e.g.:" >&2
      echo "  sudo sh -c 'apt-get update && apt-get install -y$_br_pkgs'" >&2
      echo "or set COMPACTORD_SKIP_BROWSER=1 to skip the browser test." >&2
      exit 1
    fi
  fi
  _br_dir=$_br_cache/npm/playwright-core-$_br_pw_version
  if [ ! -f "$_br_dir/node_modules/playwright-core/package.json" ]; then
    echo "browser: installing playwright-core@$_br_pw_version (the driver only, no browser download) into $_br_dir"
    mkdir -p "$_br_cache/npm"
    _br_tmp=$(mktemp -d "$_br_dir.XXXXXX")
    npm install --prefix "$_br_tmp" --no-audit --no-fund --no-save --loglevel=error "playwright-core@$_br_pw_version" >/dev/null
    if [ -f "$_br_dir/node_modules/playwright-core/package.json" ]; then rm -rf "$_br_tmp"; else rm -rf "$_br_dir"; mv "$_br_tmp" "$_br_dir"; fi
  else
    echo "browser: playwright-core@$_br_pw_version cached in $_br_dir"
  fi
  export COMPACTORD_PLAYWRIGHT_CORE=$_br_dir/node_modules/playwright-core
  export COMPACTORD_CHROMIUM=/usr/bin/chromium
  echo "browser: $(/usr/bin/chromium --version 2>/dev/null || echo chromium), node $(node --version)"
fi
