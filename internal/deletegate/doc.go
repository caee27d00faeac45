// Package deletegate owns the one way compactord deletes an object of a
// table. Every deleter (VACUUM full and lite, the temp sweep, the sweep of
// dead attempts, log cleanup, fan-out's plan cleanup, an attempt's own
// cleanup) hands its keys to a Gate with the kind of object it means to
// delete, and the Gate refuses, before any call reaches the store:
//
//   - a key that is not its own canonical form (tablepath.IsCanonical:
//     relative, inside the root, no ".", ".." or empty segments), so that
//     no store can normalise it onto another object;
//   - anything under _delta_log/ but the temp leftovers of killed log
//     writes and the log files log cleanup computed (Log: commits,
//     checksums, checkpoints, log compactions, sidecars; never
//     _last_checkpoint);
//   - anything under _compactord/ but compactord's own records (Record:
//     intent records, stored plans, probes), temp leftovers and an
//     attempt's own uncommitted outputs (Output, what attempt.Objects.Clean
//     deletes: data, DV and origin files, never under _delta_log/);
//   - a key the table's latest snapshot references (when the caller gives
//     the referenced set), compared in canonical form;
//   - on local tables, a key whose path passes through a symbolic link.
//
// A refusal is logged with the object and the reason, counted, and
// returned as an error wrapping ErrRefused, which callers skip: it is never
// fatal to the rest of a run.
//
// It must not decide what to delete (the operations do), commit, or read
// the table format: it knows the names of the log's directories only.
package deletegate
