package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil"
)

// envDynamoCrasher names the writer the DynamoDB crash child runs:
// "compactord" or "protocol".
const envDynamoCrasher = "COMPACTORD_STORETEST_DYNAMODB_CRASHER"

// RunDynamoDB is the DynamoDB log store's own suite, on tables from
// S3DynamoTable. The calling test binary must define
// TestHelperDynamoCrashChild (see DynamoCrashChild).
func RunDynamoDB(t *testing.T) {
	t.Run("compactord races an independent protocol writer without losing a commit", func(t *testing.T) {
		DynamoRace(t, S3DynamoTable(t), 3, 2, 6)
	})
	for _, crasher := range []string{"compactord", "protocol"} {
		for _, repairer := range []string{"compactord reader", "compactord writer", "protocol writer"} {
			t.Run(fmt.Sprintf("a %s writer killed between entry and copy is repaired by the next %s", crasher, repairer), func(t *testing.T) {
				DynamoCrash(t, S3DynamoTable(t), crasher, repairer)
			})
		}
	}
	t.Run("the table path scheme decides mutual exclusion", func(t *testing.T) {
		for _, tt := range []struct {
			scheme string
			lost   int
		}{{"s3a", 0}, {"s3", 1}} {
			t.Run(tt.scheme, func(t *testing.T) { WrongScheme(t, S3DynamoTable(t), tt.scheme, tt.lost) })
		}
	})
	t.Run("AWS_ENDPOINT_URL_DYNAMODB is honoured", func(t *testing.T) {
		EndpointFromEnv(t, S3DynamoTable(t))
	})
}

// commitTxnIDs returns the commitInfo.txnId of every commit from..to, by
// version, failing the test for a version without exactly one.
func commitTxnIDs(t *testing.T, tbl *delta.Table, from, to int64) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	for v := from; v <= to; v++ {
		acts, err := delta.ReadCommit(context.Background(), tbl, v)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		var ids []string
		for _, a := range acts {
			if raw, ok := a.CommitInfo["txnId"]; ok {
				var id string
				if err := json.Unmarshal(raw, &id); err != nil {
					t.Fatalf("v%d: txnId: %v", v, err)
				}
				ids = append(ids, id)
			}
		}
		if len(ids) != 1 {
			t.Fatalf("v%d has %d commitInfo txnIds, want 1", v, len(ids))
		}
		out[v] = ids[0]
	}
	return out
}

// checkEntriesComplete checks that every version from..to has a complete
// entry with an expireTime a day ahead and that N.json is its temp file's
// bytes: each commit was published from the entry that won it.
func checkEntriesComplete(t *testing.T, tbl *delta.Table, pw *ProtocolWriter, from, to int64) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().Unix()
	for v := from; v <= to; v++ {
		e, err := pw.Entry(ctx, protocolFile(v))
		if err != nil {
			t.Fatal(err)
		}
		if e == nil || !e.Complete {
			t.Fatalf("v%d: entry %+v, want a complete one", v, e)
		}
		if e.ExpireTime < now+86400-900 || e.ExpireTime > now+86400+5 {
			t.Fatalf("v%d: expireTime %d, want about now+86400 (%d)", v, e.ExpireTime, now+86400)
		}
		if !strings.HasPrefix(e.TempPath, ".tmp/"+protocolFile(v)+".") {
			t.Fatalf("v%d: tempPath %q is not under .tmp/ as Delta names it", v, e.TempPath)
		}
		tmp, err := tbl.Bucket.ReadAll(ctx, delta.LogDir+e.TempPath)
		if err != nil {
			t.Fatalf("v%d: temp file of the winning entry: %v", v, err)
		}
		got, err := tbl.Bucket.ReadAll(ctx, delta.CommitKey(v))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(tmp, got) {
			t.Fatalf("v%d: N.json is not the winning entry's temp file", v)
		}
	}
}

