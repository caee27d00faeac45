package checkpointwrite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/internal/deltatest"
	"github.com/compactord/compactord/delta/logpath"
	deltaprops "github.com/compactord/compactord/delta/props"
	"github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/logtest"
)

// onlyLog is a copyTableDir filter keeping the _delta_log of a table.
func onlyLog(keep func(name string) bool) func(rel string) bool {
	return func(rel string) bool {
		name, ok := strings.CutPrefix(rel, logpath.LogDir)
		if !ok {
			return true
		}
		return keep != nil && !keep(name)
	}
}

// logCopy copies the log of test table name (no data files) to a temp
// dir, opens it and loads its snapshot at version (-1: the latest).
func logCopy(t *testing.T, name string, version int64) (string, *delta.Table, *delta.Snapshot) {
	t.Helper()
	work := deltatest.CopyTableDir(t, testutil.DeltaTable(t, name), onlyLog(nil))
	tbl := logtest.Open(t, work)
	snap, err := delta.LoadSnapshot(context.Background(), tbl, version)
	if err != nil {
		t.Fatal(err)
	}
	return work, tbl, snap
}

// jsonReplayable reports whether commits 0..latest all exist, so that the
// table can be replayed from JSON alone.
func jsonReplayable(t *testing.T, root string, latest int64) bool {
	for v := int64(0); v <= latest; v++ {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(logpath.CommitKey(v)))); err != nil {
			return false
		}
	}
	return true
}

