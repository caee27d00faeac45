package tabletest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/parquet-go/parquet-go"
	"gocloud.dev/blob"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	deltadv "github.com/compactord/compactord/delta/dv"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/delta/logstore"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/objstore"
)

// Row is the schema of the generated tables: {id long, v string}.
type Row struct {
	ID *int64  `parquet:"id"`
	V  *string `parquet:"v"`
}

// Schema is the Delta schema string of Row.
const Schema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"v","type":"string","nullable":true,"metadata":{}}]}`

// Open opens the table at url (which may hold no table yet) and closes it
// when the test ends.
func Open(t testing.TB, url string) *delta.Table {
	t.Helper()
	tbl, err := delta.OpenTable(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	return tbl
}

// Keys lists every object key of tbl's bucket (the log's too), sorted,
// through delta.List (which starts a local listing again when a file went
// while it was read: an upload's temp file of a worker still running).
func Keys(t testing.TB, tbl *delta.Table) []string {
	t.Helper()
	var keys []string
	if err := delta.List(context.Background(), tbl.Bucket, nil, func() { keys = nil }, func(o *blob.ListObject) {
		keys = append(keys, o.Key)
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// AddLine is a as one line of a commit file.
func AddLine(t testing.TB, a *actions.Add) string {
	t.Helper()
	b, err := actions.MarshalAction(actions.Action{Add: a})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// PutCommit writes lines, one action a line, as commit version v of tbl
// (put-if-absent, as a writer commits).
func PutCommit(t testing.TB, tbl *delta.Table, v int64, lines []string) {
	t.Helper()
	if err := tbl.Log.PutIfAbsent(context.Background(), logpath.CommitKey(v), []byte(strings.Join(lines, "\n")+"\n")); err != nil {
		t.Fatal(err)
	}
}

// NewTableWithLyingStats creates an empty table at url and commits, as
// another writer at version 1, n files of 10 rows (ids 0 to 10n-1, in
// order) of which file bad has stats claiming one row more than its footer
// holds: a rewrite that reads it finds it corrupt. It returns the adds.
func NewTableWithLyingStats(t testing.TB, url string, n, bad int) (*delta.Table, []*actions.Add) {
	t.Helper()
	tbl := NewTable(t, url)
	var adds []*actions.Add
	var lines []string
	for i := range n {
		a := WriteDataFile(t, tbl, IDRange(int64(i)*10, 10))
		if i == bad {
			a.Stats = strings.Replace(a.Stats, `"numRecords":10`, `"numRecords":11`, 1)
		}
		adds = append(adds, a)
		lines = append(lines, AddLine(t, a))
	}
	lines = append(lines, `{"commitInfo":{"operation":"WRITE","txnId":"w1"}}`)
	PutCommit(t, tbl, 1, lines)
	return tbl, adds
}

// NewTable creates a DV-enabled table at url whose version 0 holds one
// file per ids slice.
func NewTable(t testing.TB, url string, files ...[]int64) *delta.Table {
	return NewTableWith(t, url, Spec{}, files...)
}

// Spec adds features and properties to a generated table.
type Spec struct {
	// WriterFeatures are added to deletionVectors.
	WriterFeatures []string
	// Config are more table properties.
	Config map[string]string
	// ICT, when set, is version 0's inCommitTimestamp.
	ICT int64
	// Extra are more action lines for version 0 (e.g. domainMetadata).
	Extra []string
	// Fresh sets every file's modificationTime to now (inside any settle
	// window); otherwise it is 1, older than any.
	Fresh bool
}

// NewTableWith is NewTable with the features and properties of spec.
func NewTableWith(t testing.TB, url string, spec Spec, files ...[]int64) *delta.Table {
	t.Helper()
	tbl := Open(t, url)
	wf, _ := json.Marshal(append([]string{"deletionVectors"}, spec.WriterFeatures...))
	conf := map[string]string{"delta.enableDeletionVectors": "true"}
	for k, v := range spec.Config {
		conf[k] = v
	}
	cj, _ := json.Marshal(conf)
	ci := `{"commitInfo":{"operation":"CREATE TABLE","txnId":"create"}}`
	if spec.ICT != 0 {
		ci = fmt.Sprintf(`{"commitInfo":{"inCommitTimestamp":%d,"timestamp":%d,"operation":"CREATE TABLE","txnId":"create"}}`, spec.ICT, spec.ICT)
	}
	lines := []string{
		ci,
		fmt.Sprintf(`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":%s}}`, wf),
		fmt.Sprintf(`{"metaData":{"id":"%s","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":[],"configuration":%s,"createdTime":1}}`, uuid.NewString(), Schema, cj),
	}
	lines = append(lines, spec.Extra...)
	for _, ids := range files {
		a := WriteDataFile(t, tbl, ids)
		if spec.Fresh {
			a.ModificationTime = time.Now().UnixMilli()
		}
		lines = append(lines, AddLine(t, a))
	}
	PutCommit(t, tbl, 0, lines)
	return tbl
}