// DynamoRace runs, at once on one table: `protocol` independent protocol
// writers and `txns` compactord transaction writers committing `each`
// commits apiece, a protocol writer that stalls after its entry (its commit
// left for others to publish), and a compaction. Every reported commit must
// be in the log exactly once, in contiguous versions, each published from
// its winning DynamoDB entry, and the compaction must keep every row.
func DynamoRace(t *testing.T, url string, protocol, txns, each int) {
	ctx := context.Background()
	tbls := OpenN(t, url, txns+1)
	CopyTable(t, testutil.DeltaTable(t, compactionTable), tbls[0])
	before, rowsBefore := LiveRows(t, tbls[0])
	tablePath := SparkTablePath(t, url)

	var (
		mu       sync.Mutex
		reported = map[string]int64{} // txnId -> version its writer got
		errs     []error
		wg       sync.WaitGroup
	)
	record := func(id string, v int64, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			return
		}
		reported[id] = v
	}
	for w := 0; w < protocol; w++ {
		pw := NewProtocolWriter(t, url, tablePath)
		wg.Go(func() {
			for k := 0; k < each; k++ {
				id := fmt.Sprintf("protocol-w%d-k%d", w, k)
				v, err := pw.Commit(ctx, func(int64) []byte { return TxnCommit(id, fmt.Sprintf("protocol-%d", w), int64(k)) })
				record(id, v, err)
			}
		})
	}
	for w := 0; w < txns; w++ {
		tbl := tbls[w+1]
		wg.Go(func() {
			for k := 0; k < each; k++ {
				snap, err := delta.LoadSnapshot(ctx, tbl, -1)
				if err != nil {
					record(fmt.Sprintf("compactord-w%d-k%d", w, k), -1, err)
					return
				}
				tx := &commit.Txn{
					Table: tbl, Snapshot: snap, Operation: "SET TRANSACTION", IsolationLevel: "SnapshotIsolation", IsBlindAppend: true,
					Actions: []delta.Action{{Txn: &delta.Txn{AppID: fmt.Sprintf("compactord-%d", w), Version: int64(k)}}},
					Options: commit.Options{MaxAttempts: 200, BaseBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond},
				}
				v, err := tx.Commit(ctx)
				record(tx.TxnID(), v, err)
			}
		})
	}
	stalled := NewProtocolWriter(t, url, tablePath)
	stalled.AfterEntry = func(int64) bool { return false }
	res := &compaction.RunResult{}
	wg.Go(func() {
		opts := runOptions()
		opts.Commit.MaxAttempts = 200
		once := false
		opts.Commit.BeforePut = func(ctx context.Context, _ int64) error {
			if once {
				return nil
			}
			once = true
			v, err := stalled.Commit(ctx, func(int64) []byte { return TxnCommit("protocol-stalled", "protocol-stalled", 0) })
			record("protocol-stalled", v, err)
			return nil
		}
		r, err := compaction.Compact(ctx, tbls[0], opts)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("compaction: %w", err))
		}
		if r != nil {
			res = r
		}
	})
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	after, rowsAfter := LiveRows(t, tbls[0])
	total := int64(protocol*each + txns*each + 2)
	if got := after.Version - before.Version; got != total {
		t.Fatalf("%d commits after v%d, want %d (one per reported commit and the compaction)", got, before.Version, total)
	}
	ids := commitTxnIDs(t, tbls[0], before.Version+1, after.Version)
	inLog := map[string]int64{}
	for v, id := range ids {
		if prev, dup := inLog[id]; dup {
			t.Fatalf("txn %s committed twice: v%d and v%d", id, prev, v)
		}
		inLog[id] = v
	}
	lost := 0
	for id, v := range reported {
		if inLog[id] != v {
			lost++
			t.Errorf("commit %s reported at v%d, the log has it at v%d (0: absent)", id, v, inLog[id])
		}
	}
	if lost > 0 || len(reported) != int(total)-1 {
		t.Fatalf("%d of %d reported commits lost (%d reported, want %d)", lost, len(reported), len(reported), total-1)
	}
	if _, ok := ids[res.CommittedVersion]; !ok || res.FilesRemoved == 0 {
		t.Fatalf("compaction committed v%d removing %d files", res.CommittedVersion, res.FilesRemoved)
	}
	if l, x := rowsAfter.Diff(rowsBefore); len(l)+len(x) > 0 {
		t.Fatalf("rows changed: lost %v, extra %v", l, x)
	}
	checkEntriesComplete(t, tbls[0], stalled, before.Version+1, after.Version)
	for w := 0; w < protocol; w++ {
		if got := after.Txns[fmt.Sprintf("protocol-%d", w)].Version; got != int64(each-1) {
			t.Fatalf("protocol-%d watermark %d, want %d", w, got, each-1)
		}
	}
	t.Logf("%d protocol writers + %d compactord writers x %d commits, a stalled protocol writer and a compaction (v%d): v%d..v%d, %d versions, one winner each, %d commits lost",
		protocol, txns, each, res.CommittedVersion, before.Version+1, after.Version, len(ids), lost)
}

