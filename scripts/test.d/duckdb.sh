# shellcheck shell=bash
# Sourced by scripts/test.sh: installs DuckDB's node package (@duckdb/node-api,
# which ships a prebuilt DuckDB; no compile, no extension downloads) into
# tools/duckcheck/node_modules (gitignored) for the writer's DuckDB cross-check
# (writer/duckdb_test.go) and bench/rewrite.sh.
if ! command -v npm >/dev/null 2>&1; then
  echo "npm not found: installing nodejs and npm from the Debian packages"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
(cd tools/duckcheck && npm ci --no-audit --no-fund --loglevel=error)
