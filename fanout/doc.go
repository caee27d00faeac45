// Package fanout runs one table's compaction plan across worker processes:
// the coordinator stores the plan under <table>/_compactord/plans/<id>/, a
// Launcher starts one worker per plan unit (`compactord run-unit --plan URL`,
// unit index in JOB_COMPLETION_INDEX, as Kubernetes' Indexed Job controller
// sets it), each worker rewrites its unit and writes its outputs and a result
// manifest next to the plan, and the coordinator commits finished units.
//
// It owns the stored plan (StoredPlan, StorePlan, LoadPlan, PlanURL) and
// the per-attempt objects of a unit (intent record, result and failure
// manifests, encoded origin maps), the worker's side of that contract
// (RunUnit), the exit codes a worker ends with (ExitCode), the Launcher
// seam and its local implementation (ProcessLauncher; Kubernetes Jobs in
// fanout/kubernetes), and Executor, the compaction.Executor that stores a
// run's plan, launches it, hands finished units back to the run as
// commit.CompactionJobs and deletes the plan directory and every output of
// abandoned attempts (SweepPlans: those of a killed coordinator).
//
// It must not commit, from a worker or the coordinator (the compaction run
// commits what Executor hands it; the lease holder is the table's one
// committer), schedule anything, or import a cluster client (Launcher
// implementations that need one live in subpackages).
package fanout