// DynamoCrashChild is the body of the helper test a test binary must define
// for DynamoCrash:
//
//	func TestHelperDynamoCrashChild(t *testing.T) { storetest.DynamoCrashChild(t) }
//
// Outside a crash run it returns at once. Inside one it commits a SET
// TRANSACTION (appId "crasher") with the writer COMPACTORD_STORETEST_DYNAMODB_CRASHER
// names and waits to be killed once the DynamoDB entry is put.
func DynamoCrashChild(t *testing.T) {
	url, who := os.Getenv(envCrashURL), os.Getenv(envDynamoCrasher)
	if url == "" || who == "" {
		return
	}
	ctx := context.Background()
	switch who {
	case "compactord":
		tbl, err := delta.OpenTableWith(ctx, url, delta.OpenOptions{
			AfterLogEntry: func(context.Context, string) { _ = atCrashPoint() },
		})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := delta.LoadSnapshot(ctx, tbl, -1)
		if err != nil {
			t.Fatal(err)
		}
		tx := &commit.Txn{Table: tbl, Snapshot: snap, Operation: "SET TRANSACTION", IsolationLevel: "SnapshotIsolation", IsBlindAppend: true,
			Actions: []delta.Action{{Txn: &delta.Txn{AppID: "crasher", Version: 0}}}}
		_, err = tx.Commit(ctx)
		t.Fatalf("crash child was not killed after its entry (err %v)", err)
	case "protocol":
		pw := NewProtocolWriter(t, url, SparkTablePath(t, url))
		pw.AfterEntry = func(int64) bool { _ = atCrashPoint(); return false }
		v, err := pw.Latest(ctx)
		if err == nil {
			err = pw.Write(ctx, v+1, TxnCommit("crasher-protocol", "crasher", 0))
		}
		t.Fatalf("crash child was not killed after its entry (err %v)", err)
	}
	t.Fatalf("unknown crasher %q", who)
}

