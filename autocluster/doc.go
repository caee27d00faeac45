// Package autocluster is the daemon's CLUSTER BY AUTO operation, run for a
// policy with `clustering { columns = "auto" }`: it gathers the DML
// predicates of the commits since its last run into the table's evidence
// (package clusteradvise), advises, decides with the policy's hysteresis,
// and sets the chosen key (Apply, PlanKey: the delta.clustering domain in
// the shape Spark and Databricks write, the clustering and domainMetadata
// features added only where the protocol allows), recording every change
// or refusal (old and new keys, evidence, estimates) in the table's
// `_compactord/clustering.json`, in the run's result (/status) and in the
// log. The compaction that follows clusters on the table's key as it does
// for any clustered table.
//
// It must not rewrite data or delete anything.
package autocluster
