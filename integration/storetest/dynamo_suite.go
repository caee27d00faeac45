package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/testutil/stores"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/delta/logstore"
	"github.com/compactord/compactord/internal/testutil"
)

// RunDynamoDB is the DynamoDB log store's own suite, on tables from
// S3DynamoTable. The calling test binary must define
// TestHelperDynamoCrashChild (see DynamoCrashChild).
func RunDynamoDB(t *testing.T) {
	t.Run("compactord races an independent protocol writer without losing a commit", func(t *testing.T) {
		DynamoRace(t, stores.S3DynamoTable(t), 3, 2, 6)
	})
	for _, crasher := range []string{"compactord", "protocol"} {
		for _, repairer := range []string{"compactord reader", "compactord writer", "protocol writer"} {
			t.Run(fmt.Sprintf("a %s writer killed between entry and copy is repaired by the next %s", crasher, repairer), func(t *testing.T) {
				DynamoCrash(t, stores.S3DynamoTable(t), crasher, repairer)
			})
		}
	}
	t.Run("the table path scheme decides mutual exclusion", func(t *testing.T) {
		for _, tt := range []struct {
			scheme string
			lost   int
		}{{"s3a", 0}, {"s3", 1}} {
			t.Run(tt.scheme, func(t *testing.T) { WrongScheme(t, stores.S3DynamoTable(t), tt.scheme, tt.lost) })
		}
	})
	t.Run("a version a writer outside the DynamoDB table took is a lost race", func(t *testing.T) {
		OutsideWriter(t, stores.S3DynamoTable(t))
	})
	t.Run("AWS_ENDPOINT_URL_DYNAMODB is honoured", func(t *testing.T) {
		EndpointFromEnv(t, stores.S3DynamoTable(t))
	})
}

// seededTable copies the compaction test table to url and returns it
// open with its snapshot.
func seededTable(t *testing.T, url string) (*delta.Table, *delta.Snapshot) {
	t.Helper()
	tbl := stores.Open(t, url)
	stores.CopyTable(t, testutil.DeltaTable(t, compactionTable), tbl)
	snap, err := delta.LoadSnapshot(context.Background(), tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, snap
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
		tmp, err := tbl.Bucket.ReadAll(ctx, logpath.LogDir+e.TempPath)
		if err != nil {
			t.Fatalf("v%d: temp file of the winning entry: %v", v, err)
		}
		got, err := tbl.Bucket.ReadAll(ctx, logpath.CommitKey(v))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(tmp, got) {
			t.Fatalf("v%d: N.json is not the winning entry's temp file", v)
		}
	}
}

// WrongScheme has a protocol writer whose entries use the given table path
// scheme put its entry for a version, then compactord (entries under s3a)
// commit the same version, then the protocol writer copy its temp file.
// With the scheme compactord uses, the entry excludes compactord; with
// another one both think they won and `lost` commits are gone.
func WrongScheme(t *testing.T, url, scheme string, lost int) {
	ctx := context.Background()
	tbl, snap0 := seededTable(t, url)
	v := snap0.Version + 1
	pw := NewProtocolWriter(t, url, scheme+strings.TrimPrefix(SparkTablePath(t, url), "s3a"))
	var ourErr error
	pw.AfterEntry = func(int64) bool {
		ourErr = tbl.Log.PutIfAbsent(ctx, logpath.CommitKey(v), TxnCommit("compactord", "compactord", 0))
		return true
	}
	if err := pw.Write(ctx, v, TxnCommit("spark", "spark", 0)); err != nil {
		t.Fatal(err)
	}
	reported := []string{"spark"}
	switch {
	case ourErr == nil:
		reported = append(reported, "compactord")
	case !errors.Is(ourErr, logstore.ErrCommitExists):
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
	t.Logf("protocol writer's entries under %s://, compactord's under s3a://: reported committed at v%d: %v, %d lost", scheme, v, reported, got)
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
	tbl := stores.Open(t, u.String())
	if err := tbl.CheckPutIfAbsent(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Log.PutIfAbsent(ctx, logpath.CommitKey(0), TxnCommit("env", "env", 0)); err != nil {
		t.Fatal(err)
	}
	e, err := NewProtocolWriter(t, rawURL, SparkTablePath(t, rawURL)).Entry(ctx, protocolFile(0))
	if err != nil || e == nil || !e.Complete {
		t.Fatalf("entry of v0 through AWS_ENDPOINT_URL_DYNAMODB: %+v, %v", e, err)
	}
}

// OutsideWriter has a writer that does not use the DynamoDB table write
// N.json (a plain PUT) after compactord's entry for N is put and before
// its copy: compactord must report the version as lost (ErrCommitExists),
// keep the outsider's commit, and mark its own entry complete so that no
// reader copies its temp file over the outsider's commit.
func OutsideWriter(t *testing.T, url string) {
	ctx := context.Background()
	_, snap0 := seededTable(t, url)
	v := snap0.Version + 1
	outsider := TxnCommit("outsider", "outsider", 0)
	plain := stores.Open(t, withoutLogStore(t, url))
	tbl, err := delta.OpenTableWith(ctx, url, delta.OpenOptions{AfterLogEntry: func(ctx context.Context, key string) {
		if err := plain.Bucket.WriteAll(ctx, key, outsider, nil); err != nil {
			t.Error(err)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	err = tbl.Log.PutIfAbsent(ctx, logpath.CommitKey(v), TxnCommit("compactord", "compactord", 0))
	if !errors.Is(err, logstore.ErrCommitExists) {
		t.Fatalf("PutIfAbsent after an outsider wrote v%d = %v, want ErrCommitExists", v, err)
	}
	got, err := tbl.Bucket.ReadAll(ctx, logpath.CommitKey(v))
	if err != nil || !bytes.Equal(got, outsider) {
		t.Fatalf("v%d after the race: %q, %v; want the outsider's commit", v, got, err)
	}
	e, err := NewProtocolWriter(t, url, SparkTablePath(t, url)).Entry(ctx, protocolFile(v))
	if err != nil || e == nil || !e.Complete {
		t.Fatalf("compactord's entry of v%d: %+v, %v; want it complete", v, e, err)
	}
	snap, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Txns["outsider"]; !ok || snap.Version != v {
		t.Fatalf("table at v%d with txns %v, want the outsider's commit at v%d", snap.Version, snap.Txns, v)
	}
	t.Logf("outsider took v%d between compactord's entry and copy: compactord lost the race, its entry is complete, the outsider's commit stands", v)
}
