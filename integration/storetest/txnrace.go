package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/testutil/stores"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/testutil"
)

// setTxn is a SET TRANSACTION of appID at version, a blind append that
// conflicts with nothing, committed with up to attempts attempts (0: the
// default) and short backoffs.
func setTxn(tbl *delta.Table, snap *delta.Snapshot, appID string, version int64, attempts int) *commit.Txn {
	return &commit.Txn{
		Table:          tbl,
		Snapshot:       snap,
		Operation:      "SET TRANSACTION",
		IsolationLevel: "SnapshotIsolation",
		IsBlindAppend:  true,
		Actions:        []actions.Action{{Txn: &actions.Txn{AppID: appID, Version: version}}},
		Options:        commit.Options{MaxAttempts: attempts, BaseBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond},
	}
}

// TxnRace has `writers` handles each commit `each` transactions through
// the full commit loop (put-if-absent, lose, re-read winners, retry) at
// the same time. Every transaction must land exactly once, in contiguous
// versions with one commit per version, and the table's txn watermarks
// must show every writer's last transaction.
func TxnRace(t *testing.T, url string, writers, each int) {
	ctx := context.Background()
	tbls := stores.OpenN(t, url, writers)
	stores.CopyTable(t, testutil.DeltaTable(t, compactionTable), tbls[0])
	start, err := delta.LatestVersion(ctx, tbls[0])
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ids := make([][]string, writers)
	errs := make([]error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < each; k++ {
				snap, err := delta.LoadSnapshot(ctx, tbls[w], -1)
				if err != nil {
					errs[w] = err
					return
				}
				tx := setTxn(tbls[w], snap, fmt.Sprintf("writer-%d", w), int64(k), 100)
				if _, err := tx.Commit(ctx); err != nil {
					errs[w] = fmt.Errorf("writer %d txn %d: %w", w, k, err)
					return
				}
				ids[w] = append(ids[w], tx.TxnID())
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	latest, err := delta.LatestVersion(ctx, tbls[0])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := latest-start, int64(writers*each); got != want {
		t.Fatalf("%d commits after v%d, want %d (one per transaction)", got, start, want)
	}
	seen := map[string]int64{}
	for v, id := range commitTxnIDs(t, tbls[0], start+1, latest) {
		if prev, dup := seen[id]; dup {
			t.Fatalf("txn %s committed twice: v%d and v%d", id, prev, v)
		}
		seen[id] = v
	}
	for w := range ids {
		for _, id := range ids[w] {
			if _, ok := seen[id]; !ok {
				t.Fatalf("writer %d's txn %s reported committed but is not in the log", w, id)
			}
		}
	}
	snap, err := delta.LoadSnapshot(ctx, tbls[0], -1)
	if err != nil {
		t.Fatal(err)
	}
	for w := 0; w < writers; w++ {
		if got := snap.Txns[fmt.Sprintf("writer-%d", w)].Version; got != int64(each-1) {
			t.Fatalf("writer-%d watermark %d, want %d", w, got, each-1)
		}
	}
	t.Logf("%d writers x %d transactions: v%d..v%d, one commit per version, none lost or duplicated", writers, each, start+1, latest)
}
