// Package objstore owns how compactord talks to an object store when the
// network or the store misbehaves: every call gets a deadline, transient
// failures (5xx, throttling, resets, timeouts, bodies cut mid-read) are
// retried with exponential backoff and jitter within a per-call attempt
// limit and a per-run retry budget, and a body read that fails part-way is
// resumed from the first byte not yet delivered. Wrap returns a
// *blob.Bucket with these rules, so every caller of the bucket gets them.
// It also states the compare-and-swap contract of small control objects
// (ConditionalStore and its sentinel errors) that delta's log stores
// implement and the scheduler's lease relies on.
//
// It must not know Delta or anything of compactord's (it is a leaf: gocloud,
// the store SDKs' error types and a backoff library only), and it must not
// retry what is not transient: a missing object, a refused permission, a
// failed precondition or corrupt content is returned at once. It does not
// settle ambiguous writes: whether a conditional create whose answer was
// lost landed is for the caller, who knows what it wrote, to find out.
package objstore
