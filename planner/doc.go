// Package planner chooses what to rewrite and how: it turns a table
// snapshot and a Policy into a Plan of jobs (source files of one partition,
// a strategy, an optional clustering sort and output tags).
//
// Plan is a pure function of its inputs: it does no I/O, reads no clock
// (Policy.Now is the clock) and orders everything with explicit tie-breaks,
// so plans are golden-file tested and `compactord plan` shows exactly what
// the daemon would run.
//
// Strategies:
//   - binpack: small files (or files with many DV-deleted rows) of each
//     partition, greedily packed up to the target size, no sort;
//   - lightweight: on clustered tables with little unclustered data, only
//     the small unclustered files, ordered by the (min, max) stats of one
//     clustering column before packing, no sort, outputs stay unclustered
//     (under auto, files of at least half the target are left for the
//     clustering run);
//   - zcube: Hilbert (or Z-order for one column) clustering of unclustered
//     files and of Z-cubes smaller than the minimum cube size (all files
//     with Full), outputs tagged as liquid clustering tags them; partial
//     cubes are merged, Policy.CubeMergeMinCubes adjacent ones at a time,
//     only while a partition holds more than 2 x sqrt(its files) of them,
//     unless the policy asks for Delta's merge-everything behaviour; each
//     job's range buckets per column scale with the share of the partition
//     it covers, and an incremental job leaves uncut a column along which
//     its outputs would get fewer than 4 slices (SortSpec.Buckets);
//   - auto: picks one of the above from the table's shape.
//
// The package must not open files, read the log or know about scheduling.
package planner
