package delta

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/internal/deltatest"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil"
)

func logName(v int64) string { return strings.TrimPrefix(logpath.CommitKey(v), logpath.LogDir) }

func TestCorruptLogGivesClearErrors(t *testing.T) {
	tests := []struct {
		name     string
		table    string
		damage   func(t *testing.T, root string)
		want     []string // substrings of the error
		notFound bool     // error wraps logpath.ErrVersionNotFound
	}{
		{
			name:  "truncated JSON line",
			table: "dv-basic-no-checkpoint",
			damage: func(t *testing.T, root string) {
				p := filepath.Join(root, "_delta_log", logName(1))
				data, _ := os.ReadFile(p)
				os.WriteFile(p, data[:len(data)*2/3], 0o644)
			},
			want: []string{logName(1), "line"},
		},
		{
			name:  "invalid JSON line",
			table: "dv-small",
			damage: func(t *testing.T, root string) {
				p := filepath.Join(root, "_delta_log", logName(0))
				data, _ := os.ReadFile(p)
				os.WriteFile(p, append([]byte("{\"add\": {\"path\": 12}}\n"), data...), 0o644)
			},
			want: []string{logName(0), "line 1", "add"},
		},
		{
			name:  "missing commit in the middle",
			table: "dv-basic-no-checkpoint",
			damage: func(t *testing.T, root string) {
				os.Remove(filepath.Join(root, "_delta_log", logName(0)))
			},
			want:     []string{logName(0), "missing"},
			notFound: true,
		},
		{
			name:  "gap after a checkpoint",
			table: "dv-basic-with-checkpoint",
			damage: func(t *testing.T, root string) {
				os.Remove(filepath.Join(root, "_delta_log", logName(43)))
			},
			want:     []string{logName(43), "checkpoint 40"},
			notFound: true,
		},
		{
			name:  "missing checkpoint part and no commits to replay instead",
			table: "ckpt-multi-part",
			damage: func(t *testing.T, root string) {
				os.Remove(filepath.Join(root, "_delta_log", "00000000000000000001.checkpoint.0000000002.0000000002.parquet"))
				os.Remove(filepath.Join(root, "_delta_log", logName(0)))
			},
			want:     []string{"00000000000000000001.checkpoint.0000000002.0000000002.parquet", "incomplete"},
			notFound: true,
		},
		{
			name:  "corrupt checkpoint parquet",
			table: "dv-basic-with-checkpoint",
			damage: func(t *testing.T, root string) {
				p := filepath.Join(root, "_delta_log", "00000000000000000040.checkpoint.parquet")
				data, _ := os.ReadFile(p)
				for i := 100; i < len(data)-100; i += 7 {
					data[i] ^= 0x5a
				}
				os.WriteFile(p, data, 0o644)
			},
			want: []string{"00000000000000000040.checkpoint.parquet"},
		},
		{
			name:  "truncated checkpoint parquet",
			table: "ckpt-multi-part",
			damage: func(t *testing.T, root string) {
				p := filepath.Join(root, "_delta_log", "00000000000000000001.checkpoint.0000000001.0000000002.parquet")
				data, _ := os.ReadFile(p)
				os.WriteFile(p, data[:len(data)/2], 0o644)
			},
			want: []string{"00000000000000000001.checkpoint.0000000001.0000000002.parquet"},
		},
		{
			name:  "missing sidecar",
			table: "ckpt-v2-uuid-json-golden",
			damage: func(t *testing.T, root string) {
				os.Remove(filepath.Join(root, "_delta_log", "_sidecars", "00000000000000000002.checkpoint.0000000001.0000000002.bd1885fd-6ec0-4370-b0f5-43b5162fd4de.parquet"))
			},
			want: []string{"_sidecars/00000000000000000002.checkpoint.0000000001.0000000002.bd1885fd-6ec0-4370-b0f5-43b5162fd4de.parquet", "missing"},
		},
		{
			name:  "invalid stats JSON",
			table: "dv-small",
			damage: func(t *testing.T, root string) {
				p := filepath.Join(root, "_delta_log", logName(1))
				data, _ := os.ReadFile(p)
				os.WriteFile(p, []byte(strings.Replace(string(data), `"stats":"{`, `"stats":"{{`, 1)), 0o644)
			},
			want: []string{"stats"},
		},
		{
			name:  "invalid stats JSON in a JSON checkpoint",
			table: "ckpt-v2-json-no-sidecars-txn",
			damage: func(t *testing.T, root string) {
				p := filepath.Join(root, "_delta_log", "00000000000000000002.checkpoint.dcc3e6d4-94fb-400d-ab9b-a8ac58f0e1b8.json")
				data, _ := os.ReadFile(p)
				os.WriteFile(p, []byte(strings.Replace(string(data), `"stats":"{`, `"stats":"{{`, 1)), 0o644)
			},
			want: []string{"00000000000000000002.checkpoint.dcc3e6d4-94fb-400d-ab9b-a8ac58f0e1b8.json", "stats"},
		},
		{
			name:  "empty log",
			table: "dv-small",
			damage: func(t *testing.T, root string) {
				os.RemoveAll(filepath.Join(root, "_delta_log"))
				os.MkdirAll(filepath.Join(root, "_delta_log"), 0o755)
			},
			want:     []string{"no commits"},
			notFound: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := deltatest.CopyTableDir(t, testutil.DeltaTable(t, tt.table), nil)
			tt.damage(t, root)
			_, err := LoadSnapshot(context.Background(), openDir(t, root), -1)
			if err == nil {
				t.Fatal("LoadSnapshot succeeded on a damaged log")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), root) {
				t.Errorf("error %q does not name the table", err)
			}
			if got := errors.Is(err, logpath.ErrVersionNotFound); got != tt.notFound {
				t.Errorf("errors.Is(err, ErrVersionNotFound) = %v, want %v (%v)", got, tt.notFound, err)
			}
		})
	}
}

