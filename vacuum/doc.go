// Package vacuum owns the VACUUM table operation and the orphan sweep: it
// deletes the files of a Delta table that no live add, no unexpired
// tombstone and none of their deletion vectors references, once they are
// older than the retention window, and records the run in the log with
// Spark's "VACUUM START" / "VACUUM END" commitInfo entries.
//
// Two modes, as Spark's VacuumCommand:
//
//   - lite reads the remove and cdc actions of the commits that left the
//     retention window since the last vacuum (_delta_log/_last_vacuum_info)
//     and deletes their files; it never lists a data directory, only
//     _delta_log/ (shallowly) for temp leftovers of killed commits.
//   - full lists the table root and deletes every file older than the
//     cutoff that nothing references (expired tombstones' files, orphans of
//     killed writers, compactord's own abandoned outputs, upload temp files
//     NAME.<random>.tmp), plus the temp leftovers in _delta_log/ and
//     _compactord/; empty directories are removed on local tables.
//
// Both refuse catalog-managed tables and tables whose writer protocol this
// build does not implement (delta.Writable, which covers
// vacuumProtocolCheck), and a retention shorter than the table's
// delta.deletedFileRetentionDuration unless forced.
//
// It must not schedule anything, rewrite data files or write any action
// but commitInfo; it never deletes outside the table root, under _delta_log/
// (except temp leftovers), or a "p" (absolute) deletion vector.
package vacuum