// WriteDataFile writes ids as a new parquet file and returns its add action
// (dataChange=true, stats with min/max/nullCount).
func WriteDataFile(t testing.TB, tbl *delta.Table, ids []int64) *actions.Add {
	t.Helper()
	return idsAdd(WriteParquet(t, tbl, idRows(ids)), ids)
}

// idRows are the rows of ids: v is "v" and the id.
func idRows(ids []int64) []Row {
	rows := make([]Row, len(ids))
	for i, id := range ids {
		id := id
		v := fmt.Sprintf("v%d", id)
		rows[i] = Row{ID: &id, V: &v}
	}
	return rows
}

// WriteParquet writes rows as a new parquet data file under the table root
// (not committed) and returns an add action with its path and size.
func WriteParquet[R any](t testing.TB, tbl *delta.Table, rows []R) *actions.Add {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[R](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("part-00000-%s-c000.parquet", uuid.NewString())
	if err := tbl.Bucket.WriteAll(context.Background(), key, buf.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
	return &actions.Add{Path: key, PartitionValues: map[string]*string{}, Size: int64(buf.Len()), ModificationTime: 1, DataChange: true}
}

// idsAdd sets the stats of a file of Row values with ids on a.
func idsAdd(a *actions.Add, ids []int64) *actions.Add {
	lo, hi := slices.Min(ids), slices.Max(ids)
	a.Stats = fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d,"v":"v%d"},"maxValues":{"id":%d,"v":"v%d"},"nullCount":{"id":0,"v":0},"tightBounds":true}`,
		len(ids), lo, lo, hi, hi)
	return a
}

// FileIDs reads a data file's ids in physical order (our own reader, not
// the delta scan: an independent check).
func FileIDs(t testing.TB, tbl *delta.Table, a *actions.Add) []int64 {
	t.Helper()
	rows := FileInt64s(t, tbl, a, "id")
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = -1
		if r[0] != nil {
			ids[i] = *r[0]
		}
	}
	return ids
}

// WantTheRestInOneFile checks that the latest snapshot of tbl holds the
// file at kept (one a run had to leave alone) and one more file, which
// holds the ids of all but those of gone (the rows of kept); it returns the
// snapshot.
func WantTheRestInOneFile(t testing.TB, tbl *delta.Table, kept string, all, gone []int64) *delta.Snapshot {
	t.Helper()
	snap := Latest(t, tbl)
	var others []int64
	for _, a := range snap.Files {
		if a.Path != kept {
			others = append(others, FileIDs(t, tbl, a)...)
		}
	}
	slices.Sort(others)
	want := slices.DeleteFunc(slices.Clone(all), func(id int64) bool { return slices.Contains(gone, id) })
	if len(snap.Files) != 2 || !slices.Equal(others, want) {
		t.Fatalf("%d files, those beside %s holding %v; want %s and one file holding %v", len(snap.Files), kept, others, kept, want)
	}
	return snap
}

// FileInt64s reads the named top-level INT64 columns of a data file, row
// by row in physical order, with parquet-go alone (not the delta scan): nil
// for a null, or for every row when the file lacks the column. The first
// name must be a column of the file.
func FileInt64s(t testing.TB, tbl *delta.Table, a *actions.Add, names ...string) [][]*int64 {
	t.Helper()
	ctx := context.Background()
	key, err := a.Key()
	if err != nil {
		t.Fatal(err)
	}
	data, err := tbl.Bucket.ReadAll(ctx, key)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("open %s: %v", key, err)
	}
	cols := make([]int, len(names))
	for i, n := range names {
		cols[i] = -1
		if c, ok := f.Schema().Lookup(n); ok {
			cols[i] = c.ColumnIndex
		} else if i == 0 {
			t.Fatalf("%s has no %s column", key, n)
		}
	}
	var out [][]*int64
	testutil.EachRow(t, f, key, func(r parquet.Row) {
		vals := make([]*int64, len(names))
		r.Range(func(col int, vs []parquet.Value) bool {
			for i, c := range cols {
				if c == col && len(vs) > 0 && !vs[0].IsNull() {
					v := vs[0].Int64()
					vals[i] = &v
				}
			}
			return true
		})
		out = append(out, vals)
	})
	return out
}

// LiveIDs reads the whole table at its Latest version: id -> occurrences.
func LiveIDs(t testing.TB, tbl *delta.Table) (map[int64]int, *delta.Snapshot) {
	t.Helper()
	ctx := context.Background()
	snap, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]int{}
	for _, f := range snap.Files {
		dv, err := delta.ReadDV(ctx, tbl, f.DeletionVector)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range FileIDs(t, tbl, f) {
			if !dv.Contains(uint64(i)) {
				out[id]++
			}
		}
	}
	return out, snap
}

// IDRange returns lo, lo+1, ..., lo+n-1.
func IDRange(lo, n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = lo + int64(i)
	}
	return out
}

// WantIDs checks that the table holds exactly the ids of want, Once each.
func WantIDs(t testing.TB, tbl *delta.Table, want map[int64]bool) {
	t.Helper()
	got, snap := LiveIDs(t, tbl)
	var resurrected, lost, dup []int64
	for id, n := range got {
		if !want[id] {
			resurrected = append(resurrected, id)
		}
		if n > 1 {
			dup = append(dup, id)
		}
	}
	for id := range want {
		if got[id] == 0 {
			lost = append(lost, id)
		}
	}
	if len(resurrected)+len(lost)+len(dup) > 0 {
		sort.Slice(resurrected, func(i, j int) bool { return resurrected[i] < resurrected[j] })
		t.Fatalf("version %d: %d resurrected %v, %d lost, %d duplicated", snap.Version, len(resurrected), Head(resurrected), len(lost), len(dup))
	}
}

// Head returns the first ten ids of x (for failure messages).
func Head(x []int64) []int64 {
	if len(x) > 10 {
		return x[:10]
	}
	return x
}

// Batches returns n id slices of size ids each, [0, size), [size, 2*size),
// ...: the files of NewTable.
func Batches(n int, size int64) [][]int64 {
	out := make([][]int64, n)
	for i := range out {
		out[i] = IDRange(int64(i)*size, size)
	}
	return out
}

// IDSet returns the set of the ids of ranges.
func IDSet(ranges ...[]int64) map[int64]bool {
	m := map[int64]bool{}
	for _, r := range ranges {
		for _, id := range r {
			m[id] = true
		}
	}
	return m
}

// Latest loads the table's latest snapshot.
func Latest(t testing.TB, tbl *delta.Table) *delta.Snapshot {
	t.Helper()
	snap, err := delta.LoadSnapshot(context.Background(), tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// ByID finds the live file holding id and id's physical index in it.
func ByID(t testing.TB, tbl *delta.Table, snap *delta.Snapshot, id int64) (*actions.Add, int64) {
	t.Helper()
	for _, f := range snap.Files {
		for i, x := range FileIDs(t, tbl, f) {
			if x == id {
				return f, int64(i)
			}
		}
	}
	t.Fatalf("id %d not in any live file at version %d", id, snap.Version)
	return nil, 0
}

// DeleteIDs commits a DV DELETE of ids (at the table's Latest version).
func DeleteIDs(t testing.TB, tbl *delta.Table, ids ...int64) int64 {
	t.Helper()
	snap := Latest(t, tbl)
	rows := map[string][]int64{}
	for _, id := range ids {
		f, i := ByID(t, tbl, snap, id)
		rows[f.Path] = append(rows[f.Path], i)
	}
	res, err := DeleteRows(context.Background(), tbl, snap, rows, DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Version
}

// CowDelete rewrites the file holding ids without them (copy-on-write).
func CowDelete(t testing.TB, tbl *delta.Table, ids ...int64) int64 {
	t.Helper()
	snap := Latest(t, tbl)
	f, _ := ByID(t, tbl, snap, ids[0])
	dv, err := delta.ReadDV(context.Background(), tbl, f.DeletionVector)
	if err != nil {
		t.Fatal(err)
	}
	drop := IDSet(ids)
	var keep []int64
	for i, id := range FileIDs(t, tbl, f) {
		if !dv.Contains(uint64(i)) && !drop[id] {
			keep = append(keep, id)
		}
	}
	na := WriteDataFile(t, tbl, keep)
	tx := &commit.Txn{Table: tbl, Snapshot: snap, Operation: "DELETE", IsolationLevel: "WriteSerializable",
		ReadFiles: map[string]bool{f.Path: true},
		Actions:   []actions.Action{{Remove: &actions.Remove{Path: f.Path, DataChange: true, DeletionVector: f.DeletionVector}}, {Add: na}}}
	v, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// DeletesBeforePuts is a commit BeforePut hook: before the i-th put it
// deletes ids[i] (DeleteIDs, a concurrent winner the commit then meets),
// and nothing after the last; calls, when not nil, counts the puts.
func DeletesBeforePuts(t testing.TB, tbl *delta.Table, calls *int, ids ...int64) func(context.Context, int64) error {
	n := 0
	return func(context.Context, int64) error {
		if n < len(ids) {
			DeleteIDs(t, tbl, ids[n])
		}
		n++
		if calls != nil {
			*calls = n
		}
		return nil
	}
}

// Once runs f before the first commit attempt only: the compaction always
// loses its first race to what f commits.
func Once(f func(v int64)) func(context.Context, int64) error {
	var done atomic.Bool
	return func(_ context.Context, v int64) error {
		if done.CompareAndSwap(false, true) {
			f(v)
		}
		return nil
	}
}

// Committed returns the actions of version v.
func Committed(t testing.TB, tbl *delta.Table, v int64) []actions.Action {
	t.Helper()
	acts, err := delta.ReadCommit(context.Background(), tbl, v)
	if err != nil {
		t.Fatal(err)
	}
	return acts
}

// Logger returns a debug logger that writes to the test log.
func Logger(t testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: logWriter{t}, Level: hclog.Debug})
}

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// CopyFixture copies a shared fixture table (../shared/testdata/delta) to a
// temporary directory and opens the copy.
func CopyFixture(t testing.TB, name string) *delta.Table {
	t.Helper()
	return Open(t, "file://"+testutil.CopyDeltaTable(t, name))
}

// DayTableSchema is the schema of NewDayTable: Row plus a date column day.
const DayTableSchema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"v","type":"string","nullable":true,"metadata":{}},{"name":"day","type":"date","nullable":true,"metadata":{}}]}`

// DayString is the date d days after 2026-01-01 (yyyy-mm-dd).
func DayString(d int) string {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, d).Format("2006-01-02")
}

