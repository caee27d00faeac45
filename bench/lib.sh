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

# busy_ticks: the machine's busy CPU time so far (user, nice, system, irq,
# softirq and steal of /proc/stat's cpu line), in clock ticks.
# bench_shape_table SHAPE: sets TABLE to the shape's table of FILES
# DuckDB-written files of ROWS rows under $WORK (generating it once) and
# lists its parquet files in $WORK/files.txt.
bench_shape_table() {
  TABLE="$WORK/shape-$1-$FILES-$ROWS"
  if [ ! -f "$TABLE/_delta_log/00000000000000000000.json" ]; then
    rm -rf "$TABLE"
    echo "generating $1: $FILES DuckDB files of $ROWS rows in $TABLE" >&2
    "$WORK/bin/gendata" -dir "$TABLE" -shape "$1" -files "$FILES" -rows "$ROWS"
  fi
  find "$TABLE" -maxdepth 1 -name '*.parquet' | sort > "$WORK/files.txt"
}

busy_ticks() {
  awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat
}

# timed LABEL CMD... : runs CMD under /usr/bin/time, prints CMD's last stdout
# line (JSON) with the label, the measured maximum resident set size and CPU
# seconds added, the 1-minute load average when it started (load1) and the
# CPU seconds the rest of the machine used meanwhile (otherCpuSeconds: other
# work competing for the cores), and the shape when $SHAPE is set.
timed() {
  local label=$1; shift
  local tf; tf=$(mktemp)
  local line load before after
  load=$(cut -d' ' -f1 /proc/loadavg)
  before=$(busy_ticks)
  line=$(/usr/bin/time -f '%M %U %S' -o "$tf" "$@" | tail -n 1)
  after=$(busy_ticks)
  local usage; usage=$(tail -n 1 "$tf"); rm -f "$tf"
  node -e '
    const r = JSON.parse(process.argv[1]); r.label = process.argv[2];
    if (process.argv[4]) r.shape = process.argv[4];
    const [kib, user, sys] = process.argv[3].split(" ").map(Number);
    r.peakRssMiB = kib / 1024; r.cpuSeconds = user + sys;
    r.load1 = Number(process.argv[5]);
    r.otherCpuSeconds = Math.max(0, Number(process.argv[6]) / Number(process.argv[7]) - r.cpuSeconds);
    console.log(JSON.stringify(r));' "$line" "$label" "$usage" "${SHAPE:-}" "$load" "$((after - before))" "$(getconf CLK_TCK)"
}

# timed_duckdb ARGS...: one timed DuckDB COPY of the sources in
# $WORK/files.txt (tools/duckcheck/copy.mjs ARGS, e.g. --order "a, b"),
# its JSON line appended to $RESULTS; the output starts and ends removed.
timed_duckdb() {
  rm -f "$WORK/duck.parquet"; sync
  timed duckdb node tools/duckcheck/copy.mjs "$@" "$WORK/duck.parquet" "@$WORK/files.txt" >> "$RESULTS"
  rm -f "$WORK/duck.parquet"; sync
}
