// duck.mjs: what the duckcheck scripts share: an in-memory DuckDB with
// extension autoload and autoinstall off (only the built-in parquet reader
// runs) and the session time zone UTC, SQL string quoting, and the
// --deleted option (a CSV of "filename,pos" lines: rows deletion vectors
// remove, anti-joined on read_parquet's filename and file_row_number).
import { DuckDBInstance } from '@duckdb/node-api';

export const lit = (s) => "'" + s.replaceAll("'", "''") + "'";

// connect opens a connection; options are DuckDB settings.
export async function connect(options = {}) {
  const instance = await DuckDBInstance.create(':memory:', {
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
    ...options,
  });
  const conn = await instance.connect();
  conn.instance = instance; // keep the database alive with the connection
  await conn.run("SET TimeZone = 'UTC'");
  return conn;
}

// takeDeleted removes a leading "--deleted CSV" from args and returns
// [csv or null, the other args].
export function takeDeleted(args) {
  return args[0] === '--deleted' ? [args[1], args.slice(2)] : [null, args];
}

// liveRows is a SELECT of the rows of files (read with union_by_name),
// without the positions the deleted CSV lists when there is one.
export function liveRows(files, deleted) {
  const list = `[${files.map(lit).join(', ')}]`;
  if (!deleted) return `SELECT * FROM read_parquet(${list}, union_by_name = true)`;
  return `SELECT * EXCLUDE (filename, file_row_number)
    FROM read_parquet(${list}, union_by_name = true, filename = true, file_row_number = true) t
    ANTI JOIN read_csv(${lit(deleted)}, header = true, columns = {'filename': 'VARCHAR', 'pos': 'BIGINT'}) d
    ON t.filename = d.filename AND t.file_row_number = d.pos`;
}

// usage exits with the usage line unless ok.
export function usage(line, ok) {
  if (!ok) {
    console.error('usage: ' + line);
    process.exit(2);
  }
}