// DynamoCrash kills (SIGKILL) a writer (compactord's log store or the
// protocol writer) right after its DynamoDB entry is put, before its copy
// to N.json, checks that the commit is decided but unpublished, and that
// the next reader or writer (compactord's, or the protocol writer's step 1)
// publishes it, with no commit lost.
func DynamoCrash(t *testing.T, url, crasher, repairer string) {
	ctx := context.Background()
	tbl := Open(t, url)
	CopyTable(t, testutil.DeltaTable(t, compactionTable), tbl)
	snap0, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	v := snap0.Version + 1
	pw := NewProtocolWriter(t, url, SparkTablePath(t, url))

	KillAtMarker(t, "TestHelperDynamoCrashChild", envCrashURL+"="+url, envDynamoCrasher+"="+crasher)

	e, err := pw.Entry(ctx, protocolFile(v))
	if err != nil {
		t.Fatal(err)
	}
	if e == nil || e.Complete || e.ExpireTime != 0 {
		t.Fatalf("after the kill: entry of v%d is %+v, want an incomplete one without expireTime", v, e)
	}
	if ok, _ := tbl.Bucket.Exists(ctx, delta.CommitKey(v)); ok {
		t.Fatalf("after the kill: %s exists; the child died after its copy", delta.CommitKey(v))
	}
	if ok, _ := tbl.Bucket.Exists(ctx, delta.LogDir+e.TempPath); !ok {
		t.Fatalf("after the kill: temp file %s missing", e.TempPath)
	}
	// A listing without DynamoDB (a reader without the log store) skips
	// _delta_log/.tmp/ and does not see the decided commit.
	l, err := delta.ListLog(ctx, Open(t, withoutLogStore(t, url)))
	if err != nil {
		t.Fatal(err)
	}
	for _, le := range l.Entries {
		if strings.Contains(le.Key, ".tmp/") {
			t.Fatalf("the log listing holds the temp file %s", le.Key)
		}
	}
	if got := l.LatestCommit(); got != snap0.Version {
		t.Fatalf("a listing without DynamoDB sees v%d, want v%d", got, snap0.Version)
	}

	want := snap0.Version + 1 // versions after the repair
	switch repairer {
	case "compactord reader":
		snap, err := delta.LoadSnapshot(ctx, Open(t, url), -1)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Version != v {
			t.Fatalf("the next reader sees v%d, want the crashed commit's v%d", snap.Version, v)
		}
	case "compactord writer":
		// A transaction from the snapshot before the crash: its put of v
		// meets the crashed entry, repairs it and commits at v+1.
		tx := &commit.Txn{Table: Open(t, url), Snapshot: snap0, Operation: "SET TRANSACTION", IsolationLevel: "SnapshotIsolation", IsBlindAppend: true,
			Actions: []delta.Action{{Txn: &delta.Txn{AppID: "repairer", Version: 0}}}}
		got, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got != v+1 {
			t.Fatalf("the next writer committed v%d, want v%d after the crashed v%d", got, v+1, v)
		}
		want = v + 1
	case "protocol writer":
		// Straight to v+1: step 1 finds v's entry incomplete and fixes it.
		if err := pw.Write(ctx, v+1, TxnCommit("repairer-protocol", "repairer", 0)); err != nil {
			t.Fatal(err)
		}
		want = v + 1
	}
	snap, err := delta.LoadSnapshot(ctx, Open(t, url), -1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version != want {
		t.Fatalf("table at v%d after the repair, want v%d", snap.Version, want)
	}
	lost := 0
	for _, app := range []string{"crasher", "repairer"} {
		if _, ok := snap.Txns[app]; !ok && (app == "crasher" || want > v) {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d commits lost: txns %v", lost, snap.Txns)
	}
	checkEntriesComplete(t, tbl, pw, v, want)
	t.Logf("%s killed after its entry of v%d (v%d.json absent, entry incomplete); the next %s published it; table at v%d, %d commits lost",
		crasher, v, v, repairer, want, lost)
}

// WrongScheme has a protocol writer whose entries use the given table path
// scheme put its entry for a version, then compactord (entries under s3a)
// commit the same version, then the protocol writer copy its temp file.
// With the scheme compactord uses, the entry excludes compactord; with
// another one both think they won and `lost` commits are gone.
func WrongScheme(t *testing.T, url, scheme string, lost int) {
	ctx := context.Background()
	tbl := Open(t, url)
	CopyTable(t, testutil.DeltaTable(t, compactionTable), tbl)
	snap0, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	v := snap0.Version + 1
	pw := NewProtocolWriter(t, url, scheme+strings.TrimPrefix(SparkTablePath(t, url), "s3a"))
	var ourErr error
	pw.AfterEntry = func(int64) bool {
		ourErr = tbl.Log.PutIfAbsent(ctx, delta.CommitKey(v), TxnCommit("compactord", "compactord", 0))
		return true
	}
	if err := pw.Write(ctx, v, TxnCommit("spark", "spark", 0)); err != nil {
		t.Fatal(err)
	}
	reported := []string{"spark"}
	switch {
	case ourErr == nil:
		reported = append(reported, "compactord")
	case !errors.Is(ourErr, delta.ErrCommitExists):
		t.Fatal(ourErr)
	}
	snap, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, app := range reported {
		if _, ok := snap.Txns[app]; !ok {
			got++
		}
	}
	if got != lost {
		t.Fatalf("entries under %s://: %d of the reported commits %v lost, want %d", scheme, got, reported, lost)
	}
	t.Logf("protocol writer's entries under %s://, compactord's under s3a://: both reported %v at v%d, %d lost", scheme, reported, v, got)
}

// withoutLogStore is rawURL without its log store parameters: the same
// table read as a plain S3 table.
func withoutLogStore(t testing.TB, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for k := range q {
		if k == "log_store" || strings.HasPrefix(k, "dynamodb_") {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// EndpointFromEnv opens the table without dynamodb_endpoint and with
// AWS_ENDPOINT_URL_DYNAMODB set, as the SDK's chain reads it, and commits.
func EndpointFromEnv(t *testing.T, rawURL string) {
	ctx := context.Background()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", q.Get("dynamodb_endpoint"))
	q.Del("dynamodb_endpoint")
	u.RawQuery = q.Encode()
	tbl := Open(t, u.String())
	if err := tbl.CheckPutIfAbsent(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Log.PutIfAbsent(ctx, delta.CommitKey(0), TxnCommit("env", "env", 0)); err != nil {
		t.Fatal(err)
	}
	e, err := NewProtocolWriter(t, rawURL, SparkTablePath(t, rawURL)).Entry(ctx, protocolFile(0))
	if err != nil || e == nil || !e.Complete {
		t.Fatalf("entry of v0 through AWS_ENDPOINT_URL_DYNAMODB: %+v, %v", e, err)
	}
}
