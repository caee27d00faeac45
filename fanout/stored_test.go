package fanout

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/testutil/stores"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/writer"
)

func TestPlanURLSplitsBackIntoTableAndKey(t *testing.T) {
	id := "20261201T150405.000Z-0a1b2c3d"
	tests := []struct{ table, planURL string }{
		{"file:///data/t", "file:///data/t/_compactord/plans/" + id + "/plan.json"},
		{"file:///data/t/", "file:///data/t/_compactord/plans/" + id + "/plan.json"},
		{"s3://bucket/prefix/t?endpoint=http%3A%2F%2Flocalhost%3A9000&region=us-east-1", "s3://bucket/prefix/t/_compactord/plans/" + id + "/plan.json?endpoint=http%3A%2F%2Flocalhost%3A9000&region=us-east-1"},
		{"gs://bucket", "gs://bucket/_compactord/plans/" + id + "/plan.json"},
	}
	for _, tt := range tests {
		t.Run(tt.table, func(t *testing.T) {
			got, err := PlanURL(tt.table, id)
			if err != nil || got != tt.planURL {
				t.Fatalf("PlanURL = %q, %v; want %q", got, err, tt.planURL)
			}
			table, key, err := SplitPlanURL(got)
			if err != nil || key != planKey(id) || table != strings.TrimSuffix(tt.table, "/") && table+"/" != tt.table {
				t.Fatalf("SplitPlanURL = %q, %q, %v", table, key, err)
			}
		})
	}
	for _, bad := range []string{"file:///data/t/plan.json", "file:///data/t/_compactord/plans/x/other.json", "::"} {
		if _, _, err := SplitPlanURL(bad); err == nil {
			t.Errorf("SplitPlanURL(%q) accepted it", bad)
		}
	}
}

func TestSplitUnitsBalancesBytesAndCoversEveryJobOnce(t *testing.T) {
	sizes := []int64{10, 50, 20, 40, 30, 5, 5}
	jobs := make([]*planner.Job, len(sizes))
	for i, s := range sizes {
		jobs[i] = &planner.Job{SourceBytes: s}
	}
	tests := []struct {
		max  int
		want [][]int
	}{
		{max: 0, want: [][]int{{0}, {1}, {2}, {3}, {4}, {5}, {6}}},
		{max: 9, want: [][]int{{0}, {1}, {2}, {3}, {4}, {5}, {6}}},
		// 50 | 40 | 30, then 20 -> the 30 unit, 10 -> 40, 5 -> 50, 5 -> 40+10.
		{max: 3, want: [][]int{{1, 5}, {0, 3, 6}, {2, 4}}},
	}
	for _, tt := range tests {
		if got := SplitUnits(jobs, tt.max); !slices.EqualFunc(got, tt.want, slices.Equal) {
			t.Errorf("SplitUnits(max %d) = %v, want %v", tt.max, got, tt.want)
		}
	}
}

func TestStoredPlanRoundTripsAndABadOneHalts(t *testing.T) {
	tbl := tabletest.NewTable(t, "file://"+t.TempDir(), tabletest.Batches(3, 10)...)
	ctx := context.Background()
	pl := &planner.CompactionPlan{ReadVersion: 0, Strategy: planner.StrategyBinpack, Jobs: []*planner.Job{{ID: "j", SourcePaths: []string{"a"}}}}
	id := NewPlanID(time.Date(2026, 12, 1, 15, 4, 5, 0, time.UTC))
	if at, ok := planIDTime(id); !ok || !at.Equal(time.Date(2026, 12, 1, 15, 4, 5, 0, time.UTC)) {
		t.Fatalf("planIDTime(%s) = %v, %v", id, at, ok)
	}
	sp := &StoredPlan{ID: id, Table: tbl.URL, Units: [][]int{{0}}, Plan: pl, Writer: WriterSettings{Compression: "snappy", TargetFileSize: 1 << 20}}
	url, err := StorePlan(ctx, tbl, sp)
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := SplitPlanURL(url)
	if err != nil {
		t.Fatal(err)
	}
	got, err := LoadPlan(ctx, tbl, key)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != id || got.Writer.Options().Compression != "snappy" || got.Plan.Jobs[0].SourcePaths[0] != "a" || got.Coordinator == "" {
		t.Fatalf("loaded %+v", got)
	}
	bad := *sp
	bad.Units = [][]int{{1}}
	bad.ID = NewPlanID(time.Now())
	if _, err := StorePlan(ctx, tbl, &bad); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{planKey(bad.ID), planKey("missing")} {
		if _, err := LoadPlan(ctx, tbl, k); failure.Of(err) != failure.Halt {
			t.Errorf("LoadPlan(%s) = %v, want a Halt", k, err)
		}
	}
}

