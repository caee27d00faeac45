package storetest

import (
	"context"
	"net/http"
	"testing"

	"github.com/compactord/compactord/delta/dv"
	"github.com/compactord/compactord/internal/testutil/stores"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/faultproxy"
)

// fakeS3Behind starts the in-process S3 fake with a fault proxy in front.
func fakeS3Behind(t *testing.T, opts faultproxy.Options) (*stores.FakeS3, *faultproxy.Proxy) {
	t.Helper()
	stores.FakeS3Credentials(t)
	f := stores.NewFakeS3(t, stores.FakeS3Options{})
	return f, faultproxy.New(t, f.Endpoint, opts)
}

func TestACutBodyIsReadAgainNotAFailedRun(t *testing.T) {
	// Every object's first GET (commits, checkpoint, data files, DVs)
	// delivers half its body and closes the connection.
	f, p := fakeS3Behind(t, faultproxy.Options{Rate: 1, Kinds: []faultproxy.Kind{faultproxy.CutBody},
		Match: faultproxy.FirstPerPath(http.MethodGet, "/")})
	direct := stores.Open(t, f.URL("cut"))
	stores.CopyTable(t, testutil.DeltaTable(t, compactionTable), direct)
	_, rowsBefore := stores.LiveRows(t, direct)

	faulty := stores.Open(t, stores.S3URL(p.URL, stores.Bucket, "cut"))
	res, err := compaction.Compact(context.Background(), faulty, runOptions())
	if err != nil {
		t.Fatalf("compaction with every first GET cut: %v", err)
	}
	if res.CommittedVersion < 0 {
		t.Fatal("nothing committed")
	}
	_, rowsAfter := stores.LiveRows(t, direct)
	if lost, extra := rowsAfter.Diff(rowsBefore); len(lost)+len(extra) > 0 {
		t.Fatalf("rows changed: lost %v, extra %v", lost, extra)
	}
	_, faults := p.Stats()
	if faults[faultproxy.CutBody] == 0 {
		t.Fatal("no body was cut: the test proves nothing")
	}
	t.Logf("%d bodies cut, compaction committed v%d with every row", faults[faultproxy.CutBody], res.CommittedVersion)
}

func TestALostResponseToAConditionalCreateIsSettledByReadingBack(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		match string // path part of the PUT whose first response is lost
		run   func(t *testing.T, tbl *delta.Table) string
	}{
		{
			name:  "deletion vector file",
			match: "deletion_vector_",
			run: func(t *testing.T, tbl *delta.Table) string {
				bm := roaring64.BitmapOf(1, 5, 9)
				dvs, err := delta.WriteDV(ctx, tbl, "", []*roaring64.Bitmap{bm})
				if err != nil {
					t.Fatalf("WriteDV after a lost response: %v", err)
				}
				got, err := delta.ReadDV(ctx, tbl, dvs[0])
				if err != nil || !got.Equals(bm) {
					t.Fatalf("read back %v, %v; want %v", got, err, bm)
				}
				key, err := dv.DVFileKey(dvs[0].PathOrInlineDv)
				if err != nil {
					t.Fatal(err)
				}
				return key
			},
		},
		{
			name:  "put-if-absent probe",
			match: "_compactord/probe-",
			run: func(t *testing.T, tbl *delta.Table) string {
				if err := tbl.CheckPutIfAbsent(ctx); err != nil {
					t.Fatalf("probe after a lost response: %v", err)
				}
				return ""
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, p := fakeS3Behind(t, faultproxy.Options{Rate: 1, Kinds: []faultproxy.Kind{faultproxy.LostResponse},
				Match: faultproxy.FirstPerPath(http.MethodPut, tc.match)})
			tbl := stores.Open(t, stores.S3URL(p.URL, stores.Bucket, "lost"))
			key := tc.run(t, tbl)
			if _, faults := p.Stats(); faults[faultproxy.LostResponse] != 1 {
				t.Fatalf("faults %v, want one lost response", faults)
			}
			direct := stores.Open(t, f.URL("lost"))
			objs := stores.DataObjects(t, direct)
			if key == "" && len(objs) != 0 || key != "" && (len(objs) != 1 || objs[0] != key) {
				t.Fatalf("objects left %v, want only %q", objs, key)
			}
		})
	}
}
