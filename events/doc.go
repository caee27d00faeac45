// Package events turns object-store change notifications into early polls.
//
// It owns the decoding of the stores' notification formats (S3 event
// notification JSON v2.x, also wrapped in an SNS envelope; GCS Pub/Sub
// notifications; Azure Event Grid blob events, in the Event Grid and the
// CloudEvents schema), the mapping of an object key onto the watched table
// whose root is its longest prefix (Index, canonicalised through
// internal/tablepath), and the consumer loop over a gocloud.dev/pubsub
// subscription (Consumer) that asks for a poll of a table when one of its
// _delta_log/ commits appears and acknowledges the message once that poll
// is done.
//
// An event is a hint: it only chooses which table to poll. Nothing in it
// (sizes, versions, paths past the mapping) is trusted or read further;
// duplicates, reordering and losses are harmless because the poll reads the
// table's own log, and the scheduler's periodic poll reconciles what was
// lost. Events for objects outside every watched table are counted and
// dropped.
//
// It must not run table operations, read tables or decide when anything
// runs: the poll it asks for is a function handed in (the scheduler's
// PollNow), and the scheduler decides what follows.
package events
