package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta/scan"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/planner"
)

// scanInts reads every live row of the table's latest version and returns
// the values of the first (int) column, with the file and physical index of each.
type liveRow struct {
	file string
	idx  int64
	val  int64
}

func scanTable(t *testing.T, url string) (*delta.Snapshot, []liveRow) {
	t.Helper()
	ctx := context.Background()
	tbl := tabletest.Open(t, url)
	snap := tabletest.Latest(t, tbl)
	var out []liveRow
	rows := make([]parquet.Row, 64)
	idx := make([]int64, 64)
	for _, f := range snap.Files {
		sc, err := scan.OpenFileScan(ctx, tbl, snap, f, scan.ScanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for {
			n, err := sc.ReadRows(rows, idx)
			for i := 0; i < n; i++ {
				out = append(out, liveRow{f.Path, idx[i], rows[i][0].Int64()})
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		sc.Close()
	}
	return snap, out
}

func sum(rows []liveRow) (s int64) {
	for _, r := range rows {
		s += r.val
	}
	return s
}

// TestPlanRunPlanReconcilesADeleteOnASparkTable runs the CLI on a copy of a
// Spark-written DV table: plan at v4, a DV DELETE commits v5, run-plan
// commits v6 and reconciles; the table keeps every row but the deleted one.
func TestPlanRunPlanReconcilesADeleteOnASparkTable(t *testing.T) {
	ctx := context.Background()
	dir := testutil.CopyDeltaTable(t, "dv-large-multi-dv-per-file")
	url := "file://" + dir
	snap0, before := scanTable(t, url)
	if len(before) != 1993 || sum(before) != 1994767 {
		t.Fatalf("fixture: %d rows, sum %d", len(before), sum(before))
	}
	planPath := filepath.Join(t.TempDir(), "plan.json")
	var out, errb bytes.Buffer
	if code := mainExit(ctx, []string{"plan", url, "--strategy", "binpack", "--out", planPath}, &out, &errb); code != 0 {
		t.Fatalf("plan exit %d: %s", code, errb.String())
	}
	var pf struct {
		Table       string `json:"table"`
		ReadVersion int64  `json:"readVersion"`
		Jobs        []struct {
			Sources []string `json:"sources"`
		} `json:"jobs"`
	}
	data, err := os.ReadFile(planPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &pf); err != nil {
		t.Fatal(err)
	}
	if pf.Table != url || pf.ReadVersion != snap0.Version || len(pf.Jobs) == 0 || len(pf.Jobs[0].Sources) < 2 {
		t.Fatalf("plan %s", data)
	}
	// A concurrent DELETE of one live row of a planned source (one that
	// already has a DV, so the remap has to skip read-time deletions).
	planned := map[string]bool{}
	for _, s := range pf.Jobs[0].Sources {
		planned[s] = true
	}
	var victim *liveRow
	for i := range before {
		r := before[i]
		if !planned[r.file] {
			continue
		}
		for _, f := range snap0.Files {
			if f.Path == r.file && f.DeletionVector != nil && r.idx > 50 {
				victim = &r
			}
		}
		if victim != nil {
			break
		}
	}
	if victim == nil {
		t.Fatal("no planned source with a DV")
	}
	tbl := tabletest.Open(t, url)
	snap := tabletest.Latest(t, tbl)
	del, err := tabletest.DeleteRows(ctx, tbl, snap, map[string][]int64{victim.file: {victim.idx}}, tabletest.DeleteOptions{})
	if err != nil || del.Version != snap0.Version+1 {
		t.Fatalf("delete: %+v %v", del, err)
	}
	out.Reset()
	errb.Reset()
	if code := mainExit(ctx, []string{"run-plan", planPath, "--json"}, &out, &errb); code != 0 {
		t.Fatalf("run-plan exit %d: %s", code, errb.String())
	}
	var res struct {
		CommittedVersion int64 `json:"committedVersion"`
		JobsCommitted    int   `json:"jobsCommitted"`
		FilesRemoved     int   `json:"filesRemoved"`
		FilesAdded       int   `json:"filesAdded"`
		BytesRead        int64 `json:"bytesRead"`
		BytesWritten     int64 `json:"bytesWritten"`
		Reconciled       []struct {
			WinnerVersion int64  `json:"winnerVersion"`
			Source        string `json:"source"`
			RowsRemapped  int64  `json:"rowsRemapped"`
		} `json:"reconciled"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("run-plan output %q: %v", out.String(), err)
	}
	if res.CommittedVersion != snap0.Version+2 || res.JobsCommitted == 0 || res.FilesRemoved < 2 || res.BytesRead == 0 || res.BytesWritten == 0 {
		t.Fatalf("run-plan result %s", out.String())
	}
	if len(res.Reconciled) != 1 || res.Reconciled[0].WinnerVersion != del.Version || res.Reconciled[0].Source != victim.file || res.Reconciled[0].RowsRemapped != 1 {
		t.Fatalf("reconciled %+v", res.Reconciled)
	}
	snap2, after := scanTable(t, url)
	if len(after) != 1992 || sum(after) != 1994767-victim.val {
		t.Fatalf("after: %d rows sum %d, want 1992 rows sum %d", len(after), sum(after), 1994767-victim.val)
	}
	if len(snap2.Files) >= len(snap0.Files) {
		t.Fatalf("not compacted: %d files, was %d", len(snap2.Files), len(snap0.Files))
	}
	// compact on the compacted table: runs, commits or finds nothing, and
	// never changes the content.
	out.Reset()
	if code := mainExit(ctx, []string{"compact", url, "--strategy", "binpack", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("compact exit %d: %s", code, errb.String())
	}
	if _, again := scanTable(t, url); len(again) != 1992 || sum(again) != sum(after) {
		t.Fatalf("compact changed the content")
	}
}

func TestPlanUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"plan"}, {"run-plan"}, {"compact"}, {"plan", "file:///x", "--target-file-size", "lots"}} {
		var out, errb bytes.Buffer
		if code := mainExit(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
}

// TestCompactPartitionedSparkTableWithRacingDelete compacts a copy of a
// Spark-written partitioned DV table (checkpoint at v10) while a DV DELETE
// wins the race on one of the planned sources.
func TestCompactPartitionedSparkTableWithRacingDelete(t *testing.T) {
	ctx := context.Background()
	url := "file://" + testutil.CopyDeltaTable(t, "dv-partitioned-with-checkpoint")
	snap0, before := scanTable(t, url)
	if len(before) != 35 || sum(before) != 1015 {
		t.Fatalf("fixture: %d rows, sum %d", len(before), sum(before))
	}
	tbl, err := delta.OpenTable(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	pol := planner.DefaultPolicy()
	pol.Strategy = planner.StrategyBinpack
	pol.SettleWindow = 0
	pl, _, err := compaction.PlanTable(ctx, tbl, compaction.RunOptions{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Jobs) == 0 {
		t.Fatal("nothing planned")
	}
	planned := map[string]bool{}
	for _, j := range pl.Jobs {
		for _, s := range j.SourcePaths {
			planned[s] = true
		}
	}
	var victim *liveRow
	for i := range before {
		if planned[before[i].file] {
			victim = &before[i]
			break
		}
	}
	opts := compaction.RunOptions{Policy: pol, EngineInfo: "compactord/test"}
	fired := false
	opts.Commit.BeforePut = func(ctx context.Context, v int64) error {
		if fired {
			return nil
		}
		fired = true
		snap, err := delta.LoadSnapshot(ctx, tbl, -1)
		if err != nil {
			return err
		}
		_, err = tabletest.DeleteRows(ctx, tbl, snap, map[string][]int64{victim.file: {victim.idx}}, tabletest.DeleteOptions{})
		return err
	}
	res, err := compaction.RunPlan(ctx, tbl, pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.CommittedVersion != snap0.Version+2 || res.JobsDropped != 0 || len(res.Reconciled) != 1 || res.Reconciled[0].Source != victim.file {
		t.Fatalf("result %+v", res)
	}
	snap2, after := scanTable(t, url)
	if len(after) != 34 || sum(after) != 1015-victim.val {
		t.Fatalf("after: %d rows, sum %d; want 34, %d", len(after), sum(after), 1015-victim.val)
	}
	// Tombstones keep each source's partition values.
	srcPV := map[string]map[string]*string{}
	for _, f := range snap0.Files {
		srcPV[f.Path] = f.PartitionValues
	}
	acts, err := delta.ReadCommit(ctx, tbl, res.CommittedVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acts {
		if a.Remove == nil {
			continue
		}
		want, got := srcPV[a.Remove.Path], a.Remove.PartitionValues
		if len(want) != 1 || want["part"] == nil || got["part"] == nil || *got["part"] != *want["part"] {
			t.Errorf("remove %s partitionValues %v, source had %v", a.Remove.Path, got, want)
		}
	}
	if len(snap2.Files) >= len(snap0.Files) {
		t.Errorf("%d files after, %d before", len(snap2.Files), len(snap0.Files))
	}
}

func TestCompactJSONIsNotHTMLEscaped(t *testing.T) {
	res := &compaction.RunResult{CommittedVersion: -1, Dropped: []commit.DroppedJob{{JobID: "j1", Kind: "conflict", Reason: "files < 1 MiB & more"}}}
	var out bytes.Buffer
	if err := report(&out, io.Discard, res, nil, true, nil, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"files < 1 MiB & more"`) {
		t.Errorf("compact --json escapes HTML characters: %s", out.String())
	}
}
