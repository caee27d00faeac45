// Package testutil holds helpers shared by the tests of several packages:
// locating ../shared and the Delta test tables beside the repository, the
// tables' known answers (expected.json), opening a local parquet file, a
// store endpoint that never answers, racing goroutines (Race), the peak
// of a memory measure while code runs (PeakOf), tests in which file
// permissions bind even for root (RunUnprivileged), waiting for another
// goroutine's state (WaitFor), a GET's status and body (Get) and a log
// sink safe for concurrent writers (SyncBuffer).
package testutil
