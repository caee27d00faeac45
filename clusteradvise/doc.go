// Package clusteradvise chooses a table's clustering keys from its own
// workload (CLUSTER BY AUTO for tables any engine writes).
//
// It owns three things:
//
//   - the evidence: the predicates of the table's DML commits
//     (commitInfo.operationParameters of DELETE, UPDATE and MERGE, gathered
//     as the log advances, GatherLog) and those engines or query logs push
//     (JSON lines, ReadPushed), kept with exponential time decay and a bound
//     on their number in one record of compactord's own,
//     `_compactord/clustering.json` (Record, Store), written whole with a
//     compare-and-swap like the quarantine and halt records, so that it
//     survives restarts and moves with the table;
//   - the advice (Advise, pure): for sets of up to four columns the evidence
//     filters on, the files each recorded predicate would read under a
//     Hilbert layout on that key, estimated from a bounded sample of the
//     table's values (ReadSample) laid out at the table's target file size,
//     against the files it reads in the current layout (the live files'
//     min/max statistics, predicate.MayMatch); score = bytes not read per
//     day × evidence rate − bytes to re-cluster amortised over a horizon;
//   - the decision (Decide, pure: a hysteresis margin over the current key
//     and a minimum dwell).
//
// It must not commit to the table's log (package autocluster sets the key
// it decides on), rewrite data (incremental clustering does that once the
// key is set), delete anything, or schedule itself.
package clusteradvise
