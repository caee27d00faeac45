package writer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta/scan"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/compactord/compactord/composition"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

func loadCopy(t *testing.T, name string) (*delta.Table, *delta.Snapshot) {
	t.Helper()
	tbl, _ := copyTable(t, name)
	snap, err := loadLatest(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, snap
}

func cloneAdd(a *actions.Add) *actions.Add {
	c := *a
	c.ParsedStats = nil
	return &c
}

func TestFailedRewriteTracksEveryObjectItWrote(t *testing.T) {
	missing := func(snap *delta.Snapshot) []*actions.Add {
		gone := cloneAdd(snap.Files[2])
		gone.Path = "part-00099-does-not-exist.c000.snappy.parquet"
		return []*actions.Add{snap.Files[0], snap.Files[1], gone, snap.Files[3]}
	}
	wrongCount := func(snap *delta.Snapshot) []*actions.Add {
		bad := cloneAdd(snap.Files[2])
		bad.Stats = `{"numRecords":999999}`
		return []*actions.Add{snap.Files[0], snap.Files[1], bad}
	}
	tests := []struct {
		name        string
		sources     func(*delta.Snapshot) []*actions.Add
		ctx         func() context.Context
		want        string
		wantTracked bool
	}{
		{name: "a missing source after two outputs were written", sources: missing, want: "does-not-exist", wantTracked: true},
		{name: "stats numRecords that disagree with the footer", sources: wrongCount, want: "numRecords 999999"},
		{
			name: "a canceled context", sources: func(s *delta.Snapshot) []*actions.Add { return s.Files[:4] },
			ctx: func() context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx
			},
			want: "context canceled",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl, snap := loadCopy(t, "ckpt-v2-json-sidecars-101-files")
			before := tabletest.Keys(t, tbl)
			ctx := context.Background()
			if tt.ctx != nil {
				ctx = tt.ctx()
			}
			opts := DefaultOptions()
			opts.TargetFileSize = 1 // one output per source: several objects exist before the failure
			opts.SpillDir = t.TempDir()
			objs := &attempt.Objects{}
			res, err := Rewrite(ctx, tbl, snap, &Job{ID: "j", Sources: tt.sources(snap)}, objs, opts)
			if left, _ := os.ReadDir(opts.SpillDir); len(left) != 0 {
				t.Errorf("%d page spill files left behind", len(left))
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Rewrite = %v, %v; want an error mentioning %q", res, err, tt.want)
			}
			if !strings.Contains(err.Error(), "job j") {
				t.Errorf("error %q does not name the job", err)
			}
			// The writer deletes nothing itself; every object it created is
			// tracked, so the attempt's owner restores the table.
			if tt.wantTracked && len(objs.Uncommitted()) < 2 {
				t.Errorf("tracked %v, want the outputs written before the failure", objs.Uncommitted())
			}
			if err := cleanAttempt(context.Background(), objs, tbl); err != nil {
				t.Fatal(err)
			}
			if after := tabletest.Keys(t, tbl); !slices.Equal(before, after) {
				t.Errorf("objects left after cleaning a failed rewrite:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

func TestRewriteRejectsBadJobs(t *testing.T) {
	tbl, snap := loadCopy(t, "dv-partitioned-with-checkpoint")
	var other *actions.Add
	for _, f := range snap.Files {
		if !actions.SamePartitionValues(f.PartitionValues, snap.Files[0].PartitionValues) {
			other = f
			break
		}
	}
	if other == nil {
		t.Fatal("fixture has a single partition")
	}
	tests := []struct {
		name string
		job  *Job
		is   error
		want string
	}{
		{name: "sources of two partitions", job: &Job{ID: "p", Sources: []*actions.Add{snap.Files[0], other}}, want: "not in the job's partition"},
		{name: "a sorted job without columns", job: &Job{ID: "s", Sources: snap.Files[:1], Sort: &SortSpec{Curve: "hilbert"}}, want: "no clustering columns"},
		{name: "no sources", job: &Job{ID: "e"}, want: "no sources"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tabletest.Keys(t, tbl)
			objs := &attempt.Objects{}
			_, err := Rewrite(context.Background(), tbl, snap, tt.job, objs, DefaultOptions())
			if err == nil {
				t.Fatal("Rewrite succeeded")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want errors.Is %v", err, tt.is)
			}
			if tt.want != "" && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tt.want)
			}
			if after := tabletest.Keys(t, tbl); !slices.Equal(before, after) {
				t.Errorf("objects changed: %v -> %v", before, after)
			}
		})
	}
}

func TestRewriteAllKeepsSuccessfulJobsWhenOneFails(t *testing.T) {
	tbl, snap := loadCopy(t, "ckpt-v2-json-sidecars-101-files")
	gone := cloneAdd(snap.Files[5])
	gone.Path = "missing.parquet"
	jobs := []*Job{
		{ID: "ok-1", Sources: snap.Files[0:3]},
		{ID: "bad", Sources: []*actions.Add{snap.Files[3], gone}},
		{ID: "ok-2", Sources: snap.Files[6:9]},
	}
	before := tabletest.Keys(t, tbl)
	objs := &attempt.Objects{}
	results, err := RewriteAll(context.Background(), tbl, snap, jobs, objs, DefaultOptions())
	if err == nil || !strings.Contains(err.Error(), "job bad") {
		t.Fatalf("err = %v, want the failure of job bad", err)
	}
	if results[0] == nil || results[1] != nil || results[2] == nil {
		t.Fatalf("results = %v, want ok, nil, ok", results)
	}
	tracked := map[string]bool{}
	for _, k := range objs.Uncommitted() {
		tracked[k] = true
	}
	for _, r := range []*Result{results[0], results[2]} {
		if len(r.Outputs) != 1 {
			t.Fatalf("job %s: %d outputs", r.Job.ID, len(r.Outputs))
		}
		if _, err := tbl.Bucket.Attributes(context.Background(), r.Outputs[0].Key); err != nil {
			t.Errorf("job %s output missing: %v", r.Job.ID, err)
		}
		if !tracked[r.Outputs[0].Key] {
			t.Errorf("job %s output %s is not tracked", r.Job.ID, r.Outputs[0].Key)
		}
	}
	if len(tracked) != 3 {
		t.Errorf("tracked %v, want the two outputs and the failed job's", objs.Uncommitted())
	}
	if err := cleanAttempt(context.Background(), objs, tbl); err != nil {
		t.Fatal(err)
	}
	if after := tabletest.Keys(t, tbl); !slices.Equal(before, after) {
		t.Errorf("objects left after cleaning:\nbefore %v\nafter  %v", before, after)
	}
}

func TestCompressionAndRowGroupOptionsReachTheFile(t *testing.T) {
	tests := []struct {
		name      string
		opts      func(*Options)
		codec     format.CompressionCodec
		suffix    string
		maxRGRows int64
		minRGs    int
	}{
		{name: "zstd by default", opts: func(*Options) {}, codec: format.Zstd, suffix: ".c000.zstd.parquet", minRGs: 1},
		{name: "snappy", opts: func(o *Options) { o.Compression = "snappy" }, codec: format.Snappy, suffix: ".c000.snappy.parquet", minRGs: 1},
		{name: "gzip", opts: func(o *Options) { o.Compression = "gzip" }, codec: format.Gzip, suffix: ".c000.gz.parquet", minRGs: 1},
		{name: "none", opts: func(o *Options) { o.Compression = "none" }, codec: format.Uncompressed, suffix: ".c000.parquet", minRGs: 1},
		{name: "row-group row cap", opts: func(o *Options) { o.RowGroupRows = 100 }, codec: format.Zstd, suffix: ".zstd.parquet", maxRGRows: 100, minRGs: 5},
		{name: "row-group byte bound", opts: func(o *Options) { o.RowGroupBytes = 1 << 10; o.BatchRows = 16 }, codec: format.Zstd, suffix: ".zstd.parquet", minRGs: 4},
		{name: "pages kept in memory", opts: func(o *Options) { o.InMemoryPages = true; o.RowGroupRows = 300 }, codec: format.Zstd, suffix: ".zstd.parquet", maxRGRows: 300, minRGs: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl, dir := copyTable(t, "dv-basic-with-checkpoint")
			snap, err := loadLatest(context.Background(), tbl)
			if err != nil {
				t.Fatal(err)
			}
			opts := DefaultOptions()
			tt.opts(&opts)
			objs := &attempt.Objects{}
			res, err := Rewrite(context.Background(), tbl, snap, &Job{ID: "c", Sources: snap.Files}, objs, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Outputs) != 1 || res.Outputs[0].NumRecords != 454 {
				t.Fatalf("outputs %+v, want one with 454 rows", res.Outputs)
			}
			o := res.Outputs[0]
			if !strings.HasSuffix(o.Key, tt.suffix) {
				t.Errorf("key %q, want suffix %q", o.Key, tt.suffix)
			}
			f, err := os.Open(filepath.Join(dir, o.Key))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			pf, err := parquet.OpenFile(f, o.Add.Size)
			if err != nil {
				t.Fatal(err)
			}
			rgs := pf.Metadata().RowGroups
			if len(rgs) < tt.minRGs {
				t.Errorf("%d row groups, want at least %d", len(rgs), tt.minRGs)
			}
			for _, rg := range rgs {
				if tt.maxRGRows > 0 && rg.NumRows > tt.maxRGRows {
					t.Errorf("row group of %d rows, cap %d", rg.NumRows, tt.maxRGRows)
				}
				for _, c := range rg.Columns {
					if c.MetaData.Codec != tt.codec {
						t.Errorf("column %v codec %v, want %v", c.MetaData.PathInSchema, c.MetaData.Codec, tt.codec)
					}
				}
			}
			if !parquet.EqualNodes(pf.Schema(), mustDataSchema(t, snap)) {
				t.Errorf("file schema\n%v\nis not the data schema\n%v", pf.Schema(), mustDataSchema(t, snap))
			}
			checkPageStatsInColumnIndex(t, f, pf)
		})
	}
}

func mustDataSchema(t *testing.T, snap *delta.Snapshot) *parquet.Schema {
	t.Helper()
	s, err := scan.DataSchema(snap)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOutputsCarryJobTagsAndProvider(t *testing.T) {
	tbl, snap := loadCopy(t, "dv-partitioned-with-checkpoint")
	job := partitionJobs(snap)[0]
	job.Tags = map[string]string{"ZCUBE_ID": "abc"}
	job.ClusteringProvider = "liquid"
	objs := &attempt.Objects{}
	res, err := Rewrite(context.Background(), tbl, snap, job, objs, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer cleanAttempt(context.Background(), objs, tbl)
	a := res.Outputs[0].Add
	if a.Tags["ZCUBE_ID"] != "abc" || a.ClusteringProvider == nil || *a.ClusteringProvider != "liquid" {
		t.Errorf("tags %v provider %v", a.Tags, a.ClusteringProvider)
	}
	job.Tags["ZCUBE_ID"] = "changed"
	if a.Tags["ZCUBE_ID"] != "abc" {
		t.Error("output tags alias the job's map")
	}
	if !strings.HasPrefix(res.Outputs[0].Key, "part=") {
		t.Errorf("key %q is not under the partition directory", res.Outputs[0].Key)
	}
}

// fieldIDs lists "path=id" for every node of a parquet schema.
func fieldIDs(prefix string, n parquet.Node, out []string) []string {
	for _, f := range n.Fields() {
		p := prefix + "/" + f.Name()
		out = append(out, fmt.Sprintf("%s=%d", p, f.ID()))
		if !f.Leaf() {
			out = fieldIDs(p, f, out)
		}
	}
	return out
}

func TestOutputsKeepColumnMappingFieldIDs(t *testing.T) {
	for _, name := range []string{"cm-id", "cm-name", "stats-writing-all-types", "dv-with-columnmapping", "iceberg-compat-v2"} {
		t.Run(name, func(t *testing.T) {
			tbl, dir := copyTable(t, name)
			snap, err := loadLatest(context.Background(), tbl)
			if err != nil {
				t.Fatal(err)
			}
			objs := &attempt.Objects{}
			res, err := Rewrite(context.Background(), tbl, snap, partitionJobs(snap)[0], objs, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			want := fieldIDs("", mustDataSchema(t, snap), nil)
			withID := 0
			for _, s := range want {
				if !strings.HasSuffix(s, "=0") {
					withID++
				}
			}
			if withID == 0 {
				t.Fatalf("data schema of a column-mapped table has no field ids: %v", want)
			}
			f, err := os.Open(filepath.Join(dir, res.Outputs[0].Key))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			pf, err := parquet.OpenFile(f, res.Outputs[0].Add.Size)
			if err != nil {
				t.Fatal(err)
			}
			if got := fieldIDs("", pf.Schema(), nil); !slices.Equal(got, want) {
				t.Errorf("output field ids\n%v\nwant\n%v", got, want)
			}
		})
	}
}

func TestJobTargetFileSizeOverridesTheOption(t *testing.T) {
	tbl, snap := loadCopy(t, "ckpt-v2-json-sidecars-101-files")
	opts := DefaultOptions()
	opts.TargetFileSize = 1 << 30
	outputs := func(target int64) int {
		t.Helper()
		job := &Job{ID: "t", Sources: snap.Files[:6], TargetFileSize: target}
		objs := &attempt.Objects{}
		res, err := Rewrite(context.Background(), tbl, snap, job, objs, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer cleanAttempt(context.Background(), objs, tbl)
		return len(res.Outputs)
	}
	if n := outputs(0); n != 1 {
		t.Fatalf("options' 1 GiB target: %d outputs, want 1", n)
	}
	if n := outputs(1); n != 6 {
		t.Fatalf("job target of 1 byte: %d outputs, want one per source (6)", n)
	}
}

// A last source whose rows are all deleted, after an output that closed full,
// still gets a run in an output that exists (an empty run at its end), so the
// commit can trust the composition and tag the source.
func TestTrailingSourceWithoutLiveRowsLandsInTheLastOutput(t *testing.T) {
	ctx := context.Background()
	tbl, snap := loadCopy(t, "ckpt-v2-json-sidecars-101-files")
	gone := cloneAdd(snap.Files[1])
	n, ok, err := gone.NumRecords()
	if err != nil || !ok || n == 0 {
		t.Fatalf("source %s: numRecords %d, %v, %v", gone.Path, n, ok, err)
	}
	all := roaring64.New()
	all.AddRange(0, uint64(n))
	if gone.DeletionVector, err = delta.InlineDV(all); err != nil {
		t.Fatal(err)
	}
	job := &Job{ID: "j", Sources: []*actions.Add{snap.Files[0], gone}}
	opts := DefaultOptions()
	opts.TargetFileSize = 1 // the first source fills its output
	objs := &attempt.Objects{}
	res, err := Rewrite(ctx, tbl, snap, job, objs, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanAttempt(ctx, objs, tbl)
	if len(res.Outputs) != 1 || len(res.Composition) != 2 {
		t.Fatalf("%d outputs, %d runs; want 1 and 2", len(res.Outputs), len(res.Composition))
	}
	last := res.Composition[1]
	if last.Output != 0 || last.LiveRows != 0 || last.RowOffsetInTarget != res.Outputs[0].NumRecords || last.Target != res.Outputs[0].Add.Path {
		t.Errorf("trailing empty run %+v, want output 0 at row %d (%s)", last, res.Outputs[0].NumRecords, res.Outputs[0].Add.Path)
	}
	deleted := map[string]int64{snap.Files[0].Path: 0, gone.Path: n}
	if err := composition.Check(res.Composition, deleted, []int64{res.Outputs[0].NumRecords}); err != nil {
		t.Errorf("composition.Check: %v", err)
	}
}

// cleanAttempt deletes what an attempt tracked, as the operation owning it
// does when it abandons the attempt.
func cleanAttempt(ctx context.Context, objs *attempt.Objects, tbl *delta.Table) error {
	_, err := objs.Clean(ctx, tbl.Bucket)
	return err
}
