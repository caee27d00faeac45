package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil"
)

// Run is the integration suite body, run once per store. newTable returns
// the URL of a fresh, empty table location on the store; every subtest
// gets its own. The calling test binary must define TestHelperCrashChild
// (see CrashChild).
func Run(t *testing.T, newTable func(t *testing.T) string) {
	t.Run("put-if-absent probe passes", func(t *testing.T) {
		tbl := Open(t, newTable(t))
		if err := tbl.CheckPutIfAbsent(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("concurrent commits have exactly one winner per version", func(t *testing.T) {
		CommitRace(t, newTable(t), 8, 12)
	})
	t.Run("concurrent transactions each commit exactly once", func(t *testing.T) {
		TxnRace(t, newTable(t), 4, 5)
	})
	t.Run("compare-and-swap refuses a stale version", func(t *testing.T) {
		StaleCAS(t, newTable(t))
	})
	t.Run("racing lease acquirers have exactly one holder per round", func(t *testing.T) {
		LeaseRace(t, newTable(t), 5, 6)
	})
	t.Run("a Spark-written table loads", func(t *testing.T) {
		TableLoad(t, newTable(t))
	})
	t.Run("compaction keeps every row", func(t *testing.T) {
		Compaction(t, newTable(t))
	})
	t.Run("compaction reconciles a concurrent DV delete", func(t *testing.T) {
		ReconcileRace(t, newTable(t))
	})
	t.Run("an abandoned compaction leaves the table and its rows untouched", func(t *testing.T) {
		CrashAbandon(t, newTable(t))
	})
	t.Run("a compaction killed before its commit leaves the table valid", func(t *testing.T) {
		HardCrash(t, newTable(t))
	})
}

// Open opens url (creating a local table directory that does not exist yet)
// and closes it at the end of the test.
func Open(t testing.TB, url string) *delta.Table {
	t.Helper()
	tbl, err := delta.CreateTable(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tbl.Close(); err != nil {
			t.Error(err)
		}
	})
	return tbl
}

// OpenN returns n handles on url, each with its own client as separate
// processes would have, except for mem:// whose data lives in one handle.
func OpenN(t testing.TB, url string, n int) []*delta.Table {
	t.Helper()
	out := make([]*delta.Table, n)
	for i := range out {
		if i > 0 && strings.HasPrefix(url, "mem://") {
			out[i] = out[0]
			continue
		}
		out[i] = Open(t, url)
	}
	return out
}

// CommitRace has `writers` handles race to put-if-absent each of
// `versions` commits; exactly one must win each, and the stored commit
// must be the winner's bytes.
func CommitRace(t *testing.T, url string, writers, versions int) {
	ctx := context.Background()
	tbls := OpenN(t, url, writers)
	for v := 0; v < versions; v++ {
		key := delta.CommitKey(int64(v))
		winners, errs := testutil.Race(writers, func(w int) error {
			return tbls[w].Log.PutIfAbsent(ctx, key, raceCommit(v, w))
		}, func(err error) bool { return errors.Is(err, delta.ErrCommitExists) })
		if len(errs) > 0 {
			t.Fatalf("version %d: unexpected errors: %v", v, errors.Join(errs...))
		}
		if len(winners) != 1 {
			t.Fatalf("version %d: %d winners %v, want exactly 1", v, len(winners), winners)
		}
		got, err := tbls[0].Bucket.ReadAll(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(raceCommit(v, winners[0])) {
			t.Fatalf("version %d: stored commit is not the winner's (writer %d)", v, winners[0])
		}
	}
	t.Logf("%d versions, %d writers each: exactly one winner per version", versions, writers)
}

// raceCommit is a valid, writer-unique commit body of a few kilobytes.
func raceCommit(v, w int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"commitInfo":{"operation":"WRITE","txnId":"race-v%d-w%d"}}`+"\n", v, w)
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, `{"txn":{"appId":"race-w%d-%d","version":%d}}`+"\n", w, i, v)
	}
	return []byte(b.String())
}
