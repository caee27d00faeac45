package attempt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
)

func bucket(t *testing.T) (*blob.Bucket, string) {
	t.Helper()
	dir := t.TempDir()
	b, err := fileblob.OpenBucket(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, dir
}

func present(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && filepath.Ext(p) != ".attrs" {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func TestCleanDeletesExactlyTheUncommittedObjects(t *testing.T) {
	b, dir := bucket(t)
	ctx := context.Background()
	for _, k := range []string{"foreign.parquet", "out-1.parquet", "out-2.parquet", "dv/deletion_vector_x.bin"} {
		if err := b.WriteAll(ctx, k, []byte(k), nil); err != nil {
			t.Fatal(err)
		}
	}
	var o Objects
	o.Track("out-1.parquet")
	o.Track("out-2.parquet")
	o.Track("dv/deletion_vector_x.bin")
	o.Track("never-written.parquet") // a write that failed before the object existed
	o.Track("out-1.parquet")         // tracking twice is harmless
	o.Keep("out-2.parquet")
	if got, want := o.Uncommitted(), []string{"out-1.parquet", "dv/deletion_vector_x.bin", "never-written.parquet"}; !slices.Equal(got, want) {
		t.Fatalf("Uncommitted = %v, want %v", got, want)
	}
	n, err := o.Clean(ctx, b)
	if err != nil || n != 3 {
		t.Fatalf("Clean = %d, %v; want 3, nil", n, err)
	}
	if got, want := present(t, dir), []string{"foreign.parquet", "out-2.parquet"}; !slices.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
	if n, err := o.Clean(ctx, b); n != 0 || err != nil {
		t.Fatalf("second Clean = %d, %v; want 0, nil", n, err)
	}
}

func TestCleanRunsAfterCancellation(t *testing.T) {
	b, dir := bucket(t)
	if err := b.WriteAll(context.Background(), "out.parquet", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	var o Objects
	o.Track("out.parquet")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := o.Clean(ctx, b); n != 1 || err != nil {
		t.Fatalf("Clean = %d, %v", n, err)
	}
	if left := present(t, dir); len(left) != 0 {
		t.Fatalf("left %v", left)
	}
}

// failing deletes fail for one key.
type failing struct {
	Deleter
	bad string
}

func (f failing) Delete(ctx context.Context, key string) error {
	if key == f.bad {
		return errors.New("access denied")
	}
	return f.Deleter.Delete(ctx, key)
}

func TestFailedDeletesStayTrackedAndNameTheirKey(t *testing.T) {
	b, dir := bucket(t)
	ctx := context.Background()
	for _, k := range []string{"a.parquet", "b.parquet"} {
		if err := b.WriteAll(ctx, k, []byte(k), nil); err != nil {
			t.Fatal(err)
		}
	}
	var o Objects
	o.Track("a.parquet")
	o.Track("b.parquet")
	n, err := o.Clean(ctx, failing{Deleter: b, bad: "b.parquet"})
	if n != 1 || err == nil || !strings.Contains(err.Error(), "b.parquet") {
		t.Fatalf("Clean = %d, %v; want 1 and an error naming b.parquet", n, err)
	}
	if got := o.Uncommitted(); !slices.Equal(got, []string{"b.parquet"}) {
		t.Fatalf("Uncommitted after a failed delete = %v", got)
	}
	if n, err := o.Clean(ctx, b); n != 1 || err != nil {
		t.Fatalf("retry Clean = %d, %v", n, err)
	}
	if left := present(t, dir); len(left) != 0 {
		t.Fatalf("left %v", left)
	}
}

func TestOnTrackHearsEachNewKeyOnceBeforeTrackReturns(t *testing.T) {
	var o Objects
	var heard []string
	o.OnTrack(func(key string) {
		// Called before Track returns: the key is already tracked.
		if !slices.Contains(o.Uncommitted(), key) {
			t.Errorf("OnTrack(%s) ran before the key was tracked", key)
		}
		heard = append(heard, key)
	})
	o.Track("a.parquet")
	o.Track("b.parquet")
	o.Track("a.parquet")
	if want := []string{"a.parquet", "b.parquet"}; !slices.Equal(heard, want) {
		t.Fatalf("OnTrack heard %v, want %v", heard, want)
	}
}
