// Package testutil holds helpers shared by the tests of several packages:
// locating ../shared and the Delta test tables beside the repository, the
// tables' known answers (expected.json), opening a local parquet file, a
// store endpoint that never answers, racing goroutines (Race), the peak
// of a memory measure while code runs (PeakOf) and tests in which file
// permissions bind even for root (RunUnprivileged).
package testutil
