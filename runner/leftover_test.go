package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/scheduler"
	"github.com/compactord/compactord/vacuum"
)

// A write killed mid-way (the process died before Close) leaves the
// upload's temp file beside its target; the daemon's next run of the table
// — every operation OpsFor lists, as the scheduler runs them — removes it
// once it is older than the table's retention, and leaves the data alone.
func TestTheNextDaemonRunRemovesTheTempFileOfAKilledWrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := tabletest.NewTable(t, dir, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10))

	// A real upload through the table's bucket, never closed.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := tbl.Bucket.NewWriter(wctx, "part-00000-killed-c000.snappy.parquet", &blob.WriterOptions{ContentType: "application/octet-stream"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("PAR1 half a file")); err != nil {
		t.Fatal(err)
	}
	leftovers, err := filepath.Glob(filepath.Join(dir, "part-00000-killed-c000.snappy.parquet.*.tmp"))
	if err != nil || len(leftovers) != 1 {
		t.Fatalf("the unfinished upload left %v (%v), want one temp file", leftovers, err)
	}

	now := time.Now().Add(8 * 24 * time.Hour) // past the 7-day default retention
	b := &Backend{Tables: NewTables(), Now: func() time.Time { return now }}
	defer b.Tables.Close()
	p := testPolicy("killed")
	p.URL = tbl.URL
	p.SettleWindow = 0
	ops := b.OpsFor(p)
	for _, op := range ops {
		rep, err := b.Run(ctx, scheduler.RunRequest[policies.Policy]{Table: "killed", Op: op, Policy: p})
		if err != nil {
			t.Fatalf("operation %s: %v", op, err)
		}
		// The sweep commits nothing; its report says what it deleted.
		if want := "1 temp leftover of killed writes deleted (16 B)"; op == vacuum.Name && (len(rep.Done) != 1 || rep.Done[0] != want) {
			t.Errorf("the sweep's report: done %q, want %q", rep.Done, want)
		}
	}
	if _, err := os.Stat(leftovers[0]); !os.IsNotExist(err) {
		t.Fatalf("after a run of %s the killed write's temp file is still there (%v)", strings.Join(ops, ", "), err)
	}
	tabletest.WantIDs(t, tbl, tabletest.IDSet(tabletest.IDRange(0, 20)))
}
