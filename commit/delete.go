package commit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/deletegate"
)

// DeleteOptions tune DeleteRows.
type DeleteOptions struct {
	Options
	// Predicate is recorded as operationParameters.predicate (a JSON array
	// as a string, Spark style); default "[]".
	Predicate string
}

// DeleteResult reports a committed DELETE.
type DeleteResult struct {
	// Version is the committed version.
	Version int64
	// DeletedRows counts rows newly deleted (rows already deleted are not counted).
	DeletedRows int64
	// Files are the paths whose deletion vectors were rewritten.
	Files []string
}

// DeleteRows deletes rows of live files of snap the way Spark's
// deletion-vector DELETE does (merge-on-read): for each file P it commits
// remove(P, oldDV) + add(P, oldDV ∪ rows), both dataChange=true with the
// file's stats marked tightBounds=false, under one commitInfo with operation
// DELETE at WriteSerializable. rows maps a file's log path to physical row
// indexes. The table must allow deletion vectors.
//
// A concurrent commit that removed one of the files, or changed protocol or
// metadata, fails the delete with ErrConflict / ErrMetadataChanged (class
// Retry): the caller re-reads the table and tries again. Appends never
// conflict (the rows to delete are named by file and position).
func DeleteRows(ctx context.Context, t *delta.Table, snap *delta.Snapshot, rows map[string][]int64, opts DeleteOptions) (*DeleteResult, error) {
	if !DVsAllowed(snap) {
		return nil, fmt.Errorf("delete on %s: table does not allow deletion vectors (need feature deletionVectors and delta.enableDeletionVectors=true)", t.URL)
	}
	live := make(map[string]*actions.Add, len(snap.Files))
	for _, f := range snap.Files {
		live[f.Path] = f
	}
	paths := make([]string, 0, len(rows))
	for p, idx := range rows {
		if len(idx) > 0 {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	if len(paths) == 0 {
		return nil, fmt.Errorf("delete on %s: no rows given", t.URL)
	}
	var (
		olds    []*actions.Add
		bitmaps []*roaring64.Bitmap
		deleted int64
	)
	for _, p := range paths {
		f, ok := live[p]
		if !ok {
			return nil, fmt.Errorf("delete on %s: %s is not a live file at version %d", t.URL, p, snap.Version)
		}
		old, err := delta.ReadDV(ctx, t, f.DeletionVector)
		if err != nil {
			return nil, failure.With(failure.Quarantine, fmt.Errorf("delete on %s: %w", t.URL, err))
		}
		n := numRecords(f)
		nb := old.Clone()
		for _, i := range rows[p] {
			if i < 0 || (n >= 0 && i >= n) {
				return nil, fmt.Errorf("delete on %s: row %d of %s is outside its %d rows", t.URL, i, p, n)
			}
			nb.Add(uint64(i))
		}
		added := int64(nb.GetCardinality() - old.GetCardinality())
		if added == 0 {
			continue
		}
		deleted += added
		olds = append(olds, f)
		bitmaps = append(bitmaps, nb)
	}
	res := &DeleteResult{Version: -1, DeletedRows: deleted}
	if len(olds) == 0 {
		return res, nil
	}
	o := opts.Options.withDefaults()
	// This DELETE owns its attempt: the DV file it writes is deleted on
	// every exit unless the commit published it (or may have).
	objs := &attempt.Objects{}
	defer func() {
		if _, err := objs.Clean(ctx, deletegate.ForTable(t.Bucket, t.URL, deletegate.Options{}).Deleter(deletegate.Output)); err != nil {
			o.Logger.Warn("delete uncommitted deletion vector file", "table", t.URL, "error", err)
		}
	}()
	dvs, err := (tableDVs{t: t, objs: objs}).writeDVs(ctx, bitmaps)
	if err != nil {
		return nil, fmt.Errorf("delete on %s: %w", t.URL, err)
	}
	now := o.Now().UnixMilli()
	var acts []actions.Action
	read := map[string]bool{}
	dvAdded, dvUpdated := 0, 0
	for i, f := range olds {
		read[f.Path] = true
		stats, err := markWide(f.Stats)
		if err != nil {
			return nil, fmt.Errorf("delete on %s: stats of %s: %w", t.URL, f.Path, err)
		}
		if f.DeletionVector == nil {
			dvAdded++
		} else {
			dvUpdated++
		}
		rm := removeWithTimestamp(f, now, true)
		rm.Stats = stats
		acts = append(acts, actions.Action{Remove: rm})
		na := *f
		na.PartitionValues = rm.PartitionValues
		na.DataChange = true
		na.Stats = stats
		na.ParsedStats = nil
		na.DeletionVector = dvs[i]
		acts = append(acts, actions.Action{Add: &na})
		res.Files = append(res.Files, f.Path)
	}
	pred := opts.Predicate
	if pred == "" {
		pred = "[]"
	}
	tx := &Txn{
		Table:               t,
		Snapshot:            snap,
		Operation:           "DELETE",
		OperationParameters: map[string]any{"predicate": pred},
		OperationMetrics: map[string]string{
			"numRemovedFiles":           "0",
			"numAddedFiles":             "0",
			"numAddedChangeFiles":       "0",
			"numDeletionVectorsAdded":   strconv.Itoa(dvAdded),
			"numDeletionVectorsRemoved": "0",
			"numDeletionVectorsUpdated": strconv.Itoa(dvUpdated),
			"numDeletedRows":            strconv.FormatInt(deleted, 10),
			"numCopiedRows":             "0",
		},
		IsolationLevel: "WriteSerializable",
		CommitTags:     rowTrackingTags(snap, map[string]string{"noRowsCopied": "true", tagRowTrackingPreserved: "false", "restoresDeletedRows": "false"}),
		ReadFiles:      read,
		Actions:        acts,
		Objects:        objs,
		Options:        o,
	}
	v, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("delete on %s: %w", t.URL, err)
	}
	res.Version = v
	return res, nil
}

// DeleteWhere scans the live rows of snap's files (optionally only those
// for which files returns true) and deletes the rows for which match
// returns true, via DeleteRows. match sees the row in the table's physical
// data schema (see delta.FileScan) and its physical index.
func DeleteWhere(ctx context.Context, t *delta.Table, snap *delta.Snapshot, files func(*actions.Add) bool, match func(f *actions.Add, physIdx int64, row parquet.Row) bool, opts DeleteOptions) (*DeleteResult, error) {
	rows := map[string][]int64{}
	buf := make([]parquet.Row, 256)
	idx := make([]int64, 256)
	for _, f := range snap.Files {
		if files != nil && !files(f) {
			continue
		}
		sc, err := delta.OpenFileScan(ctx, t, snap, f, delta.ScanOptions{})
		if err != nil {
			return nil, fmt.Errorf("delete on %s: scan %s: %w", t.URL, f.Path, err)
		}
		for {
			n, err := sc.ReadRows(buf, idx)
			for k := 0; k < n; k++ {
				if match(f, idx[k], buf[k]) {
					rows[f.Path] = append(rows[f.Path], idx[k])
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				sc.Close()
				return nil, fmt.Errorf("delete on %s: scan %s: %w", t.URL, f.Path, err)
			}
		}
		sc.Close()
	}
	if len(rows) == 0 {
		return &DeleteResult{Version: -1}, nil
	}
	return DeleteRows(ctx, t, snap, rows, opts)
}
