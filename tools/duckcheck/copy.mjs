// copy.mjs: the DuckDB side of bench/rewrite.sh. Rewrites the given parquet
// files into one zstd parquet file with
//   COPY (SELECT * FROM read_parquet([...])) TO OUT (FORMAT parquet, COMPRESSION zstd)
// and prints {"seconds": ..., "rows": ...} as JSON.
//
// usage: node copy.mjs OUT FILE...   (or: node copy.mjs OUT @LISTFILE)
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

let [out, ...files] = process.argv.slice(2);
if (files.length === 1 && files[0].startsWith('@')) {
  files = readFileSync(files[0].slice(1), 'utf8').split('\n').filter((s) => s !== '');
}
if (!out || files.length === 0) {
  console.error('usage: node copy.mjs OUT FILE...');
  process.exit(2);
}
const lit = (s) => "'" + s.replaceAll("'", "''") + "'";
const instance = await DuckDBInstance.create(':memory:', {
  autoinstall_known_extensions: 'false',
  autoload_known_extensions: 'false',
});
const conn = await instance.connect();
const start = process.hrtime.bigint();
await conn.run(`COPY (SELECT * FROM read_parquet([${files.map(lit).join(', ')}])) TO ${lit(out)} (FORMAT parquet, COMPRESSION zstd)`);
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const res = await conn.runAndReadAll(`SELECT CAST(count(*) AS VARCHAR) FROM read_parquet(${lit(out)})`);
process.stdout.write(JSON.stringify({ seconds, rows: Number(res.getRowsJson()[0][0]) }) + '\n');
