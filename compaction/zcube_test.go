package compaction

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/composition"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/planner"
)

// zRow is the schema of the generated clustered tables: {id, x, y long}.
type zRow struct {
	ID *int64 `parquet:"id"`
	X  *int64 `parquet:"x"`
	Y  *int64 `parquet:"y"`
}

const zSchema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"x","type":"long","nullable":true,"metadata":{}},{"name":"y","type":"long","nullable":true,"metadata":{}}]}`

// zSpan is the range of the generated x and y values.
const zSpan = 10000

// newClusteredTable creates a table clustered by (x, y) the way Spark
// records it (clustering + domainMetadata writer features, the
// delta.clustering domain), with DVs enabled, holding files small files of
// rowsPerFile random (x, y) rows each. It returns the table and the rows by id.
func newClusteredTable(t testing.TB, files, rowsPerFile int) (*delta.Table, map[int64][2]int64) {
	t.Helper()
	tbl := tabletest.Open(t, "file://"+t.TempDir())
	lines := []string{
		`{"commitInfo":{"operation":"CREATE TABLE","txnId":"create"}}`,
		`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors","domainMetadata","clustering"]}}`,
		fmt.Sprintf(`{"metaData":{"id":"%s","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":[],"configuration":{"delta.enableDeletionVectors":"true"},"createdTime":1}}`, uuid.NewString(), zSchema),
		`{"domainMetadata":{"domain":"delta.clustering","configuration":"{\"clusteringColumns\":[[\"x\"],[\"y\"]]}","removed":false}}`,
	}
	rng := rand.New(rand.NewPCG(42, 43))
	all := map[int64][2]int64{}
	id := int64(0)
	for f := 0; f < files; f++ {
		rows := make([]zRow, rowsPerFile)
		for i := range rows {
			x, y, rid := rng.Int64N(zSpan), rng.Int64N(zSpan), id
			rows[i] = zRow{ID: &rid, X: &x, Y: &y}
			all[id] = [2]int64{x, y}
			id++
		}
		a := writeZFile(t, tbl, rows)
		lines = append(lines, tabletest.AddLine(t, a))
	}
	tabletest.PutCommit(t, tbl, 0, lines)
	return tbl, all
}

