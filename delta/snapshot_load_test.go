package delta

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil"
)

// openDir opens a table directory through OpenTable (file:// URL).
func openDir(t testing.TB, dir string) *Table {
	t.Helper()
	tbl, err := OpenTable(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	return tbl
}

// statsLiveRows sums numRecords - DV cardinality; ok is false when a file
// has no numRecords.
func statsLiveRows(s *Snapshot) (rows int64, ok bool) {
	for _, f := range s.Files {
		n, has := f.LiveRows()
		if !has {
			return 0, false
		}
		rows += n
	}
	return rows, true
}

func TestLoadSnapshotMatchesExpected(t *testing.T) {
	exp := testutil.ExpectedTables(t)
	for _, name := range slices.Sorted(maps.Keys(exp)) {
		want := exp[name]
		t.Run(name, func(t *testing.T) {
			tbl := openDir(t, testutil.DeltaTable(t, name))
			snap, err := LoadSnapshot(context.Background(), tbl, -1)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Version != want.Version {
				t.Errorf("version = %d, want %d", snap.Version, want.Version)
			}
			if len(snap.Files) != want.LiveFiles {
				t.Errorf("live files = %d, want %d", len(snap.Files), want.LiveFiles)
			}
			if !sort.SliceIsSorted(snap.Files, func(i, j int) bool { return snap.Files[i].Path < snap.Files[j].Path }) {
				t.Error("files are not sorted by path")
			}
			rows, ok := statsLiveRows(snap)
			switch {
			case want.LogOnly:
				// expected.json records 0 rows for tables without data
				// files; INDEX.md gives their row counts by stats.
				byStats := map[string]int64{
					"ckpt-no-last-checkpoint":                          5,
					"ckpt-only-domain-metadata-clustering-rowtracking": 436,
					"crc-rowtracking-clustering-ict":                   0,
				}
				if n, known := byStats[name]; !known || !ok || rows != n {
					t.Errorf("log-only table: live rows by stats = %d (complete %v), INDEX.md says %d (known %v)", rows, ok, n, known)
				}
			case ok && rows != want.LiveRows:
				t.Errorf("live rows by stats = %d, want %d", rows, want.LiveRows)
			}
			if snap.Timestamp <= 0 {
				t.Errorf("timestamp = %d", snap.Timestamp)
			}
			if snap.Schema == nil {
				t.Error("schema not parsed")
			}
		})
	}
}

// The stats of these tables come only from a checkpoint's stats_parsed (or
// the stats exist only there for some files): make sure they are used.
func TestStatsFromCheckpointStructs(t *testing.T) {
	for _, name := range []string{"stats-struct-only-delta121", "ckpt-v1-multipart-partitioned-struct-stats", "ckpt-v2-json-sidecars-struct-stats", "liquid-legacy-rowtracking"} {
		t.Run(name, func(t *testing.T) {
			snap, err := LoadSnapshot(context.Background(), openDir(t, testutil.DeltaTable(t, name)), -1)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range snap.Files {
				if _, ok, err := f.NumRecords(); err != nil || !ok {
					t.Fatalf("%s: no numRecords (%v)", f.Path, err)
				}
			}
		})
	}
}

func TestLoadSnapshotTimeTravel(t *testing.T) {
	tests := []struct {
		table   string
		version int64
		files   int
		rows    int64
	}{
		// dv-inline-cdf: v1 deletes {0,9} from the 10-row file.
		{"dv-inline-cdf", 0, 1, 10},
		{"dv-inline-cdf", 1, 1, 8},
		{"dv-inline-cdf", 3, 1, 6},
		// dv-basic-with-checkpoint: one DELETE of one row per commit after v0.
		{"dv-basic-with-checkpoint", 40, 2, 500 - 40},
		{"dv-basic-with-checkpoint", 45, 2, 500 - 45},
	}
	for _, tt := range tests {
		snap, err := LoadSnapshot(context.Background(), openDir(t, testutil.DeltaTable(t, tt.table)), tt.version)
		if err != nil {
			t.Fatalf("%s@%d: %v", tt.table, tt.version, err)
		}
		rows, _ := statsLiveRows(snap)
		if snap.Version != tt.version || len(snap.Files) != tt.files || rows != tt.rows {
			t.Errorf("%s@%d: version %d, %d files, %d rows; want %d files, %d rows", tt.table, tt.version, snap.Version, len(snap.Files), rows, tt.files, tt.rows)
		}
	}
	_, err := LoadSnapshot(context.Background(), openDir(t, testutil.DeltaTable(t, "dv-small")), 7)
	if !errors.Is(err, logpath.ErrVersionNotFound) {
		t.Fatalf("loading a future version: err = %v, want ErrVersionNotFound", err)
	}
}

func TestSnapshotKeepsTxnsDomainsAndICT(t *testing.T) {
	ctx := context.Background()
	snap, err := LoadSnapshot(ctx, openDir(t, testutil.DeltaTable(t, "ckpt-app-txn")), -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Txns) == 0 {
		t.Error("ckpt-app-txn: no txn from the checkpoint")
	}
	snap, err = LoadSnapshot(ctx, openDir(t, testutil.DeltaTable(t, "ckpt-only-domain-metadata-clustering-rowtracking")), -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Domains["delta.clustering"]; !ok {
		t.Errorf("domains = %v, want delta.clustering", snap.Domains)
	}
	if _, ok := snap.Domains["delta.rowTracking"]; !ok {
		t.Errorf("domains = %v, want delta.rowTracking", snap.Domains)
	}
	// ict-cdc has in-commit timestamps; v1's ICT is 1683874206883 (INDEX.md).
	snap, err = LoadSnapshot(ctx, openDir(t, testutil.DeltaTable(t, "ict-cdc")), 1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Timestamp != 1683874206883 {
		t.Errorf("ict-cdc v1 timestamp = %d, want the in-commit timestamp 1683874206883", snap.Timestamp)
	}
}

func TestLastCheckpointChecksumMatchesRealFiles(t *testing.T) {
	matches, _ := filepath.Glob(filepath.Join(testutil.DeltaTestdata(t), "*", "delta", "_delta_log", "_last_checkpoint"))
	checked := 0
	for _, p := range matches {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var lc logpath.LastCheckpoint
		if json.Unmarshal(data, &lc) != nil || lc.Checksum == "" {
			continue
		}
		sum, err := logpath.Checksum(data)
		if err != nil {
			t.Fatal(err)
		}
		if sum != lc.Checksum {
			t.Errorf("%s: checksum %s, file says %s", p, sum, lc.Checksum)
		}
		// A changed value must change the checksum.
		bad := strings.Replace(string(data), `"version":`, `"version":1`, 1)
		if s2, _ := logpath.Checksum([]byte(bad)); s2 == lc.Checksum {
			t.Errorf("%s: checksum ignores the version", p)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no _last_checkpoint with a checksum in the test tables")
	}
}

// Adds read from checkpoints (parquet and JSON, sidecars) must serialize
// as valid log lines that parse back to the same action: the commit engine
// writes removes from them.
func TestCheckpointActionsMarshal(t *testing.T) {
	exp := testutil.ExpectedTables(t)
	for _, name := range slices.Sorted(maps.Keys(exp)) {
		snap, err := LoadSnapshot(context.Background(), openDir(t, testutil.DeltaTable(t, name)), -1)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, f := range snap.Files {
			line, err := actions.MarshalAction(actions.Action{Add: f})
			if err != nil {
				t.Fatalf("%s: %s: %v", name, f.Path, err)
			}
			back, err := actions.ParseAction(line)
			if err != nil {
				t.Fatalf("%s: %s: %v", name, line, err)
			}
			want := *f
			want.ParsedStats = nil
			if !reflect.DeepEqual(back.Add, &want) {
				t.Fatalf("%s: round trip changed the add\n%+v\n%+v", name, back.Add, &want)
			}
		}
	}
}

// sortByPath orders paths as strings.Compare does, whatever their shared
// prefix, lengths or zero bytes (the key pads short paths with zeros).
func TestSortByPathIsByteOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "\x00", "/", "part-", "day=2024-01-0", "\xff"}
	for round := 0; round < 200; round++ {
		prefix := alphabet[r.IntN(len(alphabet))] + alphabet[r.IntN(len(alphabet))]
		var paths []string
		n := 1 + r.IntN(60)
		if round%4 == 0 {
			n = 1 + r.IntN(3000) // past the radix sort's insertion-sorted runs
		}
		for i := 0; i < n; i++ {
			p := prefix
			for k := r.IntN(40); k > 0; k-- {
				p += alphabet[r.IntN(len(alphabet))]
			}
			paths = append(paths, p)
		}
		got := slices.Clone(paths)
		same := sortByPath(got, func(s string) string { return s }, strings.Compare)
		want := slices.Clone(paths)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("sortByPath(%q)\n got %q\nwant %q", paths, got, want)
		}
		var wantSame []int
		for i := 1; i < len(want); i++ {
			if want[i] == want[i-1] {
				wantSame = append(wantSame, i)
			}
		}
		if !slices.Equal(same, wantSame) {
			t.Fatalf("sortByPath(%q): same paths at %v, want %v", paths, same, wantSame)
		}
	}
}
