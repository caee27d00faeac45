// Package scheduler decides which table runs when: per-table cron schedules,
// a threshold poll that reads only new log entries, on-demand triggers
// (signals, HTTP), a global worker limit with one run per table at a time,
// exponential backoff with jitter after failures, and the error classes
// (retry, quarantine, halt) that say what to do after a failed run. It keeps
// per-table state and counters for /status and /metrics.
//
// One compaction run (snapshot -> plan -> rewrite -> commit) lives beside the
// scheduler in run.go and is what the daemon's RunFunc calls; the scheduler
// itself only sees a RunFunc and a PollFunc, so it is tested with fakes and
// an injected clock. It must not know file formats, and it never writes to a
// table except through the RunFunc. Leases between replicas live in lease/.
package scheduler
