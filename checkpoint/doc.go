// Package checkpoint is the checkpoint table operation: write a checkpoint
// of a table version (Write, the CLI's `compactord checkpoint`), checkpoint
// after one of compactord's commits when its version is a multiple of
// delta.checkpointInterval (AfterCommit, Spark's rule), and catch up on
// tables whose writers never checkpoint (CatchUp: when the newest
// checkpoint is more than a set number of commits behind, checkpoint the
// newest multiple of the interval). Maintain, the daemon's pass and the
// one-shot commands' step after their commits, does the last two and
// repairs a _last_checkpoint left behind the newest checkpoint. The
// checkpoint itself is written by checkpointwrite.WriteCheckpoint.
//
// It must not schedule anything and holds no state between runs; it never
// commits to the table.
package checkpoint
