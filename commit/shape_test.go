package commit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/compactord/compactord/composition"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/internal/testutil"
)

// lines splits a commit into (kind, body) pairs.
func lines(t *testing.T, data []byte) (kinds []string, bodies []map[string]json.RawMessage) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var top map[string]map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &top); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		for k, v := range top {
			kinds = append(kinds, k)
			bodies = append(bodies, v)
		}
	}
	return kinds, bodies
}

func fieldNames(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func stringMap(t *testing.T, raw json.RawMessage) map[string]string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return m
}

// TestCompactionCommitMatchesDatabricksShape builds the commit compactord
// would write for the layout of DBR's OPTIMIZE at version 17 of
// dbr-optimize-dv-cdc-logcompaction (sources of 4, 2 and 2 physical rows,
// the last two with one deleted row each) and compares it with the real one:
// same action kinds in the same order, the same remove fields, the same tag
// format and values, commitInfo with the same operation parameters.
func TestCompactionCommitMatchesDatabricksShape(t *testing.T) {
	dbr, err := os.ReadFile(filepath.Join(testutil.DeltaTable(t, "dbr-optimize-dv-cdc-logcompaction"), "_delta_log", "00000000000000000017.json"))
	if err != nil {
		t.Fatal(err)
	}
	wantKinds, wantBodies := lines(t, dbr)

	d := newMemDVs()
	a := file("part-a.parquet", 4, nil)
	b := file("part-b.parquet", 2, d.put(roaring64.BitmapOf(1)))
	c := file("part-c.parquet", 2, d.put(roaring64.BitmapOf(0)))
	snap := dvSnap(a, b, c)
	res := binpack("j", "part-out.parquet", a, b, c)
	comp, err := newCompaction(delta.FileKeys{}, snap, []*CompactionJob{res}, d, 1734070118440)
	if err != nil {
		t.Fatal(err)
	}
	p := &compactionParticipant{c: comp}
	acts, metrics, err := p.build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tx := &Txn{Snapshot: snap, Operation: "OPTIMIZE", IsolationLevel: "SnapshotIsolation",
		OperationParameters: map[string]any{"predicate": "[]", "auto": false, "clusterBy": "[]", "zOrderBy": "[]", "batchId": "0"},
		CommitTags:          map[string]string{"delta.rowTracking.preserved": "false"}}
	data, err := tx.encode(1734070118817, nil, metrics, acts, "compactord/test")
	if err != nil {
		t.Fatal(err)
	}
	gotKinds, gotBodies := lines(t, data)
	if !slices.Equal(gotKinds, wantKinds) {
		t.Fatalf("action kinds %v, DBR wrote %v", gotKinds, wantKinds)
	}
	for i := range gotKinds {
		got, want := gotBodies[i], wantBodies[i]
		switch gotKinds[i] {
		case "commitInfo":
			for _, k := range []string{"timestamp", "operation", "operationParameters", "readVersion", "isolationLevel", "isBlindAppend", "operationMetrics", "tags", "engineInfo", "txnId"} {
				if _, ok := want[k]; !ok {
					t.Fatalf("DBR commitInfo lacks %s", k)
				}
				if _, ok := got[k]; !ok {
					t.Errorf("commitInfo lacks %s", k)
				}
			}
			for _, k := range []string{"operation", "isolationLevel", "isBlindAppend", "tags"} {
				if string(got[k]) != string(want[k]) {
					t.Errorf("commitInfo.%s = %s, DBR %s", k, got[k], want[k])
				}
			}
			var gp, wp map[string]json.RawMessage
			json.Unmarshal(got["operationParameters"], &gp)
			json.Unmarshal(want["operationParameters"], &wp)
			if !slices.Equal(fieldNames(gp), fieldNames(wp)) {
				t.Errorf("operationParameters keys %v, DBR %v", fieldNames(gp), fieldNames(wp))
			}
			gm, wm := stringMap(t, got["operationMetrics"]), stringMap(t, want["operationMetrics"])
			for k := range wm {
				if _, ok := gm[k]; !ok {
					t.Errorf("operationMetrics lacks %s", k)
				}
			}
			for _, k := range []string{"numRemovedFiles", "numAddedFiles", "numDeletionVectorsRemoved"} {
				if gm[k] != wm[k] {
					t.Errorf("operationMetrics.%s = %s, DBR %s", k, gm[k], wm[k])
				}
			}
		case "remove":
			if !slices.Equal(fieldNames(got), fieldNames(want)) {
				t.Errorf("remove %d fields %v, DBR %v", i, fieldNames(got), fieldNames(want))
			}
			for _, k := range []string{"dataChange", "extendedFileMetadata", "partitionValues", "stats"} {
				if string(got[k]) != string(want[k]) {
					t.Errorf("remove %d %s = %s, DBR %s", i, k, got[k], want[k])
				}
			}
			gt, wt := stringMap(t, got["tags"]), stringMap(t, want["tags"])
			if gt[composition.TagCompactionInfo] != wt[composition.TagCompactionInfo] {
				t.Errorf("remove %d compactionInfo %s, DBR %s", i, gt[composition.TagCompactionInfo], wt[composition.TagCompactionInfo])
			}
			var gi, wi []string
			if err := json.Unmarshal([]byte(gt[composition.TagCompactedInto]), &gi); err != nil || len(gi) != 1 || gi[0] != "part-out.parquet" {
				t.Errorf("remove %d compactedInto %s", i, gt[composition.TagCompactedInto])
			}
			if err := json.Unmarshal([]byte(wt[composition.TagCompactedInto]), &wi); err != nil || len(wi) != 1 {
				t.Fatalf("DBR compactedInto %s", wt[composition.TagCompactedInto])
			}
			var dv actions.DeletionVector
			if _, has := want["deletionVector"]; has {
				if err := json.Unmarshal(got["deletionVector"], &dv); err != nil || dv.Cardinality != 1 {
					t.Errorf("remove %d DV %s", i, got["deletionVector"])
				}
			}
		case "add":
			for _, k := range []string{"dataChange", "partitionValues"} {
				if string(got[k]) != string(want[k]) {
					t.Errorf("add %s = %s, DBR %s", k, got[k], want[k])
				}
			}
			if _, has := got["deletionVector"]; has {
				t.Errorf("unreconciled output carries a DV")
			}
		}
	}
}

