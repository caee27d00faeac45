// Package retention is the retention table operation: a time-based DELETE
// of the rows whose date or timestamp column is older than a cutoff. A
// partition column makes it a metadata-only delete of whole files; any
// other column reads the candidate files, marks the expired rows in
// deletion vectors (or rewrites the file without them when the table has
// no deletion vectors) and commits through commit's DELETE transaction,
// reconciling with concurrent writers. `compactord expire` and the daemon
// both call Expire.
//
// It must not schedule anything and holds no state between runs.
package retention
