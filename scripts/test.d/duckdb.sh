# shellcheck shell=bash
# Sourced by scripts/test.sh: installs DuckDB's node package (@duckdb/node-api,
# which ships a prebuilt DuckDB; no compile, no extension downloads) into
# tools/duckcheck/node_modules (gitignored) for the writer's DuckDB cross-check
# (writer/duckdb_test.go) and bench/rewrite.sh.
# Set COMPACTORD_SKIP_DUCKDB=1 to skip (the cross-check then skips too, except
# under CI=true where it fails).
if [ "${COMPACTORD_SKIP_DUCKDB:-}" = 1 ]; then
  echo "duckdb: skipped (COMPACTORD_SKIP_DUCKDB=1)"
else
  if ! command -v npm >/dev/null 2>&1; then
    _duck_cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y nodejs npm"
    echo "duckdb: npm is missing; it installs @duckdb/node-api, the independent parquet reader of writer/duckdb_test.go"
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "duckdb: installing the Debian packages nodejs and npm: $_duck_cmd"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
    else
      echo "duckdb: cannot install npm here (not root, or no apt-get). Install Node.js and npm, e.g.:" >&2
      echo "  sudo sh -c '$_duck_cmd'" >&2
      echo "or set COMPACTORD_SKIP_DUCKDB=1 to skip the DuckDB cross-check." >&2
      exit 1
    fi
  fi
  _duck_pkg=$(sed -n 's/.*"\(@duckdb\/node-api\)": *"\([^"]*\)".*/\1@\2/p' tools/duckcheck/package.json)
  echo "duckdb: installing $_duck_pkg into tools/duckcheck/node_modules (npm ci, from package-lock.json) for the writer's DuckDB cross-check"
  (cd tools/duckcheck && npm ci --no-audit --no-fund --loglevel=error)
fi
