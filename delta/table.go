package delta

import (
	"context"
	"fmt"
	"time"

	"gocloud.dev/blob"

	"github.com/compactord/compactord/delta/logstore"
	"github.com/compactord/compactord/objstore"
)

// Table is an open Delta table: its URL, a bucket rooted at the table
// directory, and the log store used for commits.
type Table struct {
	// URL is the table URL as the user gave it (file:///abs, mem://, s3://...).
	URL string
	// Bucket is rooted at the table directory: keys are relative to the root
	// ("_delta_log/00000000000000000000.json", "part-0000...parquet").
	Bucket *blob.Bucket
	// Log writes commits put-if-absent.
	Log logstore.LogStore
	// Limits bound what reading the log allocates for one object (zero
	// fields take the defaults; OpenOptions.Limits sets them).
	Limits logstore.ReadLimits

	// dvAllowed are the locations outside the root that `p` deletion
	// vectors may be read from (OpenOptions.AllowedExternalPrefixes).
	dvAllowed []location

	// newest is HasNewer's last finding of the newest version.
	newest newestSeen
	// now is the clock of newest (nil: time.Now; tests set it).
	now func() time.Time

	// closeBucket says whether Close closes Bucket, after closers: the
	// table opened it and holds it alone (no closure and slice kept per
	// table for that).
	closeBucket bool
	closers     []func() error
}

// logSyncer is a logstore.LogStore that decides commits before their N.json exists
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

// Conditional returns the table's objstore.ConditionalStore.
func (t *Table) Conditional() (objstore.ConditionalStore, error) {
	cs, ok := t.Log.(objstore.ConditionalStore)
	if !ok {
		return nil, fmt.Errorf("table %s: log store %T has no conditional writes", t.URL, t.Log)
	}
	return cs, nil
}

// limits returns the table's read limits with the defaults filled in.
func (t *Table) limits() logstore.ReadLimits { return t.Limits.WithDefaults() }
