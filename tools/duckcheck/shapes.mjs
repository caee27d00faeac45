// shapes.mjs: writes the source files of one rewrite-benchmark shape with
// DuckDB (bench/gen.DuckShape builds the Delta log over them). Columns:
// id, user_id, amount, score, name, category, event_time, day, price,
// meta{source, version}, note. Per shape and file:
//   matched  every file has the table's columns, in order;
//   drift    even files predate ADD COLUMN note (they lack it);
//   reorder  odd files have their columns in reverse order;
//   alpha    every file has its columns in alphabetical order;
//   widen    even files have the narrow types (user_id INTEGER, score FLOAT,
//            day DATE, price DECIMAL(8,2)); odd files and the table the wide
//            ones (BIGINT, DOUBLE, TIMESTAMP, DECIMAL(12,2));
//   dv       as matched (the deletion vectors are written by the Go side).
// Values are a deterministic function of (file, row).
//
// usage: node shapes.mjs DIR SHAPE FILES ROWS
// prints one JSON line per file: {"file": NAME, "rows": N}
import { connect, lit, usage } from './duck.mjs';

const [dir, shape, filesArg, rowsArg] = process.argv.slice(2);
const files = Number(filesArg), rows = Number(rowsArg);
usage('node shapes.mjs DIR SHAPE FILES ROWS', dir && shape && files > 0 && rows > 0);
const conn = await connect();

function columns(i) {
  const narrow = shape === 'widen' ? i % 2 === 0 : true;
  const h = (k) => `hash(r, ${i}, ${k})`;
  const cols = [
    ['id', `(${i}::BIGINT * ${rows} + r)::BIGINT`],
    ['user_id', `(${h(1)} % 100000)::${narrow ? 'INTEGER' : 'BIGINT'}`],
    ['amount', `(${h(2)} % 10000000) / 100.0::DOUBLE`],
    ['score', `((${h(3)} % 100000) / 1000.0)::${narrow ? 'FLOAT' : 'DOUBLE'}`],
    ['name', `CASE WHEN r % 50 = 7 THEN NULL ELSE 'user-' || (${h(4)} % 50000)::VARCHAR END`],
    ['category', `'cat-' || (r % 17)::VARCHAR`],
    ['event_time', `make_timestamptz(1700000000000000 + (r * 1000003 + ${i}) % 86400000000 * 30)`],
    ['day', narrow ? `(DATE '2024-01-01' + (r % 365)::INTEGER)` : `(DATE '2024-01-01' + (r % 365)::INTEGER)::TIMESTAMP`],
    ['price', `((${h(5)} % 10000000) / 100)::DECIMAL(${narrow ? '8,2' : '12,2'})`],
    ['meta', `{'source': 'src-' || (r % 5)::VARCHAR, 'version': (r % 3)::INTEGER}`],
  ];
  if (!(shape === 'drift' && i % 2 === 0)) {
    cols.push(['note', `CASE WHEN r % 3 = 0 THEN NULL ELSE 'note ' || (r % 1000)::VARCHAR END`]);
  }
  if (shape === 'reorder' && i % 2 === 1) cols.reverse();
  if (shape === 'alpha') cols.sort((a, b) => (a[0] < b[0] ? -1 : 1));
  return cols.map(([n, e]) => `${e} AS ${n}`).join(', ');
}

for (let i = 0; i < files; i++) {
  const name = `part-${String(i).padStart(5, '0')}-duckdb.snappy.parquet`;
  await conn.run(`COPY (SELECT ${columns(i)} FROM range(${rows}) t(r)) TO ${lit(dir + '/' + name)} (FORMAT parquet, COMPRESSION snappy)`);
  process.stdout.write(JSON.stringify({ file: name, rows }) + '\n');
}
