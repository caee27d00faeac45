// copy.mjs: the DuckDB side of bench/rewrite.sh. Rewrites the given parquet
// files into one zstd parquet file with
//   COPY (SELECT * FROM read_parquet([...], union_by_name = true)) TO OUT (FORMAT parquet, COMPRESSION zstd)
// and prints {"seconds": ..., "rows": ...} as JSON. With --deleted CSV it
// reads filename and file_row_number too and anti-joins the deleted
// positions (see duck.mjs). With --order "A, B" the rows are written ORDER BY
// A, B (the sorted shape of bench/sorted.sh).
//
// usage: node copy.mjs [--order COLS] [--deleted CSV] OUT FILE...   (or: ... OUT @LISTFILE)
import { readFileSync } from 'node:fs';
import { connect, lit, liveRows, takeDeleted, usage } from './duck.mjs';

let argv = process.argv.slice(2);
let order = null;
if (argv[0] === '--order') {
  order = argv[1];
  argv = argv.slice(2);
}
const [deleted, args] = takeDeleted(argv);
let [out, ...files] = args;
if (files.length === 1 && files[0].startsWith('@')) {
  files = readFileSync(files[0].slice(1), 'utf8').split('\n').filter((s) => s !== '');
}
usage('node copy.mjs [--order COLS] [--deleted CSV] OUT FILE...', out && files.length > 0);
const conn = await connect();
const start = process.hrtime.bigint();
const select = order ? `SELECT * FROM (${liveRows(files, deleted)}) ORDER BY ${order}` : liveRows(files, deleted);
await conn.run(`COPY (${select}) TO ${lit(out)} (FORMAT parquet, COMPRESSION zstd)`);
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const res = await conn.runAndReadAll(`SELECT CAST(count(*) AS VARCHAR) FROM read_parquet(${lit(out)})`);
process.stdout.write(JSON.stringify({ seconds, rows: Number(res.getRowsJson()[0][0]) }) + '\n');
