# shellcheck shell=bash
# bench/lib.sh: sourced by the rewrite benchmarks (rewrite.sh, shapes.sh).

# bench_setup: WORK (default bench/out) made absolute, gendata and
# rewritebench built into $WORK/bin, DuckDB's npm package installed.
bench_setup() {
  WORK=${WORK:-bench/out}
  mkdir -p "$WORK/bin"
  WORK=$(cd "$WORK" && pwd)
  go build -o "$WORK/bin/gendata" ./bench/cmd/gendata
  go build -o "$WORK/bin/rewritebench" ./bench/cmd/rewritebench
  if [ ! -d tools/duckcheck/node_modules/@duckdb/node-api ]; then
    (cd tools/duckcheck && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

# timed LABEL CMD... : runs CMD under /usr/bin/time, prints CMD's last stdout
# line (JSON) with the label, the measured maximum resident set size and CPU
# seconds added, and the shape when $SHAPE is set.
timed() {
  local label=$1; shift
  local tf; tf=$(mktemp)
  local line
  line=$(/usr/bin/time -f '%M %U %S' -o "$tf" "$@" | tail -n 1)
  local usage; usage=$(tail -n 1 "$tf"); rm -f "$tf"
  node -e '
    const r = JSON.parse(process.argv[1]); r.label = process.argv[2];
    if (process.argv[4]) r.shape = process.argv[4];
    const [kib, user, sys] = process.argv[3].split(" ").map(Number);
    r.peakRssMiB = kib / 1024; r.cpuSeconds = user + sys; console.log(JSON.stringify(r));' "$line" "$label" "$usage" "${SHAPE:-}"
}
