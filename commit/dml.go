package commit

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/compactord/compactord/composition"
	"github.com/compactord/compactord/delta"
	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/predicate"
	"github.com/compactord/compactord/delta/props"
	"github.com/compactord/compactord/delta/statscollect"
	"github.com/compactord/compactord/failure"
)

// Conflict kinds of data-changing (DML) transactions, counted in
// DMLOutcome.Conflicts.
const (
	// KindDVMerged: a winner added a DV to a file this transaction also
	// deletes from, on disjoint rows: the two DVs were merged.
	KindDVMerged = "sameFileDVMerged"
	// KindReverseRemapped: a winning compaction moved a file this
	// transaction deletes from; the deletions were remapped onto its output.
	KindReverseRemapped = "reverseRemapped"
	// KindSkippedByStats: a winner's added file could not match any read
	// (conflict-time data skipping).
	KindSkippedByStats = "addedFileSkippedByStats"
	// KindConcurrentAppend: a winner added a file the reads could match.
	KindConcurrentAppend = "concurrentAppend"
	// KindConcurrentDelete: a winner removed or rewrote a file this
	// transaction read or deletes from, and it could not be reconciled.
	KindConcurrentDelete = "concurrentDelete"
	// KindConcurrentTxn: a winner wrote a txn for an appId this transaction read.
	KindConcurrentTxn = "concurrentTransaction"
	// KindSkippingFallback: data skipping could not evaluate a file's stats
	// and fell back to the conservative check.
	KindSkippingFallback = "dataSkippingFallback"
)

// Isolation levels of data-changing transactions.
const (
	Serializable      = props.IsolationSerializable
	WriteSerializable = props.IsolationWriteSerializable
)

// TableIsolation returns the table's isolation level for data-changing
// commits: delta.isolationLevel, Serializable by default (Delta OSS).
func TableIsolation(snap *delta.Snapshot) string {
	return snap.Properties().IsolationLevel
}

// FileChange is one file a data-changing transaction deletes rows from.
type FileChange struct {
	// Read is the file as the transaction read it (path, read-time DV).
	Read *deltaactions.Add
	// Deleted are the physical row indexes this transaction deletes, not
	// counting rows already in Read's DV. Whole removes every live row;
	// Deleted may then still list them, to count them when Read has no
	// numRecords statistic.
	Deleted *roaring64.Bitmap
	// Whole removes the file entirely (every live row matched).
	Whole bool
	// Rewritten, when non-nil, makes this a copy-on-write change: the file
	// is removed and these adds (its surviving rows) are added. Such a
	// change cannot be reconciled with a winner that touched the file.
	Rewritten []*deltaactions.Add
}

// DML is a data-changing transaction (a retention delete) with Delta's full
// conflict checks for its isolation level, conflict-time data skipping in
// the added-files check, same-file deletion-vector merge, and reverse
// reconciliation against winning compactions.
type DML struct {
	// Txn carries the table, read snapshot, operation and commit options.
	// Its Actions and ReadFiles are not used.
	Txn *Txn
	// Reads are the transaction's read predicates (partition and data).
	Reads []predicate.Read
	// ReadWholeTable disables data skipping: every added file conflicts.
	ReadWholeTable bool
	// Matcher evaluates the reads on a winner's added files.
	Matcher predicate.Matcher
	// ReadOnly are paths the transaction scanned without changing them.
	ReadOnly map[string]bool
	// ReadAppIDs are txn appIds whose versions the transaction depended on.
	ReadAppIDs map[string]bool
	// Changes are the files the transaction deletes rows from.
	Changes []*FileChange
	// Isolation is Serializable or WriteSerializable (TableIsolation).
	Isolation string

	dvs dvIO
	// keys match a winner's file actions to the transaction's files
	// however the winner spells a path; targets, readOnly and the
	// winners' actions are by that key (readOnly is ReadOnly so, built at
	// the first winner).
	keys      delta.FileKeys
	readOnly  map[string]bool
	targets   map[string]*dmlTarget
	conflicts map[string]int
	deleted   int64
}

// DMLOutcome is what a committed data-changing transaction did.
type DMLOutcome struct {
	Version        int64          `json:"committedVersion"`
	FilesRemoved   int            `json:"filesRemoved"`
	FilesWithNewDV int            `json:"filesWithNewDV"`
	FilesAdded     int            `json:"filesAdded"`
	RowsDeleted    int64          `json:"rowsDeleted"`
	Conflicts      map[string]int `json:"conflicts"`
}

