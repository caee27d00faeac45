// Package tabletest builds small Delta tables for the tests of the table
// operations (compaction, retention, the daemon): real parquet files of
// {id long, v string} rows, DV and copy-on-write deletes through commit, and
// checks of the live ids. It is imported by tests only and must not be
// imported by production code.
package tabletest
