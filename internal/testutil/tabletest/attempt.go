package tabletest

import (
	"context"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/attempt"
)

// KilledAttempt leaves on tbl what a local attempt of operation (e.g.
// "compaction", "retention") leaves when it is killed after recording keys:
// its intent record (attempt.Journal) naming them, never cleaned up nor
// deleted, last written now. It returns the record's key.
func KilledAttempt(t testing.TB, tbl *delta.Table, operation string, keys ...string) string {
	t.Helper()
	ctx := context.Background()
	j, err := attempt.StartJournal(ctx, tbl.Bucket, operation, attempt.JournalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		j.Track(k)
	}
	if err := j.Err(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(ctx, nil); err != nil { // killed: the record stays
		t.Fatal(err)
	}
	return j.Key()
}