// NewDayTable creates a DV-enabled table partitioned by a date column `day`,
// with one file of 10 fresh ids per entry of days (file k holds ids
// 10k..10k+9); it returns the ids written per day.
func NewDayTable(t testing.TB, days []int) (*delta.Table, map[int][]int64) {
	t.Helper()
	tbl := Open(t, "file://"+filepath.ToSlash(t.TempDir()))
	lines := []string{
		`{"commitInfo":{"operation":"CREATE TABLE","txnId":"create"}}`,
		`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}`,
		fmt.Sprintf(`{"metaData":{"id":"day-table","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":["day"],"configuration":{"delta.enableDeletionVectors":"true"},"createdTime":1}}`, DayTableSchema),
	}
	byDay := map[int][]int64{}
	for k, d := range days {
		ids := IDRange(int64(k)*10, 10)
		byDay[d] = append(byDay[d], ids...)
		a := WriteDataFile(t, tbl, ids)
		day := DayString(d)
		a.PartitionValues = map[string]*string{"day": &day}
		lines = append(lines, AddLine(t, a))
	}
	PutCommit(t, tbl, 0, lines)
	return tbl, byDay
}

// DisableDVs commits a metadata update that turns deletion vectors off
// (delta.enableDeletionVectors removed, other properties kept), so deletes
// must copy on write.
func DisableDVs(t testing.TB, tbl *delta.Table) {
	t.Helper()
	snap := Latest(t, tbl)
	meta := snap.Metadata
	meta.Configuration = maps.Clone(meta.Configuration)
	delete(meta.Configuration, "delta.enableDeletionVectors")
	tx := &commit.Txn{Table: tbl, Snapshot: snap, Operation: "SET TBLPROPERTIES", Actions: []actions.Action{{Metadata: &meta}}}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// LandsLate is a log store that holds the first put back and reports an
// unknown outcome (a request that timed out on our side but is still in
// flight); Land makes it reach the store afterwards.
type LandsLate struct {
	logstore.LogStore
	key  string
	data []byte
}

// PutIfAbsent holds back the first put, answering objstore.ErrAmbiguous, and
// passes the others through.
func (l *LandsLate) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if l.key == "" {
		l.key, l.data = key, data
		return fmt.Errorf("request timed out: %w", objstore.ErrAmbiguous)
	}
	return l.LogStore.PutIfAbsent(ctx, key, data)
}

