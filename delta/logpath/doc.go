// Package logpath owns the names of the Delta log: the log directory, the
// key of a commit, the classification of a file of _delta_log/ by its name
// (commits, classic, multi-part and UUID-named V2 checkpoints, log
// compaction files, version checksums) and the _last_checkpoint document,
// read and written, with its protocol checksum.
//
// It must not do I/O, list or replay the log, or know tables and
// snapshots: root delta lists and reads, delta/checkpointwrite writes.
package logpath
