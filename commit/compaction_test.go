package commit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/compactord/compactord/composition"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
)

// memDVs keeps deletion vectors in memory: a descriptor's PathOrInlineDv
// names a bitmap in the map.
type memDVs struct {
	m    map[string]*roaring64.Bitmap
	next int
}

func newMemDVs() *memDVs { return &memDVs{m: map[string]*roaring64.Bitmap{}} }

func (d *memDVs) put(b *roaring64.Bitmap) *actions.DeletionVector {
	d.next++
	id := fmt.Sprintf("dv%04d", d.next)
	d.m[id] = b.Clone()
	return &actions.DeletionVector{StorageType: "i", PathOrInlineDv: id, SizeInBytes: 1, Cardinality: int64(b.GetCardinality())}
}

func (d *memDVs) readDV(_ context.Context, dv *actions.DeletionVector) (*roaring64.Bitmap, error) {
	if dv == nil {
		return roaring64.New(), nil
	}
	b, ok := d.m[dv.PathOrInlineDv]
	if !ok {
		return nil, fmt.Errorf("no DV %s", dv.PathOrInlineDv)
	}
	return b.Clone(), nil
}

func (d *memDVs) writeDVs(_ context.Context, bms []*roaring64.Bitmap) ([]*actions.DeletionVector, error) {
	var out []*actions.DeletionVector
	for _, b := range bms {
		out = append(out, d.put(b))
	}
	return out, nil
}

func dvSnap(files ...*actions.Add) *delta.Snapshot {
	return &delta.Snapshot{
		Version:  5,
		Protocol: actions.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}},
		Metadata: actions.Metadata{Configuration: map[string]string{"delta.enableDeletionVectors": "true"}},
		Files:    files,
	}
}

func file(path string, n int64, dv *actions.DeletionVector) *actions.Add {
	return &actions.Add{Path: path, PartitionValues: map[string]*string{}, Size: 100 + n, Stats: fmt.Sprintf(`{"numRecords":%d,"tightBounds":true}`, n),
		Tags: map[string]string{"INSERTION_TIME": "1"}, DeletionVector: dv}
}

