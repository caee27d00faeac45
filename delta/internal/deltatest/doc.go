// Package deltatest is test support for the packages under delta/: reading
// the JSON lines of a test table's commits independently of the log code,
// writing small parquet files, the bench table (a Spark-shaped classic
// checkpoint of many files plus 100 commits, WriteBenchTable), copying a
// test table to damage it, and CPU and heap measures. Only tests import it.
//
// It must not import any package of delta/..., so that every package's
// in-package tests may use it.
package deltatest
