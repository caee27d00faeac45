// Package attemptsweep is the next run's cleanup after a killed local
// attempt: it finds the intent records (attempt.Journal, under
// attempt.RecordsDir) that were not rewritten within a staleness window —
// their attempt is dead, since a live one heartbeats its record — and
// deletes every object such a record names that no live add, tombstone or
// deletion vector of the latest snapshot references, with the upload temp
// files beside it, then the record. AtStart is that sweep as
// compaction and retention run it at their start.
//
// It must not delete anything a record does not name (orphans of other
// writers are vacuum's), anything a commit references, the log, or a
// record whose attempt may be alive; it never commits.
package attemptsweep
