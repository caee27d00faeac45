package delta

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil"
)

// pollTable is a file:// table of commits 0..latest (version 0 with the
// given table properties) whose bucket calls are counted, on a clock the
// test moves.
type pollTable struct {
	*Table
	root  string
	mu    sync.Mutex
	calls map[string]int
	now   time.Time
}

func newPollTable(t *testing.T, latest int64, conf string) *pollTable {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	pt := &pollTable{root: root, calls: map[string]int{}, now: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	pt.commit(t, 0, `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`+"\n"+
		`{"metaData":{"id":"00000000-0000-0000-0000-000000000034","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":`+conf+`,"createdTime":1}}`)
	for v := int64(1); v <= latest; v++ {
		pt.commit(t, v, "")
	}
	pt.Table = openDir(t, root)
	inner := pt.Bucket
	pt.Bucket = (&testutil.Forward{Inner: inner, OnCall: func(kind, _ string) {
		pt.mu.Lock()
		pt.calls[kind]++
		pt.mu.Unlock()
	}}).Bucket()
	pt.Table.now = func() time.Time {
		pt.mu.Lock()
		defer pt.mu.Unlock()
		return pt.now
	}
	return pt
}

// commit writes version v holding a commitInfo and extra lines.
func (pt *pollTable) commit(t *testing.T, v int64, extra string) {
	t.Helper()
	body := fmt.Sprintf(`{"commitInfo":{"timestamp":%d,"operation":"WRITE"}}`, 1000+v) + "\n"
	if extra != "" {
		body += extra + "\n"
	}
	if err := os.WriteFile(filepath.Join(pt.root, logpath.CommitKey(v)), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hasNewer runs HasNewer(v) after moving the clock by d and returns its
// answer and the bucket calls it made.
func (pt *pollTable) hasNewer(t *testing.T, v int64, d time.Duration) (bool, map[string]int) {
	t.Helper()
	pt.mu.Lock()
	pt.now = pt.now.Add(d)
	pt.calls = map[string]int{}
	pt.mu.Unlock()
	got, err := HasNewer(context.Background(), pt.Table, v)
	if err != nil {
		t.Fatal(err)
	}
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return got, pt.calls
}

func total(calls map[string]int) int {
	n := 0
	for _, c := range calls {
		n += c
	}
	return n
}

// The change-event benchmark's idle polls cost two HEADs each (the next
// commit, then the caller's own) until a handle remembered its finding.
func TestHasNewerOfAnIdleTableCostsOneRequestAfterTheFirst(t *testing.T) {
	pt := newPollTable(t, 2, "{}")
	if got, calls := pt.hasNewer(t, 2, 0); got || total(calls) != 2 || calls["attributes"] != 2 {
		t.Fatalf("first HasNewer(2) = %v with calls %v; want false after checking commits 3 and 2", got, calls)
	}
	for i := range 5 {
		// A poll every 10 minutes, the default reconciling interval.
		if got, calls := pt.hasNewer(t, 2, 10*time.Minute); got || total(calls) != 1 || calls["attributes"] != 1 {
			t.Fatalf("idle poll %d: HasNewer(2) = %v with calls %v; want false for one HEAD of commit 3", i+1, got, calls)
		}
	}
	pt.commit(t, 3, "")
	if got, calls := pt.hasNewer(t, 2, 10*time.Minute); !got || total(calls) != 1 {
		t.Fatalf("after commit 3: HasNewer(2) = %v with calls %v; want true for one HEAD", got, calls)
	}
	// A version the handle did not find the newest is checked in full.
	if got, calls := pt.hasNewer(t, 3, time.Minute); got || total(calls) != 2 {
		t.Fatalf("HasNewer(3) = %v with calls %v; want false after checking commits 4 and 3", got, calls)
	}
}

// A poller's first check after a full load or an advance is one request
// too: the listing, or the commit read up to the missing next one, found
// the newest version.
func TestHasNewerAfterLoadOrAdvanceCostsOneRequest(t *testing.T) {
	ctx := context.Background()
	pt := newPollTable(t, 2, "{}")
	snap, err := LoadSnapshot(ctx, pt.Table, -1)
	if err != nil {
		t.Fatal(err)
	}
	if got, calls := pt.hasNewer(t, 2, time.Minute); got || total(calls) != 1 {
		t.Fatalf("HasNewer(2) after LoadSnapshot = %v with calls %v; want false for one HEAD", got, calls)
	}
	pt.commit(t, 3, "")
	next, ok, err := Advance(ctx, pt.Table, snap, 10)
	if err != nil || !ok || next.Version != 3 {
		t.Fatalf("Advance = %v, %v, %v; want version 3", next, ok, err)
	}
	if got, calls := pt.hasNewer(t, 3, time.Minute); got || total(calls) != 1 {
		t.Fatalf("HasNewer(3) after Advance = %v with calls %v; want false for one HEAD", got, calls)
	}
	// Advance finding no commit right after its snapshot is a gap (here
	// log cleanup took commits 1 and 2), not a finding that the
	// snapshot's version is the newest.
	old, err := LoadSnapshot(ctx, pt.Table, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{1, 2} {
		if err := os.Remove(filepath.Join(pt.root, logpath.CommitKey(v))); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := Advance(ctx, pt.Table, old, 10); ok || err != nil {
		t.Fatalf("Advance over a gap = %v, %v; want not ok", ok, err)
	}
	if got, calls := pt.hasNewer(t, 1, time.Minute); !got || calls["list"] == 0 {
		t.Fatalf("HasNewer(1) after the gap = %v with calls %v; want true, found by listing the log", got, calls)
	}
}

// Once the finding is older than the trust window, log cleanup may have
// removed the commits after it: the caller's version is checked again and
// a cleaned-up history is found by listing, as before.
func TestHasNewerFindsCleanedUpHistoryOnceItsFindingIsOld(t *testing.T) {
	for _, tt := range []struct {
		name, conf string
		after      time.Duration // past the trust window
	}{
		{"default retention", "{}", maxNewestTrust + time.Minute},
		{"ten-minute retention", `{"delta.logRetentionDuration":"interval 10 minutes"}`, 6 * time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pt := newPollTable(t, 2, tt.conf)
			if _, err := LoadSnapshot(context.Background(), pt.Table, -1); err != nil {
				t.Fatal(err)
			}
			if got, _ := pt.hasNewer(t, 2, 0); got {
				t.Fatal("HasNewer(2) = true on a table at version 2")
			}
			// Commits 3 and 4, a checkpoint-less cleanup of 2 and 3 (what a
			// writer's log cleanup leaves, seen from here).
			pt.commit(t, 3, "")
			pt.commit(t, 4, "")
			for _, v := range []int64{2, 3} {
				if err := os.Remove(filepath.Join(pt.root, logpath.CommitKey(v))); err != nil {
					t.Fatal(err)
				}
			}
			got, calls := pt.hasNewer(t, 2, tt.after)
			if !got || calls["list"] == 0 {
				t.Fatalf("HasNewer(2) %v later = %v with calls %v; want true, found by listing the log", tt.after, got, calls)
			}
		})
	}
}
