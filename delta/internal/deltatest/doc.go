// Package deltatest is test support for the packages under delta/: reading
// the JSON lines of a test table's commits independently of the log code,
// and writing small parquet files. Only tests import it.
//
// It must not import any package of delta/..., so that every package's
// in-package tests may use it.
package deltatest
