// Package runner wires policies to the table operations for the daemon: it
// keeps one open table per URL, implements the scheduler's RunFunc (hold
// the table's lease, then run its compaction and retention) and PollFunc
// (advance the table's snapshot by the new commits and compute the
// backlog), and the dry-run plan the HTTP plan page shows. It classes a
// table that is not there or cannot be read as scheduler.Unavailable (the
// scheduler waits for it) rather than a halt, and keeps the scheduler's
// per-table records under _compactord/: the quarantine list
// (QuarantineStore) and the halt (HaltStore).
//
// It must not decide when a table runs (the scheduler does) nor how an
// operation works (compaction/, retention/ do).
package runner