func TestLastCheckpointHintIsOnlyAHint(t *testing.T) {
	tests := []struct {
		name  string
		table string
		hint  string
	}{
		{"corrupt", "dv-basic-with-checkpoint", `{"version":`},
		{"stale (older checkpoint)", "dv-basic-with-checkpoint", `{"version":10,"size":1}`},
		{"points past the log", "dv-basic-with-checkpoint", `{"version":99,"size":1}`},
		{"bad checksum", "ckpt-v2-uuid-json-golden", `{"version":2,"size":9,"checksum":"00000000000000000000000000000000"}`},
		{"missing", "ckpt-multi-part", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := LoadSnapshot(context.Background(), openDir(t, testutil.DeltaTable(t, tt.table)), -1)
			if err != nil {
				t.Fatal(err)
			}
			root := deltatest.CopyTableDir(t, testutil.DeltaTable(t, tt.table), nil)
			hint := filepath.Join(root, "_delta_log", "_last_checkpoint")
			if tt.hint == "" {
				os.Remove(hint)
			} else {
				os.WriteFile(hint, []byte(tt.hint), 0o644)
			}
			got, err := LoadSnapshot(context.Background(), openDir(t, root), -1)
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != want.Version || !reflect.DeepEqual(filePaths(got), filePaths(want)) {
				t.Fatalf("with a %s hint: version %d files %v; want version %d files %v", tt.name, got.Version, filePaths(got), want.Version, filePaths(want))
			}
		})
	}
}

func filePaths(s *Snapshot) []string {
	out := make([]string, len(s.Files))
	for i, f := range s.Files {
		out[i] = f.Path + "#" + f.DeletionVector.UniqueID()
	}
	return out
}

// Checkpoint replay must give the same state as replaying every JSON
// commit: a differential test of the checkpoint readers on every table
// that still has all its commits.
func TestCheckpointEqualsJSONReplay(t *testing.T) {
	exp := testutil.ExpectedTables(t)
	compared := 0
	for _, name := range slices.Sorted(maps.Keys(exp)) {
		src := testutil.DeltaTable(t, name)
		names, _ := filepath.Glob(filepath.Join(src, "_delta_log", "*.checkpoint*"))
		if len(names) == 0 {
			continue
		}
		complete := true
		for v := int64(0); v <= exp[name].Version; v++ {
			if _, err := os.Stat(filepath.Join(src, "_delta_log", logName(v))); err != nil {
				complete = false
			}
		}
		if !complete {
			continue
		}
		t.Run(name, func(t *testing.T) {
			withCP, err := LoadSnapshot(context.Background(), openDir(t, src), -1)
			if err != nil {
				t.Fatal(err)
			}
			root := deltatest.CopyTableDir(t, src, func(rel string) bool {
				return strings.Contains(rel, ".checkpoint") || strings.HasSuffix(rel, "_last_checkpoint")
			})
			jsonOnly, err := LoadSnapshot(context.Background(), openDir(t, root), -1)
			if err != nil {
				t.Fatal(err)
			}
			compareSnapshots(t, withCP, jsonOnly)
		})
		compared++
	}
	if compared < 8 {
		t.Fatalf("only %d tables compared", compared)
	}
}

