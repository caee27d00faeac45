package storetest

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/testutil/stores"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/logpath"
)

// envDynamoCrasher names the writer the DynamoDB crash child runs:
// "compactord" or "protocol".
const envDynamoCrasher = "COMPACTORD_STORETEST_DYNAMODB_CRASHER"

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
		tx := setTxn(tbl, snap, "crasher", 0, 0)
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
	tbl, snap0 := seededTable(t, url)
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
	if ok, _ := tbl.Bucket.Exists(ctx, logpath.CommitKey(v)); ok {
		t.Fatalf("after the kill: %s exists; the child died after its copy", logpath.CommitKey(v))
	}
	if ok, _ := tbl.Bucket.Exists(ctx, logpath.LogDir+e.TempPath); !ok {
		t.Fatalf("after the kill: temp file %s missing", e.TempPath)
	}
	// A listing without DynamoDB (a reader without the log store) skips
	// _delta_log/.tmp/ and does not see the decided commit.
	l, err := delta.ListLog(ctx, stores.Open(t, withoutLogStore(t, url)))
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
		snap, err := delta.LoadSnapshot(ctx, stores.Open(t, url), -1)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Version != v {
			t.Fatalf("the next reader sees v%d, want the crashed commit's v%d", snap.Version, v)
		}
	case "compactord writer":
		// A transaction from the snapshot before the crash: its put of v
		// meets the crashed entry, repairs it and commits at v+1.
		tx := setTxn(stores.Open(t, url), snap0, "repairer", 0, 0)
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
	snap, err := delta.LoadSnapshot(ctx, stores.Open(t, url), -1)
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
