// Package units parses and formats the byte sizes and durations that table
// properties, policy files and command-line flags carry, with one set of
// rules for all three.
//
// Byte sizes follow Spark's byte strings (JavaUtils.byteStringAsBytes, the
// rules delta.targetFileSize is read with): a count with an optional
// case-insensitive unit b, k/kb, m/mb, g/gb, t/tb, p/pb, every unit a power
// of 1024. The IEC spellings (KiB, MiB, ...) mean the same, so "1KB",
// "1k" and "1KiB" are all 1024 bytes.
//
// Durations come in two syntaxes: Spark's calendar intervals as Delta
// reads its interval properties (delta.logRetentionDuration and the like:
// "interval 7 days", "1 week", "36 hours"), and the compact policy syntax
// ("90s", "1h30m", "7d", "2w"). ParseInterval reads the first only;
// ParseDuration reads both.
//
// The package is a leaf: it imports nothing of compactord, holds no state
// and does no I/O.
package units
