// Package curve maps multi-column values onto one sort key along a
// space-filling curve, the way Delta's liquid clustering orders rows:
// each clustering column is range-bucketed by boundaries drawn from a
// sample of its values (Bucketizer), and the per-column bucket ids are
// combined into a key by a Hilbert index (two or more columns) or a Z-order
// bit interleave (one column, where it is just the bucket id).
//
// Keys are big-endian byte strings of fixed length per Encoder, so they sort
// with bytes.Compare. The package holds no state and does no I/O.
package curve
