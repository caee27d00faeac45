// Package scheduler decides which table runs when: per-table cron schedules,
// a threshold poll, on-demand triggers (signals, HTTP), a global worker
// limit with one run per table at a time, exponential backoff with jitter
// after failures, halts (cleared by Resume or a reload, kept across
// restarts and replicas through a HaltStore), tables waiting to become
// readable (ErrUnavailable: polled again with backoff, never halted) and
// the quarantine skip list. It keeps per-table state and counters for
// /status and /metrics. An idle table costs an entry in one timer heap
// (wheel.go): one goroutine sleeps for all of them and a bounded pool of
// poll workers polls the tables that are due; a run has a goroutine only
// while it waits for a worker and runs.
//
// The scheduler is generic over the policy type: it reads a policy only
// through Config.Spec (name, schedule, triggers, the operations of a run)
// and otherwise sees a RunFunc and a PollFunc (the daemon passes runner's),
// so it is tested with fakes and an injected clock. A run calls RunFunc
// once per operation, in order, and records each. It must not know file
// formats or how a table operation works (TestTheSchedulerDependsOnNoFileFormat
// keeps parquet-go and roaring out of its dependencies), and it never
// touches a table except through the RunFunc. Leases between replicas live
// in lease/. What to do after a failure is the error's failure.Class.
package scheduler
