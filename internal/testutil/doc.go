// Package testutil holds helpers shared by the tests of several packages:
// locating ../shared and the Delta test tables beside the repository, the
// tables' known answers (expected.json), opening a local parquet file, a
// store endpoint that never answers.
package testutil