// referenceSnapshot loads the table at version from JSON commits only when
// it has all of them, else the normal way (tables whose early commits were
// cleaned up upstream).
func referenceSnapshot(t *testing.T, src string, version int64) *delta.Snapshot {
	t.Helper()
	ctx := context.Background()
	var dir string
	if jsonReplayable(t, src, version) {
		dir = deltatest.CopyTableDir(t, src, onlyLog(func(name string) bool {
			f, ok := logpath.Parse(name)
			return ok && f.Kind == logpath.Commit
		}))
	} else {
		dir = deltatest.CopyTableDir(t, src, onlyLog(nil))
	}
	snap, err := delta.LoadSnapshot(ctx, logtest.Open(t, dir), version)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// tombstoneNow picks a checkpoint clock that keeps recent tombstones and
// expires those older than the retention (so both paths are exercised on
// tables with history).
func tombstoneNow(s *delta.Snapshot) time.Time {
	var newest int64
	for _, r := range s.Tombstones {
		if r.DeletionTimestamp != nil {
			newest = max(newest, *r.DeletionTimestamp)
		}
	}
	if newest == 0 {
		newest = s.Timestamp
	}
	return time.UnixMilli(newest).Add(24 * time.Hour)
}

func TestWriteCheckpointRoundTripOnEveryTestTable(t *testing.T) {
	exp := testutil.ExpectedTables(t)
	ctx := context.Background()
	tested := 0
	for _, name := range slices.Sorted(maps.Keys(exp)) {
		want := exp[name]
		t.Run(name, func(t *testing.T) {
			src := testutil.DeltaTable(t, name)
			work := deltatest.CopyTableDir(t, src, onlyLog(nil))
			tbl := logtest.Open(t, work)
			snap, err := delta.LoadSnapshot(ctx, tbl, -1)
			if err != nil {
				if want.MustRefuse {
					return
				}
				t.Fatal(err)
			}
			if want.MustRefuse {
				if _, err := WriteCheckpoint(ctx, tbl, snap, CheckpointOptions{}); err == nil {
					t.Fatal("a table that must be refused was checkpointed")
				}
				return
			}
			props, err := checkpointProperties(snap)
			if err != nil {
				t.Fatal(err)
			}
			// The checkpoint is written from the JSON replay (where the
			// table has every commit), so that loading it must give
			// exactly that replay back.
			ref := referenceSnapshot(t, src, snap.Version)
			// The version's own checkpoints go: ours must be the only one.
			removeCheckpointsAt(t, work, snap.Version)
			now := tombstoneNow(ref)
			info, err := WriteCheckpoint(ctx, tbl, ref, CheckpointOptions{Now: now, SidecarActions: 3})
			if err != nil {
				t.Fatal(err)
			}
			isV2 := snap.Protocol.HasFeature("v2Checkpoint") && props.CheckpointPolicy == deltaprops.CheckpointPolicyV2
			if info.V2 != isV2 {
				t.Fatalf("V2 = %v, want %v", info.V2, isV2)
			}
			if info.NumAddFiles != int64(len(snap.Files)) {
				t.Fatalf("numAddFiles %d, snapshot has %d files", info.NumAddFiles, len(snap.Files))
			}
			if !info.LastCheckpoint {
				t.Fatal("_last_checkpoint not written")
			}
			// Load from only the new checkpoint (and its sidecars).
			keep := map[string]bool{info.Key: true, logpath.LastCheckpointKey: true}
			for _, s := range info.Sidecars {
				keep[s] = true
			}
			only := deltatest.CopyTableDir(t, work, func(rel string) bool { return !keep[rel] })
			got, err := delta.LoadSnapshot(ctx, logtest.Open(t, only), -1)
			if err != nil {
				t.Fatal(err)
			}
			if isV2 {
				checkV2Checkpoint(t, only, info)
			}
			checkLastCheckpoint(t, only, info)
			compareCheckpointSnapshot(t, ref, got, now, props, snap)
			tested++
		})
	}
	if tested < 40 {
		t.Fatalf("only %d tables round-tripped", tested)
	}
}

func removeCheckpointsAt(t *testing.T, root string, v int64) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, logpath.LogDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		f, ok := logpath.Parse(e.Name())
		if !ok || f.Version != v || f.Kind == logpath.Commit || f.Kind == logpath.Compaction {
			continue
		}
		if err := os.Remove(filepath.Join(root, logpath.LogDir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

func checkV2Checkpoint(t *testing.T, root string, info *CheckpointInfo) {
	t.Helper()
	name := strings.TrimPrefix(info.Key, logpath.LogDir)
	f, ok := logpath.Parse(name)
	if !ok || f.Kind != logpath.V2Checkpoint || !strings.HasSuffix(name, ".json") {
		t.Fatalf("V2 checkpoint %s is not UUID-named JSON", info.Key)
	}
	tbl := logtest.Open(t, root)
	acts, err := delta.ReadCheckpointFile(context.Background(), tbl, info.Key)
	if err != nil {
		t.Fatal(err)
	}
	var cms, sidecars int
	for _, a := range acts.Actions() {
		switch {
		case a.CheckpointMetadata != nil:
			cms++
			if a.CheckpointMetadata.Version != info.Version {
				t.Errorf("checkpointMetadata.version %d, want %d", a.CheckpointMetadata.Version, info.Version)
			}
		case a.Sidecar != nil:
			sidecars++
		case a.Add != nil, a.Remove != nil:
			t.Error("file action inline in a sidecar-backed V2 checkpoint")
		}
	}
	if cms != 1 || sidecars != len(info.Sidecars) {
		t.Fatalf("%d checkpointMetadata, %d sidecar actions (want 1, %d)", cms, sidecars, len(info.Sidecars))
	}
}

func checkLastCheckpoint(t *testing.T, root string, info *CheckpointInfo) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(logpath.LastCheckpointKey)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), fmt.Sprintf(`{"version":%d,"size":%d,`, info.Version, info.Actions)) {
		t.Fatalf("_last_checkpoint does not start with version and size: %s", data)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["parts"]; ok {
		t.Fatal("_last_checkpoint of a single-file checkpoint has parts")
	}
	lc, reason, err := delta.ReadLastCheckpoint(context.Background(), logtest.Open(t, root))
	if err != nil || lc == nil {
		t.Fatalf("_last_checkpoint unreadable: %v %s", err, reason)
	}
	if lc.Checksum == "" {
		t.Fatal("no checksum")
	}
	if info.V2 != (lc.V2 != nil) {
		t.Fatalf("v2Checkpoint present = %v, want %v", lc.V2 != nil, info.V2)
	}
}

// compareCheckpointSnapshot checks that got (from our checkpoint alone) is ref (JSON
// replay) with expired tombstones and txns dropped.
func compareCheckpointSnapshot(t *testing.T, ref, got *delta.Snapshot, now time.Time, props *deltaprops.Properties, snap *delta.Snapshot) {
	t.Helper()
	if got.Version != ref.Version {
		t.Fatalf("version %d, want %d", got.Version, ref.Version)
	}
	if !reflect.DeepEqual(logtest.NormProtocol(got.Protocol), logtest.NormProtocol(ref.Protocol)) {
		t.Errorf("protocol %+v, want %+v", got.Protocol, ref.Protocol)
	}
	if !reflect.DeepEqual(normMetadata(got.Metadata), normMetadata(ref.Metadata)) {
		t.Errorf("metadata\n got %+v\nwant %+v", normMetadata(got.Metadata), normMetadata(ref.Metadata))
	}
	if len(got.Files) != len(ref.Files) {
		t.Fatalf("%d files, want %d", len(got.Files), len(ref.Files))
	}
	cols, err := checkpointColumns(snap, props)
	if err != nil {
		t.Fatal(err)
	}
	statsTree := newCPSchema(layoutClassic, cols).statsParsed
	for i := range ref.Files {
		g, w := got.Files[i], ref.Files[i]
		if g.DataChange {
			t.Errorf("%s: checkpoint add has dataChange=true", g.Path)
		}
		if g.Path != w.Path || g.Size != w.Size || g.ModificationTime != w.ModificationTime ||
			!reflect.DeepEqual(normPV(g.PartitionValues), normPV(w.PartitionValues)) ||
			!reflect.DeepEqual(normTags(g.Tags), normTags(w.Tags)) ||
			!reflect.DeepEqual(g.DeletionVector, w.DeletionVector) ||
			!reflect.DeepEqual(g.BaseRowID, w.BaseRowID) ||
			!reflect.DeepEqual(g.DefaultRowCommitVersion, w.DefaultRowCommitVersion) ||
			!reflect.DeepEqual(g.ClusteringProvider, w.ClusteringProvider) {
			t.Errorf("file %d differs:\n got %s\nwant %s", i, jsonOf(g), jsonOf(w))
			continue
		}
		switch {
		case props.CheckpointWriteStatsAsJSON:
			if g.Stats != statsJSON(w) {
				t.Errorf("%s: stats %q, want %q", g.Path, g.Stats, statsJSON(w))
			}
		case w.Stats != "" || w.ParsedStats != nil:
			wst := w.ParsedStats
			if wst == nil {
				if wst, err = stats.ParseStats(w.Stats); err != nil {
					t.Fatal(err)
				}
			}
			gst, err := g.FullStats()
			if err != nil {
				t.Fatal(err)
			}
			gl, wl := statsLeaves(statsTree, gst), statsLeaves(statsTree, wst)
			if len(wl) == 0 || !reflect.DeepEqual(gl, wl) {
				t.Errorf("%s: stats_parsed leaves\n got %v\nwant %v", g.Path, gl, wl)
			}
		}
	}
	minDel := now.UnixMilli() - props.DeletedFileRetention.Milliseconds()
	var wantTomb []*actions.Remove
	for _, r := range ref.Tombstones {
		if r.DeletionTimestamp != nil && *r.DeletionTimestamp > minDel {
			wantTomb = append(wantTomb, r)
		}
	}
	if len(got.Tombstones) != len(wantTomb) {
		t.Fatalf("%d tombstones, want %d of %d", len(got.Tombstones), len(wantTomb), len(ref.Tombstones))
	}
	gotTomb := map[string]*actions.Remove{}
	for _, g := range got.Tombstones {
		gotTomb[g.FileKey()] = g
	}
	for i, w := range wantTomb {
		g := gotTomb[w.FileKey()]
		if g == nil {
			t.Errorf("tombstone %s missing", jsonOf(w))
			continue
		}
		if g.DataChange || g.Stats != "" || g.Tags != nil {
			t.Errorf("%s: tombstone carries dataChange/stats/tags: %s", g.Path, jsonOf(g))
		}
		if g.Path != w.Path || !reflect.DeepEqual(g.DeletionTimestamp, w.DeletionTimestamp) ||
			!reflect.DeepEqual(g.ExtendedFileMetadata, w.ExtendedFileMetadata) ||
			!reflect.DeepEqual(g.PartitionValues, w.PartitionValues) || !reflect.DeepEqual(g.Size, w.Size) ||
			!reflect.DeepEqual(g.DeletionVector, w.DeletionVector) || !reflect.DeepEqual(g.BaseRowID, w.BaseRowID) ||
			!reflect.DeepEqual(g.DefaultRowCommitVersion, w.DefaultRowCommitVersion) {
			t.Errorf("tombstone %d differs:\n got %s\nwant %s", i, jsonOf(g), jsonOf(w))
		}
	}
	wantTxn := map[string]actions.Txn{}
	for k, v := range ref.Txns {
		if props.SetTransactionRetention > 0 && (v.LastUpdated == nil || *v.LastUpdated <= now.UnixMilli()-props.SetTransactionRetention.Milliseconds()) {
			continue
		}
		wantTxn[k] = v
	}
	if !reflect.DeepEqual(normEach(got.Txns, normTxn), normEach(wantTxn, normTxn)) {
		t.Errorf("txns %v, want %v", got.Txns, wantTxn)
	}
	if !reflect.DeepEqual(normEach(got.Domains, normDomain), normEach(ref.Domains, normDomain)) {
		t.Errorf("domains %v, want %v", got.Domains, ref.Domains)
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func normMetadata(m actions.Metadata) actions.Metadata {
	m.Extra = nil
	if len(m.Configuration) == 0 {
		m.Configuration = nil
	}
	if len(m.Format.Options) == 0 {
		m.Format.Options = nil
	}
	if len(m.PartitionColumns) == 0 {
		m.PartitionColumns = nil
	}
	return m
}

func normPV(m map[string]*string) map[string]*string {
	if len(m) == 0 {
		return nil
	}
	return m
}

func normTags(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// normEach returns a copy of m with norm applied to every value.
func normEach[V any](m map[string]V, norm func(V) V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = norm(v)
	}
	return out
}

func normTxn(v actions.Txn) actions.Txn { v.Extra = nil; return v }

func normDomain(v actions.DomainMetadata) actions.DomainMetadata { v.Extra = nil; return v }

// statsLeaves flattens stats along the stats_parsed schema into
// path -> canonical value (numbers as exact rationals, timestamps as
// milliseconds), so that JSON stats and typed ones compare.
func statsLeaves(tree *wnode, st *stats.Stats) map[string]string {
	out := map[string]string{}
	if tree == nil || st == nil {
		return out
	}
	if st.NumRecords != nil {
		out["numRecords"] = fmt.Sprint(*st.NumRecords)
	}
	if st.TightBounds != nil && tree.child("tightBounds") != nil {
		out["tightBounds"] = fmt.Sprint(*st.TightBounds)
	}
	var walk func(prefix string, n *wnode, m map[string]any)
	walk = func(prefix string, n *wnode, m map[string]any) {
		for _, c := range n.children {
			v, ok := m[c.name]
			if !ok || v == nil {
				continue
			}
			if c.kind == wStruct {
				if sub, ok := v.(map[string]any); ok {
					walk(prefix+c.name+".", c, sub)
				}
				continue
			}
			out[prefix+c.name] = canonicalStat(v, c.dt)
		}
	}
	for _, part := range []struct {
		name string
		m    map[string]any
	}{{"minValues", st.MinValues}, {"maxValues", st.MaxValues}, {"nullCount", st.NullCount}} {
		if n := tree.child(part.name); n != nil && part.m != nil {
			walk(part.name+".", n, part.m)
		}
	}
	return out
}

func canonicalStat(v any, dt *schema.DataType) string {
	switch x := v.(type) {
	case json.Number:
		if r, ok := new(big.Rat).SetString(string(x)); ok {
			return r.RatString()
		}
	case string:
		if dt != nil && dt.Name == "timestamp" {
			if ts, err := time.Parse(time.RFC3339Nano, x); err == nil {
				return fmt.Sprint(ts.UnixMilli())
			}
		}
		return x
	}
	return fmt.Sprint(v)
}

func TestWriteCheckpointRefusesExistingClassicCheckpoint(t *testing.T) {
	ctx := context.Background()
	work, tbl, snap := logCopy(t, "dv-basic-with-checkpoint", 40)
	before, err := os.ReadFile(filepath.Join(work, filepath.FromSlash(logpath.CheckpointKey(40))))
	if err != nil {
		t.Fatal(err)
	}
	_, err = WriteCheckpoint(ctx, tbl, snap, CheckpointOptions{})
	if !errors.Is(err, ErrCheckpointExists) {
		t.Fatalf("err = %v, want ErrCheckpointExists", err)
	}
	after, err := os.ReadFile(filepath.Join(work, filepath.FromSlash(logpath.CheckpointKey(40))))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) {
		t.Fatal("Spark's checkpoint was overwritten")
	}
}

// BenchmarkWriteCheckpoint checkpoints a loaded snapshot of 100k and 1M
// files (10% with DVs, JSON stats on every add, partitioned by day, stats
// written as JSON and as stats_parsed/partitionValues_parsed). It reports
// the heap peak during the write and how far above the loaded snapshot's
// own heap the write went.
func BenchmarkWriteCheckpoint(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			deltatest.WriteBenchTable(b, dir, n)
			tbl := logtest.Open(b, dir)
			ctx := context.Background()
			snap, err := delta.LoadSnapshot(ctx, tbl, -1)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var maxPeak, maxExtra uint64
			var cpu time.Duration
			var size int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				_ = os.Remove(filepath.Join(dir, filepath.FromSlash(logpath.CheckpointKey(snap.Version))))
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				base := ms.HeapInuse
				before := deltatest.CPUTime()
				b.StartTimer()
				var info *CheckpointInfo
				peak := deltatest.PeakHeap(func() { info, err = WriteCheckpoint(ctx, tbl, snap, CheckpointOptions{}) })
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if info.NumAddFiles != int64(len(snap.Files)) {
					b.Fatalf("%d adds written, snapshot has %d", info.NumAddFiles, len(snap.Files))
				}
				cpu += deltatest.CPUTime() - before
				size = info.SizeInBytes
				maxPeak = max(maxPeak, peak)
				if peak > base {
					maxExtra = max(maxExtra, peak-base)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(maxPeak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(maxExtra)/(1<<20), "extra-heap-MB")
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(size)/(1<<20), "checkpoint-MB")
		})
	}
}

