package storetest

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/testutil/stores"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/testutil"
)

// maxGETsPerSource bounds the object GETs a compaction makes per source
// file, so a regression to small buffered reads (thousands of GETs per
// file) shows up here as a count, not a timing. Small files are fetched
// whole in one GET (pq.ObjectReaderAt); measured: 1 per file. Before
// that reader it was 6-7 (magic, footer length, footer, then one GET per
// column chunk).
const maxGETsPerSource = 2

func TestGETsPerCompactedFile(t *testing.T) {
	stores.FakeS3Credentials(t)
	for _, name := range []string{compactionTable, "dv-large-multi-dv-per-file"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			f := stores.NewFakeS3(t, stores.FakeS3Options{})
			prefix := "gets/" + name
			tbl := stores.Open(t, f.URL(prefix))
			stores.CopyTable(t, testutil.DeltaTable(t, name), tbl)
			before, rowsBefore := stores.LiveRows(t, tbl)
			getsBefore := f.GETs()
			res, err := compaction.Compact(ctx, tbl, runOptions())
			if err != nil {
				t.Fatal(err)
			}
			if res.CommittedVersion < 0 {
				t.Fatalf("nothing compacted in %s", name)
			}
			getsAfter := f.GETs()
			acts, err := delta.ReadCommit(ctx, tbl, res.CommittedVersion)
			if err != nil {
				t.Fatal(err)
			}
			var sources []string
			for _, a := range acts {
				if a.Remove != nil {
					key, err := actions.DecodePath(a.Remove.Path)
					if err != nil {
						t.Fatal(err)
					}
					sources = append(sources, key)
				}
			}
			if len(sources) == 0 {
				t.Fatalf("commit v%d removed nothing", res.CommittedVersion)
			}
			sort.Strings(sources)
			total, worst := 0, 0
			var dvGETs int
			for _, p := range sources {
				key := prefix + "/" + p
				n := getsAfter[key] - getsBefore[key]
				total += n
				if n > worst {
					t.Logf("GETs of %s: %q", p, f.Ranges(key)[getsBefore[key]:])
				}
				worst = max(worst, n)
			}
			for k, n := range getsAfter {
				if strings.Contains(k, "deletion_vector_") {
					dvGETs += n - getsBefore[k]
				}
			}
			t.Logf("%s: %d source files (%d bytes read) compacted into %d: %d data GETs, %.2f per file, max %d; %d DV-file GETs",
				name, len(sources), res.BytesRead, res.FilesAdded, total, float64(total)/float64(len(sources)), worst, dvGETs)
			if worst > maxGETsPerSource {
				t.Errorf("a source file took %d GETs, want at most %d", worst, maxGETsPerSource)
			}
			_, rowsAfter := stores.LiveRows(t, tbl)
			if lost, extra := rowsAfter.Diff(rowsBefore); len(lost)+len(extra) > 0 {
				t.Fatalf("v%d: lost %d, extra %d rows", before.Version, len(lost), len(extra))
			}
		})
	}
}
