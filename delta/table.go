package delta

import (
	"context"
	"errors"

	"gocloud.dev/blob"
)

// ErrCommitExists is returned by LogStore.PutIfAbsent when the key already exists.
var ErrCommitExists = errors.New("log entry already exists")

// LogStore writes log entries atomically. Implementations exist per URL
// scheme (local files use temp file + hard link; object stores use their
// conditional-put primitive).
type LogStore interface {
	// PutIfAbsent writes data at key (relative to the table root) only if
	// no object exists there. It returns an error wrapping ErrCommitExists
	// when another writer got there first, and one wrapping objstore.ErrAmbiguous
	// when the outcome is unknown.
	PutIfAbsent(ctx context.Context, key string, data []byte) error
}

// Table is an open Delta table: its URL, a bucket rooted at the table
// directory, and the log store used for commits.
type Table struct {
	// URL is the table URL as the user gave it (file:///abs, mem://, s3://...).
	URL string
	// Bucket is rooted at the table directory: keys are relative to the root
	// ("_delta_log/00000000000000000000.json", "part-0000...parquet").
	Bucket *blob.Bucket
	// Log writes commits put-if-absent.
	Log LogStore
	// Limits bound what reading the log allocates for one object (zero
	// fields take the defaults; OpenOptions.Limits sets them).
	Limits ReadLimits

	// dvAllowed are the locations outside the root that `p` deletion
	// vectors may be read from (OpenOptions.AllowedExternalPrefixes).
	dvAllowed []location

	closers []func() error
}

// logSyncer is a LogStore that decides commits before their N.json exists
// (the DynamoDB log store): readers call SyncLog before they list the log
// or look for newer versions, and it makes the newest decided commit
// visible (repairing it if its writer stopped before the copy). It returns
// the newest decided version, -1 when it knows none.
type logSyncer interface {
	SyncLog(ctx context.Context) (int64, error)
}

// syncLog runs the table's log store's SyncLog, if it has one.
func syncLog(ctx context.Context, t *Table) (int64, error) {
	if s, ok := t.Log.(logSyncer); ok {
		return s.SyncLog(ctx)
	}
	return -1, nil
}
