// Package tabletest builds small Delta tables for the tests of the table
// operations (compaction, retention, the daemon): real parquet files of
// {id long, v string} rows, DV deletes in the shape of Spark's DELETE
// (DeleteRows, which the product does not use: its deletes go through
// commit.DML) and copy-on-write deletes through commit, and
// checks of the live ids. It is imported by tests only and must not be
// imported by production code.
package tabletest
