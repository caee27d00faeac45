// Package runner wires policies to the table operations for the daemon: it
// keeps one open table per URL, implements the scheduler's RunFunc (hold
// the table's lease, then run one of the table's operations) and PollFunc
// (advance the table's snapshot by the new commits and compute the
// backlog), and the dry-run plan the HTTP plan page shows. DefaultOps are
// the six operations of a run, in order: compaction, retention, the
// statistics backfill, checkpoint, log cleanup and vacuum (each runs when
// the table's policy asks for it; compaction and vacuum's sweep always do).
// It binds the operations' seam (tableop) to policies.Policy and
// *delta.Table (Factory), and finds the compaction among them by its name
// to give it the executor of the policy's executor block (WithExecutor).
// It classes a table that is not there or cannot be read as
// scheduler.Unavailable (the scheduler waits for it) rather than a halt,
// and keeps the scheduler's per-table records under _compactord/: the
// quarantine list (QuarantineStore) and the halt (HaltStore).
//
// It must not decide when a table runs (the scheduler does) nor how an
// operation works (compaction/, retention/, statsbackfill/, checkpoint/,
// logcleanup/, vacuum/ do).
package runner
