// Package logstore owns the log stores of a Delta table and their
// conditional-create contract: LogStore (PutIfAbsent, ErrCommitExists),
// the bucket's own put-if-absent with its probe (Blob, ProbePutIfAbsent,
// ErrNoPutIfAbsent), local files (Local: temp file, hard link, lock
// files), Delta's DynamoDB commit protocol (Dynamo, the URL parameters
// that select it, ErrDynamoDBLogStore), the objstore.ConditionalStore of
// each, and the bounded read of a log object (ReadLimits, ReadBounded,
// TooLargeError).
//
// It must not list or replay the log, parse actions, or know tables and
// snapshots: root delta opens a table and picks its store.
package logstore
