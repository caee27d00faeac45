package vacuum

import (
	"context"
	"encoding/json"
	"fmt"
	deltaactions "github.com/compactord/compactord/delta/actions"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// fixture is a generated local table with a controllable clock: files get
// the clock's time as their modification time, commits as their timestamp.
type fixture struct {
	t   testing.TB
	dir string
	tbl *delta.Table
	now time.Time
	// snaps caches snapshots by version: a version's state never changes,
	// and the randomized test loads each many times.
	snaps map[int64]*delta.Snapshot
}

// load returns the snapshot at version (-1: latest), from the cache when
// it holds that version.
func (f *fixture) load(ctx context.Context, _ *delta.Table, version int64) (*delta.Snapshot, error) {
	if version < 0 {
		v, err := delta.LatestVersion(ctx, f.tbl)
		if err != nil {
			return nil, err
		}
		version = v
	}
	if s, ok := f.snaps[version]; ok {
		return s, nil
	}
	s, err := delta.LoadSnapshot(ctx, f.tbl, version)
	if err != nil {
		return nil, err
	}
	f.snaps[version] = s
	return s, nil
}

func (f *fixture) clock() time.Time { return f.now }

// newFixture creates a DV-enabled local table with extra table properties;
// its version 0 has no files.
func newFixture(t testing.TB, conf map[string]string, protocol string) *fixture {
	t.Helper()
	dir := t.TempDir()
	tbl := tabletest.Open(t, dir)
	f := &fixture{t: t, dir: dir, tbl: tbl, snaps: map[int64]*delta.Snapshot{}, now: time.Now().Add(-30 * 24 * time.Hour).Truncate(time.Second)}
	c := map[string]string{"delta.enableDeletionVectors": "true"}
	for k, v := range conf {
		c[k] = v
	}
	cj, _ := json.Marshal(c)
	if protocol == "" {
		protocol = `{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}`
	}
	lines := []string{
		`{"commitInfo":{"operation":"CREATE TABLE","txnId":"create"}}`,
		`{"protocol":` + protocol + `}`,
		fmt.Sprintf(`{"metaData":{"id":"%s","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":[],"configuration":%s,"createdTime":1}}`, uuid.NewString(), tabletest.Schema, cj),
	}
	tabletest.PutCommit(t, tbl, 0, lines)
	f.touch(logpath.CommitKey(0))
	return f
}

// touch sets a key's modification time to the fixture's clock.
func (f *fixture) touch(key string) {
	f.t.Helper()
	p := filepath.Join(f.dir, filepath.FromSlash(key))
	if err := os.Chtimes(p, f.now, f.now); err != nil {
		f.t.Fatal(err)
	}
}

// writeFile writes ids as a parquet data file (not committed), with the
// fixture's clock as its modification time, and returns its add action.
func (f *fixture) writeFile(ids []int64) *deltaactions.Add {
	f.t.Helper()
	a := tabletest.WriteDataFile(f.t, f.tbl, ids)
	f.touch(a.Path)
	a.ModificationTime = f.now.UnixMilli()
	return a
}

// put writes an object with the fixture's clock as its modification time.
func (f *fixture) put(key string, data []byte) {
	f.t.Helper()
	if err := f.tbl.Bucket.WriteAll(context.Background(), key, data, nil); err != nil {
		f.t.Fatal(err)
	}
	f.touch(key)
}

// commitOpts are commit options on the fixture's clock.
func (f *fixture) commitOpts() commit.Options {
	return commit.Options{Now: f.clock, EngineInfo: "vacuum-test"}
}

// commit commits actions (adds, removes) as a WRITE and touches the commit
// file.
func (f *fixture) commit(actions ...deltaactions.Action) int64 {
	f.t.Helper()
	ctx := context.Background()
	snap, err := f.load(ctx, f.tbl, -1)
	if err != nil {
		f.t.Fatal(err)
	}
	tx := &commit.Txn{Table: f.tbl, Snapshot: snap, Operation: "WRITE", IsolationLevel: "Serializable", Actions: actions, Options: f.commitOpts()}
	v, err := tx.Commit(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	f.touch(logpath.CommitKey(v))
	return v
}

// remove returns the remove action of a live add at the fixture's clock.
func (f *fixture) remove(a *deltaactions.Add) deltaactions.Action {
	ts := f.now.UnixMilli()
	size := a.Size
	return deltaactions.Action{Remove: &deltaactions.Remove{Path: a.Path, DeletionTimestamp: &ts, DataChange: true, Size: &size,
		PartitionValues: a.PartitionValues, DeletionVector: a.DeletionVector}}
}

// exists reports whether key is on disk.
func (f *fixture) exists(key string) bool {
	_, err := os.Stat(filepath.Join(f.dir, filepath.FromSlash(key)))
	return err == nil
}

// vacuum runs a vacuum on the fixture's clock.
func (f *fixture) vacuum(opts Options) *Result {
	f.t.Helper()
	res, err := f.tryVacuum(opts)
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

func (f *fixture) tryVacuum(opts Options) (*Result, error) {
	opts.Now = f.clock
	opts.Commit = f.commitOpts()
	if opts.Snapshots == nil {
		opts.Snapshots = f.load
	}
	opts.SpillDir = f.t.TempDir()
	res, err := Run(context.Background(), f.tbl, opts)
	if err == nil && res.StartVersion >= 0 {
		f.touch(logpath.CommitKey(res.StartVersion))
	}
	if err == nil && res.EndVersion >= 0 {
		f.touch(logpath.CommitKey(res.EndVersion))
	}
	return res, err
}

// commitInfo returns version v's commitInfo as decoded JSON.
func (f *fixture) commitInfo(v int64) map[string]any {
	f.t.Helper()
	acts, err := delta.ReadCommit(context.Background(), f.tbl, v)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, a := range acts {
		if a.CommitInfo != nil {
			raw, _ := json.Marshal(a.CommitInfo)
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				f.t.Fatal(err)
			}
			if len(acts) != 1 {
				f.t.Fatalf("version %d has %d actions, want only commitInfo", v, len(acts))
			}
			return m
		}
	}
	f.t.Fatalf("version %d has no commitInfo", v)
	return nil
}

func ids(lo, n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = lo + int64(i)
	}
	return out
}

// touchDVs sets the modification time of version v's commit and of the
// deletion-vector files its adds reference to the fixture's clock.
func (f *fixture) touchDVs(v int64) {
	f.t.Helper()
	f.touch(logpath.CommitKey(v))
	acts, err := delta.ReadCommit(context.Background(), f.tbl, v)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, a := range acts {
		if a.Add != nil {
			if k, ok, _ := dvKey(a.Add.DeletionVector); ok {
				f.touch(k)
			}
		}
	}
}