func compareSnapshots(t *testing.T, got, want *Snapshot) {
	t.Helper()
	if got.Version != want.Version {
		t.Fatalf("version %d vs %d", got.Version, want.Version)
	}
	gp, wp := got.Protocol, want.Protocol
	gp.Extra, wp.Extra = nil, nil
	if !reflect.DeepEqual(gp, wp) {
		t.Errorf("protocol %+v vs %+v", gp, wp)
	}
	if got.Metadata.ID != want.Metadata.ID || got.Schema.String() != want.Schema.String() ||
		!reflect.DeepEqual(got.Metadata.Configuration, want.Metadata.Configuration) ||
		len(got.Metadata.PartitionColumns) != len(want.Metadata.PartitionColumns) {
		t.Errorf("metadata differs:\n%+v\n%+v", got.Metadata, want.Metadata)
	}
	if !reflect.DeepEqual(got.Txns, want.Txns) && !(len(got.Txns) == 0 && len(want.Txns) == 0) {
		for k, tw := range want.Txns {
			if tg, ok := got.Txns[k]; !ok || tg.Version != tw.Version {
				t.Errorf("txn %s: %+v vs %+v", k, tg, tw)
			}
		}
	}
	if len(got.Files) != len(want.Files) {
		t.Fatalf("%d files vs %d", len(got.Files), len(want.Files))
	}
	for i := range got.Files {
		g, w := got.Files[i], want.Files[i]
		if g.Path != w.Path || g.Size != w.Size || g.DeletionVector.UniqueID() != w.DeletionVector.UniqueID() {
			t.Errorf("file %d: %s %d %s vs %s %d %s", i, g.Path, g.Size, g.DeletionVector.UniqueID(), w.Path, w.Size, w.DeletionVector.UniqueID())
			continue
		}
		if g.DeletionVector != nil && (g.DeletionVector.Cardinality != w.DeletionVector.Cardinality || g.DeletionVector.SizeInBytes != w.DeletionVector.SizeInBytes) {
			t.Errorf("%s: DV %+v vs %+v", g.Path, g.DeletionVector, w.DeletionVector)
		}
		if !actions.SamePartitionValues(g.PartitionValues, w.PartitionValues) {
			t.Errorf("%s: partition values %v vs %v", g.Path, g.PartitionValues, w.PartitionValues)
		}
		gn, gok := g.LiveRows()
		wn, wok := w.LiveRows()
		if gok != wok || gn != wn {
			t.Errorf("%s: live rows %d/%v vs %d/%v", g.Path, gn, gok, wn, wok)
		}
		gst, gerr := g.FullStats()
		wst, werr := w.FullStats()
		if gerr != nil || werr != nil {
			t.Fatalf("%s: stats do not parse: %v, %v", g.Path, gerr, werr)
		}
		if gst != nil && wst != nil {
			for _, pair := range [][2]map[string]any{
				{gst.MinValues, wst.MinValues},
				{gst.MaxValues, wst.MaxValues},
				{gst.NullCount, wst.NullCount},
			} {
				if a, b := normStats(pair[0]), normStats(pair[1]); !reflect.DeepEqual(a, b) {
					t.Errorf("%s: stats differ:\n%v\n%v", g.Path, a, b)
				}
			}
		}
		if !reflect.DeepEqual(g.BaseRowID, w.BaseRowID) || !reflect.DeepEqual(g.DefaultRowCommitVersion, w.DefaultRowCommitVersion) {
			t.Errorf("%s: row tracking fields differ", g.Path)
		}
	}
}

// normStats makes stats values comparable across the JSON and struct
// forms: numbers as float64, timestamps as UTC instants.
func normStats(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		switch x := v.(type) {
		case json.Number:
			f, _ := x.Float64()
			out[k] = f
		case string:
			if ts, err := time.Parse("2006-01-02T15:04:05.000Z07:00", x); err == nil {
				out[k] = ts.UTC().Format(time.RFC3339Nano)
			} else {
				out[k] = x
			}
		case map[string]any:
			out[k] = normStats(x)
		default:
			out[k] = v
		}
	}
	return out
}

