package delta

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/testutil"
)

// appendCommit writes lines as the next commit (version v) of the local
// table at dir.
func appendCommit(t *testing.T, dir string, v int64, lines ...string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(logpath.CommitKey(v))), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoadRefusesImpossibleNumbers appends to a copy of a real DV table a
// commit whose add, remove or deletion vector carries a number no writer
// makes: the snapshot does not load, and the error is a corrupt commit
// naming the commit file and the data file. A full load and an Advance
// from the previous snapshot agree.
func TestLoadRefusesImpossibleNumbers(t *testing.T) {
	const stats10 = `"stats":"{\"numRecords\":10,\"tightBounds\":false}"`
	dv := func(fields string) string {
		return `"deletionVector":{"storageType":"u","pathOrInlineDv":"vBn[lx{q8@P<9BNH/isA",` + fields + `}`
	}
	for _, c := range []struct {
		name, line, want string
	}{
		{"add size -2^63", `{"add":{"path":"bad.parquet","partitionValues":{},"size":-9223372036854775808,"modificationTime":1,"dataChange":true}}`, "negative size"},
		{"add size -1", `{"add":{"path":"bad.parquet","partitionValues":{},"size":-1,"modificationTime":1,"dataChange":true,` + stats10 + `}}`, "negative size"},
		{"negative numRecords", `{"add":{"path":"bad.parquet","partitionValues":{},"size":10,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":-5}"}}`, "negative numRecords"},
		{"cardinality above numRecords", `{"add":{"path":"bad.parquet","partitionValues":{},"size":10,"modificationTime":1,"dataChange":true,` + stats10 + `,` + dv(`"offset":1,"sizeInBytes":36,"cardinality":102`) + `}}`, "deletes 102 rows but the file has 10"},
		{"negative cardinality", `{"add":{"path":"bad.parquet","partitionValues":{},"size":10,"modificationTime":1,"dataChange":true,` + dv(`"offset":1,"sizeInBytes":36,"cardinality":-1`) + `}}`, "negative cardinality"},
		{"negative sizeInBytes", `{"add":{"path":"bad.parquet","partitionValues":{},"size":10,"modificationTime":1,"dataChange":true,` + dv(`"offset":1,"sizeInBytes":-36,"cardinality":2`) + `}}`, "negative sizeInBytes"},
		{"negative offset", `{"add":{"path":"bad.parquet","partitionValues":{},"size":10,"modificationTime":1,"dataChange":true,` + dv(`"offset":-7,"sizeInBytes":36,"cardinality":2`) + `}}`, "negative offset"},
		{"remove size -1", `{"remove":{"path":"gone.parquet","deletionTimestamp":1,"dataChange":true,"size":-1}}`, "negative size"},
		{"cdc size -1", `{"cdc":{"path":"_change_data/c.parquet","partitionValues":{},"size":-1,"dataChange":false}}`, "negative size"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			dir := testutil.CopyDeltaTable(t, "dv-small")
			tbl, err := OpenTable(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Close()
			prev, err := LoadSnapshot(ctx, tbl, -1)
			if err != nil {
				t.Fatal(err)
			}
			appendCommit(t, dir, 2, `{"commitInfo":{"timestamp":1,"operation":"WRITE"}}`, c.line)
			key := logpath.CommitKey(2)
			_, loadErr := LoadSnapshot(ctx, tbl, -1)
			_, _, advErr := Advance(ctx, tbl, prev, 10)
			for how, err := range map[string]error{"load": loadErr, "advance": advErr} {
				var cf *failure.CorruptFileError
				if !errors.As(err, &cf) || cf.Kind != failure.Commit || cf.Path != key {
					t.Fatalf("%s: %v, want a corrupt commit %s", how, err, key)
				}
				if !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: %v, want %q", how, err, c.want)
				}
				if p := strings.SplitN(strings.SplitN(c.line, `"path":"`, 2)[1], `"`, 2)[0]; !strings.Contains(err.Error(), p) {
					t.Errorf("%s: %v does not name %s", how, err, p)
				}
				if failure.Of(err) != failure.Halt {
					t.Errorf("%s: class %v, want halt", how, failure.Of(err))
				}
			}
		})
	}
}