func writeZFile(t testing.TB, tbl *delta.Table, rows []zRow) *actions.Add {
	t.Helper()
	a := tabletest.WriteParquet(t, tbl, rows)
	lo, hi := [3]int64{1 << 62, 1 << 62, 1 << 62}, [3]int64{-1, -1, -1}
	for _, r := range rows {
		for k, v := range []int64{*r.ID, *r.X, *r.Y} {
			lo[k], hi[k] = min(lo[k], v), max(hi[k], v)
		}
	}
	a.Stats = fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d,"x":%d,"y":%d},"maxValues":{"id":%d,"x":%d,"y":%d},"nullCount":{"id":0,"x":0,"y":0},"tightBounds":true}`,
		len(rows), lo[0], lo[1], lo[2], hi[0], hi[1], hi[2])
	return a
}

// liveXY reads every live (id, x, y) of the table at its tabletest.Latest version
// with a plain parquet reader and the DVs: id -> (x, y) and duplicates.
func liveXY(t testing.TB, tbl *delta.Table) (map[int64][2]int64, []int64) {
	t.Helper()
	ctx := context.Background()
	snap := tabletest.Latest(t, tbl)
	out := map[int64][2]int64{}
	var dups []int64
	for _, f := range snap.Files {
		dv, err := delta.ReadDV(ctx, tbl, f.DeletionVector)
		if err != nil {
			t.Fatal(err)
		}
		for i, row := range readZRows(t, tbl, f) {
			if dv.Contains(uint64(i)) {
				continue
			}
			if _, dup := out[*row.ID]; dup {
				dups = append(dups, *row.ID)
			}
			out[*row.ID] = [2]int64{*row.X, *row.Y}
		}
	}
	return out, dups
}

// checkXY checks that the table holds exactly want's rows, each once.
func checkXY(t testing.TB, tbl *delta.Table, want map[int64][2]int64) {
	t.Helper()
	got, dups := liveXY(t, tbl)
	if len(dups) > 0 {
		t.Fatalf("%d duplicated ids, first %v", len(dups), tabletest.Head(dups))
	}
	var lost, extra, changed []int64
	for id, xy := range want {
		g, ok := got[id]
		switch {
		case !ok:
			lost = append(lost, id)
		case g != xy:
			changed = append(changed, id)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			extra = append(extra, id)
		}
	}
	if len(lost)+len(extra)+len(changed) > 0 {
		slices.Sort(extra)
		t.Fatalf("content changed: %d lost %v, %d resurrected/extra %v, %d changed %v", len(lost), tabletest.Head(lost), len(extra), tabletest.Head(extra), len(changed), tabletest.Head(changed))
	}
}

// rangeFraction is the average, over files, of a file's (max - min) of a
// stats column divided by the value span: 1 for files covering everything.
func rangeFraction(t testing.TB, adds []*actions.Add, col string) float64 {
	t.Helper()
	var sum float64
	for _, a := range adds {
		var st struct {
			Min map[string]int64 `json:"minValues"`
			Max map[string]int64 `json:"maxValues"`
		}
		if err := json.Unmarshal([]byte(a.Stats), &st); err != nil {
			t.Fatalf("stats of %s: %v", a.Path, err)
		}
		lo, ok1 := st.Min[col]
		hi, ok2 := st.Max[col]
		if !ok1 || !ok2 {
			t.Fatalf("stats of %s have no min/max for %s: %s", a.Path, col, a.Stats)
		}
		sum += float64(hi-lo) / zSpan
	}
	return sum / float64(len(adds))
}

func zcubeOpts() RunOptions {
	pol := planner.DefaultPolicy()
	pol.Strategy = planner.StrategyZCube
	pol.SettleWindow = 0
	opts := RunOptions{Policy: pol, EngineInfo: "compactord/test"}
	// Several outputs from one job, so that clustering shows in the stats
	// and a winner's deletions land in different outputs. (The plan's job
	// target is what the writer uses.)
	pol.TargetFileSize = 24 << 10
	opts.Policy = pol
	// Small sort bounds so the job spills sorted runs, as large jobs do
	// (the column path's runs; MemoryBytes bounds the row path's).
	// TestRaceSortedJobReconciledThroughTheOriginMap sorts in memory.
	opts.Writer.Sort.MemoryBytes = 64 << 10
	opts.Writer.Sort.ColumnMemoryBytes = 64 << 10
	opts.Writer.Sort.OriginMemoryBytes = 12 << 10
	return opts
}

func TestZCubeClustersAClusteredTableWithoutChangingContent(t *testing.T) {
	ctx := context.Background()
	tbl, rows := newClusteredTable(t, 40, 250)
	before := tabletest.Latest(t, tbl)
	if err := delta.Writable(before); err != nil {
		t.Fatalf("delta.Writable refuses the clustered table: %v", err)
	}
	res, err := Compact(ctx, tbl, zcubeOpts())
	if err != nil {
		t.Fatal(err)
	}
	if res.CommittedVersion != 1 || res.JobsCommitted != 1 || res.JobsDropped != 0 || res.FilesRemoved != 40 {
		t.Fatalf("result %+v, want one zcube job over the 40 files committed at version 1", res)
	}
	checkXY(t, tbl, rows)
	removes, adds := checkCompactionCommit(t, tabletest.Committed(t, tbl, res.CommittedVersion))
	if len(adds) < 4 {
		t.Fatalf("%d outputs, want at least 4 (target 24 KiB)", len(adds))
	}
	cube := adds[0].Tags[planner.TagZCubeID]
	for _, a := range adds {
		if a.ClusteringProvider == nil || *a.ClusteringProvider != planner.ClusteringProviderLiquid {
			t.Errorf("output %s: clusteringProvider %v, want liquid", a.Path, a.ClusteringProvider)
		}
		if a.Tags[planner.TagZCubeID] == "" || a.Tags[planner.TagZCubeID] != cube {
			t.Errorf("output %s: ZCUBE_ID %q, want one cube id %q on every output of the job", a.Path, a.Tags[planner.TagZCubeID], cube)
		}
		if a.Tags[planner.TagZCubeZOrderBy] != `["x","y"]` {
			t.Errorf("output %s: ZCUBE_ZORDER_BY %q", a.Path, a.Tags[planner.TagZCubeZOrderBy])
		}
		if a.DeletionVector != nil {
			t.Errorf("output %s has a DV without any concurrent delete", a.Path)
		}
	}
	for _, r := range removes {
		if r.Tags[composition.TagCompactedInto] != "" || r.Tags[composition.TagCompactionInfo] != "" {
			t.Errorf("remove %s of a sorted job carries composition tags %v (rows are permuted)", r.Path, r.Tags)
		}
	}
	// The outputs' stats are narrower than the inputs': each output covers
	// a Hilbert cell, each input the whole square.
	for _, col := range []string{"x", "y"} {
		in, out := rangeFraction(t, before.Files, col), rangeFraction(t, adds, col)
		t.Logf("%s: inputs cover %.2f of the range on average, %d outputs %.2f", col, in, len(adds), out)
		if out > 0.75*in {
			t.Errorf("%s: outputs cover %.2f of the range on average, inputs %.2f: not clustered", col, out, in)
		}
	}
	// A second zcube run has nothing left to do: one cube and no
	// unclustered files.
	again, err := Compact(ctx, tbl, zcubeOpts())
	if err != nil {
		t.Fatal(err)
	}
	if again.JobsPlanned != 0 || again.CommittedVersion != -1 {
		t.Errorf("second zcube run planned %d jobs (committed %d), want none", again.JobsPlanned, again.CommittedVersion)
	}
}

func TestZCubeReconcilesAConcurrentDVDelete(t *testing.T) {
	ctx := context.Background()
	tbl, rows := newClusteredTable(t, 20, 250)
	// A read-time DV on two sources, then a DELETE that lands while the
	// zcube job is about to commit: rows of several sources, which the
	// sort spread over several outputs.
	tabletest.DeleteIDs(t, tbl, 3, 260, 261)
	delete(rows, 3)
	delete(rows, 260)
	delete(rows, 261)
	opts := zcubeOpts()
	pl, snap, err := PlanTable(ctx, tbl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Jobs) != 1 || pl.Jobs[0].Sort == nil {
		t.Fatalf("want one sorted job, got %d jobs", len(pl.Jobs))
	}
	racing := []int64{4, 262, 999, 1000, 2500, 4999, 17, 3333}
	opts.Commit.BeforePut = tabletest.Once(func(int64) { tabletest.DeleteIDs(t, tbl, racing...) })
	res, err := RunPlan(ctx, tbl, pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.CommittedVersion != snap.Version+2 || res.JobsCommitted != 1 || res.JobsDropped != 0 {
		t.Fatalf("result %+v (dropped %+v), want the job committed after the DELETE", res, res.Dropped)
	}
	var remapped int64
	for _, r := range res.Reconciled {
		remapped += r.RowsRemapped
	}
	if remapped != int64(len(racing)) {
		t.Errorf("rowsRemapped %d, want %d (%+v)", remapped, len(racing), res.Reconciled)
	}
	for _, id := range racing {
		delete(rows, id)
	}
	checkXY(t, tbl, rows)
	removes, adds := checkCompactionCommit(t, tabletest.Committed(t, tbl, res.CommittedVersion))
	withDV := 0
	var dvRows int64
	for _, a := range adds {
		if a.DeletionVector != nil {
			withDV++
			dvRows += a.DeletionVector.Cardinality
			if st, err := stats.ParseStats(a.Stats); err != nil || st.Tight() {
				t.Errorf("output %s with a DV must have tightBounds=false: %s", a.Path, a.Stats)
			}
		}
	}
	if withDV < 2 || dvRows != int64(len(racing)) {
		t.Errorf("%d outputs carry DVs with %d rows, want the %d deletions spread over several outputs", withDV, dvRows, len(racing))
	}
	// The removes point at the DELETE's post-images, without composition tags.
	post := map[string]*actions.Add{}
	for _, f := range latestAt(t, tbl, res.CommittedVersion-1).Files {
		post[f.Path] = f
	}
	for _, r := range removes {
		if r.Tags[composition.TagCompactedInto] != "" {
			t.Errorf("remove %s carries compactedInto", r.Path)
		}
		if p, ok := post[r.Path]; !ok || p.DeletionVector.UniqueID() != r.DeletionVector.UniqueID() {
			t.Errorf("remove %s has DV %q, the file's live DV before our commit was %q", r.Path, r.DeletionVector.UniqueID(), p.DeletionVector.UniqueID())
		}
	}
}

// TestZCubeDropsTheJobWhenAWinnerRewritesASource checks the all-or-nothing
// fallback: a copy-on-write winner leaves nothing to remap onto.
func TestZCubeDropsTheJobWhenAWinnerRewritesASource(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newClusteredTable(t, 10, 100)
	opts := zcubeOpts()
	opts.Commit.BeforePut = tabletest.Once(func(int64) { zCowDelete(t, tbl, 5) })
	res, err := Compact(ctx, tbl, opts)
	if err == nil && res.JobsCommitted != 0 {
		t.Fatalf("result %+v: the job was committed over a rewritten source", res)
	}
	if res == nil || res.JobsDropped != 1 {
		t.Fatalf("result %+v, err %v: want the job dropped", res, err)
	}
	ids, dups := liveXY(t, tbl)
	if _, ok := ids[5]; ok || len(dups) > 0 || len(ids) != 999 {
		t.Fatalf("%d live ids (id 5 present: %v), %d duplicates", len(ids), ids[5] != [2]int64{}, len(dups))
	}
	assertNoOrphanParquet(t, tbl)
}

func latestAt(t testing.TB, tbl *delta.Table, v int64) *delta.Snapshot {
	t.Helper()
	snap, err := delta.LoadSnapshot(context.Background(), tbl, v)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// readZRows reads every physical row of the data file of f.
func readZRows(t testing.TB, tbl *delta.Table, f *actions.Add) []zRow {
	t.Helper()
	key, _ := f.Key()
	data, err := tbl.Bucket.ReadAll(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	r := parquet.NewGenericReader[zRow](bytes.NewReader(data))
	defer r.Close()
	rows := make([]zRow, r.NumRows())
	if n, err := r.Read(rows); n != len(rows) || (err != nil && !errors.Is(err, io.EOF)) {
		t.Fatalf("read %s: %d of %d rows: %v", key, n, len(rows), err)
	}
	return rows
}

// zCowDelete rewrites the file holding id without it (copy-on-write DELETE).
func zCowDelete(t testing.TB, tbl *delta.Table, id int64) {
	t.Helper()
	ctx := context.Background()
	snap := tabletest.Latest(t, tbl)
	f, _ := tabletest.ByID(t, tbl, snap, id)
	keep := slices.DeleteFunc(readZRows(t, tbl, f), func(z zRow) bool { return *z.ID == id })
	na := writeZFile(t, tbl, keep)
	tx := &commit.Txn{Table: tbl, Snapshot: snap, Operation: "DELETE", IsolationLevel: "WriteSerializable",
		ReadFiles: map[string]bool{f.Path: true},
		Actions:   []actions.Action{{Remove: &actions.Remove{Path: f.Path, DataChange: true, DeletionVector: f.DeletionVector}}, {Add: na}}}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
