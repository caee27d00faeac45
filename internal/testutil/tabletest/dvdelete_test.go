package tabletest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/internal/testutil"
)

// TestDeleteRowsWritesSparksDVDeleteShape deletes rows twice from one file
// and compares the commits with the DELETE Databricks wrote at version 2 of
// dbr-optimize-dv-cdc-logcompaction: remove(P, oldDV) + add(P, newDV), the
// same fields, dataChange=true, wide stats.
func TestDeleteRowsWritesSparksDVDeleteShape(t *testing.T) {
	ctx := context.Background()
	dbr, err := os.ReadFile(filepath.Join(testutil.DeltaTable(t, "dbr-optimize-dv-cdc-logcompaction"), "_delta_log", "00000000000000000002.json"))
	if err != nil {
		t.Fatal(err)
	}
	wantKinds, wantBodies := lines(t, dbr)

	tbl := memTable(t)
	f := &actions.Add{Path: "part-a.parquet", PartitionValues: map[string]*string{}, Size: 104, Stats: `{"numRecords":4,"tightBounds":true}`,
		Tags: map[string]string{"INSERTION_TIME": "1"}}
	f.DataChange = true
	f.ModificationTime = 77
	snap := dvSnap(f)
	snap.Version = 0
	res, err := DeleteRows(ctx, tbl, snap, map[string][]int64{f.Path: {1}}, DeleteOptions{Predicate: `["(id = 1)"]`})
	if err != nil || res.Version != 1 || res.DeletedRows != 1 {
		t.Fatalf("delete: %+v %v", res, err)
	}
	data, err := tbl.Bucket.ReadAll(ctx, logpath.CommitKey(1))
	if err != nil {
		t.Fatal(err)
	}
	gotKinds, gotBodies := lines(t, data)
	if !slices.Equal(gotKinds, wantKinds) {
		t.Fatalf("kinds %v, DBR %v", gotKinds, wantKinds)
	}
	for i := 1; i < len(gotKinds); i++ {
		if !slices.Equal(fieldNames(gotBodies[i]), fieldNames(wantBodies[i])) {
			t.Errorf("%s fields %v, DBR %v", gotKinds[i], fieldNames(gotBodies[i]), fieldNames(wantBodies[i]))
		}
		if string(gotBodies[i]["dataChange"]) != "true" {
			t.Errorf("%s dataChange %s", gotKinds[i], gotBodies[i]["dataChange"])
		}
	}
	acts, err := delta.ReadCommit(ctx, tbl, 1)
	if err != nil {
		t.Fatal(err)
	}
	rm, add := acts[1].Remove, acts[2].Add
	if rm.DeletionVector != nil || add.DeletionVector == nil || add.DeletionVector.Cardinality != 1 || add.ModificationTime != 77 {
		t.Fatalf("remove DV %+v, add DV %+v", rm.DeletionVector, add.DeletionVector)
	}
	if st, err := stats.ParseStats(add.Stats); err != nil || st.Tight() {
		t.Fatalf("add stats %s must be wide", add.Stats)
	}
	if bm, err := delta.ReadDV(ctx, tbl, add.DeletionVector); err != nil || !slices.Equal(bm.ToArray(), []uint64{1}) {
		t.Fatalf("DV %v %v", bm, err)
	}

	// A second delete on the post-image unions the DVs and removes (P, oldDV).
	snap2 := dvSnap(add)
	snap2.Version = 1
	res, err = DeleteRows(ctx, tbl, snap2, map[string][]int64{f.Path: {1, 3}}, DeleteOptions{})
	if err != nil || res.Version != 2 || res.DeletedRows != 1 {
		t.Fatalf("second delete: %+v %v", res, err)
	}
	acts, _ = delta.ReadCommit(ctx, tbl, 2)
	if acts[1].Remove.DeletionVector.UniqueID() != add.DeletionVector.UniqueID() {
		t.Fatalf("second remove must carry the first DV")
	}
	if bm, err := delta.ReadDV(ctx, tbl, acts[2].Add.DeletionVector); err != nil || !slices.Equal(bm.ToArray(), []uint64{1, 3}) {
		t.Fatalf("cumulative DV %v %v", bm, err)
	}

	// A delete planned on the stale snapshot conflicts with the winner that
	// rewrote the file's DV (delete-read).
	if _, err := DeleteRows(ctx, tbl, snap2, map[string][]int64{f.Path: {0}}, DeleteOptions{}); !errors.Is(err, commit.ErrConflict) {
		t.Fatalf("stale delete: %v, want ErrConflict", err)
	}
	// Rows outside the file are refused.
	if _, err := DeleteRows(ctx, tbl, snap2, map[string][]int64{f.Path: {4}}, DeleteOptions{}); err == nil {
		t.Fatal("row 4 of a 4-row file accepted")
	}
}

// memTable is an in-memory table whose log holds version 0 only.
func memTable(t *testing.T) *delta.Table {
	t.Helper()
	ctx := context.Background()
	tbl, err := delta.OpenTable(ctx, "mem://"+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	if err := tbl.Log.PutIfAbsent(ctx, logpath.CommitKey(0), []byte(`{"commitInfo":{"operation":"WRITE","txnId":"seed-0"}}`+"\n")); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// dvSnap is a snapshot of files on a table that allows deletion vectors.
func dvSnap(files ...*actions.Add) *delta.Snapshot {
	return &delta.Snapshot{
		Protocol: actions.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}},
		Metadata: actions.Metadata{Configuration: map[string]string{"delta.enableDeletionVectors": "true"}},
		Files:    files,
	}
}

// lines splits a commit into its action kinds and their bodies.
func lines(t *testing.T, data []byte) (kinds []string, bodies []map[string]json.RawMessage) {
	t.Helper()
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var top map[string]map[string]json.RawMessage
		if err := json.Unmarshal(l, &top); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		for k, v := range top {
			kinds = append(kinds, k)
			bodies = append(bodies, v)
		}
	}
	return kinds, bodies
}

// fieldNames returns an action body's field names, sorted.
func fieldNames(m map[string]json.RawMessage) []string {
	return slices.Sorted(maps.Keys(m))
}
