// Package kubernetes is the fanout.Launcher that runs a stored plan's units
// as one Kubernetes Indexed Job: completions = units, parallelism and the
// per-index retry limit from the launch spec, and a podFailurePolicy that
// fails a unit's index at once on compactord's quarantine and halt exit
// codes and does not count disrupted pods (preemption, eviction, drain).
// Every pod runs `compactord run-unit --plan URL` (and Config.WorkerArgs,
// the coordinator's store flags) with compactord's own image; the Job
// controller hands it its unit in JOB_COMPLETION_INDEX.
//
// It owns the Job it builds (from a template file, deploy/kubernetes/
// job-template.yaml), reading the Job's status (completedIndexes,
// failedIndexes, its conditions) and its pods' exit codes into one
// fanout.UnitStatus per unit, and deleting the Job when the launch ends.
//
// It must not read or write the table, the plan or the results (package
// fanout and the coordinator do), commit anything, or be imported by the
// scheduler or the table operations: client-go stays in this package and in
// cmd/compactord, which wires it in.
package kubernetes