// binpack builds a writer result concatenating sources' live rows into one output.
func binpack(id string, out string, srcs ...*actions.Add) *CompactionJob {
	res := &CompactionJob{ID: id, Sources: srcs}
	var off int64
	for _, s := range srcs {
		var phys int64
		fmt.Sscanf(s.Stats, `{"numRecords":%d`, &phys)
		live := phys - s.NumDeleted()
		res.Runs = append(res.Runs, composition.Run{Source: s.Path, Target: out, Output: 0, RowOffsetInTarget: off, SourceNumPhysicalRecords: phys, LiveRows: live})
		off += live
	}
	res.Outputs = []JobOutput{{Add: &actions.Add{Path: out, PartitionValues: map[string]*string{}, Size: 999, Stats: fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":1},"tightBounds":true}`, off)}, Rows: off}}
	return res
}

// dvUpdate is a winner's in-place DV rewrite of f: remove(f, old) + add(f, new).
func dvUpdate(d *memDVs, f *actions.Add, rows ...uint64) (actions.Action, actions.Action, *actions.Add) {
	old, _ := d.readDV(context.Background(), f.DeletionVector)
	w := old.Clone()
	w.AddMany(rows)
	na := *f
	na.DeletionVector = d.put(w)
	na.DataChange = true
	return actions.Action{Remove: &actions.Remove{Path: f.Path, DataChange: true, DeletionVector: f.DeletionVector}}, actions.Action{Add: &na}, &na
}

func TestCompactionConflicts(t *testing.T) {
	ctx := context.Background()
	type setup struct {
		d     *memDVs
		snap  *delta.Snapshot
		res   []*CompactionJob
		files map[string]*actions.Add
	}
	mk := func(dvEnabled bool) setup {
		d := newMemDVs()
		a := file("a.parquet", 100, nil)
		b := file("b.parquet", 100, d.put(roaring64.BitmapOf(0, 10)))
		c := file("c.parquet", 50, nil)
		e := file("e.parquet", 50, nil)
		snap := dvSnap(a, b, c, e)
		if !dvEnabled {
			snap.Metadata.Configuration = map[string]string{}
		}
		return setup{d: d, snap: snap,
			res:   []*CompactionJob{binpack("j1", "out1.parquet", a, b), binpack("j2", "out2.parquet", c, e)},
			files: map[string]*actions.Add{"a": a, "b": b, "c": c, "e": e}}
	}
	tests := []struct {
		name string
		dv   bool
		// winners returns the winning commits in order.
		winners       func(s setup) [][]actions.Action
		wantErr       error
		wantDropped   []string
		wantOutDV     map[string][]uint64 // output path -> deleted rows
		wantRemoveDVs map[string]uint64   // source path -> DV cardinality on our remove
		wantKinds     map[string]int
	}{
		{name: "an append does not conflict", dv: true,
			winners: func(s setup) [][]actions.Action {
				return [][]actions.Action{{{Add: file("new.parquet", 3, nil)}}}
			},
			wantOutDV: map[string][]uint64{}, wantKinds: map[string]int{KindNoConflict: 1}},
		{name: "a DV delete on a source without read-time DV is remapped one to one", dv: true,
			winners: func(s setup) [][]actions.Action {
				r, a, _ := dvUpdate(s.d, s.files["a"], 0, 99)
				return [][]actions.Action{{r, a}}
			},
			wantOutDV:     map[string][]uint64{"out1.parquet": {0, 99}},
			wantRemoveDVs: map[string]uint64{"a.parquet": 2, "b.parquet": 2},
			wantKinds:     map[string]int{KindReconciled: 1}},
		{name: "a DV delete on a source with a read-time DV remaps only new rows, shifted", dv: true,
			winners: func(s setup) [][]actions.Action {
				r, a, _ := dvUpdate(s.d, s.files["b"], 5, 50)
				return [][]actions.Action{{r, a}}
			},
			// b starts at 100; row 5 has 1 read-time deletion below (0) -> 104; row 50 has 2 (0,10) -> 148.
			wantOutDV:     map[string][]uint64{"out1.parquet": {104, 148}},
			wantRemoveDVs: map[string]uint64{"b.parquet": 4},
			wantKinds:     map[string]int{KindReconciled: 1}},
		{name: "deletes in several sources of one output union into one DV", dv: true,
			winners: func(s setup) [][]actions.Action {
				r1, a1, _ := dvUpdate(s.d, s.files["a"], 7)
				r2, a2, _ := dvUpdate(s.d, s.files["b"], 99)
				return [][]actions.Action{{r1, a1, r2, a2}}
			},
			wantOutDV: map[string][]uint64{"out1.parquet": {7, 197}},
			wantKinds: map[string]int{KindReconciled: 2}},
		{name: "two stacked winners on one source both land", dv: true,
			winners: func(s setup) [][]actions.Action {
				r1, a1, post := dvUpdate(s.d, s.files["c"], 1)
				r2, a2, _ := dvUpdate(s.d, post, 2)
				return [][]actions.Action{{r1, a1}, {r2, a2}}
			},
			wantOutDV:     map[string][]uint64{"out2.parquet": {1, 2}},
			wantRemoveDVs: map[string]uint64{"c.parquet": 2},
			wantKinds:     map[string]int{KindReconciled: 2}},
		{name: "a copy-on-write winner drops only the job that read its file", dv: true,
			winners: func(s setup) [][]actions.Action {
				r1, a1, _ := dvUpdate(s.d, s.files["a"], 3)
				return [][]actions.Action{{r1, a1}, {{Remove: &actions.Remove{Path: "e.parquet", DataChange: true}}, {Add: file("e2.parquet", 49, nil)}}}
			},
			wantDropped: []string{"j2"},
			wantOutDV:   map[string][]uint64{"out1.parquet": {3}},
			wantKinds:   map[string]int{KindReconciled: 1, KindCopyOnWrite: 1}},
		{name: "a metadata change abandons the attempt", dv: true,
			winners: func(s setup) [][]actions.Action {
				return [][]actions.Action{{{Metadata: &actions.Metadata{ID: "x"}}}}
			},
			wantErr: ErrMetadataChanged},
		{name: "a protocol change abandons the attempt", dv: true,
			winners: func(s setup) [][]actions.Action {
				return [][]actions.Action{{{Protocol: &actions.Protocol{MinReaderVersion: 3, MinWriterVersion: 7}}}}
			},
			wantErr: ErrMetadataChanged},
		{name: "without delta.enableDeletionVectors a DV winner drops the job", dv: false,
			winners: func(s setup) [][]actions.Action {
				r, a, _ := dvUpdate(s.d, s.files["c"], 1)
				return [][]actions.Action{{r, a}}
			},
			wantDropped: []string{"j2"}, wantOutDV: map[string][]uint64{},
			wantKinds: map[string]int{KindDVUpdateDropped: 1}},
		{name: "a winner that resurrects read-time deletions drops the job", dv: true,
			winners: func(s setup) [][]actions.Action {
				na := *s.files["b"]
				na.DeletionVector = s.d.put(roaring64.BitmapOf(0, 3))
				return [][]actions.Action{{{Remove: &actions.Remove{Path: "b.parquet", DeletionVector: s.files["b"].DeletionVector}}, {Add: &na}}}
			},
			wantDropped: []string{"j1"}, wantOutDV: map[string][]uint64{},
			wantKinds: map[string]int{KindDVUpdateDropped: 1}},
		{name: "a DV naming a row past the source's rows drops the job", dv: true,
			winners: func(s setup) [][]actions.Action {
				r, a, _ := dvUpdate(s.d, s.files["c"], 50)
				return [][]actions.Action{{r, a}}
			},
			wantDropped: []string{"j2"}, wantOutDV: map[string][]uint64{},
			wantKinds: map[string]int{KindDVUpdateDropped: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mk(tt.dv)
			c, err := newCompaction(delta.FileKeys{}, s.snap, s.res, s.d, 1234)
			if err != nil {
				t.Fatal(err)
			}
			var obsErr error
			for i, w := range tt.winners(s) {
				if obsErr = c.observe(ctx, int64(6+i), w); obsErr != nil {
					break
				}
			}
			if tt.wantErr != nil {
				if obsErr == nil || !strings.Contains(obsErr.Error(), tt.wantErr.Error()) {
					t.Fatalf("want %v, got %v", tt.wantErr, obsErr)
				}
				return
			}
			if obsErr != nil {
				t.Fatal(obsErr)
			}
			var dropped []string
			for _, j := range c.jobs {
				if j.dropped != nil {
					dropped = append(dropped, j.dropped.JobID)
				}
			}
			if !slices.Equal(dropped, tt.wantDropped) {
				t.Fatalf("dropped %v want %v", dropped, tt.wantDropped)
			}
			for k, n := range tt.wantKinds {
				if c.conflicts[k] != n {
					t.Errorf("conflicts[%s]=%d want %d (%v)", k, c.conflicts[k], n, c.conflicts)
				}
			}
			removes, adds, err := c.attemptActions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			gotDV := map[string][]uint64{}
			for _, a := range adds {
				if a.DataChange {
					t.Errorf("output %s has dataChange=true", a.Path)
				}
				if a.DeletionVector == nil {
					if strings.Contains(a.Stats, `"tightBounds":false`) {
						t.Errorf("output %s without DV has wide stats", a.Path)
					}
					continue
				}
				b, _ := s.d.readDV(ctx, a.DeletionVector)
				gotDV[a.Path] = b.ToArray()
				if !strings.Contains(a.Stats, `"tightBounds":false`) {
					t.Errorf("output %s with a DV keeps tight stats: %s", a.Path, a.Stats)
				}
			}
			if fmt.Sprint(gotDV) != fmt.Sprint(tt.wantOutDV) {
				t.Errorf("output DVs %v want %v", gotDV, tt.wantOutDV)
			}
			for _, r := range removes {
				if r.DataChange {
					t.Errorf("remove %s has dataChange=true", r.Path)
				}
				if want, ok := tt.wantRemoveDVs[r.Path]; ok {
					if r.DeletionVector == nil || uint64(r.DeletionVector.Cardinality) != want {
						t.Errorf("remove %s DV %+v, want cardinality %d", r.Path, r.DeletionVector, want)
					}
				}
			}
		})
	}
}

func TestCompactionRemoveShape(t *testing.T) {
	d := newMemDVs()
	a := file("a.parquet", 4, nil)
	b := file("b.parquet", 2, d.put(roaring64.BitmapOf(1)))
	c2 := file("c.parquet", 2, d.put(roaring64.BitmapOf(0)))
	snap := dvSnap(a, b, c2)
	c, err := newCompaction(delta.FileKeys{}, snap, []*CompactionJob{binpack("j", "part-out.parquet", a, b, c2)}, d, 1734070118440)
	if err != nil {
		t.Fatal(err)
	}
	removes, _, err := c.attemptActions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The DBR v17 commit in dbr-optimize-dv-cdc-logcompaction: offsets 0, 4, 5.
	wantInfo := []string{
		`[{"rowOffsetInTarget":0,"sourceNumPhysicalRecords":4}]`,
		`[{"rowOffsetInTarget":4,"sourceNumPhysicalRecords":2}]`,
		`[{"rowOffsetInTarget":5,"sourceNumPhysicalRecords":2}]`,
	}
	for i, r := range removes {
		if got := r.Tags[composition.TagCompactionInfo]; got != wantInfo[i] {
			t.Errorf("remove %d compactionInfo %s want %s", i, got, wantInfo[i])
		}
		if got := r.Tags[composition.TagCompactedInto]; got != `["part-out.parquet"]` {
			t.Errorf("remove %d compactedInto %s", i, got)
		}
		if r.Tags["INSERTION_TIME"] != "1" {
			t.Errorf("remove %d lost the source's tags: %v", i, r.Tags)
		}
		var st map[string]any
		if err := json.Unmarshal([]byte(r.Stats), &st); err != nil || len(st) != 1 || st["numRecords"] == nil {
			t.Errorf("remove %d stats %q, want only numRecords", i, r.Stats)
		}
		if r.ExtendedFileMetadata == nil || !*r.ExtendedFileMetadata || r.Size == nil || r.PartitionValues == nil || *r.DeletionTimestamp != 1734070118440 {
			t.Errorf("remove %d lacks extended metadata: %+v", i, r)
		}
	}
	if removes[1].DeletionVector == nil || removes[0].DeletionVector != nil {
		t.Errorf("removes must carry their read-time DVs")
	}
}

func TestReconcileAcrossTwoOutputsOfOneJob(t *testing.T) {
	ctx := context.Background()
	d := newMemDVs()
	a := file("a.parquet", 10, nil)
	b := file("b.parquet", 10, d.put(roaring64.BitmapOf(0)))
	c := file("c.parquet", 10, nil)
	// a and b land in output 0 (rows 0..18), c in output 1 (rows 0..9).
	res := &CompactionJob{ID: "j", Sources: []*actions.Add{a, b, c},
		Runs: []composition.Run{
			{Source: a.Path, Target: "o0.parquet", Output: 0, RowOffsetInTarget: 0, SourceNumPhysicalRecords: 10, LiveRows: 10},
			{Source: b.Path, Target: "o0.parquet", Output: 0, RowOffsetInTarget: 10, SourceNumPhysicalRecords: 10, LiveRows: 9},
			{Source: c.Path, Target: "o1.parquet", Output: 1, RowOffsetInTarget: 0, SourceNumPhysicalRecords: 10, LiveRows: 10},
		},
		Outputs: []JobOutput{
			{Add: &actions.Add{Path: "o0.parquet", Stats: `{"numRecords":19,"tightBounds":true}`}, Rows: 19},
			{Add: &actions.Add{Path: "o1.parquet", Stats: `{"numRecords":10,"tightBounds":true}`}, Rows: 10},
		}}
	comp, err := newCompaction(delta.FileKeys{}, dvSnap(a, b, c), []*CompactionJob{res}, d, 1)
	if err != nil {
		t.Fatal(err)
	}
	rb, ab, _ := dvUpdate(d, b, 9)
	rc, ac, _ := dvUpdate(d, c, 0)
	if err := comp.observe(ctx, 6, []actions.Action{rb, ab, rc, ac}); err != nil {
		t.Fatal(err)
	}
	_, adds, err := comp.attemptActions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]uint64{"o0.parquet": {18}, "o1.parquet": {0}}
	for _, add := range adds {
		bm, err := d.readDV(ctx, add.DeletionVector)
		if err != nil || !slices.Equal(bm.ToArray(), want[add.Path]) {
			t.Errorf("%s DV %v (%v), want %v", add.Path, bm.ToArray(), err, want[add.Path])
		}
	}
}

func TestInvalidCompositionIsNeverCommitted(t *testing.T) {
	a := file("a.parquet", 10, nil)
	b := file("b.parquet", 10, nil)
	bad := binpack("bad", "o.parquet", a, b)
	bad.Runs[1].RowOffsetInTarget = 9 // overlaps a's run
	good := binpack("good", "o2.parquet", file("c.parquet", 5, nil), file("e.parquet", 5, nil))
	snap := dvSnap(append(append([]*actions.Add{}, bad.Sources...), good.Sources...)...)
	comp, err := newCompaction(delta.FileKeys{}, snap, []*CompactionJob{bad, good}, newMemDVs(), 1)
	if err != nil {
		t.Fatal(err)
	}
	removes, adds, err := comp.attemptActions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if comp.jobs[0].dropped == nil || comp.jobs[0].dropped.Kind != KindInvalidComposition || len(removes) != 2 || len(adds) != 1 || adds[0].Path != "o2.parquet" {
		t.Fatalf("dropped %+v, %d removes, %d adds", comp.jobs[0].dropped, len(removes), len(adds))
	}
}

// A job dropped because another compaction removed its source says so, and
// when that compaction was compactord's, names the replica setting that
// makes two daemons take turns.
func TestAJobDroppedForAnotherCompactionSaysWhoAndWhatToSet(t *testing.T) {
	ctx := context.Background()
	info := func(op, engine string) actions.Action {
		return actions.Action{CommitInfo: actions.CommitInfo{"operation": json.RawMessage(`"` + op + `"`), "engineInfo": json.RawMessage(`"` + engine + `"`)}}
	}
	for _, c := range []struct {
		name   string
		winner actions.Action
		want   string
	}{
		{"another compactord", info("OPTIMIZE", "compactord/0.1.0"),
			`winner removed source c.parquet: version 6 is another compactord's compaction of the same files; if two daemons run on this table, give each its own daemon { replica = "..." } (or --replica) so that they take turns through the table's lease`},
		{"another engine's OPTIMIZE", info("OPTIMIZE", "Apache-Spark/3.5.0 Delta-Lake/3.2.0"),
			"winner removed source c.parquet: version 6 is another writer's compaction (OPTIMIZE) of the same files; let one compactor own the table"},
		{"a copy-on-write DELETE", info("DELETE", "Apache-Spark/3.5.0 Delta-Lake/3.2.0"), "winner removed source c.parquet"},
	} {
		d := newMemDVs()
		a, b := file("a.parquet", 100, nil), file("b.parquet", 100, nil)
		cf, e := file("c.parquet", 50, nil), file("e.parquet", 50, nil)
		comp, err := newCompaction(delta.FileKeys{}, dvSnap(a, b, cf, e), []*CompactionJob{binpack("j1", "out1.parquet", a, b), binpack("j2", "out2.parquet", cf, e)}, d, 1234)
		if err != nil {
			t.Fatal(err)
		}
		winner := []actions.Action{c.winner, {Remove: &actions.Remove{Path: "c.parquet", DataChange: false}}, {Remove: &actions.Remove{Path: "e.parquet", DataChange: false}}, {Add: file("ce.parquet", 100, nil)}}
		if err := comp.observe(ctx, 6, winner); err != nil {
			t.Fatal(err)
		}
		if got := comp.jobs[1].dropped; got == nil || got.Reason != c.want {
			t.Errorf("%s: dropped %+v, want the reason %q", c.name, got, c.want)
		}
		if comp.jobs[0].dropped != nil {
			t.Errorf("%s: j1 dropped: %+v", c.name, comp.jobs[0].dropped)
		}
	}
}
