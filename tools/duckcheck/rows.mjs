// rows.mjs: prints every row of the given parquet files, read together with
// DuckDB (union_by_name: columns matched by name, types unified), as one
// JSON object per line with keys sorted, ordered by the column id. With
// --deleted CSV the rows at the listed positions are left out (how DuckDB
// applies deletion vectors; see duck.mjs).
//
// usage: node rows.mjs [--deleted CSV] FILE...
import { connect, liveRows, takeDeleted, usage } from './duck.mjs';

const [deleted, files] = takeDeleted(process.argv.slice(2));
usage('node rows.mjs [--deleted CSV] FILE...', files.length > 0);
const conn = await connect({ threads: '1' });
const res = await conn.runAndReadAll(`${liveRows(files, deleted)} ORDER BY id`);
for (const row of res.getRowObjectsJson()) {
  const sorted = {};
  for (const k of Object.keys(row).sort()) sorted[k] = row[k];
  process.stdout.write(JSON.stringify(sorted) + '\n');
}
