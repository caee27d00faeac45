// Package lease is a per-table lease between compactord replicas: one
// object, "<table>/_compactord/lease", whose JSON body names the holder, a
// nonce fresh on every write, and an absolute expiry. It is created
// put-if-absent and taken over or renewed only with a compare-and-swap on
// the version read (S3 If-Match on the ETag, GCS generation match, Azure
// If-Match, a flock-guarded rename on local disks), through
// objstore.ConditionalStore.
//
// The package owns the lease protocol only; which tables a replica tries to
// lease, and when, is the scheduler's business. Expiry is wall-clock time
// written by the holder, so the TTL must comfortably exceed the clock skew
// between replicas.
package lease
