package autocluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/autocluster"
	"github.com/compactord/compactord/clusteradvise"
	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/inspect"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/tableop"
)

type xyRow struct {
	X int64 `parquet:"x"`
	Y int64 `parquet:"y"`
}

const xySchema = `{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{}},{"name":"y","type":"long","nullable":true,"metadata":{}}]}`

func TestTheDaemonsOperationSetsTheKeyTheLogFiltersOnAndRecordsTheChange(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	tbl := tabletest.Open(t, "file://"+t.TempDir())
	r := rand.New(rand.NewPCG(1, 2))
	lines := []string{`{"commitInfo":{"timestamp":1,"operation":"CREATE TABLE"}}`,
		`{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["appendOnly"]}}`,
		fmt.Sprintf(`{"metaData":{"id":"t","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":[],"configuration":{},"createdTime":1}}`, xySchema)}
	for range 30 {
		rows := make([]xyRow, 200)
		for i := range rows {
			rows[i] = xyRow{X: r.Int64N(1000), Y: r.Int64N(1000)}
		}
		lines = append(lines, tabletest.AddLine(t, tabletest.WriteParquet(t, tbl, rows)))
	}
	tabletest.PutCommit(t, tbl, 0, lines)
	for i := range 30 {
		ci, _ := json.Marshal(map[string]any{"commitInfo": map[string]any{"timestamp": now.Add(-time.Duration(30-i) * time.Hour).UnixMilli(), "operation": "DELETE",
			"operationParameters": map[string]string{"predicate": fmt.Sprintf(`["(x#%d = %d)"]`, i, r.Int64N(1000))}}})
		tabletest.PutCommit(t, tbl, int64(1+i), []string{string(ci)})
	}
	p := policies.DefaultPolicy()
	p.Clustering.Auto = true
	p.TargetFileSize = 4 << 10
	f := autocluster.Factory(commit.Options{})
	if _, ok, _ := f.New(policies.DefaultPolicy(), tableop.Env{}); ok {
		t.Fatal("the operation runs for a policy without columns = \"auto\"")
	}
	clock := now
	op, ok, err := f.New(p, tableop.Env{Now: func() time.Time { return clock }})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	op.(*autocluster.Op).Options.MinTableBytes = 0
	res, err := op.Run(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Committed || res.Counts[autocluster.CountKeyChanges] != 1 || res.Held[0].Code != autocluster.HoldChanged {
		t.Fatalf("result %+v", res)
	}
	snap, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := clusteradvise.CurrentKey(snap)
	if strings.Join(key, ",") != "x" {
		t.Fatalf("key %v, want x", key)
	}
	cs, _ := tbl.Conditional()
	rec, _, err := clusteradvise.Load(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	d := rec.LastDecision()
	if d == nil || !d.Applied || d.Version != res.Version || len(d.Old) != 0 || strings.Join(d.New, ",") != "x" || d.EvidenceWeight <= 0 || d.NewBytesRead >= d.OldBytesRead {
		t.Fatalf("decision %+v", d)
	}
	// The next run keeps the key: nothing new to say.
	res, err = op.Run(ctx, tbl)
	if err != nil || res.Committed || res.Held[0].Code != autocluster.HoldKept {
		t.Fatalf("second run %+v, %v", res, err)
	}
	// An hour later the evidence is gathered but no sample is read.
	clock = now.Add(time.Hour)
	res, err = op.Run(ctx, tbl)
	if err != nil || res.Held[0].Code != autocluster.HoldKept || !strings.Contains(res.Held[0].Reason, "advised 1h0m0s ago") {
		t.Fatalf("run an hour later %+v, %v", res, err)
	}
	// inspect shows the keys and the last decision.
	rep, _, err := inspect.Load(ctx, tbl, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	a := rep.AutoClustering
	if a == nil || strings.Join(a.Keys, ",") != "x" || a.LastDecision == nil || a.LastDecision.Version != d.Version || a.Verdict == "" {
		t.Fatalf("inspect's auto clustering %+v", a)
	}
	var text strings.Builder
	if err := inspect.WriteText(&text, rep, 10); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"auto clustering", "keys x", "last change", "none -> x set (version "} {
		if !strings.Contains(text.String(), want) {
			t.Fatalf("inspect text lacks %q:\n%s", want, text.String())
		}
	}
}
