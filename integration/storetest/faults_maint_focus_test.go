package storetest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil/faultproxy"
	"github.com/compactord/compactord/internal/testutil/stores"
	"github.com/compactord/compactord/logcleanup"
	"github.com/compactord/compactord/objstore"
	"github.com/compactord/compactord/vacuum"
)

// smallPages starts a proxy in front of the in-process S3 fake (which
// checks no signature) that caps every listing at two keys a page, so
// that a table of a few dozen objects lists in many pages.
func smallPages(t *testing.T, f *stores.FakeS3) string {
	t.Helper()
	target, err := url.Parse(f.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isList(r) {
			q := r.URL.Query()
			q.Set("max-keys", "2")
			r.URL.RawQuery = q.Encode()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// isList reports whether r is a LIST of the bucket.
func isList(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.Trim(r.URL.Path, "/") == stores.Bucket
}

// laterPages matches the LIST requests for a page after the first (those
// carrying a continuation token or marker) whose prefix ends in suffix.
func laterPages(suffix string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		q := r.URL.Query()
		return isList(r) && (q.Get("continuation-token") != "" || q.Get("marker") != "") && strings.HasSuffix(q.Get("prefix"), suffix)
	}
}

// allOf returns keys, in one slice.
func allOf(keys ...[]string) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k...)
	}
	return out
}

func TestAVacuumThatLosesAListPageDeletesNothing(t *testing.T) {
	for _, tc := range []struct {
		name, prefix string
		mode         vacuum.Mode
	}{
		{"full, a page of the root", "lost-page/", vacuum.Full},
		{"full, a page of a subdirectory", "/sub/", vacuum.Full},
		{"full, a page of the log", "/_delta_log/", vacuum.Full},
		{"lite, a page of the log", "/_delta_log/", vacuum.Lite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			stores.FakeS3Credentials(t)
			f := stores.NewFakeS3(t, stores.FakeS3Options{})
			pages := smallPages(t, f)
			direct := stores.Open(t, f.URL("lost-page"))
			mt := buildMaintTable(t, direct.URL)
			// More orphans in the subdirectory, so that it lists in pages.
			for i := 0; i < 4; i++ {
				k := fmt.Sprintf("sub/orphan-%d.parquet", i)
				if err := direct.Bucket.WriteAll(ctx, k, parquetBytes(t, []int64{int64(i)}), nil); err != nil {
					t.Fatal(err)
				}
				mt.orphans = append(mt.orphans, k)
			}
			// Every attempt at a later page fails: the listing cannot end.
			p := faultproxy.New(t, pages, faultproxy.Options{Rate: 1, Kinds: []faultproxy.Kind{faultproxy.InternalError},
				Match: laterPages(tc.prefix)})
			faulty := stores.Open(t, stores.S3URL(p.URL, stores.Bucket, "lost-page"))
			rctx := objstore.WithBudget(ctx, objstore.NewBudget(objstore.DefaultRunBudget))
			_, err := vacuum.Run(rctx, faulty, vacuum.Options{Mode: tc.mode, Now: func() time.Time { return mt.built.Add(maintVacuumAt) }})
			if _, faults := p.Stats(); faults[faultproxy.InternalError] == 0 {
				t.Fatal("no page was lost: the test proves nothing")
			}
			if err == nil {
				t.Fatal("a vacuum whose listing lost a page succeeded")
			}
			if gone := missingKeys(ctx, direct, allOf(mt.keep, mt.expired, mt.orphans)); len(gone) > 0 {
				t.Fatalf("a vacuum whose listing lost a page deleted %v (%v)", gone, err)
			}
			t.Logf("failed as it must, nothing deleted: %v", err)

			// The same listing in pages of two keys, with no fault, deletes
			// what it must: the pages are really many.
			p.SetOptions(faultproxy.Options{})
			if _, err := vacuum.Run(rctx, faulty, vacuum.Options{Mode: tc.mode, Now: func() time.Time { return mt.built.Add(maintVacuumAt) }}); err != nil {
				t.Fatal(err)
			}
			if left := presentKeys(ctx, direct, mt.expired); len(left) > 0 {
				t.Fatalf("vacuum in small pages left %v", left)
			}
			if gone := missingKeys(ctx, direct, mt.keep); len(gone) > 0 {
				t.Fatalf("vacuum in small pages deleted %v", gone)
			}
		})
	}
}

func TestALogCleanupWhoseCheckpointReadFailedDeletesNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		match func(*http.Request) bool
	}{
		{"the newest checkpoint, the boundary", func(r *http.Request) bool {
			return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, logpath.CheckpointKey(maintBoundary))
		}},
		{"_last_checkpoint", func(r *http.Request) bool {
			return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/_last_checkpoint")
		}},
		{"a later page of the log listing", laterPages("/_delta_log/")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			stores.FakeS3Credentials(t)
			f := stores.NewFakeS3(t, stores.FakeS3Options{})
			direct := stores.Open(t, f.URL("cp-read"))
			mt := buildMaintTable(t, direct.URL)
			p := faultproxy.New(t, smallPages(t, f), faultproxy.Options{Rate: 1,
				Kinds: []faultproxy.Kind{faultproxy.InternalError, faultproxy.CutBody, faultproxy.ResetBeforeResponse}, Match: tc.match})
			faulty := stores.Open(t, stores.S3URL(p.URL, stores.Bucket, "cp-read"))
			rctx := objstore.WithBudget(ctx, objstore.NewBudget(objstore.DefaultRunBudget))
			opts := logcleanup.Options{Now: func() time.Time { return mt.built.Add(maintCleanupAt) }}
			res, err := logcleanup.Cleanup(rctx, faulty, opts)
			if _, faults := p.Stats(); len(faults) == 0 {
				t.Fatal("no read failed: the test proves nothing")
			}
			if gone := missingKeys(ctx, direct, allOf(mt.logBelow, mt.logKept, mt.keep)); len(gone) > 0 {
				t.Fatalf("a log cleanup whose read of %s failed deleted %v (err %v)", tc.name, gone, err)
			}
			if err == nil && (res == nil || res.Skipped == "") {
				t.Fatalf("a log cleanup whose read of %s failed neither failed nor skipped: %+v", tc.name, res)
			}
			t.Logf("deleted nothing: err %v, skipped %q", err, res.Skipped)

			p.SetOptions(faultproxy.Options{})
			if _, err := logcleanup.Cleanup(rctx, faulty, opts); err != nil {
				t.Fatal(err)
			}
			if left := presentKeys(ctx, direct, mt.logBelow); len(left) > 0 {
				t.Fatalf("log cleanup without faults left %v", left)
			}
		})
	}
}
