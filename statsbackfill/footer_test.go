package statsbackfill

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// TestACorruptFooterIsQuarantinedNotRetried damages the thrift footer of a
// real data file (same size, magic bytes intact): reading its row count
// must fail with a CorruptFileError naming the file, class Quarantine, so
// that the file is set aside instead of being retried on every run.
func TestACorruptFooterIsQuarantinedNotRetried(t *testing.T) {
	ctx := context.Background()
	tbl := tabletest.NewTable(t, "file://"+t.TempDir(), tabletest.IDRange(0, 100))
	snap := tabletest.Latest(t, tbl)
	if len(snap.Files) != 1 {
		t.Fatalf("%d files", len(snap.Files))
	}
	a := snap.Files[0]
	key, err := a.Key()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := FooterRows(ctx, tbl, a); err != nil || n != 100 {
		t.Fatalf("intact footer: %d rows, %v", n, err)
	}
	data, err := tbl.Bucket.ReadAll(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	n := len(data)
	footer := int(binary.LittleEndian.Uint32(data[n-8 : n-4]))
	for i := n - 8 - footer; i < n-8; i++ {
		data[i] = 0xff
	}
	if err := tbl.Bucket.WriteAll(ctx, key, data, nil); err != nil {
		t.Fatal(err)
	}
	_, err = FooterRows(ctx, tbl, a)
	var cf *failure.CorruptFileError
	if !errors.As(err, &cf) || cf.Kind != failure.DataFile || cf.Path != a.Path {
		t.Fatalf("err = %v, want a CorruptFileError naming %s", err, a.Path)
	}
	if c := failure.Of(err); c != failure.Quarantine {
		t.Fatalf("class %v, want Quarantine: %v", c, err)
	}
}