// dmlTarget is one file this transaction will change, followed through the
// winners: the original file, or after a reverse remap, a compaction output.
type dmlTarget struct {
	base   *deltaactions.Add   // live post-image as of the last checked winner
	baseDV *roaring64.Bitmap   // base's DV (nil until loaded; empty = none)
	ours   *roaring64.Bitmap   // rows of base this transaction deletes (disjoint from baseDV)
	whole  bool                // remove the file entirely
	cow    []*deltaactions.Add // copy-on-write replacement files
}

// Commit commits the transaction, reconciling with concurrent winners where
// that is provably safe. An unresolvable conflict returns an error wrapping
// ErrConflict (class Retry): run the operation again from a new snapshot.
func (d *DML) Commit(ctx context.Context) (*DMLOutcome, error) {
	if d.Txn == nil || d.Txn.Snapshot == nil {
		return nil, fmt.Errorf("commit: DML transaction needs a Txn with a read snapshot")
	}
	if d.dvs == nil {
		d.dvs = tableDVs{t: d.Txn.Table, objs: d.Txn.Objects}
	}
	if err := d.init(); err != nil {
		return nil, err
	}
	d.Txn.CommitTags = rowTrackingTags(d.Txn.Snapshot, d.Txn.CommitTags)
	v, err := d.Txn.run(ctx, d)
	if err != nil {
		return nil, err
	}
	out := &DMLOutcome{Version: v, Conflicts: d.conflicts, RowsDeleted: d.deleted}
	for _, t := range d.targets {
		switch {
		case t.cow != nil:
			out.FilesRemoved++
			out.FilesAdded += len(t.cow)
		case t.whole:
			out.FilesRemoved++
		default:
			out.FilesWithNewDV++
		}
	}
	return out, nil
}

func (d *DML) tableURL() string {
	if d.Txn.Table == nil {
		return ""
	}
	return d.Txn.Table.URL
}

// init prepares the per-file state from Changes.
func (d *DML) init() error {
	if d.Isolation == "" {
		d.Isolation = TableIsolation(d.Txn.Snapshot)
	}
	d.Txn.IsolationLevel = d.Isolation
	d.conflicts = map[string]int{}
	d.targets = map[string]*dmlTarget{}
	if d.Txn.Table != nil {
		d.keys = d.Txn.Table.FileKeys()
	}
	for _, c := range d.Changes {
		if _, dup := d.targets[d.keys.Of(c.Read.Path)]; dup {
			return fmt.Errorf("commit: file %s changed twice in one transaction", c.Read.Path)
		}
		t := &dmlTarget{base: c.Read, whole: c.Whole, cow: c.Rewritten, ours: roaring64.New()}
		if c.Deleted != nil {
			t.ours = c.Deleted.Clone()
		}
		d.targets[d.keys.Of(c.Read.Path)] = t
	}
	return nil
}

func (d *DML) conflict(kind, format string, args ...any) error {
	d.conflicts[kind]++
	return failure.With(failure.Retry, fmt.Errorf("%s: %s: %w", kind, fmt.Sprintf(format, args...), ErrConflict))
}

