package vacuum

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/policies"
)

// The daemon's full vacuum of a copy of a Spark-written table, past the
// retention of the files the copy brought along: its report says what it
// deleted beside its VACUUM commits.
func TestTheDaemonsVacuumSaysWhatItDeleted(t *testing.T) {
	ctx := context.Background()
	root := testutil.CopyDeltaTable(t, "small-files-merge-update-delete")
	tbl, err := delta.OpenTable(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	later := time.Now().Add(8 * 24 * time.Hour)
	op := &Op{Policy: &policies.Vacuum{Mode: policies.VacuumFull, Interval: time.Hour}, Now: func() time.Time { return later }}
	out, err := op.Run(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Committed || len(out.Done) != 1 || !strings.HasPrefix(out.Done[0], "full vacuum deleted ") || !strings.Contains(out.Done[0], " files (") {
		t.Fatalf("committed %v, done %q", out.Committed, out.Done)
	}
	if n := out.Counts[CountFilesDeleted]; n == 0 || !strings.HasPrefix(out.Done[0], "full vacuum deleted "+itoa(n)+" files (") {
		t.Errorf("done %q, counts %v", out.Done, out.Counts)
	}
	// Within the interval: nothing runs, nothing is said.
	if out, err = op.Run(ctx, tbl); err != nil || len(out.Done) != 0 {
		t.Fatalf("second run: %v, done %q", err, out.Done)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