func TestExitCodesFollowTheFailureClass(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{errors.New("store fault"), ExitRetry},
		{&failure.CorruptFileError{Kind: failure.DataFile, Path: "p", DataFile: "p", Err: errors.New("bad")}, ExitQuarantine},
		{failure.With(failure.Halt, errors.New("unsupported feature")), ExitHalt},
	}
	for _, tt := range tests {
		if got := ExitCode(tt.err); got != tt.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestParseIndexTakesTheJobControllersDecimalOnly(t *testing.T) {
	for s, ok := range map[string]bool{"0": true, "5": true, "6": false, "-1": false, "01": false, "+1": false, "": false, "x": false} {
		_, err := ParseIndex(s, 6)
		if (err == nil) != ok {
			t.Errorf("ParseIndex(%q, 6) error %v, want ok=%v", s, err, ok)
		}
	}
}

func TestRunUnitWritesOutputsIntentAndManifestAndNamesACorruptSource(t *testing.T) {
	tbl, pl, _ := planned(t, 8, 10)
	ctx := context.Background()
	sp := &StoredPlan{ID: NewPlanID(time.Now()), Table: tbl.URL, ReadVersion: pl.ReadVersion, Units: SplitUnits(pl.Jobs, 0), Plan: pl,
		Writer: SettingsOf(writer.Options{Compression: "snappy"})}
	url, err := StorePlan(ctx, tbl, sp)
	if err != nil {
		t.Fatal(err)
	}
	// Unit 1's first source gets garbage bytes.
	bad := pl.Jobs[1].SourcePaths[0]
	if err := tbl.Bucket.WriteAll(ctx, bad, []byte("not parquet at all, but long enough to have a footer"), nil); err != nil {
		t.Fatal(err)
	}
	before := tabletest.Keys(t, tbl)

	m, err := RunUnit(ctx, url, 0, WorkerOptions{Attempt: "a0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Jobs) != 1 || m.Jobs[0].Job != 0 || !slices.Equal(m.Jobs[0].Sources, pl.Jobs[0].SourcePaths) || len(m.Jobs[0].Outputs) == 0 || len(m.Jobs[0].Runs) != 2 {
		t.Fatalf("manifest %+v", m)
	}
	var stored ResultManifest
	if err := readJSON(ctx, tbl, unitDir(sp.ID, 0)+"result-a0.json", &stored); err != nil || stored.Attempt != "a0" {
		t.Fatalf("stored manifest %+v, %v", stored, err)
	}
	var intent attempt.Record
	if err := readJSON(ctx, tbl, intentKey(sp.ID, 0, "a0"), &intent); err != nil {
		t.Fatal(err)
	}
	for _, o := range m.Jobs[0].Outputs {
		if !slices.Contains(intent.Keys, o.Key) {
			t.Errorf("output %s is not in the intent record %v", o.Key, intent.Keys)
		}
		if ok, err := tbl.Bucket.Exists(ctx, o.Key); !ok || err != nil {
			t.Errorf("output %s not written (%v)", o.Key, err)
		}
	}

	_, err = RunUnit(ctx, url, 1, WorkerOptions{Attempt: "a1"})
	var cf *failure.CorruptFileError
	if ExitCode(err) != ExitQuarantine || !errors.As(err, &cf) || cf.DataFile != bad {
		t.Fatalf("unit 1: %v (exit %d), want a quarantine of %s", err, ExitCode(err), bad)
	}
	var fm FailureManifest
	if err := readJSON(ctx, tbl, unitDir(sp.ID, 1)+"failure-a1.json", &fm); err != nil {
		t.Fatal(err)
	}
	if got := failure.CorruptDataFiles(fm.Err()); !slices.Equal(got, []string{bad}) || failure.Of(fm.Err()) != failure.Quarantine {
		t.Fatalf("failure manifest names %v (class %v), want [%s]", got, failure.Of(fm.Err()), bad)
	}
	// The failed attempt deleted what it wrote: besides unit 0's outputs
	// only the plan directory's files are new.
	var added []string
	for _, k := range tabletest.Keys(t, tbl) {
		if !slices.Contains(before, k) && !slices.ContainsFunc(m.Jobs[0].Outputs, func(o OutputResult) bool { return o.Key == k }) && !strings.HasPrefix(k, PlanDir(sp.ID)) {
			added = append(added, k)
		}
	}
	if len(added) > 0 {
		t.Fatalf("the failed unit left %v", added)
	}
	if _, err := RunUnit(ctx, url, 9, WorkerOptions{}); ExitCode(err) != ExitHalt {
		t.Fatalf("unit 9 of %d: %v, want a halt", len(sp.Units), err)
	}
}

// A stored plan is an object in the table's store that every reader of the
// store may read: the table URL in it carries no credentials, and a worker
// still runs its unit (it opens the table from its plan URL).
func TestAStoredPlanHoldsNoCredentialOfItsTableURL(t *testing.T) {
	stores.FakeS3Credentials(t)
	ctx := context.Background()
	s3 := stores.NewFakeS3(t, stores.FakeS3Options{})
	src := t.TempDir()
	tabletest.NewTable(t, "file://"+src, tabletest.Batches(2, 10)...)
	stores.CopyTable(t, src, stores.Open(t, s3.URL("events")))
	tbl := stores.Open(t, strings.Replace(s3.URL("events"), "s3://", "s3://planuser:PLANSECRET@", 1))
	if !strings.Contains(tbl.URL, "PLANSECRET") {
		t.Fatalf("the table's URL %s lost its userinfo: the test proves nothing", tbl.URL)
	}
	snap := tabletest.Latest(t, tbl)
	pl := &planner.CompactionPlan{ReadVersion: snap.Version, Strategy: planner.StrategyBinpack,
		Jobs: []*planner.Job{{ID: "j", Strategy: planner.StrategyBinpack, SourcePaths: []string{snap.Files[0].Path, snap.Files[1].Path}}}}
	sp := &StoredPlan{ID: NewPlanID(time.Now()), Table: tbl.URL, ReadVersion: snap.Version, Units: [][]int{{0}}, Plan: pl}
	url, err := StorePlan(ctx, tbl, sp)
	if err != nil {
		t.Fatal(err)
	}
	data, err := tbl.Bucket.ReadAll(ctx, planKey(sp.ID))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"PLANSECRET", "planuser"} {
		if strings.Contains(string(data), secret) {
			t.Errorf("the stored plan holds %q:\n%s", secret, data)
		}
	}
	if _, err := RunUnit(ctx, url, 0, WorkerOptions{}); err != nil {
		t.Fatalf("the unit of a plan stored for a credentialed URL: %v", err)
	}
}
