// Package fanout runs one table's compaction plan across worker processes:
// the coordinator stores the plan under <table>/_compactord/plans/<id>/, a
// Launcher starts one worker per plan unit (`compactord run-unit --plan URL`,
// unit index in JOB_COMPLETION_INDEX, as Kubernetes' Indexed Job controller
// sets it), each worker rewrites its unit and writes its outputs and a result
// manifest next to the plan, and the coordinator commits finished units.
//
// It owns the stored plan and result manifest formats, the worker's side of
// that contract, the exit codes a worker ends with, and the Launcher seam
// (local processes here; Kubernetes Jobs in fanout/kubernetes).
//
// It must not commit from a worker (the lease holder is the table's one
// committer), schedule anything, or import a cluster client (Launcher
// implementations that need one live in subpackages).
package fanout
