// Package tablepath owns the one canonical form of a file's place in a
// Delta table: it turns a path as a log, an intent record or a listing
// spells it into an object key relative to the table root, or says that
// the path lies outside the root.
//
// The protocol makes a file action's path a URI (RFC 2396) that is either
// relative to the table root or absolute. Resolve decodes it once,
// resolves "." and ".." segments and drops empty ones (as Hadoop's Path
// does when Spark joins it to the table path), and relates an absolute URI
// to the root by scheme (s3a and s3n are s3), host and path. Every reader
// and every deleter compares keys in this form, so that "./x", "a/../x",
// "%78" and "x" are one file.
//
// It must not do I/O or import any package of ours: the table format, the
// deletion gate and the operations all build on it.
package tablepath
