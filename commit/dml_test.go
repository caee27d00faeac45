package commit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	deltascan "github.com/compactord/compactord/delta/scan"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/composition"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/predicate"
	"github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/testutil"
)

var idCol = predicate.Column{Path: []string{"id"}, Kind: predicate.KindInt}

func rangeFile(path string, n, lo, hi int64, dv *actions.DeletionVector) *actions.Add {
	a := &actions.Add{Path: path, PartitionValues: map[string]*string{}, Size: 100 + n, DataChange: true,
		Stats:          fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d},"maxValues":{"id":%d},"nullCount":{"id":0},"tightBounds":true}`, n, lo, hi),
		DeletionVector: dv}
	dec := json.NewDecoder(strings.NewReader(a.Stats))
	dec.UseNumber()
	var st stats.Stats
	if err := dec.Decode(&st); err != nil {
		panic(err)
	}
	a.ParsedStats = &st
	return a
}

// newDML builds a retention delete of `id < 50` over a read snapshot.
func newDML(t *testing.T, d *memDVs, isolation string, changes ...*FileChange) *DML {
	t.Helper()
	pred, err := predicate.NewCmp(idCol, predicate.OpLt, predicate.Int(50))
	if err != nil {
		t.Fatal(err)
	}
	var files []*actions.Add
	for _, c := range changes {
		files = append(files, c.Read)
	}
	m := &DML{
		Txn:       &Txn{Snapshot: dvSnap(files...), Operation: "DELETE"},
		Reads:     []predicate.Read{{Data: pred}},
		Changes:   changes,
		Isolation: isolation,
		dvs:       d,
	}
	if err := m.init(); err != nil {
		t.Fatal(err)
	}
	return m
}

func rows(b *roaring64.Bitmap) []uint64 { return b.ToArray() }

// actionsByKind splits built actions into removes and adds keyed by path.
func actionsByKind(acts []actions.Action) (map[string]*actions.Remove, map[string]*actions.Add) {
	rm, ad := map[string]*actions.Remove{}, map[string]*actions.Add{}
	for _, a := range acts {
		if a.Remove != nil {
			rm[a.Remove.Path] = a.Remove
		}
		if a.Add != nil {
			ad[a.Add.Path] = a.Add
		}
	}
	return rm, ad
}

func TestDMLSameFileDVMerge(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		ours      []uint64
		whole     bool
		winner    []uint64
		wantErr   bool
		wantDV    []uint64
		wantKinds map[string]int
	}{
		{name: "disjoint rows merge into one DV", ours: []uint64{1, 2}, winner: []uint64{7},
			wantDV: []uint64{1, 2, 3, 7}, wantKinds: map[string]int{KindDVMerged: 1}},
		{name: "the same row deleted by both is a real conflict", ours: []uint64{1, 7}, winner: []uint64{7},
			wantErr: true, wantKinds: map[string]int{KindConcurrentDelete: 1}},
		{name: "a whole-file delete against a concurrent DV is a conflict", whole: true, winner: []uint64{9},
			wantErr: true, wantKinds: map[string]int{KindConcurrentDelete: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newMemDVs()
			f := rangeFile("p.parquet", 10, 0, 9, d.put(roaring64.BitmapOf(3)))
			m := newDML(t, d, Serializable, &FileChange{Read: f, Deleted: roaring64.BitmapOf(tc.ours...), Whole: tc.whole})
			r, a, post := dvUpdate(d, f, tc.winner...)
			err := m.observe(ctx, 6, []actions.Action{r, a})
			if tc.wantErr != (err != nil) {
				t.Fatalf("observe error = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, ErrConflict) {
				t.Fatalf("conflict error does not wrap ErrConflict: %v", err)
			}
			for k, n := range tc.wantKinds {
				if m.conflicts[k] != n {
					t.Errorf("conflicts[%s] = %d, want %d (all: %v)", k, m.conflicts[k], n, m.conflicts)
				}
			}
			if err != nil {
				return
			}
			acts, _, err := m.build(ctx)
			if err != nil {
				t.Fatal(err)
			}
			removes, adds := actionsByKind(acts)
			if got := removes["p.parquet"].DeletionVector.UniqueID(); got != post.DeletionVector.UniqueID() {
				t.Errorf("remove points at DV %q, want the winner's post-image %q", got, post.DeletionVector.UniqueID())
			}
			got, _ := d.readDV(ctx, adds["p.parquet"].DeletionVector)
			if !slices.Equal(rows(got), tc.wantDV) {
				t.Errorf("merged DV = %v, want %v", rows(got), tc.wantDV)
			}
			if adds["p.parquet"].DeletionVector.Cardinality != int64(len(tc.wantDV)) {
				t.Errorf("descriptor cardinality %d", adds["p.parquet"].DeletionVector.Cardinality)
			}
		})
	}
}

// compactionWinner removes srcs (dataChange=false, with composition tags as
// compactord and DBR write them) and adds one output holding their live rows.
func compactionWinner(t *testing.T, d *memDVs, out string, srcs ...*actions.Add) []actions.Action {
	t.Helper()
	res := binpack("w", out, srcs...)
	var acts []actions.Action
	for i, s := range srcs {
		run := res.Runs[i]
		rm, err := compactionRemove(s, run.SourceNumPhysicalRecords, &run, 1)
		if err != nil {
			t.Fatal(err)
		}
		acts = append(acts, actions.Action{Remove: rm})
	}
	o := *res.Outputs[0].Add
	acts = append(acts, actions.Action{Add: &o})
	return acts
}

func TestDMLReverseRemapOntoCompaction(t *testing.T) {
	ctx := context.Background()
	d := newMemDVs()
	a := rangeFile("a.parquet", 10, 0, 9, nil)
	b := rangeFile("b.parquet", 10, 10, 19, d.put(roaring64.BitmapOf(0, 4)))
	c := rangeFile("c.parquet", 5, 100, 104, nil)
	// We delete rows 2 of a, 5 and 9 of b; c is removed whole.
	m := newDML(t, d, Serializable,
		&FileChange{Read: a, Deleted: roaring64.BitmapOf(2)},
		&FileChange{Read: b, Deleted: roaring64.BitmapOf(5, 9)},
		&FileChange{Read: c, Whole: true})
	win := compactionWinner(t, d, "out.parquet", a, b, c)
	if err := m.observe(ctx, 6, win); err != nil {
		t.Fatal(err)
	}
	if m.conflicts[KindReverseRemapped] != 3 {
		t.Fatalf("conflicts = %v, want 3 reverse remaps", m.conflicts)
	}
	acts, metrics, err := m.build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	removes, adds := actionsByKind(acts)
	if len(removes) != 1 || removes["out.parquet"] == nil || len(adds) != 1 {
		t.Fatalf("want remove+add of the compaction output only, got removes %v adds %v", keys(removes), keys(adds))
	}
	got, _ := d.readDV(ctx, adds["out.parquet"].DeletionVector)
	// a occupies 0..9 (row 2 -> 2); b's live rows 1,2,3,5..9 occupy 10..17:
	// row 5 -> 10 + 5 - 2 = 13, row 9 -> 17; c occupies 18..22 entirely.
	want := []uint64{2, 13, 17, 18, 19, 20, 21, 22}
	if !slices.Equal(rows(got), want) {
		t.Fatalf("remapped DV on output = %v, want %v", rows(got), want)
	}
	if metrics["numDeletedRows"] != "8" {
		t.Errorf("numDeletedRows = %s, want 8", metrics["numDeletedRows"])
	}
}

func TestDMLReverseRemapNeedsTags(t *testing.T) {
	ctx := context.Background()
	d := newMemDVs()
	a := rangeFile("a.parquet", 10, 0, 9, nil)
	m := newDML(t, d, Serializable, &FileChange{Read: a, Deleted: roaring64.BitmapOf(2)})
	win := compactionWinner(t, d, "out.parquet", a)
	delete(win[0].Remove.Tags, composition.TagCompactionInfo)
	err := m.observe(ctx, 6, win)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("a compaction without composition tags must abort the attempt, got %v", err)
	}
}

func TestDMLAddedFilesCheck(t *testing.T) {
	ctx := context.Background()
	blindAppend := func(lo, hi int64) []actions.Action {
		return []actions.Action{
			{CommitInfo: CommitInfoFields(map[string]any{"isBlindAppend": true})},
			{Add: rangeFile(fmt.Sprintf("new-%d.parquet", lo), 100, lo, hi, nil)},
		}
	}
	upsert := func(lo, hi int64) []actions.Action {
		return []actions.Action{
			{CommitInfo: CommitInfoFields(map[string]any{"isBlindAppend": false})},
			{Add: rangeFile(fmt.Sprintf("merge-%d.parquet", lo), 100, lo, hi, nil)},
		}
	}
	noStats := []actions.Action{{Add: &actions.Add{Path: "nostats.parquet", DataChange: true}}}
	tests := []struct {
		name      string
		isolation string
		skipStats bool
		winner    []actions.Action
		wantErr   bool
		wantKind  string
	}{
		{"Serializable: a disjoint blind append is skipped by stats", Serializable, false, blindAppend(1000, 1100), false, KindSkippedByStats},
		{"Serializable: an overlapping blind append conflicts", Serializable, false, blindAppend(40, 1100), true, KindConcurrentAppend},
		{"Serializable: skipping switched off conflicts", Serializable, true, blindAppend(1000, 1100), true, KindConcurrentAppend},
		{"WriteSerializable: blind appends are not checked", WriteSerializable, false, blindAppend(0, 10), false, ""},
		{"WriteSerializable: an overlapping upsert conflicts", WriteSerializable, false, upsert(0, 10), true, KindConcurrentAppend},
		{"WriteSerializable: a disjoint upsert is skipped", WriteSerializable, false, upsert(500, 600), false, KindSkippedByStats},
		{"missing stats conflict", Serializable, false, noStats, true, KindConcurrentAppend},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newMemDVs()
			a := rangeFile("a.parquet", 10, 0, 9, nil)
			m := newDML(t, d, tc.isolation, &FileChange{Read: a, Deleted: roaring64.BitmapOf(2)})
			m.Matcher.SkipStats = tc.skipStats
			err := m.observe(ctx, 6, tc.winner)
			if tc.wantErr != (err != nil) {
				t.Fatalf("observe error = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantKind != "" && m.conflicts[tc.wantKind] != 1 {
				t.Fatalf("conflicts = %v, want one %s", m.conflicts, tc.wantKind)
			}
		})
	}
}

func TestDMLReadOnlyFiles(t *testing.T) {
	ctx := context.Background()
	d := newMemDVs()
	a := rangeFile("a.parquet", 10, 0, 9, nil)
	ro := rangeFile("ro.parquet", 10, 40, 60, nil)
	m := newDML(t, d, Serializable, &FileChange{Read: a, Deleted: roaring64.BitmapOf(2)})
	m.ReadOnly = map[string]bool{"ro.parquet": true}
	// A compaction moving a file we only read is harmless.
	if err := m.observe(ctx, 6, compactionWinner(t, d, "out.parquet", ro)); err != nil {
		t.Fatalf("compaction of a read-only file: %v", err)
	}
	// A copy-on-write rewrite of it whose new rows stay outside our reads
	// is harmless, even claimed as a blind append under WriteSerializable.
	rewrite := func(lo int64) []actions.Action {
		return []actions.Action{
			{CommitInfo: CommitInfoFields(map[string]any{"isBlindAppend": true})},
			{Remove: removeWithTimestamp(ro, 1, true)}, {Add: rangeFile("ro2.parquet", 9, lo, 60, nil)}}
	}
	m2 := newDML(t, d, WriteSerializable, &FileChange{Read: a, Deleted: roaring64.BitmapOf(2)})
	m2.ReadOnly = map[string]bool{"ro.parquet": true}
	if err := m2.observe(ctx, 6, rewrite(50)); err != nil {
		t.Fatalf("rewrite of a read file outside our range: %v", err)
	}
	// One that moves a row into our range (an UPDATE) conflicts.
	m3 := newDML(t, d, WriteSerializable, &FileChange{Read: a, Deleted: roaring64.BitmapOf(2)})
	m3.ReadOnly = map[string]bool{"ro.parquet": true}
	if err := m3.observe(ctx, 6, rewrite(7)); !errors.Is(err, ErrConflict) {
		t.Fatalf("rewrite of a read file into our range: got %v, want a conflict", err)
	}
}

func TestDMLMetadataChangeAbandons(t *testing.T) {
	d := newMemDVs()
	a := rangeFile("a.parquet", 10, 0, 9, nil)
	m := newDML(t, d, Serializable, &FileChange{Read: a, Deleted: roaring64.BitmapOf(2)})
	err := m.observe(context.Background(), 6, []actions.Action{{Metadata: &actions.Metadata{ID: "x"}}})
	if !errors.Is(err, ErrMetadataChanged) || failure.Of(err) != failure.Retry {
		t.Fatalf("got %v (class %v), want ErrMetadataChanged, retry", err, failure.Of(err))
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// idsByPhysicalRow scans a file's live rows and returns the id column by
// physical row index.
func idsByPhysicalRow(t *testing.T, tbl *delta.Table, snap *delta.Snapshot, a *actions.Add) map[int64]any {
	t.Helper()
	ctx := context.Background()
	dec, err := deltascan.NewRowDecoder(snap, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	scan, err := deltascan.OpenFileScan(ctx, tbl, snap, a, deltascan.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer scan.Close()
	part, err := dec.PartitionValues(a)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]any{}
	rows := make([]parquet.Row, 16)
	idx := make([]int64, 16)
	for {
		n, err := scan.ReadRows(rows, idx)
		for i := 0; i < n; i++ {
			st, derr := dec.Decode(rows[i], part)
			if derr != nil {
				t.Fatal(derr)
			}
			id, _ := st.Get("id")
			out[idx[i]] = id
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Reverse reconciliation against a real Databricks OPTIMIZE: a delete of
// each live row of each compacted source, read at version 16, loses to the
// OPTIMIZE at version 17 and is remapped onto its output through the DBR
// tags; the remapped position holds the very row that was deleted.
func TestDMLReverseRemapOntoDatabricksOptimize(t *testing.T) {
	ctx := context.Background()
	tbl, err := delta.OpenTable(ctx, testutil.DeltaTable(t, "dbr-optimize-dv-cdc-logcompaction"))
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	snap16, err := delta.LoadSnapshot(ctx, tbl, 16)
	if err != nil {
		t.Fatal(err)
	}
	snap17, err := delta.LoadSnapshot(ctx, tbl, 17)
	if err != nil {
		t.Fatal(err)
	}
	win, err := delta.ReadCommit(ctx, tbl, 17)
	if err != nil {
		t.Fatal(err)
	}
	live16 := map[string]*actions.Add{}
	for _, f := range snap16.Files {
		live16[f.Path] = f
	}
	checked := 0
	for _, a := range win {
		if a.Remove == nil {
			continue
		}
		src := live16[a.Remove.Path]
		if src == nil {
			t.Fatalf("source %s of the OPTIMIZE is not live at version 16", a.Remove.Path)
		}
		comp, err := composition.Parse(a.Remove.Path, a.Remove.Tags)
		if err != nil {
			t.Fatal(err)
		}
		var target *actions.Add
		for _, f := range snap17.Files {
			if f.Path == comp[0].Target {
				target = f
			}
		}
		srcIDs := idsByPhysicalRow(t, tbl, snap16, src)
		outIDs := idsByPhysicalRow(t, tbl, snap17, target)
		for i, id := range srcIDs {
			d := &DML{
				Txn:     &Txn{Table: tbl, Snapshot: snap16, Operation: "DELETE"},
				Changes: []*FileChange{{Read: src, Deleted: roaring64.BitmapOf(uint64(i))}},
				dvs:     tableDVs{t: tbl},
			}
			if err := d.init(); err != nil {
				t.Fatal(err)
			}
			if err := d.observe(ctx, 17, win); err != nil {
				t.Fatalf("delete of %s row %d: %v", src.Path, i, err)
			}
			tg := d.targets[target.Path]
			if tg == nil || tg.ours.GetCardinality() != 1 {
				t.Fatalf("delete of %s row %d was not remapped onto %s", src.Path, i, target.Path)
			}
			pos := int64(tg.ours.Minimum())
			if outIDs[pos] != id {
				t.Fatalf("%s row %d (id %v) remapped to output row %d, which holds id %v", src.Path, i, id, pos, outIDs[pos])
			}
			checked++
		}
	}
	if checked != 6 {
		t.Fatalf("checked %d remapped rows, want the output's 6", checked)
	}
}

// A winner's added file whose stats cannot be evaluated is kept (the
// conservative check) and the fallback is counted once.
func TestDMLSkippingFallbackCounted(t *testing.T) {
	d := newMemDVs()
	a := rangeFile("a.parquet", 10, 0, 9, nil)
	m := newDML(t, d, Serializable, &FileChange{Read: a, Deleted: roaring64.BitmapOf(2)})
	bad := &actions.Add{Path: "bad.parquet", DataChange: true, Stats: `{"numRecords":3,"minValues":{"id":"x"},"maxValues":{"id":"y"}}`}
	err := m.observe(context.Background(), 6, []actions.Action{{Add: bad}})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("got %v, want the conservative conflict", err)
	}
	if m.conflicts[KindSkippingFallback] != 1 || m.conflicts[KindConcurrentAppend] != 1 {
		t.Fatalf("conflicts %v: want one fallback and one append conflict", m.conflicts)
	}
}
