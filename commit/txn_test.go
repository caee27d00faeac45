package commit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/compactord/compactord/delta"
	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/delta/logstore"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/testutil/logtest"
)

// memTable opens a mem:// table whose log holds versions 0..latest (each a
// commitInfo-only commit with the given in-commit timestamp, if any).
func memTable(t *testing.T, latest int64) *delta.Table {
	t.Helper()
	ctx := context.Background()
	tbl, err := delta.OpenTable(ctx, fmt.Sprintf("mem://%s", t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	for v := int64(0); v <= latest; v++ {
		putRaw(t, tbl, v, fmt.Sprintf(`{"commitInfo":{"operation":"WRITE","txnId":"seed-%d"}}`, v))
	}
	return tbl
}

func putRaw(t *testing.T, tbl *delta.Table, v int64, lines ...string) {
	t.Helper()
	var data []byte
	for _, l := range lines {
		data = append(data, l...)
		data = append(data, '\n')
	}
	if err := tbl.Log.PutIfAbsent(context.Background(), logpath.CommitKey(v), data); err != nil {
		t.Fatalf("put version %d: %v", v, err)
	}
}

// recorder is a participant that records the winners it sees.
type recorder struct {
	seen    []int64
	builds  int
	failOn  int64
	actions []deltaactions.Action
}

func (r *recorder) observe(_ context.Context, v int64, _ []deltaactions.Action) error {
	r.seen = append(r.seen, v)
	if v == r.failOn {
		return fmt.Errorf("winner %d: %w", v, ErrConflict)
	}
	return nil
}

func (r *recorder) build(context.Context) ([]deltaactions.Action, map[string]string, error) {
	r.builds++
	return r.actions, nil, nil
}

type fakeSleep struct{ waits []time.Duration }

func (f *fakeSleep) sleep(_ context.Context, d time.Duration) error {
	f.waits = append(f.waits, d)
	return nil
}

func testTxn(tbl *delta.Table, readVersion int64, o Options) *Txn {
	return &Txn{Table: tbl, Snapshot: &delta.Snapshot{Version: readVersion, Metadata: deltaactions.Metadata{Configuration: map[string]string{}}},
		Operation: "TEST", IsolationLevel: "SnapshotIsolation", Options: o}
}

func readCI(t *testing.T, tbl *delta.Table, v int64) deltaactions.CommitInfo {
	t.Helper()
	acts, err := delta.ReadCommit(context.Background(), tbl, v)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) == 0 || acts[0].CommitInfo == nil {
		t.Fatalf("version %d: commitInfo is not the first action", v)
	}
	return acts[0].CommitInfo
}

func TestCommitLoopChecksEachWinnerOnceAndCommitsAfterThem(t *testing.T) {
	ctx := context.Background()
	tbl := memTable(t, 5)
	sl := &fakeSleep{}
	hookCalls := 0
	o := Options{Sleep: sl.sleep, BeforePut: func(ctx context.Context, v int64) error {
		// Lose the race twice: a competitor takes the version we want.
		hookCalls++
		if hookCalls <= 2 {
			putRaw(t, tbl, v, fmt.Sprintf(`{"commitInfo":{"operation":"WRITE","txnId":"rival-%d"}}`, v))
		}
		return nil
	}}
	// Read at 3: versions 4 and 5 already landed, then 6 and 7 are lost.
	tx := testTxn(tbl, 3, o)
	r := &recorder{actions: []deltaactions.Action{}}
	v, err := tx.run(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if v != 8 {
		t.Fatalf("committed %d, want 8", v)
	}
	if !slices.Equal(r.seen, []int64{4, 5, 6, 7}) {
		t.Fatalf("observed winners %v, want each of 4..7 once", r.seen)
	}
	if len(sl.waits) != 2 {
		t.Fatalf("slept %d times, want 2 (one per lost race)", len(sl.waits))
	}
	ci := readCI(t, tbl, 8)
	var id string
	json.Unmarshal(ci["txnId"], &id)
	if id != tx.TxnID() || ci.Operation() != "TEST" {
		t.Fatalf("commitInfo %v", ci)
	}
	var rv int64
	json.Unmarshal(ci["readVersion"], &rv)
	if rv != 3 {
		t.Fatalf("readVersion %d want 3", rv)
	}
}

func TestCommitLoopGivesUpAfterMaxAttemptsWithGrowingBackoff(t *testing.T) {
	ctx := context.Background()
	tbl := memTable(t, 0)
	sl := &fakeSleep{}
	o := Options{MaxAttempts: 5, BaseBackoff: 100 * time.Millisecond, MaxBackoff: 400 * time.Millisecond, Sleep: sl.sleep,
		BeforePut: func(ctx context.Context, v int64) error {
			putRaw(t, tbl, v, `{"commitInfo":{"operation":"WRITE","txnId":"rival"}}`)
			return nil
		}}
	_, err := testTxn(tbl, 0, o).run(ctx, &recorder{actions: []deltaactions.Action{}})
	if !errors.Is(err, ErrTooManyAttempts) || failure.Of(err) != failure.Retry {
		t.Fatalf("err %v, want ErrTooManyAttempts of class retry", err)
	}
	if len(sl.waits) != 4 {
		t.Fatalf("%d waits, want 4", len(sl.waits))
	}
	caps := []time.Duration{100, 200, 400, 400}
	for i, w := range sl.waits {
		if w < caps[i]*time.Millisecond/2 || w > caps[i]*time.Millisecond {
			t.Errorf("wait %d = %v, want in [%v, %v]", i, w, caps[i]*time.Millisecond/2, caps[i]*time.Millisecond)
		}
	}
}

func TestPlainTxnConflictsWhenAWinnerRemovesAFileItRead(t *testing.T) {
	ctx := context.Background()
	tbl := memTable(t, 1)
	putRaw(t, tbl, 2, `{"commitInfo":{"operation":"DELETE","txnId":"w"}}`, `{"remove":{"path":"a.parquet","dataChange":true}}`)
	tx := testTxn(tbl, 1, Options{})
	tx.ReadFiles = map[string]bool{"a.parquet": true}
	tx.Actions = []deltaactions.Action{}
	if _, err := tx.Commit(ctx); !errors.Is(err, ErrConflict) {
		t.Fatalf("err %v, want ErrConflict", err)
	}
	tx = testTxn(tbl, 1, Options{})
	tx.ReadFiles = map[string]bool{"b.parquet": true}
	tx.Actions = []deltaactions.Action{}
	if v, err := tx.Commit(ctx); err != nil || v != 3 {
		t.Fatalf("unrelated winner: v=%d err=%v", v, err)
	}
	putRaw(t, tbl, 4, `{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":[],"configuration":{}}}`)
	tx = testTxn(tbl, 3, Options{})
	tx.Actions = []deltaactions.Action{}
	if _, err := tx.Commit(ctx); !errors.Is(err, ErrMetadataChanged) {
		t.Fatalf("err %v, want ErrMetadataChanged", err)
	}
}

func TestAmbiguousPutIsResolvedByTxnID(t *testing.T) {
	for _, land := range []bool{true, false} {
		t.Run(fmt.Sprintf("landed=%v", land), func(t *testing.T) {
			ctx := context.Background()
			tbl := memTable(t, 2)
			// The first put lands (or not) and then reports an unknown outcome.
			al := &logtest.AmbiguousLog{Inner: tbl.Log, Land: land, At: 1}
			tbl.Log = al
			tx := testTxn(tbl, 2, Options{Sleep: (&fakeSleep{}).sleep})
			r := &recorder{actions: []deltaactions.Action{}}
			v, err := tx.run(ctx, r)
			if err != nil || v != 3 {
				t.Fatalf("v=%d err=%v, want version 3", v, err)
			}
			want := int32(1)
			if !land {
				want = 2
			}
			if al.Puts() != want {
				t.Fatalf("%d puts, want %d", al.Puts(), want)
			}
			if len(r.seen) != 0 {
				t.Fatalf("own commit observed as a winner: %v", r.seen)
			}
			var id string
			json.Unmarshal(readCI(t, tbl, 3)["txnId"], &id)
			if id != tx.TxnID() {
				t.Fatalf("version 3 txnId %s, want ours", id)
			}
		})
	}
}

func TestInCommitTimestampsAreMonotonicAndRecomputedOnRetry(t *testing.T) {
	ctx := context.Background()
	tbl := memTable(t, 0)
	now := time.UnixMilli(1_000_000)
	// A rival lands with an ICT far ahead of our clock.
	rivalICT := int64(5_000_000)
	lost := false
	o := Options{Now: func() time.Time { return now }, Sleep: (&fakeSleep{}).sleep, BeforePut: func(ctx context.Context, v int64) error {
		if !lost {
			lost = true
			putRaw(t, tbl, v, fmt.Sprintf(`{"commitInfo":{"inCommitTimestamp":%d,"timestamp":%d,"operation":"WRITE","txnId":"rival"}}`, rivalICT, rivalICT))
		}
		return nil
	}}
	tx := testTxn(tbl, 0, o)
	tx.Snapshot.Timestamp = 2_000_000 // previous commit's ICT, also ahead of now
	tx.Snapshot.Metadata.Configuration["delta.enableInCommitTimestamps"] = "true"
	v, err := tx.run(ctx, &recorder{actions: []deltaactions.Action{}})
	if err != nil || v != 2 {
		t.Fatalf("v=%d err=%v", v, err)
	}
	ict, ok := readCI(t, tbl, 2).InCommitTimestamp()
	if !ok || ict != rivalICT+1 {
		t.Fatalf("inCommitTimestamp %d (present %v), want rival+1 = %d", ict, ok, rivalICT+1)
	}
}

func TestCommitRefusesATableWithoutALogStore(t *testing.T) {
	tbl := memTable(t, 0)
	tbl.Log = nil
	_, err := testTxn(tbl, 0, Options{}).run(context.Background(), &recorder{actions: []deltaactions.Action{}})
	if !errors.Is(err, logstore.ErrNoPutIfAbsent) || failure.Of(err) != failure.Halt {
		t.Fatalf("err %v, want logstore.ErrNoPutIfAbsent (halt)", err)
	}
}

// A DV file's key reaches the attempt's objects (and so its intent record)
// before the file exists: a run killed during the put leaves nothing its
// record does not name.
func TestDVFileIsTrackedBeforeItIsCreated(t *testing.T) {
	ctx := context.Background()
	tbl, err := delta.OpenTable(ctx, fmt.Sprintf("mem://%s", t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	var objs attempt.Objects
	var tracked []string
	objs.OnTrack(func(key string) {
		if ok, err := tbl.Bucket.Exists(ctx, key); err != nil || ok {
			t.Errorf("tracked %s when it exists=%v (%v): want it tracked before it is created", key, ok, err)
		}
		tracked = append(tracked, key)
	})
	d := tableDVs{t: tbl, inlineMax: 1, objs: &objs}
	dvs, err := d.writeDVs(ctx, []*roaring64.Bitmap{roaring64.BitmapOf(1), roaring64.BitmapOf(2, 3, 4), roaring64.BitmapOf(5, 6)})
	if err != nil {
		t.Fatal(err)
	}
	if dvs[0].StorageType != "i" || dvs[1].StorageType != "u" || dvs[2].StorageType != "u" {
		t.Fatalf("storage types %s %s %s, want i u u", dvs[0].StorageType, dvs[1].StorageType, dvs[2].StorageType)
	}
	key, err := dvObjectKey(dvs[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(tracked) != 1 || tracked[0] != key {
		t.Fatalf("tracked %v, want [%s]", tracked, key)
	}
	if ok, err := tbl.Bucket.Exists(ctx, key); err != nil || !ok {
		t.Fatalf("DV file %s exists=%v (%v) after the write", key, ok, err)
	}
}
