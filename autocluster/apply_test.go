package autocluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/compactord/compactord/autocluster"
	"github.com/compactord/compactord/clusteradvise"
	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

func TestTheClusteringDomainHasTheShapeDatabricksWrites(t *testing.T) {
	ctx := context.Background()
	// The DBR-written liquid table's checkpoint.
	tbl := tabletest.Open(t, "file://"+testutil.DeltaTable(t, "ckpt-only-domain-metadata-clustering-rowtracking"))
	snap, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	dbr := snap.Domains[autocluster.ClusteringDomain].Configuration
	ours, err := autocluster.DomainConfiguration([][]string{{"department"}})
	if err != nil {
		t.Fatal(err)
	}
	if ours != dbr {
		t.Fatalf("our configuration %s, Databricks' %s", ours, dbr)
	}
}

func TestApplySetsTheKeyAddingTheFeaturesAndInspectReadsItBack(t *testing.T) {
	ctx := context.Background()
	tbl := newKeyTable(t, 2, 10, []string{"appendOnly"})
	snap, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	v, err := autocluster.Apply(ctx, tbl, snap, []string{"x", "y"}, commit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	after, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	if after.Version != v {
		t.Fatalf("version %d, committed %d", after.Version, v)
	}
	key, err := clusteradvise.CurrentKey(after)
	if err != nil || strings.Join(key, ",") != "x,y" {
		t.Fatalf("key %v (%v), want x,y", key, err)
	}
	if got := after.Domains[autocluster.ClusteringDomain].Configuration; got != `{"clusteringColumns":[["x"],["y"]],"domainName":"delta.clustering"}` {
		t.Fatalf("domain %s", got)
	}
	wf := strings.Join(after.Protocol.WriterFeatures, ",")
	if wf != "appendOnly,domainMetadata,clustering" || after.Protocol.MinWriterVersion != 7 {
		t.Fatalf("protocol %+v", after.Protocol)
	}
	ci := tabletest.Committed(t, tbl, v)[0].CommitInfo
	if ci.Operation() != autocluster.OperationClusterBy || !strings.Contains(string(ci["operationParameters"]), `"newClusteringColumns":"[\"x\",\"y\"]"`) {
		t.Fatalf("commitInfo %s", ci["operationParameters"])
	}
	// A second change keeps the protocol and writes only the domain.
	v2, err := autocluster.Apply(ctx, tbl, after, []string{"y"}, commit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	acts := tabletest.Committed(t, tbl, v2)
	for _, a := range acts {
		if a.Protocol != nil {
			t.Fatalf("second change rewrote the protocol")
		}
	}
	if !strings.Contains(string(acts[0].CommitInfo["operationParameters"]), `"oldClusteringColumns":"[\"x\",\"y\"]"`) {
		t.Fatalf("commitInfo %s", acts[0].CommitInfo["operationParameters"])
	}
}

func TestApplyRefusesWhereTheProtocolDoesNotAllowTheKey(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, want string
		tbl        func() *delta.Table
		key        []string
	}{
		{"legacy protocol", "writer version 2", func() *delta.Table { return newKeyTable(t, 1, 5, nil) }, []string{"x"}},
		{"preview liquid", "liquid", func() *delta.Table {
			return tabletest.CopyFixture(t, "liquid-legacy-rowtracking")
		}, []string{"id"}},
		{"five columns", "over the 4", func() *delta.Table { return newKeyTable(t, 1, 5, []string{}) }, []string{"x", "y", "v", "x", "y"}},
		{"no such column", "column z", func() *delta.Table { return newKeyTable(t, 1, 5, []string{}) }, []string{"z"}},
		{"no statistics", "no statistics", func() *delta.Table {
			tbl := newKeyTable(t, 1, 5, []string{})
			tabletest.PutCommit(t, tbl, 1, []string{`{"commitInfo":{"operation":"SET TBLPROPERTIES"}}`,
				fmt.Sprintf(`{"metaData":{"id":"t","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":[],"configuration":{"delta.dataSkippingNumIndexedCols":"2"},"createdTime":1}}`, tabletest.XYSchema)})
			return tbl
		}, []string{"v"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl := c.tbl()
			snap, err := delta.LoadSnapshot(ctx, tbl, -1)
			if err != nil {
				t.Fatal(err)
			}
			_, err = autocluster.Apply(ctx, tbl, snap, c.key, commit.Options{})
			if !errors.Is(err, autocluster.ErrRefused) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want a refusal naming %q", err, c.want)
			}
		})
	}
}

func TestApplyLosesToAConcurrentChangeOfTheClusteringDomain(t *testing.T) {
	ctx := context.Background()
	tbl := newKeyTable(t, 1, 5, []string{"domainMetadata", "clustering"})
	snap, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	once := false
	_, err = autocluster.Apply(ctx, tbl, snap, []string{"x"}, commit.Options{BeforePut: func(ctx context.Context, v int64) error {
		if !once {
			once = true
			tabletest.PutCommit(t, tbl, v, []string{`{"commitInfo":{"operation":"CLUSTER BY"}}`, `{"domainMetadata":{"domain":"delta.clustering","configuration":"{\"clusteringColumns\":[[\"y\"]]}","removed":false}}`})
		}
		return nil
	}})
	if !errors.Is(err, commit.ErrConflict) {
		t.Fatalf("got %v, want a conflict", err)
	}
}

// newKeyTable writes a real table of files files of rowsPerFile rows
// (x ascending over the files, y the row's index), committed as version 0
// with a protocol of the given writer features (nil: writer version 2).
func newKeyTable(t *testing.T, files, rowsPerFile int, writerFeatures []string) *delta.Table {
	t.Helper()
	return tabletest.NewXYTable(t, files, rowsPerFile, writerFeatures, func(f, i int) (int64, int64) {
		return int64(f*rowsPerFile + i), int64(i)
	})
}
