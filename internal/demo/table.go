package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	deltascan "github.com/compactord/compactord/delta/scan"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/deletegate"
)

// The demo (and the end-to-end test) need an ingestion job beside the
// daemon: this file writes a small Delta table of (id, name, amount) rows
// the way an appender would — real parquet files, add actions with stats,
// put-if-absent commits — and reads a table's live rows back to check it.

const demoSchema = `{"type":"struct","fields":[` +
	`{"name":"id","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"name","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"amount","type":"double","nullable":true,"metadata":{}}]}`

var demoWords = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}

// demoName and demoAmount derive a row's columns from its id, so content
// checks need only the ids.
func demoName(id int64) string    { return fmt.Sprintf("%s-%d", demoWords[id%int64(len(demoWords))], id) }
func demoAmount(id int64) float64 { return float64(id%1000) / 4 }

// The functions below take the engineInfo of their commits
// ("compactord-demo/VERSION").

// CreateTable writes version 0 of an empty table that allows deletion
// vectors (reader 3 / writer 7 with the deletionVectors feature).
func CreateTable(ctx context.Context, t *delta.Table, now time.Time, engineInfo string) error {
	created := now.UnixMilli()
	lines := []any{
		map[string]any{"commitInfo": map[string]any{"timestamp": created, "operation": "CREATE TABLE",
			"operationParameters": map[string]any{}, "engineInfo": engineInfo, "isBlindAppend": true}},
		map[string]any{"protocol": map[string]any{"minReaderVersion": 3, "minWriterVersion": 7,
			"readerFeatures": []string{"deletionVectors"}, "writerFeatures": []string{"deletionVectors"}}},
		map[string]any{"metaData": map[string]any{"id": uuid.NewString(),
			"format": map[string]any{"provider": "parquet", "options": map[string]any{}}, "schemaString": demoSchema,
			"partitionColumns": []string{}, "configuration": map[string]string{"delta.enableDeletionVectors": "true"},
			"createdTime": created}},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	if err := t.Log.PutIfAbsent(ctx, logpath.CommitKey(0), buf.Bytes()); err != nil {
		return fmt.Errorf("create table %s: %w", t.URL, err)
	}
	return nil
}

// writeDemoFile writes rows [firstID, firstID+n) as one parquet file and
// returns its add action (dataChange=true, stats with bounds).
func writeDemoFile(ctx context.Context, t *delta.Table, snap *delta.Snapshot, firstID, n int64, now time.Time) (*actions.Add, error) {
	schema, err := deltascan.DataSchemaOf(snap.Schema, &snap.Metadata)
	if err != nil {
		return nil, fmt.Errorf("data schema of %s: %w", t.URL, err)
	}
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, schema, parquet.Compression(&parquet.Snappy))
	rows := make([]parquet.Row, 0, n)
	minName, maxName := "", ""
	minAmt, maxAmt := 0.0, 0.0
	for i := int64(0); i < n; i++ {
		id := firstID + i
		name, amt := demoName(id), demoAmount(id)
		if i == 0 || name < minName {
			minName = name
		}
		if i == 0 || name > maxName {
			maxName = name
		}
		if i == 0 || amt < minAmt {
			minAmt = amt
		}
		if i == 0 || amt > maxAmt {
			maxAmt = amt
		}
		rows = append(rows, parquet.Row{
			parquet.Int64Value(id).Level(0, 1, 0),
			parquet.ByteArrayValue([]byte(name)).Level(0, 1, 1),
			parquet.DoubleValue(amt).Level(0, 1, 2),
		})
	}
	if _, err := w.WriteRows(rows); err != nil {
		return nil, fmt.Errorf("write parquet: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("close parquet: %w", err)
	}
	key := fmt.Sprintf("part-00000-%s-c000.snappy.parquet", uuid.NewString())
	if err := t.Bucket.WriteAll(ctx, key, buf.Bytes(), nil); err != nil {
		return nil, fmt.Errorf("write %s: %w", key, err)
	}
	stats, err := json.Marshal(map[string]any{
		"numRecords": n,
		"minValues":  map[string]any{"id": firstID, "name": minName, "amount": minAmt},
		"maxValues":  map[string]any{"id": firstID + n - 1, "name": maxName, "amount": maxAmt},
		"nullCount":  map[string]any{"id": 0, "name": 0, "amount": 0},
	})
	if err != nil {
		return nil, err
	}
	return &actions.Add{Path: key, PartitionValues: map[string]*string{}, Size: int64(buf.Len()),
		ModificationTime: now.UnixMilli(), DataChange: true, Stats: string(stats)}, nil
}

// Append commits files new files of rowsPerFile rows each, ids from
// firstID, as one blind append, and returns the committed version.
func Append(ctx context.Context, t *delta.Table, files int, rowsPerFile, firstID int64, now time.Time, engineInfo string) (_ int64, err error) {
	snap, err := delta.LoadSnapshot(ctx, t, -1)
	if err != nil {
		return 0, err
	}
	// The append owns its attempt: the files it wrote are deleted through
	// the deletion gate on every exit unless the commit published them (or
	// may have: an ambiguous commit keeps them).
	objs := &attempt.Objects{}
	defer func() {
		if _, cerr := objs.Clean(context.WithoutCancel(ctx), deletegate.ForTable(t.Bucket, t.URL, deletegate.Options{}).Deleter(deletegate.Output)); cerr != nil && err != nil {
			err = errors.Join(err, fmt.Errorf("delete uncommitted files of %s: %w", t.URL, cerr))
		}
	}()
	tx := &commit.Txn{Table: t, Snapshot: snap, Operation: "WRITE", IsBlindAppend: true,
		OperationParameters: map[string]any{"mode": "Append", "partitionBy": "[]"},
		IsolationLevel:      "Serializable",
		Objects:             objs,
		Options:             commit.Options{EngineInfo: engineInfo}}
	for i := 0; i < files; i++ {
		add, err := writeDemoFile(ctx, t, snap, firstID+int64(i)*rowsPerFile, rowsPerFile, now)
		if add != nil {
			objs.Track(add.Path)
		}
		if err != nil {
			return 0, err
		}
		tx.Actions = append(tx.Actions, actions.Action{Add: add})
	}
	v, err := tx.Commit(ctx)
	if err != nil {
		return 0, fmt.Errorf("append to %s: %w", t.URL, err)
	}
	return v, nil
}

// Delete deletes, with deletion vectors, the live rows whose id
// satisfies match, in the files chosen by files (nil: all), through
// commit's data-changing transaction (the path retention's deletes take):
// a concurrent blind append does not conflict, a winner that deleted other
// rows of the same file is merged, a compaction that moved the file is
// followed onto its output. Nothing matched: Version is -1.
func Delete(ctx context.Context, t *delta.Table, files func(*actions.Add) bool, match func(id int64) bool, engineInfo string) (_ *commit.DMLOutcome, err error) {
	snap, err := delta.LoadSnapshot(ctx, t, -1)
	if err != nil {
		return nil, err
	}
	var changes []*commit.FileChange
	buf := make([]parquet.Row, 256)
	idx := make([]int64, 256)
	for _, f := range snap.Files {
		if files != nil && !files(f) {
			continue
		}
		rows, err := matchingRows(ctx, t, snap, f, match, buf, idx)
		if err != nil {
			return nil, fmt.Errorf("delete on %s: scan %s: %w", t.URL, f.Path, err)
		}
		if !rows.IsEmpty() {
			changes = append(changes, &commit.FileChange{Read: f, Deleted: rows})
		}
	}
	if len(changes) == 0 {
		return &commit.DMLOutcome{Version: -1}, nil
	}
	// The DELETE owns its attempt: its DV file is deleted on every exit
	// unless the commit published it (or may have). After a commit there is
	// nothing of ours left to delete, so only a failed delete reports a
	// failed cleanup.
	objs := &attempt.Objects{}
	defer func() {
		if _, cerr := objs.Clean(context.WithoutCancel(ctx), deletegate.ForTable(t.Bucket, t.URL, deletegate.Options{}).Deleter(deletegate.Output)); cerr != nil && err != nil {
			err = errors.Join(err, fmt.Errorf("delete uncommitted deletion vector file of %s: %w", t.URL, cerr))
		}
	}()
	d := &commit.DML{
		Txn: &commit.Txn{
			Table: t, Snapshot: snap, Operation: "DELETE",
			OperationParameters: map[string]any{"predicate": "[]"},
			Objects:             objs,
			Options:             commit.Options{EngineInfo: engineInfo},
		},
		ReadWholeTable: true,
		Isolation:      commit.WriteSerializable,
		Changes:        changes,
	}
	return d.Commit(ctx)
}

// matchingRows returns the physical indexes of f's live rows whose id
// (the first column) satisfies match.
func matchingRows(ctx context.Context, t *delta.Table, snap *delta.Snapshot, f *actions.Add, match func(id int64) bool, buf []parquet.Row, idx []int64) (*roaring64.Bitmap, error) {
	sc, err := deltascan.OpenFileScan(ctx, t, snap, f, deltascan.ScanOptions{})
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	rows := roaring64.New()
	for {
		n, err := sc.ReadRows(buf, idx)
		for k := 0; k < n; k++ {
			if match(buf[k][0].Int64()) {
				rows.Add(uint64(idx[k]))
			}
		}
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Summary describes a table at its latest version.
type Summary struct {
	Version     int64
	Files       int
	Bytes       int64
	Rows        int64 // live rows (physical minus DV-deleted)
	DVFiles     int   // files with a deletion vector
	DeletedRows int64 // rows hidden by deletion vectors
}

func (s Summary) avgSize() int64 {
	if s.Files == 0 {
		return 0
	}
	return s.Bytes / int64(s.Files)
}

// Summarize reads a table's live ids by scanning every file (the real
// content, not the stats) and summarizes it.
func Summarize(ctx context.Context, t *delta.Table) (Summary, []int64, error) {
	snap, err := delta.LoadSnapshot(ctx, t, -1)
	if err != nil {
		return Summary{}, nil, err
	}
	s := Summary{Version: snap.Version, Files: len(snap.Files)}
	var ids []int64
	for _, f := range snap.Files {
		s.Bytes += f.Size
		if f.DeletionVector != nil {
			s.DVFiles++
			s.DeletedRows += f.NumDeleted()
		}
		got, err := scanIDs(ctx, t, snap, f)
		if err != nil {
			return s, nil, err
		}
		ids = append(ids, got...)
	}
	s.Rows = int64(len(ids))
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return s, ids, nil
}

func scanIDs(ctx context.Context, t *delta.Table, snap *delta.Snapshot, f *actions.Add) (ids []int64, err error) {
	sc, err := deltascan.OpenFileScan(ctx, t, snap, f, deltascan.ScanOptions{})
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", f.Path, err)
	}
	defer func() { err = errors.Join(err, sc.Close()) }()
	rows := make([]parquet.Row, 512)
	idx := make([]int64, 512)
	for {
		n, rerr := sc.ReadRows(rows, idx)
		for _, r := range rows[:n] {
			ids = append(ids, r[0].Int64())
			if demoName(r[0].Int64()) != string(r[1].ByteArray()) || demoAmount(r[0].Int64()) != r[2].Double() {
				return nil, fmt.Errorf("scan %s: row id %d has name %q amount %v, not what the appender wrote",
					f.Path, r[0].Int64(), r[1].ByteArray(), r[2].Double())
			}
		}
		if rerr == io.EOF {
			return ids, nil
		}
		if rerr != nil {
			return nil, fmt.Errorf("scan %s: %w", f.Path, rerr)
		}
	}
}
