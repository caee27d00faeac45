package runner

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/checkpointwrite"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/policies"
)

// The poll keeps slim snapshots: on every readable shared table, under the
// default policy and under clustering policies on its first column, the
// slim snapshot's backlog and plan are the full snapshot's, its files keep
// their row counts and the clustering column's statistics, and it cannot
// be checkpointed.
func TestSlimSnapshotsPlanAndMeasureLikeFullOnes(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, e := range testutil.ExpectedTables(t) {
		if !e.Readable() {
			continue
		}
		t.Run(name, func(t *testing.T) {
			tbl, full := loadShared(t, name)
			pols := []policies.Policy{testPolicy(name)}
			if f := full.Schema.Fields; len(f) > 0 {
				for _, s := range []policies.Strategy{policies.StrategyLightweight, policies.StrategyZcube} {
					p := testPolicy(name)
					p.Strategy, p.Clustering.Columns = s, []string{f[0].Name}
					pols = append(pols, p)
				}
			}
			for _, p := range pols {
				pp := p.PlannerPolicy(now)
				cols, err := planner.StatsColumns(full, pp)
				if err != nil {
					continue // the planner refuses this table under p either way
				}
				slim, err := full.Slim(cols, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !slim.IsSlim() || full.IsSlim() || slim.Tombstones != nil || len(slim.Files) != len(full.Files) {
					t.Fatalf("%s: slim snapshot: %v %v %d tombstones, %d of %d files", p.Strategy, slim.IsSlim(), full.IsSlim(), len(slim.Tombstones), len(slim.Files), len(full.Files))
				}
				for i, f := range full.Files {
					checkSlimFile(t, f, slim.Files[i], cols)
				}
				wb, werr := ComputeBacklog(full, p, now)
				gb, gerr := ComputeBacklog(slim, p, now)
				if !reflect.DeepEqual(gb, wb) || (gerr == nil) != (werr == nil) {
					t.Fatalf("%s: slim backlog %+v (%v), full %+v (%v)", p.Strategy, gb, gerr, wb, werr)
				}
				wp, werr := planner.Plan(full, pp)
				gp, gerr := planner.Plan(slim, pp)
				if (gerr == nil) != (werr == nil) || (werr == nil && !reflect.DeepEqual(planPaths(gp), planPaths(wp))) {
					t.Fatalf("%s: slim plan %v (%v), full %v (%v)", p.Strategy, planPaths(gp), gerr, planPaths(wp), werr)
				}
			}
			if _, err := checkpointwrite.WriteCheckpoint(ctx, tbl, mustSlim(t, full), checkpointwrite.CheckpointOptions{}); err == nil || errors.Is(err, checkpointwrite.ErrCheckpointExists) {
				t.Fatalf("checkpoint of a slim snapshot: %v", err)
			}
		})
	}
}

func mustSlim(t *testing.T, s *delta.Snapshot) *delta.Snapshot {
	t.Helper()
	slim, err := s.Slim(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return slim
}

// checkSlimFile fails when the slim file g lost anything of f but stats
// beyond numRecords and the columns.
func checkSlimFile(t *testing.T, f, g *actions.Add, cols [][]string) {
	t.Helper()
	wn, wok, werr := f.NumRecords()
	gn, gok, gerr := g.NumRecords()
	if wn != gn || wok != gok || werr != nil || gerr != nil {
		t.Fatalf("%s: slim numRecords %d/%v/%v, full %d/%v/%v", f.Path, gn, gok, gerr, wn, wok, werr)
	}
	a, b := *f, *g
	a.Stats, a.ParsedStats, b.Stats, b.ParsedStats = "", nil, "", nil
	// An empty partitionValues map is kept as nil (read and written the
	// same); any other is kept as it is.
	if len(a.PartitionValues) == 0 && b.PartitionValues == nil {
		a.PartitionValues = nil
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%s: slim file differs beyond stats:\n%+v\n%+v", f.Path, b, a)
	}
	fs, _ := f.FullStats()
	gs, _ := g.FullStats()
	if fs == nil || gs == nil {
		if gs != nil || (fs != nil && (fs.NumRecords != nil || len(cols) > 0)) {
			t.Fatalf("%s: slim stats %+v, full %+v", f.Path, gs, fs)
		}
		return
	}
	for _, c := range cols {
		for _, m := range [][2]map[string]any{{fs.MinValues, gs.MinValues}, {fs.MaxValues, gs.MaxValues}, {fs.NullCount, gs.NullCount}} {
			if w, g := statAt(m[0], c), statAt(m[1], c); !reflect.DeepEqual(w, g) {
				t.Fatalf("%s: slim stat of %v = %v, full %v", f.Path, c, g, w)
			}
		}
	}
}

// statAt is the value at path of a nested stats map (nil when absent).
func statAt(m map[string]any, path []string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

// planPaths are a plan's jobs as their strategies and source paths.
func planPaths(p *planner.CompactionPlan) [][]string {
	if p == nil {
		return nil
	}
	var out [][]string
	for _, j := range p.Jobs {
		js := []string{string(j.Strategy)}
		for _, s := range j.Sources {
			js = append(js, s.Path)
		}
		out = append(out, js)
	}
	return out
}

// loadShared opens the shared test table name (closed when the test ends)
// and loads its latest snapshot.
func loadShared(t *testing.T, name string) (*delta.Table, *delta.Snapshot) {
	t.Helper()
	ctx := context.Background()
	tbl, err := delta.OpenTable(ctx, "file://"+testutil.DeltaTable(t, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	snap, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, snap
}
