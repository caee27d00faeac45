// Package scheduler decides which table runs when: per-table cron schedules,
// a threshold poll, on-demand triggers (signals, HTTP), a global worker
// limit with one run per table at a time, exponential backoff with jitter
// after failures, halts and the quarantine skip list. It keeps per-table
// state and counters for /status and /metrics.
//
// The scheduler only sees a RunFunc and a PollFunc (the daemon passes
// runner's), so it is tested with fakes and an injected clock. It must not
// know file formats or how a table operation works, and it never touches a
// table except through the RunFunc. Leases between replicas live in lease/.
package scheduler