// TestCompositionTagsMatchEveryDatabricksOptimize rebuilds the source layout
// of each of the eight DBR OPTIMIZE commits in dbr-optimize-dv-cdc-logcompaction
// (physical rows and read-time DV cardinality per source, in DBR's write
// order) and checks that compactord writes byte-identical compactionInfo
// tags and an output of the same row count.
func TestCompositionTagsMatchEveryDatabricksOptimize(t *testing.T) {
	logDir := filepath.Join(testutil.DeltaTable(t, "dbr-optimize-dv-cdc-logcompaction"), "_delta_log")
	n := 0
	for v := 0; v <= 25; v++ {
		data, err := os.ReadFile(filepath.Join(logDir, fmt.Sprintf("%020d.json", v)))
		if err != nil {
			t.Fatal(err)
		}
		var removes []*actions.Remove
		var outRows int64
		optimize := false
		for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			a, err := actions.ParseAction(line)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case a.CommitInfo != nil:
				optimize = a.CommitInfo.Operation() == "OPTIMIZE"
			case a.Remove != nil:
				removes = append(removes, a.Remove)
			case a.Add != nil:
				st, err := stats.ParseStats(a.Add.Stats)
				if err != nil {
					t.Fatal(err)
				}
				outRows = *st.NumRecords
			}
		}
		if !optimize {
			continue
		}
		n++
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			type src struct {
				rm   *actions.Remove
				off  int64
				phys int64
			}
			var srcs []src
			for _, r := range removes {
				var info []struct {
					RowOffsetInTarget        int64 `json:"rowOffsetInTarget"`
					SourceNumPhysicalRecords int64 `json:"sourceNumPhysicalRecords"`
				}
				if err := json.Unmarshal([]byte(r.Tags[composition.TagCompactionInfo]), &info); err != nil || len(info) != 1 {
					t.Fatalf("DBR tag %q: %v", r.Tags[composition.TagCompactionInfo], err)
				}
				srcs = append(srcs, src{r, info[0].RowOffsetInTarget, info[0].SourceNumPhysicalRecords})
			}
			sort.Slice(srcs, func(i, j int) bool { return srcs[i].off < srcs[j].off })
			d := newMemDVs()
			var adds []*actions.Add
			for _, s := range srcs {
				var dv *actions.DeletionVector
				if s.rm.DeletionVector != nil {
					bm := roaring64.New()
					bm.AddRange(0, uint64(s.rm.DeletionVector.Cardinality))
					dv = d.put(bm)
				}
				adds = append(adds, file(s.rm.Path, s.phys, dv))
			}
			res := binpack("j", "target.parquet", adds...)
			if res.Outputs[0].Rows != outRows {
				t.Fatalf("output rows %d, DBR %d", res.Outputs[0].Rows, outRows)
			}
			c, err := newCompaction(delta.FileKeys{}, dvSnap(adds...), []*CompactionJob{res}, d, 1)
			if err != nil {
				t.Fatal(err)
			}
			ours, _, err := c.attemptActions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range ours {
				if got, want := r.Tags[composition.TagCompactionInfo], srcs[i].rm.Tags[composition.TagCompactionInfo]; got != want {
					t.Errorf("%s: compactionInfo %s, DBR %s", r.Path, got, want)
				}
			}
		})
	}
	if n != 8 {
		t.Fatalf("found %d OPTIMIZE commits, want 8", n)
	}
}
