package retention

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/tableop"
	"github.com/compactord/compactord/writer"
)

func TestExpireRefusesColumnsThatHoldNoTimeNamingTheirType(t *testing.T) {
	for _, tc := range []struct{ col, typ string }{
		{"as_string", "string"}, {"as_double", "double"}, {"as_big_decimal", "decimal"}, {"as_boolean", "boolean"},
	} {
		t.Run(tc.col, func(t *testing.T) {
			tbl := tabletest.CopyFixture(t, "part-values-all-types")
			_, err := Expire(context.Background(), tbl, Options{Column: tc.col, Before: "2020-01-01", Logger: tabletest.Logger(t)})
			if err == nil {
				t.Fatalf("expire by %s column %s was accepted", tc.typ, tc.col)
			}
			for _, want := range []string{tc.col, tc.typ, "date, timestamp or timestamp_ntz"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if v := tabletest.Latest(t, tbl).Version; v != 0 {
				t.Fatalf("a refused expire committed version %d", v)
			}
		})
	}
}

func TestExpireByAnIntegerColumnNeedsTheEpochUnitItHolds(t *testing.T) {
	tbl := tabletest.CopyFixture(t, "part-values-all-types")
	_, err := Expire(context.Background(), tbl, Options{Column: "as_long", Before: "1", Logger: tabletest.Logger(t)})
	if err == nil || !strings.Contains(err.Error(), "long") || !strings.Contains(err.Error(), "epoch unit") {
		t.Fatalf("integer column without a unit: %v, want a refusal naming the type and the epoch unit", err)
	}
	if _, err := Expire(context.Background(), tbl, Options{Column: "as_long", EpochUnit: "fortnights", Before: "1"}); err == nil || !strings.Contains(err.Error(), "fortnights") {
		t.Fatalf("unknown unit: %v", err)
	}
	if _, err := Expire(context.Background(), tbl, Options{Column: "as_date", EpochUnit: "days", Before: "2021-01-01"}); err == nil || !strings.Contains(err.Error(), "only to integer") {
		t.Fatalf("a unit on a date column: %v", err)
	}
	// as_long is 0 and 1 (and null): day 0 lies wholly before 1970-01-02
	// 00:00, day 1 does not.
	res, err := Expire(context.Background(), tbl, Options{Column: "as_long", EpochUnit: "days", Before: "1970-01-02", Logger: tabletest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesRemoved != 1 || res.RowsDeleted != 1 || res.Predicate != "`as_long` < 1" {
		t.Fatalf("%+v: want the as_long=0 partition removed (as_long < 1)", res)
	}
	// In seconds the same timestamp is 86400, a cutoff in the middle of a
	// second rounds down.
	tbl = tabletest.CopyFixture(t, "part-values-all-types")
	res, err = Expire(context.Background(), tbl, Options{Column: "as_long", EpochUnit: "seconds", Before: "1970-01-01T00:00:01.5Z", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Predicate != "`as_long` < 1" || res.RowsDeleted != 1 {
		t.Fatalf("%+v: want as_long < 1 (one row)", res)
	}
}

func TestABadCutoffSaysWhichFormatsAreAccepted(t *testing.T) {
	tbl := tabletest.CopyFixture(t, "part-values-all-types")
	for _, tc := range []struct {
		col, unit, before string
		want              []string
	}{
		{"as_date", "", "notadate", []string{`"notadate"`, "date column as_date", "YYYY-MM-DD"}},
		{"as_date", "", "2021-13-45", []string{`"2021-13-45"`, "YYYY-MM-DD"}},
		{"as_timestamp", "", "notadate", []string{"timestamp column as_timestamp", "YYYY-MM-DD HH:MM:SS", "RFC 3339"}},
		{"as_long", "seconds", "2021-13-45", []string{"whole number of seconds", "YYYY-MM-DD"}},
	} {
		_, err := Expire(context.Background(), tbl, Options{Column: tc.col, EpochUnit: tc.unit, Before: tc.before})
		if err == nil {
			t.Fatalf("%s < %q accepted", tc.col, tc.before)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s < %q: error %q does not say %q", tc.col, tc.before, err, w)
			}
		}
		if strings.Contains(err.Error(), "parsing time") || strings.Contains(err.Error(), "out of range") {
			t.Errorf("%s < %q: error %q is Go's parse error, not the accepted formats", tc.col, tc.before, err)
		}
	}
}

// countFiles is the number of regular files under dir.
func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAnExpireDryRunReportsWhatItWouldDeletePerPartitionAndWritesNothing(t *testing.T) {
	ctx := context.Background()
	t.Run("deletion vectors", func(t *testing.T) {
		url := fileURL(t)
		tbl := tabletest.NewTable(t, url, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10), tabletest.IDRange(20, 10))
		dir := strings.TrimPrefix(url, "file://")
		before := countFiles(t, dir)
		opts := Options{Column: "id", EpochUnit: "days", Before: "15", DryRun: true, Logger: tabletest.Logger(t)}
		dry, err := Expire(ctx, tbl, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !dry.DryRun || dry.CommittedVersion != -1 || dry.ReadVersion != 0 || dry.RowsDeleted != 15 || dry.FilesRemoved != 1 || dry.FilesWithNewDV != 1 {
			t.Fatalf("dry run %+v: want 15 rows, 1 file removed, 1 new DV at version 0, nothing committed", dry)
		}
		if len(dry.Partitions) != 1 || dry.Partitions[0] != (PartitionDeletes{Partition: "", Rows: 15, FilesRemoved: 1, FilesWithNewDV: 1}) {
			t.Fatalf("partitions %+v", dry.Partitions)
		}
		if after := countFiles(t, dir); after != before {
			t.Fatalf("a dry run wrote %d files", after-before)
		}
		opts.DryRun = false
		real, err := Expire(ctx, tbl, opts)
		if err != nil {
			t.Fatal(err)
		}
		if real.RowsDeleted != dry.RowsDeleted || real.FilesRemoved != dry.FilesRemoved || real.FilesWithNewDV != dry.FilesWithNewDV {
			t.Fatalf("the delete did %+v, its dry run said %+v", real, dry)
		}
	})
	t.Run("copy-on-write", func(t *testing.T) {
		url := fileURL(t)
		tbl := tabletest.NewTable(t, url, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10))
		tabletest.DisableDVs(t, tbl)
		dir := strings.TrimPrefix(url, "file://")
		before := countFiles(t, dir)
		dry, err := Expire(ctx, tbl, Options{Column: "id", EpochUnit: "days", Before: "5", DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if dry.RowsDeleted != 5 || len(dry.Partitions) != 1 || dry.Partitions[0].FilesRewritten != 1 {
			t.Fatalf("dry run %+v %+v: want one file rewritten without 5 rows", dry, dry.Partitions)
		}
		if after := countFiles(t, dir); after != before {
			t.Fatalf("a copy-on-write dry run wrote %d files", after-before)
		}
	})
	t.Run("partitioned", func(t *testing.T) {
		tbl := tabletest.CopyFixture(t, "part-values-all-types")
		dry, err := Expire(ctx, tbl, Options{Column: "as_date", Before: "2021-09-09", DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if dry.RowsDeleted != 2 || len(dry.Partitions) != 2 || !strings.HasPrefix(dry.Partitions[0].Partition, "as_int=0/as_long=0/") || dry.Partitions[1].Rows != 1 {
			t.Fatalf("dry run %+v: want two partitions of one row each", dry)
		}
		if v := tabletest.Latest(t, tbl).Version; v != 0 {
			t.Fatalf("a dry run committed version %d", v)
		}
	})
}

func TestTheRetentionOperationTakesThePolicysEpochUnit(t *testing.T) {
	p := policies.DefaultPolicy()
	p.Name, p.URL = "t", "mem://t"
	p.Retention = &policies.Retention{Column: "ts", OlderThan: 24 * time.Hour, EpochUnit: "seconds"}
	op, ok, err := Factory(commit.Options{}, writer.Options{}, 7*time.Minute).New(p, tableop.Env{})
	if err != nil || !ok {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	if got := op.(*Op).Options.EpochUnit; got != "seconds" {
		t.Errorf("epoch unit %q, want seconds", got)
	}
	if got := op.(*Op).Options.AttemptStaleAfter; got != 7*time.Minute {
		t.Errorf("attempt staleness %s, want the factory's 7m", got)
	}
}
