package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/testutil/stores"

	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/delta/logstore"
	"github.com/compactord/compactord/internal/testutil"
)

// Run is the integration suite body, run once per store. newTable returns
// the URL of a fresh, empty table location on the store; every subtest
// gets its own. The calling test binary must define TestHelperCrashChild
// (see CrashChild).
func Run(t *testing.T, newTable func(t *testing.T) string) {
	t.Run("put-if-absent probe passes", func(t *testing.T) {
		tbl := stores.Open(t, newTable(t))
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

// CommitRace has `writers` handles race to put-if-absent each of
// `versions` commits; exactly one must win each, and the stored commit
// must be the winner's bytes.
func CommitRace(t *testing.T, url string, writers, versions int) {
	ctx := context.Background()
	tbls := stores.OpenN(t, url, writers)
	for v := 0; v < versions; v++ {
		key := logpath.CommitKey(int64(v))
		winners, errs := testutil.Race(writers, func(w int) error {
			return tbls[w].Log.PutIfAbsent(ctx, key, raceCommit(v, w))
		}, func(err error) bool { return errors.Is(err, logstore.ErrCommitExists) })
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

// TableLoad copies a Spark-written table (DVs, partitions, a classic
// checkpoint) into the store and checks the snapshot against the known
// answers and, row by row, against the same table read from local disk.
func TableLoad(t *testing.T, url string) {
	const name = "dv-partitioned-with-checkpoint"
	tbl := stores.Open(t, url)
	src := testutil.DeltaTable(t, name)
	stores.CopyTable(t, src, tbl)
	snap, rows := stores.LiveRows(t, tbl)
	want, ok := testutil.ExpectedTables(t)[name]
	if !ok {
		t.Fatalf("expected.json has no entry %q", name)
	}
	if snap.Version != want.Version || len(snap.Files) != want.LiveFiles || int64(rows.Total()) != want.LiveRows {
		t.Fatalf("%s on %s: version %d, %d files, %d rows; want %d, %d, %d", name, url,
			snap.Version, len(snap.Files), rows.Total(), want.Version, want.LiveFiles, want.LiveRows)
	}
	local := stores.Open(t, src)
	_, localRows := stores.LiveRows(t, local)
	if lost, extra := rows.Diff(localRows); len(lost)+len(extra) > 0 {
		t.Fatalf("rows read from %s differ from local disk: lost %v, extra %v", url, lost, extra)
	}
}
