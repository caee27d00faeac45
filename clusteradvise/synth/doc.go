// Package synth builds synthetic tables and workloads for the clustering
// advisor's tests and benchmark: eight integer columns a..h in ingest
// (random) order, and three workloads of predicate texts (ranges on a;
// equality on b and ranges on c; uniform over all columns).
//
// It must not be imported by production code, and does no I/O.
package synth
