package composition

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/testutil"
)

func TestEncodeWritesTheDatabricksFormat(t *testing.T) {
	into, info, err := Encode(Run{Source: "a.parquet", Target: "part-00000-x.c000.snappy.parquet", RowOffsetInTarget: 2, SourceNumPhysicalRecords: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Byte for byte what Databricks Runtime 16.0 wrote in the fixture's v6.
	if into != `["part-00000-x.c000.snappy.parquet"]` || info != `[{"rowOffsetInTarget":2,"sourceNumPhysicalRecords":1}]` {
		t.Fatalf("got %s %s", into, info)
	}
}

func TestEncodeRefusesRunsItCannotDescribe(t *testing.T) {
	for name, runs := range map[string][]Run{
		"no run":               nil,
		"no target":            {{Source: "a", RowOffsetInTarget: 0, SourceNumPhysicalRecords: 1}},
		"negative offset":      {{Source: "a", Target: "o", RowOffsetInTarget: -1, SourceNumPhysicalRecords: 1}},
		"negative row count":   {{Source: "a", Target: "o", RowOffsetInTarget: 0, SourceNumPhysicalRecords: -3}},
		"second run no target": {{Source: "a", Target: "o", SourceNumPhysicalRecords: 1}, {Source: "a", SourceNumPhysicalRecords: 1}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := Encode(runs...); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func TestParseRoundTripsEncode(t *testing.T) {
	runs := []Run{
		{Source: "s.parquet", Target: "o1.parquet", RowOffsetInTarget: 0, SourceNumPhysicalRecords: 10},
		{Source: "s.parquet", Target: "dir/o%202.parquet", RowOffsetInTarget: 1 << 40, SourceNumPhysicalRecords: 7},
	}
	into, info, err := Encode(runs...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse("s.parquet", map[string]string{TagCompactedInto: into, TagCompactionInfo: info, "INSERTION_TIME": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(runs) {
		t.Fatalf("got %d runs", len(got))
	}
	for i, r := range runs {
		want := r
		want.Output, want.LiveRows = Unknown, Unknown
		if got[i] != want {
			t.Errorf("run %d: got %+v want %+v", i, got[i], want)
		}
	}
}

func TestParseRefusesTagsItCannotTrust(t *testing.T) {
	tests := []struct {
		name       string
		tags       map[string]string
		wantNoTags bool
	}{
		{name: "no tags at all", tags: map[string]string{"INSERTION_TIME": "1"}, wantNoTags: true},
		{name: "compactedInto alone", tags: map[string]string{TagCompactedInto: `["o"]`}},
		{name: "compactionInfo alone", tags: map[string]string{TagCompactionInfo: `[{"rowOffsetInTarget":0,"sourceNumPhysicalRecords":1}]`}},
		{name: "lists of different length", tags: map[string]string{TagCompactedInto: `["o","p"]`, TagCompactionInfo: `[{"rowOffsetInTarget":0,"sourceNumPhysicalRecords":1}]`}},
		{name: "empty lists", tags: map[string]string{TagCompactedInto: `[]`, TagCompactionInfo: `[]`}},
		{name: "entry without an offset", tags: map[string]string{TagCompactedInto: `["o"]`, TagCompactionInfo: `[{"sourceNumPhysicalRecords":1}]`}},
		{name: "entry without a row count", tags: map[string]string{TagCompactedInto: `["o"]`, TagCompactionInfo: `[{"rowOffsetInTarget":0}]`}},
		{name: "negative offset", tags: map[string]string{TagCompactedInto: `["o"]`, TagCompactionInfo: `[{"rowOffsetInTarget":-1,"sourceNumPhysicalRecords":1}]`}},
		{name: "fractional offset", tags: map[string]string{TagCompactedInto: `["o"]`, TagCompactionInfo: `[{"rowOffsetInTarget":1.5,"sourceNumPhysicalRecords":1}]`}},
		{name: "empty target", tags: map[string]string{TagCompactedInto: `[""]`, TagCompactionInfo: `[{"rowOffsetInTarget":0,"sourceNumPhysicalRecords":1}]`}},
		{name: "not JSON", tags: map[string]string{TagCompactedInto: `o`, TagCompactionInfo: `[{"rowOffsetInTarget":0,"sourceNumPhysicalRecords":1}]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("s", tt.tags)
			if err == nil {
				t.Fatal("want an error")
			}
			if errors.Is(err, ErrNoTags) != tt.wantNoTags {
				t.Fatalf("errors.Is(ErrNoTags) = %v for %v", !tt.wantNoTags, err)
			}
		})
	}
}

// logAction is the part of a log line these tests read.
type logAction struct {
	Add *struct {
		Path  string `json:"path"`
		Stats string `json:"stats"`
	} `json:"add"`
	Remove *struct {
		Path           string            `json:"path"`
		DataChange     bool              `json:"dataChange"`
		Tags           map[string]string `json:"tags"`
		DeletionVector *struct {
			Cardinality int64 `json:"cardinality"`
		} `json:"deletionVector"`
	} `json:"remove"`
}

// Every composition tag in the Databricks OPTIMIZE commits of the fixture
// (commits and log compaction files) parses, re-encodes to the very bytes
// Databricks wrote, and describes a layout that passes Check against the
// output's numRecords: runs contiguous from 0, live rows = physical rows -
// DV cardinality.
func TestDatabricksTagsRoundTripAndCheck(t *testing.T) {
	logDir := filepath.Join(testutil.DeltaTable(t, "dbr-optimize-dv-cdc-logcompaction"), "_delta_log")
	names, err := filepath.Glob(filepath.Join(logDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	tagged, commits := 0, 0
	for _, name := range names {
		fh, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		byTarget := map[string][]Run{}
		deleted := map[string]map[string]int64{}
		outRows := map[string]int64{}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var a logAction
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if a.Add != nil {
				var st struct{ NumRecords int64 }
				if err := json.Unmarshal([]byte(a.Add.Stats), &st); err == nil {
					outRows[a.Add.Path] = st.NumRecords
				}
			}
			if a.Remove == nil || !HasTags(a.Remove.Tags) {
				continue
			}
			if a.Remove.DataChange {
				t.Fatalf("%s: tagged remove of %s has dataChange=true", name, a.Remove.Path)
			}
			runs, err := Parse(a.Remove.Path, a.Remove.Tags)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			into, info, err := Encode(runs...)
			if err != nil {
				t.Fatal(err)
			}
			if into != a.Remove.Tags[TagCompactedInto] || info != a.Remove.Tags[TagCompactionInfo] {
				t.Fatalf("%s: %s re-encodes as %s %s, Databricks wrote %s %s", name, a.Remove.Path,
					into, info, a.Remove.Tags[TagCompactedInto], a.Remove.Tags[TagCompactionInfo])
			}
			var card int64
			if a.Remove.DeletionVector != nil {
				card = a.Remove.DeletionVector.Cardinality
			}
			for _, r := range runs {
				r.LiveRows = r.SourceNumPhysicalRecords - card
				byTarget[r.Target] = append(byTarget[r.Target], r)
				if deleted[r.Target] == nil {
					deleted[r.Target] = map[string]int64{}
				}
				deleted[r.Target][r.Source] = card
			}
			tagged++
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		fh.Close()
		for target, runs := range byTarget {
			rows, ok := outRows[target]
			if !ok {
				if strings.Contains(filepath.Base(name), ".compacted.") {
					continue // a log compaction may fold the output's add away
				}
				t.Fatalf("%s: compactedInto names %s, which the commit does not add", filepath.Base(name), target)
			}
			sort.Slice(runs, func(i, k int) bool { return runs[i].RowOffsetInTarget < runs[k].RowOffsetInTarget })
			for i := range runs {
				runs[i].Output = 0
			}
			if err := Check(runs, deleted[target], []int64{rows}); err != nil {
				t.Fatalf("%s: target %s: %v", filepath.Base(name), target, err)
			}
			commits++
		}
	}
	if tagged == 0 || commits == 0 {
		t.Fatalf("checked %d tagged removes in %d outputs; the fixture should have both", tagged, commits)
	}
	t.Logf("%d tagged removes, %d outputs checked", tagged, commits)
}
