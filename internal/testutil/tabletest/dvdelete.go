package tabletest

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/statscollect"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/attemptsweep"
	"github.com/compactord/compactord/internal/deletegate"
)

// DeleteOptions tune DeleteRows.
type DeleteOptions struct {
	commit.Options
	// Predicate is recorded as operationParameters.predicate (a JSON array
	// as a string, Spark style); default "[]".
	Predicate string
	// AttemptStaleAfter is the staleness window of the start-of-run sweep
	// of dead attempts' intent records (attemptsweep.AtStart; 0:
	// attempt.DefaultStaleAfter).
	AttemptStaleAfter time.Duration
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
//
// It is test support: the test tables' deletes, in the exact shape of the
// DELETE Databricks wrote (commit's shape test compares them), with
// Spark's conflict rule for a DV delete planned on a stale snapshot. The
// product's own data-changing commits go through commit.DML.
//
// Like compaction and retention, it first sweeps the dead attempts of
// killed runs (attemptsweep.AtStart, DeleteOptions.AttemptStaleAfter), and
// keeps an intent record of its own (attempt.Journal, operation "delete")
// naming its DV file before the file is created, deleted once the attempt
// cleaned up after itself.
func DeleteRows(ctx context.Context, t *delta.Table, snap *delta.Snapshot, rows map[string][]int64, opts DeleteOptions) (*DeleteResult, error) {
	if !commit.DVsAllowed(snap) {
		return nil, fmt.Errorf("delete on %s: table does not allow deletion vectors (need feature deletionVectors and delta.enableDeletionVectors=true)", t.URL)
	}
	// As compaction and retention do, the start cleans up after a killed
	// attempt (its intent record is dead).
	startLog := opts.Options.Logger
	if startLog == nil {
		startLog = hclog.NewNullLogger()
	}
	attemptsweep.AtStart(ctx, t, opts.AttemptStaleAfter, startLog, nil)
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
	o := opts.Options
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	// This one keeps an intent record, naming the DV file before it is
	// created, for the next run's sweep to find after a kill.
	journal, err := attempt.StartJournal(ctx, t.Bucket, "delete", attempt.JournalOptions{})
	if err != nil {
		return nil, fmt.Errorf("delete on %s: %w", t.URL, err)
	}
	// This DELETE owns its attempt: the DV file it writes is deleted on
	// every exit unless the commit published it (or may have).
	objs := &attempt.Objects{}
	objs.OnTrack(journal.Track)
	defer func() {
		if _, err := deletegate.EndAttempt(ctx, t.Bucket, t.URL, objs, journal, o.Logger); err != nil {
			o.Logger.Warn("delete uncommitted deletion vector file", "table", t.URL, "error", err)
		}
	}()
	// Tracked (and so cleaned unless committed) before it is created.
	dvs, err := delta.WriteTrackedDV(ctx, t, "", bitmaps, objs.Track)
	if err != nil {
		return nil, fmt.Errorf("delete on %s: %w", t.URL, err)
	}
	now := o.Now().UnixMilli()
	var acts []actions.Action
	read := map[string]bool{}
	dvAdded, dvUpdated := 0, 0
	for i, f := range olds {
		read[f.Path] = true
		stats, err := statscollect.MarkStatsWideChecked(f.Stats)
		if err != nil {
			return nil, fmt.Errorf("delete on %s: stats of %s: %w", t.URL, f.Path, err)
		}
		if f.DeletionVector == nil {
			dvAdded++
		} else {
			dvUpdated++
		}
		rm := tombstone(f, now)
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
	tx := &commit.Txn{
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

// numRecords returns a file's physical row count from its stats, or -1.
func numRecords(a *actions.Add) int64 {
	if n, ok, err := a.NumRecords(); err == nil && ok {
		return n
	}
	return -1
}

// tombstone is Spark's AddFile.removeWithTimestamp with dataChange=true:
// path, partition values (never nil), size, stats, tags, DV and row
// tracking fields copied, extendedFileMetadata set.
func tombstone(a *actions.Add, now int64) *actions.Remove {
	ext, size, pv := true, a.Size, a.PartitionValues
	if pv == nil {
		pv = map[string]*string{}
	}
	return &actions.Remove{Path: a.Path, DeletionTimestamp: &now, DataChange: true, ExtendedFileMetadata: &ext,
		PartitionValues: pv, Size: &size, Stats: a.Stats, Tags: a.Tags, DeletionVector: a.DeletionVector,
		BaseRowID: a.BaseRowID, DefaultRowCommitVersion: a.DefaultRowCommitVersion}
}

// tagRowTrackingPreserved is the commitInfo tag saying whether a commit
// preserved the rows' stable ids and commit versions.
const tagRowTrackingPreserved = "delta.rowTracking.preserved"

// rowTrackingTags sets delta.rowTracking.preserved=true when the
// snapshot's row tracking is enabled (a DV-only delete copies no row), as
// commit does for its own transactions.
func rowTrackingTags(snap *delta.Snapshot, tags map[string]string) map[string]string {
	if rt, err := delta.RowTrackingOf(snap); err != nil || !rt.Materialize() {
		return tags
	}
	out := maps.Clone(tags)
	out[tagRowTrackingPreserved] = "true"
	return out
}
