package clusteradvise_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/clusteradvise"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/predicate"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// newXYTable writes a real table of files rows of random x and y (every
// file spans both columns' ranges), committed as version 0 with a
// protocol of the given writer features (nil: writer version 2).
func newXYTable(t *testing.T, files, rowsPerFile int, writerFeatures []string, extra ...string) *delta.Table {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 6))
	return tabletest.NewXYTable(t, files, rowsPerFile, writerFeatures, func(int, int) (int64, int64) {
		return r.Int64N(1000), r.Int64N(1000)
	}, extra...)
}

func commitInfoLine(t *testing.T, op string, ms int64, params map[string]string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"commitInfo": map[string]any{"timestamp": ms, "operation": op, "operationParameters": params}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestATableWhoseDeletesAndMergesFilterOnXGetsX(t *testing.T) {
	ctx := context.Background()
	tbl := newXYTable(t, 40, 250, nil)
	now := epoch.Add(10 * 24 * time.Hour)
	r := rand.New(rand.NewPCG(1, 2))
	v := int64(1)
	for i := range 60 {
		ms := epoch.Add(time.Duration(i) * 4 * time.Hour).UnixMilli()
		lo := r.Int64N(990)
		var line string
		switch i % 3 {
		case 0: // Spark's DELETE shape
			line = commitInfoLine(t, "DELETE", ms, map[string]string{"predicate": fmt.Sprintf(`["((x#%dL >= %d) AND (x#%dL <= %d))"]`, 100+i, lo, 100+i, lo+5)})
		case 1: // DBR's MERGE shape: the condition and a clause predicate
			line = commitInfoLine(t, "MERGE", ms, map[string]string{
				"predicate":                    fmt.Sprintf(`["(x#%d = x#%d)"]`, 200+i, 300+i),
				"matchedPredicates":            fmt.Sprintf(`[{"actionType":"delete","predicate":"(x#%d < %d)"}]`, 200+i, lo/50),
				"notMatchedPredicates":         `[{"actionType":"insert"}]`,
				"notMatchedBySourcePredicates": `[]`,
			})
		default: // an UPDATE whose predicate cannot prune: no evidence for y
			line = commitInfoLine(t, "UPDATE", ms, map[string]string{"predicate": `["((y#7L % 2) = 0)"]`})
		}
		tabletest.PutCommit(t, tbl, v, []string{line})
		v++
	}
	snap, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	rec := clusteradvise.NewRecord(0)
	st, err := clusteradvise.GatherLog(ctx, tbl, rec, snap.Version)
	if err != nil {
		t.Fatal(err)
	}
	if st.Commits != 61 || rec.LogVersion != snap.Version {
		t.Fatalf("gathered %+v up to %d, want 61 commits up to %d", st, rec.LogVersion, snap.Version)
	}
	rec.DecayTo(now)
	var total int64
	for _, a := range snap.Files {
		total += a.Size
	}
	adv, err := clusteradvise.AdviseTable(ctx, tbl, snap, rec, total/20, 5000, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	verdict := clusteradvise.Decide(adv, clusteradvise.State{}, now, testOptions())
	if !verdict.Change || strings.Join(verdict.Key, ",") != "x" {
		t.Fatalf("verdict %+v, want the key x; ranking %+v", verdict, adv.Ranking)
	}
	if adv.SampleRows == 0 || adv.Replayed == 0 {
		t.Fatalf("advice %+v: no sample or nothing replayed", adv)
	}
}

func TestCommitPredicatesReadsEveryDMLCommitOfTheTestTables(t *testing.T) {
	root := testutil.DeltaTestdata(t)
	logs, err := filepath.Glob(filepath.Join(root, "*", "delta", "_delta_log", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dml, texts, filters int
	for _, path := range logs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(line, `{"commitInfo"`) {
				continue
			}
			var a struct {
				CommitInfo actions.CommitInfo `json:"commitInfo"`
			}
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			op := a.CommitInfo.Operation()
			if op != "DELETE" && op != "UPDATE" && op != "MERGE" {
				continue
			}
			dml++
			got := clusteradvise.CommitPredicates(a.CommitInfo)
			for _, p := range got {
				texts++
				// Every column a name: the parser must read the text.
				parsed, err := predicate.ParseSpark(p, func(parts []string) (predicate.Column, bool) {
					return predicate.Column{Path: parts[len(parts)-1:], Kind: predicate.KindInt}, true
				})
				if err != nil {
					t.Errorf("%s: %q: %v", path, p, err)
					continue
				}
				if len(parsed.Filters)+len(parsed.Joins) > 0 {
					filters++
				}
			}
		}
	}
	t.Logf("%d DML commits, %d predicates, %d naming columns", dml, texts, filters)
	if dml < 50 || texts < dml/2 || filters < texts*3/4 {
		t.Fatalf("%d DML commits gave %d predicates, %d naming columns", dml, texts, filters)
	}
}

func TestReadPushedTakesJSONLinesAndRefusesABadBatchWhole(t *testing.T) {
	now := epoch
	got, err := clusteradvise.ReadPushed(strings.NewReader(`{"predicate": "a > 5", "weight": 3, "time": "2025-12-31T00:00:00Z"}

{"predicate": "b = 'x'"}
`), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Weight != 3 || !got[0].Time.Equal(epoch.Add(-24*time.Hour)) || got[1].Weight != 1 || !got[1].Time.Equal(now) {
		t.Fatalf("got %+v", got)
	}
	for _, bad := range []string{
		`{"predicate": "a > 5"}` + "\n" + `{"predicate": ""}`,
		`{"predicate": "a > 5", "weight": -1}`,
		`{"predicate": "a > 5", "extra": 1}`,
		`not json`,
		`{"predicate": "` + strings.Repeat("x", clusteradvise.MaxPredicateLen+1) + `"}`,
	} {
		if got, err := clusteradvise.ReadPushed(strings.NewReader(bad), now); err == nil {
			t.Errorf("%.60q: read %+v, want an error", bad, got)
		}
	}
}

func TestTheEvidenceDecaysAndStaysBounded(t *testing.T) {
	rec := clusteradvise.NewRecord(24 * time.Hour)
	if err := rec.Add("a > 1", 4, epoch, clusteradvise.SourcePush); err != nil {
		t.Fatal(err)
	}
	rec.DecayTo(epoch.Add(48 * time.Hour))
	if w := rec.TotalWeight(); w < 0.999 || w > 1.001 {
		t.Fatalf("weight after two half-lives %v, want 1", w)
	}
	// A predicate seen in the past counts for what it decayed to.
	if err := rec.Add("a > 1", 2, epoch.Add(24*time.Hour), clusteradvise.SourcePush); err != nil {
		t.Fatal(err)
	}
	if w := rec.TotalWeight(); w < 1.999 || w > 2.001 || len(rec.Entries) != 1 || rec.Entries[0].Count != 2 {
		t.Fatalf("record %+v, want one entry of weight 2 seen twice", rec.Entries)
	}
	for i := range clusteradvise.MaxEntries + 100 {
		if err := rec.Add(fmt.Sprintf("b = %d", i), float64(1+i%7), epoch.Add(48*time.Hour), clusteradvise.SourceLog); err != nil {
			t.Fatal(err)
		}
	}
	if len(rec.Entries) != clusteradvise.MaxEntries {
		t.Fatalf("%d entries, want %d", len(rec.Entries), clusteradvise.MaxEntries)
	}
	// The entries dropped are the lightest: every one heavier than 1 stays.
	heavy, kept := 1, 0 // "a > 1" weighs 2
	for i := range clusteradvise.MaxEntries + 100 {
		if 1+i%7 > 1 {
			heavy++
		}
	}
	for _, e := range rec.Entries {
		if e.Weight > 1.5 {
			kept++
		}
	}
	if kept != heavy {
		t.Fatalf("%d entries heavier than 1 kept of %d: the bound dropped heavier entries first", kept, heavy)
	}
}

func TestTheRecordSurvivesARestartAndConcurrentUpdatesAreNotLost(t *testing.T) {
	ctx := context.Background()
	tbl := newXYTable(t, 1, 10, nil)
	cs, err := tbl.Conditional()
	if err != nil {
		t.Fatal(err)
	}
	_, errs := testutil.Race(4, func(i int) error {
		_, err := clusteradvise.Update(ctx, cs, func(rec *clusteradvise.Record) error {
			return rec.Add(fmt.Sprintf("x = %d", i), 1, epoch, clusteradvise.SourcePush)
		})
		return err
	}, func(error) bool { return false })
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// A fresh open (a restarted daemon) reads what was written.
	tbl2 := tabletest.Open(t, tbl.URL)
	cs2, err := tbl2.Conditional()
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := clusteradvise.Load(ctx, cs2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Entries) != 4 {
		t.Fatalf("stored entries %+v, want the 4 racing updates", rec.Entries)
	}
	// An unreadable record is replaced, not trusted.
	if err := tbl.Bucket.WriteAll(ctx, clusteradvise.Key, []byte("{not json"), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := clusteradvise.Load(ctx, cs2); err == nil {
		t.Fatal("an unreadable record loaded")
	}
	rec, err = clusteradvise.Update(ctx, cs2, func(rec *clusteradvise.Record) error {
		return rec.Add("y = 1", 1, epoch, clusteradvise.SourcePush)
	})
	if err != nil || len(rec.Entries) != 1 {
		t.Fatalf("update over an unreadable record: %+v, %v", rec, err)
	}
}

func TestASampleReadsABoundedSpreadOfFilesAndRows(t *testing.T) {
	ctx := context.Background()
	tbl := newXYTable(t, 80, 50, nil)
	snap, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := clusteradvise.TableColumns(snap)
	if err != nil {
		t.Fatal(err)
	}
	// One row a file: as many rows as files read.
	s, err := clusteradvise.ReadSample(ctx, tbl, snap, cols, 100)
	if err != nil {
		t.Fatal(err)
	}
	if s.Rows != clusteradvise.MaxSampleFiles || len(s.Values["x"]) != s.Rows || len(s.Values["v"]) != s.Rows {
		t.Fatalf("%d rows (%d x values), want one from each of %d files", s.Rows, len(s.Values["x"]), clusteradvise.MaxSampleFiles)
	}
	s, err = clusteradvise.ReadSample(ctx, tbl, snap, cols, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if s.Rows != clusteradvise.MaxSampleFiles*(1000/clusteradvise.MaxSampleFiles) {
		t.Fatalf("%d rows, want an even share of 1000 from each of %d files", s.Rows, clusteradvise.MaxSampleFiles)
	}
}
