package vacuum

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/testutil/tabletest"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/planner"
)

// fileIDs reads the ids of a data file in physical order with parquet-go
// directly (not the Delta scan).
func fileIDs(t testing.TB, dir, key string) []int64 {
	t.Helper()
	pf := testutil.OpenParquet(t, filepath.Join(dir, filepath.FromSlash(key)))
	col, ok := pf.Schema().Lookup("id")
	if !ok {
		t.Fatalf("%s has no id column", key)
	}
	var out []int64
	testutil.EachRow(t, pf, key, func(r parquet.Row) { out = append(out, r[col.ColumnIndex].Int64()) })
	return out
}

// liveIDsAt reads the ids of the table at version v, sorted: the time
// travel a reader does (every file and DV must still be there).
func liveIDsAt(t testing.TB, f *fixture, v int64) ([]int64, error) {
	ctx := context.Background()
	snap, err := f.load(ctx, f.tbl, v)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, a := range snap.Files {
		key, err := a.Key()
		if err != nil {
			return nil, err
		}
		if !f.exists(key) {
			return nil, fmt.Errorf("version %d: data file %s is gone", v, key)
		}
		dv, err := delta.ReadDV(ctx, f.tbl, a.DeletionVector)
		if err != nil {
			return nil, fmt.Errorf("version %d: %w", v, err)
		}
		for i, id := range fileIDs(t, f.dir, key) {
			if !dv.Contains(uint64(i)) {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// safetyModel is the ground truth of the randomized safety test.
type safetyModel struct {
	live     map[int64]bool
	versions map[int64]versionTruth
	written  map[string]fileStamp // every file a writer or compaction produced
}

type versionTruth struct {
	ts  time.Time
	ids []int64
}

type fileStamp struct {
	size    int64
	modTime time.Time
}

func (m *safetyModel) snapshotIDs() []int64 {
	out := make([]int64, 0, len(m.live))
	for id := range m.live {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// TestRandomizedVacuumNeverDeletesWhatTheWindowNeeds runs, on one table and
// an injected clock (one minute per step, retention forced to 20 minutes),
// a writer that writes data files and commits them up to 5 minutes later
// (sometimes never), a DV DELETE loop, a compaction loop and lite and full
// vacuums, for at least 200 versions. After every vacuum: every version
// inside the window reads exactly its rows, files of pending writes are
// there, and committed files are untouched; in the end the sweep deleted
// expired files and abandoned writes. (80 versions under -race.)
func TestRandomizedVacuumNeverDeletesWhatTheWindowNeeds(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("COMPACTORD_VACUUM_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (COMPACTORD_VACUUM_SEED)", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	ctx := context.Background()
	const retention = 20 * time.Minute
	f := newFixture(t, nil, "")
	m := &safetyModel{live: map[int64]bool{}, versions: map[int64]versionTruth{}, written: map[string]fileStamp{}}
	m.versions[0] = versionTruth{ts: f.now}
	record := func(v int64) {
		m.versions[v] = versionTruth{ts: f.now, ids: m.snapshotIDs()}
	}
	stamp := func(key string) {
		st, err := os.Stat(filepath.Join(f.dir, filepath.FromSlash(key)))
		if err != nil {
			t.Fatal(err)
		}
		m.written[key] = fileStamp{size: st.Size(), modTime: st.ModTime()}
	}
	type pendingWrite struct {
		add  *actions.Add
		ids  []int64
		due  int
		lost bool // never committed: an abandoned write
	}
	var pending []pendingWrite
	var abandoned []string
	nextID := int64(0)
	var deleted, vacuums, fulls, lites int64
	latest := func() *delta.Snapshot {
		snap, err := f.load(ctx, f.tbl, -1)
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	check := func(step int) {
		t.Helper()
		cutoff := f.now.Add(-retention)
		var inside []int64
		for v, vt := range m.versions {
			if !vt.ts.Before(cutoff) {
				inside = append(inside, v)
			}
		}
		slices.Sort(inside)
		for _, v := range inside {
			got, err := liveIDsAt(t, f, v)
			if err != nil {
				t.Fatalf("step %d: time travel to version %d (inside the window): %v", step, v, err)
			}
			if !slices.Equal(got, m.versions[v].ids) {
				t.Fatalf("step %d: version %d reads %d ids, want %d", step, v, len(got), len(m.versions[v].ids))
			}
		}
		for _, p := range pending {
			if !p.lost && !f.exists(p.add.Path) {
				t.Fatalf("step %d: the uncommitted file %s of a pending write was deleted", step, p.add.Path)
			}
		}
		for _, a := range latest().Files {
			key, _ := a.Key()
			st, err := os.Stat(filepath.Join(f.dir, key))
			if err != nil {
				t.Fatalf("step %d: live file %s: %v", step, key, err)
			}
			if w, ok := m.written[key]; !ok || w.size != st.Size() || !w.modTime.Equal(st.ModTime()) {
				t.Fatalf("step %d: live file %s was touched: %+v now size %d mtime %v", step, key, w, st.Size(), st.ModTime())
			}
		}
	}
	pol := planner.DefaultPolicy()
	pol.Strategy = planner.StrategyBinpack
	pol.SettleWindow = 0
	wantVersions := 220
	if raceEnabled {
		// Every snapshot load replays the log from version 0: quadratic,
		// and several times slower under the race detector.
		wantVersions = 80
	}
	for step := 1; len(m.versions) < wantVersions || step < 40; step++ {
		if step > 2000 {
			t.Fatal("too many steps")
		}
		f.now = f.now.Add(time.Minute)
		// The writer: a data file now, its commit 1-5 minutes later.
		if rng.IntN(2) == 0 {
			n := int64(3 + rng.IntN(15))
			idl := ids(nextID, n)
			nextID += n
			a := f.writeFile(idl)
			stamp(a.Path)
			pw := pendingWrite{add: a, ids: idl, due: step + 1 + rng.IntN(5), lost: rng.IntN(10) == 0}
			if pw.lost {
				abandoned = append(abandoned, a.Path)
			}
			pending = append(pending, pw)
		}
		var due []actions.Action
		rest := pending[:0]
		for _, p := range pending {
			if p.due <= step && !p.lost {
				due = append(due, actions.Action{Add: p.add})
				for _, id := range p.ids {
					m.live[id] = true
				}
				continue
			}
			if !p.lost || p.due > step-60 {
				rest = append(rest, p)
			}
		}
		pending = rest
		if len(due) > 0 {
			record(f.commit(due...))
		}
		// The DV DELETE loop.
		if snap := latest(); len(snap.Files) > 0 && rng.IntN(3) == 0 {
			a := snap.Files[rng.IntN(len(snap.Files))]
			key, _ := a.Key()
			dv, err := delta.ReadDV(ctx, f.tbl, a.DeletionVector)
			if err != nil {
				t.Fatal(err)
			}
			fids := fileIDs(t, f.dir, key)
			var rows []int64
			for i, id := range fids {
				if !dv.Contains(uint64(i)) && rng.IntN(4) == 0 {
					rows = append(rows, int64(i))
					delete(m.live, id)
				}
			}
			if len(rows) > 0 {
				out, err := tabletest.DeleteRows(ctx, f.tbl, snap, map[string][]int64{a.Path: rows}, tabletest.DeleteOptions{Options: f.commitOpts()})
				if err != nil {
					t.Fatalf("step %d: delete: %v", step, err)
				}
				f.touch(logpath.CommitKey(out.Version))
				acts, err := delta.ReadCommit(ctx, f.tbl, out.Version)
				if err != nil {
					t.Fatal(err)
				}
				for _, na := range acts {
					if na.Add != nil {
						if k, ok, _ := dvKey(na.Add.DeletionVector); ok {
							f.touch(k)
						}
					}
				}
				record(out.Version)
			}
		}
		// The compaction loop.
		if step%7 == 0 {
			res, err := compaction.Compact(ctx, f.tbl, compaction.RunOptions{Policy: pol, Now: f.clock, EngineInfo: "compactord/test", Snapshots: f.load})
			if err != nil {
				t.Fatalf("step %d: compaction: %v", step, err)
			}
			if res.CommittedVersion >= 0 {
				f.touch(logpath.CommitKey(res.CommittedVersion))
				acts, err := delta.ReadCommit(ctx, f.tbl, res.CommittedVersion)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range acts {
					if a.Add != nil {
						key, _ := a.Add.Key()
						f.touch(key)
						stamp(key)
					}
				}
				record(res.CommittedVersion)
			}
		}
		// Vacuum, lite or full.
		if step%5 == 0 {
			mode := Lite
			if rng.IntN(2) == 0 {
				mode = Full
				fulls++
			} else {
				lites++
			}
			res, err := f.tryVacuum(Options{Mode: mode, Retention: retention, ForceRetention: true, Concurrency: 4})
			if err != nil {
				t.Fatalf("step %d: %s vacuum: %v", step, mode, err)
			}
			vacuums++
			deleted += res.FilesDeleted
			for _, v := range []int64{res.StartVersion, res.EndVersion} {
				if v >= 0 {
					record(v)
				}
			}
			check(step)
		}
	}
	// Past the retention, a full vacuum leaves exactly the live files, their
	// DVs and what pending writes still need.
	f.now = f.now.Add(2 * retention)
	res := f.vacuum(Options{Mode: Full, Retention: retention, ForceRetention: true})
	deleted += res.FilesDeleted
	for _, k := range abandoned {
		if f.exists(k) {
			t.Errorf("abandoned write %s survived a full vacuum past the retention", k)
		}
	}
	got, err := liveIDsAt(t, f, -1)
	if err != nil {
		t.Fatal(err)
	}
	if want := m.snapshotIDs(); !slices.Equal(got, want) {
		t.Fatalf("latest version reads %d ids, want %d", len(got), len(want))
	}
	if deleted == 0 || fulls == 0 || lites == 0 {
		t.Fatalf("the test exercised nothing: %d files deleted, %d full and %d lite vacuums", deleted, fulls, lites)
	}
	t.Logf("%d versions, %d vacuums (%d full, %d lite), %d files deleted, %d abandoned writes swept", len(m.versions), vacuums, fulls, lites, deleted, len(abandoned))
}