// FuzzCheckpointParquet: damaged checkpoint bytes give an error, never a
// panic. Seeds are the test tables' parquet checkpoints and sidecars.
func FuzzCheckpointParquet(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(testutil.DeltaTestdata(f), "*", "delta", "_delta_log", "*.parquet"))
	sidecars, _ := filepath.Glob(filepath.Join(testutil.DeltaTestdata(f), "*", "delta", "_delta_log", "_sidecars", "*.parquet"))
	seeds = append(seeds, sidecars...)
	if len(seeds) < 10 {
		f.Fatalf("only %d parquet checkpoint seeds", len(seeds))
	}
	for _, p := range seeds[:min(len(seeds), 12)] {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		if len(data) > 64 {
			f.Add(data[:len(data)-9]) // truncated footer
			cut := append([]byte(nil), data...)
			cut[len(cut)/2] ^= 0xff
			f.Add(cut)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		acts, err := parseCheckpointParquet(data)
		if err != nil {
			return
		}
		for _, a := range acts.actions() {
			if a.Add != nil && a.Add.Path == "" {
				t.Fatal("add without path accepted")
			}
		}
	})
}

// Seeded random damage to real checkpoints (a deterministic mini-fuzz that
// runs in every test run): each read returns actions or an error, never a
// panic. The footer region is hit often because its lengths and counts
// are what parquet readers trust.
func TestDamagedCheckpointsNeverPanic(t *testing.T) {
	seeds, _ := filepath.Glob(filepath.Join(testutil.DeltaTestdata(t), "*", "delta", "_delta_log", "*.parquet"))
	if len(seeds) < 10 {
		t.Fatalf("only %d checkpoint files", len(seeds))
	}
	originals := make([][]byte, len(seeds))
	for i, p := range seeds {
		originals[i] = mustRead(t, p)
	}
	rng := rand.New(rand.NewSource(7))
	failed := 0
	for i := 0; i < 600; i++ {
		data := append([]byte(nil), originals[rng.Intn(len(originals))]...)
		for k := 0; k < 1+rng.Intn(4); k++ {
			pos := rng.Intn(len(data))
			if rng.Intn(2) == 0 {
				pos = len(data) - 1 - rng.Intn(min(len(data), 400))
			}
			data[pos] = byte(rng.Intn(256))
		}
		if _, err := parseCheckpointParquet(data); err != nil {
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("no damaged checkpoint was detected")
	}
}

// Stats are checked once per file as the log is read: a parquet
// checkpoint's as it is decoded, a commit's when its file is live in the
// snapshot, and Advance checks the files of the commits it applies.
func TestInvalidStatsRefused(t *testing.T) {
	t.Run("parquet checkpoint", func(t *testing.T) {
		dir := t.TempDir()
		deltatest.WriteBenchTableStats(t, dir, 50, func(i int) string {
			if i == 7 {
				return `{"numRecords":3,"minValues":{"id":1,}}`
			}
			return deltatest.BenchStats(i)
		})
		_, err := LoadSnapshot(context.Background(), openDir(t, dir), -1)
		if err == nil {
			t.Fatal("LoadSnapshot accepted a checkpoint add whose stats do not parse")
		}
		for _, w := range []string{"00000000000000000100.checkpoint.parquet", deltatest.BenchPath(7), "stats"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not mention %q", err, w)
			}
		}
	})
	t.Run("Advance", func(t *testing.T) {
		root := deltatest.CopyTableDir(t, testutil.DeltaTable(t, "dv-small"), nil)
		tbl := openDir(t, root)
		snap, err := LoadSnapshot(context.Background(), tbl, 0)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, "_delta_log", logName(1))
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		damaged := strings.Replace(string(data), `"stats":"{`, `"stats":"{{`, 1)
		if damaged == string(data) {
			t.Fatal("commit 1 of dv-small has no stats to damage")
		}
		if err := os.WriteFile(p, []byte(damaged), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Advance(context.Background(), tbl, snap, 10); err == nil || !strings.Contains(err.Error(), "stats") {
			t.Fatalf("Advance over a commit whose stats do not parse: %v", err)
		}
	})
}
