package attempt

import (
	"context"
	"testing"
	"time"

	"gocloud.dev/blob/fileblob"
)

// The record names every tracked key as soon as Track returns, the
// heartbeat rewrites it while the attempt lives, and Close with a deleter deletes
// it (Close(nil) keeps it for the sweep).
func TestJournal(t *testing.T) {
	for _, remove := range []bool{true, false} {
		ctx := context.Background()
		b, err := fileblob.OpenBucket(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		j, err := StartJournal(ctx, b, "compaction", JournalOptions{Heartbeat: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		read := func() *Record {
			t.Helper()
			// fileblob's reader may see a rewrite's rename half way (a
			// short read): read again.
			data, err := b.ReadAll(ctx, j.Key())
			for i := 0; err != nil && i < 1000; i++ {
				time.Sleep(time.Millisecond)
				data, err = b.ReadAll(ctx, j.Key())
			}
			if err != nil {
				t.Fatal(err)
			}
			r, err := ParseRecord(j.Key(), data)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		var o Objects
		o.OnTrack(j.Track)
		o.Track("a.parquet")
		o.Track("a.parquet")
		o.Track("b.parquet")
		first := read()
		if len(first.Keys) != 2 || first.Keys[0] != "a.parquet" || first.Keys[1] != "b.parquet" || first.Attempt != j.Attempt() || first.Owner == "" {
			t.Fatalf("record %+v, want keys a, b and the attempt's id and owner", first)
		}
		for deadline := time.Now().Add(time.Minute); !read().Heartbeat.After(first.Heartbeat); {
			if time.Now().After(deadline) {
				t.Fatal("the record was never rewritten by the heartbeat")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := j.Err(); err != nil {
			t.Fatal(err)
		}
		var del Deleter
		if remove {
			del = b
		}
		if err := j.Close(ctx, del); err != nil {
			t.Fatal(err)
		}
		if ok, err := b.Exists(ctx, j.Key()); err != nil || ok == remove {
			t.Errorf("Close(%v): the record exists %v (%v)", remove, ok, err)
		}
	}
}
