// check.mjs: read parquet files with DuckDB (an engine independent of
// compactord's parquet library) and print, per file, one JSON line:
//   {"file", "rows", "columns": [{"name", "type"}],
//    "leaves": [{"path": [...], "type", "min", "max", "nulls"}]}
// Leaves are the primitive columns reached through structs; lists and maps
// are leaves too (nulls only). min/max are rendered as text: timestamps as
// epoch microseconds, dates as yyyy-mm-dd, numbers and strings as DuckDB
// casts them to VARCHAR. Only the built-in parquet reader is used:
// extension autoload/autoinstall is off.
//
// usage: node check.mjs FILE...
import { DuckDBInstance, DuckDBTypeId } from '@duckdb/node-api';

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node check.mjs FILE...');
  process.exit(2);
}

const instance = await DuckDBInstance.create(':memory:', {
  autoinstall_known_extensions: 'false',
  autoload_known_extensions: 'false',
  threads: '1',
});
const conn = await instance.connect();

const lit = (s) => "'" + s.replaceAll("'", "''") + "'";
const ident = (s) => '"' + s.replaceAll('"', '""') + '"';

const timestampIds = new Set([
  DuckDBTypeId.TIMESTAMP, DuckDBTypeId.TIMESTAMP_TZ, DuckDBTypeId.TIMESTAMP_MS,
  DuckDBTypeId.TIMESTAMP_S, DuckDBTypeId.TIMESTAMP_NS,
]);
const noMinMaxIds = new Set([
  DuckDBTypeId.LIST, DuckDBTypeId.MAP, DuckDBTypeId.ARRAY, DuckDBTypeId.BLOB,
  DuckDBTypeId.BOOLEAN, DuckDBTypeId.UNION, DuckDBTypeId.SQLNULL,
]);

function leaves(path, type, out) {
  if (type.typeId === DuckDBTypeId.STRUCT) {
    type.entryNames.forEach((n, i) => leaves([...path, n], type.entryTypes[i], out));
    return;
  }
  out.push({ path, type });
}

function render(expr, type) {
  if (timestampIds.has(type.typeId)) return `CAST(epoch_us(${expr}) AS VARCHAR)`;
  if (type.typeId === DuckDBTypeId.DATE) return `strftime(${expr}, '%Y-%m-%d')`;
  return `CAST(${expr} AS VARCHAR)`;
}

let failed = false;
for (const file of files) {
  try {
    const src = `read_parquet(${lit(file)}, hive_partitioning = false)`;
    const desc = await conn.runAndReadAll(`SELECT * FROM ${src} LIMIT 0`);
    const names = desc.columnNames();
    const types = desc.columnTypes();
    const ls = [];
    names.forEach((n, i) => leaves([n], types[i], ls));
    const sel = ['CAST(count(*) AS VARCHAR)'];
    for (const l of ls) {
      const e = l.path.map(ident).join('.');
      sel.push(`CAST(count(*) - count(${e}) AS VARCHAR)`);
      if (noMinMaxIds.has(l.type.typeId)) {
        sel.push('NULL', 'NULL');
      } else {
        sel.push(render(`min(${e})`, l.type), render(`max(${e})`, l.type));
      }
    }
    const res = await conn.runAndReadAll(`SELECT ${sel.join(', ')} FROM ${src}`);
    const row = res.getRowsJson()[0];
    const out = {
      file,
      rows: Number(row[0]),
      columns: names.map((n, i) => ({ name: n, type: types[i].toString() })),
      leaves: ls.map((l, i) => ({
        path: l.path,
        type: l.type.toString(),
        nulls: Number(row[1 + 3 * i]),
        min: row[2 + 3 * i],
        max: row[3 + 3 * i],
      })),
    };
    process.stdout.write(JSON.stringify(out) + '\n');
  } catch (e) {
    failed = true;
    console.error(`${file}: ${e.message}`);
  }
}
process.exit(failed ? 1 : 0);