// Land writes the held-back put.
func (l *LandsLate) Land(ctx context.Context) error {
	return l.LogStore.PutIfAbsent(ctx, l.key, l.data)
}

// StoreObjects lists every object of tbl outside _delta_log/.
func StoreObjects(t testing.TB, tbl *delta.Table) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, k := range Keys(t, tbl) {
		if !strings.HasPrefix(k, logpath.LogDir) {
			out[k] = true
		}
	}
	return out
}

// LogReferenced returns every object key a commit of the table names: data
// files of adds and removes and their `u` deletion-vector files. An object
// outside the log that is not among them is an orphan.
func LogReferenced(t testing.TB, tbl *delta.Table) map[string]bool {
	t.Helper()
	ref := map[string]bool{}
	addDV := func(dv *actions.DeletionVector) {
		if dv != nil && dv.StorageType == "u" {
			k, err := deltadv.DVFileKey(dv.PathOrInlineDv)
			if err != nil {
				t.Fatal(err)
			}
			ref[k] = true
		}
	}
	for v := int64(0); v <= Latest(t, tbl).Version; v++ {
		for _, a := range Committed(t, tbl, v) {
			switch {
			case a.Add != nil:
				k, err := a.Add.Key()
				if err != nil {
					t.Fatal(err)
				}
				ref[k] = true
				addDV(a.Add.DeletionVector)
			case a.Remove != nil:
				k, err := actions.DecodePath(a.Remove.Path)
				if err != nil {
					t.Fatal(err)
				}
				ref[k] = true
				addDV(a.Remove.DeletionVector)
			}
		}
	}
	return ref
}