func TestWriteCompatCheckpointCopiesV2Content(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"ckpt-v2-uuid-json-golden", "ckpt-v2-uuid-parquet-golden", "ckpt-v2-json-no-sidecars-txn"} {
		t.Run(name, func(t *testing.T) {
			work, tbl, want := logCopy(t, name, -1)
			key, err := WriteCompatCheckpoint(ctx, tbl, want.Version)
			if err != nil {
				t.Fatal(err)
			}
			if key != logpath.CheckpointKey(want.Version) {
				t.Fatalf("wrote %q", key)
			}
			// A second call finds the classic name taken.
			if again, err := WriteCompatCheckpoint(ctx, tbl, want.Version); err != nil || again != "" {
				t.Fatalf("second call: %q, %v", again, err)
			}
			// Only the compatibility checkpoint and the sidecars remain.
			only := deltatest.CopyTableDir(t, work, func(rel string) bool {
				return rel != key && !strings.HasPrefix(rel, logpath.SidecarDir)
			})
			got, err := delta.LoadSnapshot(ctx, logtest.Open(t, only), -1)
			if err != nil {
				t.Fatal(err)
			}
			acts, err := delta.ReadCheckpointFile(ctx, logtest.Open(t, only), key)
			if err != nil {
				t.Fatal(err)
			}
			cms := 0
			for _, a := range acts.Actions() {
				if a.CheckpointMetadata != nil {
					cms++
				}
			}
			if cms != 1 {
				t.Fatalf("%d checkpointMetadata actions in the compatibility checkpoint", cms)
			}
			compareCheckpointSnapshot(t, want, got, time.UnixMilli(0), &deltaprops.Properties{CheckpointWriteStatsAsJSON: true, DeletedFileRetention: time.Duration(1 << 62)}, want)
		})
	}
}