// observe checks one winning commit in Delta's order: protocol, metadata,
// domain metadata, txn appIds, deleted files (reconciling where possible),
// then added files the reads should have seen.
func (d *DML) observe(ctx context.Context, version int64, actions []deltaactions.Action) error {
	if d.readOnly == nil {
		d.readOnly = make(map[string]bool, len(d.ReadOnly))
		for f, ok := range d.ReadOnly {
			if ok {
				d.readOnly[d.keys.Of(f)] = true
			}
		}
	}
	removes := map[string]*deltaactions.Remove{}
	adds := map[string]*deltaactions.Add{}
	var addOrder []*deltaactions.Add
	blind := false
	for _, a := range actions {
		switch {
		case a.Protocol != nil, a.Metadata != nil:
			d.conflicts[KindMetadata]++
			return failure.With(failure.Retry, fmt.Errorf("winning commit %d: %w", version, ErrMetadataChanged))
		case a.Txn != nil && d.ReadAppIDs[a.Txn.AppID]:
			return d.conflict(KindConcurrentTxn, "winning commit %d wrote txn %s", version, a.Txn.AppID)
		case a.Remove != nil:
			removes[d.keys.Of(a.Remove.Path)] = a.Remove
		case a.Add != nil:
			adds[d.keys.Of(a.Add.Path)] = a.Add
			addOrder = append(addOrder, a.Add)
		case a.CommitInfo != nil:
			var b bool
			if raw, ok := a.CommitInfo["isBlindAppend"]; ok && json.Unmarshal(raw, &b) == nil {
				blind = b
			}
		}
	}
	// Deleted files, by key for a deterministic order.
	paths := make([]string, 0, len(removes))
	for p := range removes {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	handled := map[string]bool{}
	checkAll := false
	for _, p := range paths {
		rm := removes[p]
		t, ours := d.targets[p]
		if !ours {
			if d.readOnly[p] && rm.DataChange {
				if re, ok := adds[p]; ok && re.DeletionVector != nil {
					// A DV update: the re-added file holds a subset of the
					// rows we read, so nothing we saw changed into our reads.
					handled[p] = true
					continue
				}
				// A rewrite of a file we read but delete nothing from. We
				// found no row of it matching our reads, so removing its
				// rows cannot change what we delete; rows it re-adds (for
				// example an UPDATE moving a row into our range) are in the
				// winner's new files, which are therefore all checked below
				// whatever the isolation level. This replaces Delta's
				// delete-read check for such files (a documented departure:
				// it is what lets retention run beside upserts).
				checkAll = true
			}
			// dataChange=false removes (compaction) move rows we read
			// without changing them; other files are not ours.
			continue
		}
		if err := d.resolveRemoved(ctx, version, t, rm, adds, handled); err != nil {
			return err
		}
	}
	// Added files the transaction should have read.
	if checkAll || d.Isolation == Serializable || (d.Isolation == WriteSerializable && !blind) {
		for _, a := range addOrder {
			if !a.DataChange || handled[d.keys.Of(a.Path)] {
				continue
			}
			if rm, ok := removes[d.keys.Of(a.Path)]; ok && rm.DataChange && a.DeletionVector != nil {
				// An in-place DV update of a file we did not read: its rows
				// are a subset of a file that existed at our read version.
				continue
			}
			keep, err := d.Matcher.MayMatchReads(d.Reads, d.ReadWholeTable, a)
			if err != nil {
				d.conflicts[KindSkippingFallback]++
				d.Txn.Options.withDefaults().Logger.Warn("conflict-time data skipping fell back to the conservative check",
					"table", d.tableURL(), "winner", version, "file", a.Path, "error", err)
			}
			if keep {
				return d.conflict(KindConcurrentAppend, "winning commit %d added %s, which this transaction's reads could match", version, a.Path)
			}
			d.conflicts[KindSkippedByStats]++
		}
	}
	return nil
}

// resolveRemoved handles a winner's remove of a file this transaction
// changes: same-file DV merge, reverse remap onto a compaction output, or a
// conflict.
func (d *DML) resolveRemoved(ctx context.Context, version int64, t *dmlTarget, rm *deltaactions.Remove, adds map[string]*deltaactions.Add, handled map[string]bool) error {
	p, key := rm.Path, d.keys.Of(rm.Path)
	if rm.DeletionVector.UniqueID() != t.base.DeletionVector.UniqueID() {
		return d.conflict(KindConcurrentDelete, "winning commit %d removed %s with DV %q, not the version %q this transaction read",
			version, p, rm.DeletionVector.UniqueID(), t.base.DeletionVector.UniqueID())
	}
	if t.cow != nil {
		return d.conflict(KindConcurrentDelete, "winning commit %d removed %s, which this transaction rewrites copy-on-write", version, p)
	}
	if err := d.loadBase(ctx, t); err != nil {
		return err
	}
	re, readded := adds[key]
	switch {
	case readded && re.DeletionVector != nil && rm.DataChange:
		// Same-file DV merge.
		w, err := d.dvs.readDV(ctx, re.DeletionVector)
		if err != nil {
			return fmt.Errorf("read winner DV of %s at version %d: %w", p, version, err)
		}
		if miss := roaring64.AndNot(t.baseDV, w); !miss.IsEmpty() {
			return d.conflict(KindConcurrentDelete, "winner DV of %s at version %d drops %d earlier deletions", p, version, miss.GetCardinality())
		}
		mine := t.ours
		if t.whole {
			mine = liveRows(t.base, t.baseDV)
		}
		if overlap := roaring64.And(mine, w); !overlap.IsEmpty() {
			return d.conflict(KindConcurrentDelete, "winning commit %d deleted %d of the same rows of %s", version, overlap.GetCardinality(), p)
		}
		t.base, t.baseDV = re, w
		handled[key] = true
		d.conflicts[KindDVMerged]++
		return nil
	case !rm.DataChange && composition.HasTags(rm.Tags):
		return d.reverseRemap(ctx, version, t, rm, adds, handled)
	}
	return d.conflict(KindConcurrentDelete, "winning commit %d removed %s, which this transaction deletes from", version, p)
}

// reverseRemap moves this transaction's deletions on t onto the output of a
// winning compaction that removed t.base (seed Case 4b), using the
// compactedInto/compactionInfo tags on the winner's remove.
func (d *DML) reverseRemap(ctx context.Context, version int64, t *dmlTarget, rm *deltaactions.Remove, adds map[string]*deltaactions.Add, handled map[string]bool) error {
	p := rm.Path
	comp, err := composition.Parse(p, rm.Tags)
	if err != nil || len(comp) != 1 {
		return d.conflict(KindConcurrentDelete, "winning compaction %d moved %s without a usable single-target composition tag (%v)", version, p, err)
	}
	target := comp[0]
	targetKey := d.keys.Of(target.Target)
	out, ok := adds[targetKey]
	if !ok {
		return d.conflict(KindConcurrentDelete, "winning compaction %d moved %s into %s, which it did not add", version, p, target.Target)
	}
	mine := t.ours
	if t.whole {
		mine = liveRows(t.base, t.baseDV)
	}
	remapped, err := composition.Forward(t.baseDV, roaring64.Or(t.baseDV, mine), target)
	if err != nil {
		return d.conflict(KindConcurrentDelete, "remap deletions of %s onto %s (winner %d): %v", p, target.Target, version, err)
	}
	nt, exists := d.targets[targetKey]
	if !exists {
		nt = &dmlTarget{base: out, ours: roaring64.New()}
		if err := d.loadBase(ctx, nt); err != nil {
			return err
		}
		d.targets[targetKey] = nt
	}
	if overlap := roaring64.And(nt.baseDV, remapped); !overlap.IsEmpty() {
		return d.conflict(KindConcurrentDelete, "compaction output %s already deletes %d of the remapped rows", target.Target, overlap.GetCardinality())
	}
	nt.ours.Or(remapped)
	delete(d.targets, d.keys.Of(p))
	handled[targetKey] = true
	d.conflicts[KindReverseRemapped]++
	return nil
}

// loadBase reads the DV of t.base once.
func (d *DML) loadBase(ctx context.Context, t *dmlTarget) error {
	if t.baseDV != nil {
		return nil
	}
	if t.base.DeletionVector == nil {
		t.baseDV = roaring64.New()
		return nil
	}
	dv, err := d.dvs.readDV(ctx, t.base.DeletionVector)
	if err != nil {
		return failure.With(failure.Quarantine, fmt.Errorf("read DV of %s: %w", t.base.Path, err))
	}
	t.baseDV = dv
	return nil
}

// liveRows returns every physical row of a file not in its DV.
func liveRows(a *deltaactions.Add, dv *roaring64.Bitmap) *roaring64.Bitmap {
	n := numRecords(a)
	all := roaring64.New()
	if n > 0 {
		all.AddRange(0, uint64(n))
	}
	if dv != nil {
		all.AndNot(dv)
	}
	return all
}

// numRecords returns a file's physical row count from its stats, or -1.
func numRecords(a *deltaactions.Add) int64 {
	if n, ok, err := a.NumRecords(); err == nil && ok {
		return n
	}
	return -1
}

// build writes the new DVs and returns the attempt's actions.
func (d *DML) build(ctx context.Context) ([]deltaactions.Action, map[string]string, error) {
	o := d.Txn.Options.withDefaults()
	now := o.Now().UnixMilli()
	paths := make([]string, 0, len(d.targets))
	for p := range d.targets {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var (
		acts      []deltaactions.Action
		dvTargets []*dmlTarget
		bitmaps   []*roaring64.Bitmap
		removed   int
		dvAdded   int
		dvRemoved int
		copied    int
	)
	d.deleted = 0
	for _, p := range paths {
		t := d.targets[p]
		if err := d.loadBase(ctx, t); err != nil {
			return nil, nil, err
		}
		n := numRecords(t.base)
		full := t.whole
		if !full && n >= 0 && int64(t.baseDV.GetCardinality()+t.ours.GetCardinality()) >= n {
			full = true
		}
		switch {
		case t.cow != nil:
			acts = append(acts, deltaactions.Action{Remove: removeWithTimestamp(t.base, now, true)})
			for _, a := range t.cow {
				acts = append(acts, deltaactions.Action{Add: a})
			}
			removed++
			for _, a := range t.cow {
				copied += int(max(numRecords(a), 0))
			}
			d.deleted += int64(t.ours.GetCardinality())
		case full:
			acts = append(acts, deltaactions.Action{Remove: removeWithTimestamp(t.base, now, true)})
			removed++
			if n >= 0 {
				d.deleted += n - int64(t.baseDV.GetCardinality())
			} else {
				d.deleted += int64(t.ours.GetCardinality()) // the rows the caller found, if it scanned
			}
		case t.ours.IsEmpty():
			continue
		default:
			if n < 0 {
				return nil, nil, fmt.Errorf("file %s has no numRecords statistic: cannot add a deletion vector", t.base.Path)
			}
			dvTargets = append(dvTargets, t)
			bitmaps = append(bitmaps, roaring64.Or(t.baseDV, t.ours))
			d.deleted += int64(t.ours.GetCardinality())
		}
		if t.base.DeletionVector != nil && (t.cow != nil || full) {
			dvRemoved++
		}
	}
	if len(bitmaps) > 0 {
		descs, err := d.dvs.writeDVs(ctx, bitmaps)
		if err != nil {
			return nil, nil, fmt.Errorf("write deletion vectors: %w", err)
		}
		for i, t := range dvTargets {
			add := *t.base
			add.DeletionVector = descs[i]
			add.DataChange = true
			add.ModificationTime = now
			wide, err := statscollect.MarkStatsWideChecked(add.Stats)
			if err != nil {
				return nil, nil, fmt.Errorf("file %s: %w", add.Path, err)
			}
			add.Stats, add.ParsedStats = wide, nil
			acts = append(acts, deltaactions.Action{Remove: removeWithTimestamp(t.base, now, true)}, deltaactions.Action{Add: &add})
			dvAdded++
			if t.base.DeletionVector != nil {
				dvRemoved++
			}
		}
	}
	if len(acts) == 0 {
		return nil, nil, nil
	}
	metrics := map[string]string{
		"numRemovedFiles":           strconv.Itoa(removed),
		"numDeletionVectorsAdded":   strconv.Itoa(dvAdded),
		"numDeletionVectorsRemoved": strconv.Itoa(dvRemoved),
		"numAddedFiles":             strconv.Itoa(countAdds(acts) - dvAdded),
		"numDeletedRows":            strconv.FormatInt(d.deleted, 10),
		"numCopiedRows":             strconv.Itoa(copied),
		"numAddedChangeFiles":       "0",
	}
	return acts, metrics, nil
}

func countAdds(acts []deltaactions.Action) int {
	n := 0
	for _, a := range acts {
		if a.Add != nil {
			n++
		}
	}
	return n
}

// removeWithTimestamp is Spark's AddFile.removeWithTimestamp: a tombstone
// for a live file that copies its path, partition values (never nil), size,
// stats, tags, DV and row-tracking fields, with extendedFileMetadata set.
func removeWithTimestamp(a *deltaactions.Add, now int64, dataChange bool) *deltaactions.Remove {
	ext := true
	size := a.Size
	pv := a.PartitionValues
	if pv == nil {
		pv = map[string]*string{}
	}
	return &deltaactions.Remove{
		Path:                    a.Path,
		DeletionTimestamp:       &now,
		DataChange:              dataChange,
		ExtendedFileMetadata:    &ext,
		PartitionValues:         pv,
		Size:                    &size,
		Stats:                   a.Stats,
		Tags:                    a.Tags,
		DeletionVector:          a.DeletionVector,
		BaseRowID:               a.BaseRowID,
		DefaultRowCommitVersion: a.DefaultRowCommitVersion,
	}
}

// CommitInfoFields builds a commitInfo from plain values (tests and
// in-process writers).
func CommitInfoFields(fields map[string]any) deltaactions.CommitInfo {
	ci := deltaactions.CommitInfo{}
	for k, v := range fields {
		raw, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("commitInfo field %s: %v", k, err))
		}
		ci[k] = raw
	}
	return ci
}

// Conflicts returns the conflicts seen so far, by kind (also after a failed commit).
func (d *DML) Conflicts() map[string]int { return d.conflicts }
