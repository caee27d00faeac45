package commit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/compactord/compactord/composition"
	"github.com/compactord/compactord/delta"
	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/statscollect"
	"github.com/compactord/compactord/failure"
)

// Conflict kinds counted in Outcome.Conflicts.
const (
	// KindReconciled: a winner rewrote a source's DV in place and the
	// deletions were remapped onto our output.
	KindReconciled = "dvUpdateReconciled"
	// KindDVUpdateDropped: a winner rewrote a source's DV in place but the
	// job could not be reconciled (DVs disabled, sorted job without an
	// origin map, remap refused).
	KindDVUpdateDropped = "dvUpdateDropped"
	// KindCopyOnWrite: a winner removed a source without re-adding it
	// (copy-on-write DML, another OPTIMIZE): the job was dropped.
	KindCopyOnWrite = "copyOnWrite"
	// KindMetadata: a winner changed protocol or metadata: attempt abandoned.
	KindMetadata = "metadataChanged"
	// KindNoConflict: a winner touched nothing we read (appends, others).
	KindNoConflict = "noConflict"
	// KindInvalidComposition: the writer's composition did not check out;
	// the job was dropped before any commit attempt.
	KindInvalidComposition = "invalidComposition"
)

// Reconciliation records one winner DV remapped onto one of our outputs.
type Reconciliation struct {
	WinnerVersion int64  `json:"winnerVersion"`
	Source        string `json:"source"`
	RowsRemapped  int64  `json:"rowsRemapped"`
}

// DroppedJob names a job that was not committed and why.
type DroppedJob struct {
	JobID         string `json:"jobId"`
	Kind          string `json:"kind"`
	Reason        string `json:"reason"`
	WinnerVersion int64  `json:"winnerVersion,omitempty"`
	// Sources are the job's source paths (as in the log).
	Sources []string `json:"sources"`
}

// dvIO reads and writes deletion vectors; the real one goes to the table,
// the test one keeps bitmaps in memory.
type dvIO interface {
	readDV(ctx context.Context, dv *deltaactions.DeletionVector) (*roaring64.Bitmap, error)
	writeDVs(ctx context.Context, bitmaps []*roaring64.Bitmap) ([]*deltaactions.DeletionVector, error)
}

// sourceState follows one source of a job through the winners.
type sourceState struct {
	job  *jobState
	idx  int               // index in Job.Sources (the origin map's source id)
	read *deltaactions.Add // as the writer read it (read-time DV)
	run  *composition.Run  // the source's run (unsorted jobs); nil otherwise
	out  int               // output index holding the run
	// current is the file's live post-image as of the last checked winner:
	// read, or the add of the latest winner that rewrote its DV in place.
	current *deltaactions.Add
	readDV  *roaring64.Bitmap // lazily loaded
	lastDV  *roaring64.Bitmap // DV of current (loaded when reconciled)
	// remap holds, per output index, the output rows deleted by winners.
	remap map[int]*roaring64.Bitmap
	// reconciled is set once a winner's DV was remapped.
	reconciled bool
}

// jobState follows one writer result.
type jobState struct {
	job      *CompactionJob
	sources  []*sourceState
	dropped  *DroppedJob
	sortable bool // rows were permuted: no offset remap (origin map if any)
}

// compaction is the state of one compaction transaction.
type compaction struct {
	snap *delta.Snapshot
	jobs []*jobState
	// keys match the winners' file actions to the sources however a
	// winner spells a path; byPath is by that key.
	keys       delta.FileKeys
	byPath     map[string]*sourceState
	dvAllowed  bool
	dvs        dvIO
	deleteTime int64

	reconciled []Reconciliation
	conflicts  map[string]int
}

// DVsAllowed reports whether new deletion vectors may be written on the
// table: the deletionVectors feature is present and
// delta.enableDeletionVectors=true.
func DVsAllowed(snap *delta.Snapshot) bool {
	if !snap.Properties().DeletionVectors {
		return false
	}
	for _, f := range snap.Protocol.WriterFeatures {
		if f == "deletionVectors" {
			return true
		}
	}
	return false
}

func newCompaction(keys delta.FileKeys, snap *delta.Snapshot, jobs []*CompactionJob, dvs dvIO, deleteTime int64) (*compaction, error) {
	c := &compaction{
		snap:       snap,
		keys:       keys,
		byPath:     map[string]*sourceState{},
		dvAllowed:  DVsAllowed(snap),
		dvs:        dvs,
		deleteTime: deleteTime,
		conflicts:  map[string]int{},
	}
	live := make(map[string]*deltaactions.Add, len(snap.Files))
	for _, f := range snap.Files {
		live[f.Path] = f
	}
	for _, job := range jobs {
		if job == nil {
			return nil, fmt.Errorf("compaction commit: nil job")
		}
		j := &jobState{job: job}
		c.jobs = append(c.jobs, j)
		if err := validateComposition(job); err != nil {
			j.sortable = true // never remap; dropped below anyway
			j.dropped = &DroppedJob{JobID: job.ID, Kind: KindInvalidComposition, Reason: err.Error(), Sources: job.sourcePaths()}
			c.conflicts[KindInvalidComposition]++
		}
		if job.Sorted || len(job.Runs) == 0 {
			j.sortable = true
		}
		runs := map[string]composition.Run{}
		for _, r := range job.Runs {
			runs[r.Source] = r
		}
		for k, src := range job.Sources {
			ss := &sourceState{job: j, idx: k, read: src, current: src}
			if r, ok := runs[src.Path]; ok && !j.sortable && r.Output >= 0 {
				ss.run = &r
				ss.out = r.Output
			}
			key := keys.Of(src.Path)
			if prev, dup := c.byPath[key]; dup && prev.job.dropped == nil && j.dropped == nil {
				return nil, failure.With(failure.Halt, fmt.Errorf("compaction commit: source %s appears in jobs %s and %s", src.Path, prev.job.job.ID, job.ID))
			}
			// The read snapshot must still list the source exactly as read.
			if l, ok := live[src.Path]; !ok || l.FileKey() != src.FileKey() {
				return nil, failure.With(failure.Halt, fmt.Errorf("compaction commit: source %s (dv %q) is not live in snapshot version %d", src.Path, src.DeletionVector.UniqueID(), snap.Version))
			}
			c.byPath[key] = ss
			j.sources = append(j.sources, ss)
		}
	}
	return c, nil
}

// validateComposition checks the writer's record before it is trusted:
// the runs of an unsorted job (composition.Check), the origin map of a
// sorted one (composition.CheckOrigins).
func validateComposition(job *CompactionJob) error {
	var err error
	switch {
	case job.Sorted && len(job.Runs) > 0:
		err = errors.New("sorted job with runs")
	case job.Sorted && job.Origins != nil:
		err = composition.CheckOrigins(job.Origins, job.outputRows())
	case job.Sorted:
		// No origin map: committed as is, dropped on any DV update.
	case len(job.Sources) > 0:
		deleted := make(map[string]int64, len(job.Sources))
		for _, s := range job.Sources {
			deleted[s.Path] = s.NumDeleted()
		}
		err = composition.Check(job.Runs, deleted, job.outputRows())
	}
	if err != nil {
		return fmt.Errorf("job %s: %w", job.ID, err)
	}
	return nil
}

func (c *compaction) drop(j *jobState, kind, reason string, winner int64) {
	if j.dropped != nil {
		return
	}
	j.dropped = &DroppedJob{JobID: j.job.ID, Kind: kind, Reason: reason, WinnerVersion: winner, Sources: j.job.sourcePaths()}
}

// active reports how many jobs are still in the transaction.
func (c *compaction) active() int {
	n := 0
	for _, j := range c.jobs {
		if j.dropped == nil {
			n++
		}
	}
	return n
}

// observe applies one winning commit. It returns ErrMetadataChanged (wrapped)
// when the attempt must be abandoned; other outcomes are recorded on the jobs.
func (c *compaction) observe(ctx context.Context, version int64, actions []deltaactions.Action) error {
	removes := map[string]*deltaactions.Remove{}
	adds := map[string]*deltaactions.Add{}
	var info deltaactions.CommitInfo
	for _, a := range actions {
		switch {
		case a.CommitInfo != nil:
			info = a.CommitInfo
		case a.Protocol != nil, a.Metadata != nil:
			c.conflicts[KindMetadata]++
			return fmt.Errorf("winning commit %d: %w", version, ErrMetadataChanged)
		case a.Remove != nil:
			removes[c.keys.Of(a.Remove.Path)] = a.Remove
		case a.Add != nil:
			adds[c.keys.Of(a.Add.Path)] = a.Add
		}
	}
	touched := false
	// Deterministic order: by key.
	for _, k := range slices.Sorted(maps.Keys(removes)) {
		rm := removes[k]
		p := rm.Path
		ss, ok := c.byPath[k]
		if !ok || ss.job.dropped != nil {
			continue
		}
		touched = true
		j := ss.job
		if rm.DeletionVector.UniqueID() != ss.current.DeletionVector.UniqueID() {
			// The log removed a version of the file we never saw live.
			c.conflicts[KindCopyOnWrite]++
			c.drop(j, KindCopyOnWrite, fmt.Sprintf("winner removed %s with DV %q, expected %q", p, rm.DeletionVector.UniqueID(), ss.current.DeletionVector.UniqueID()), version)
			continue
		}
		add, readded := adds[k]
		if !readded {
			c.conflicts[KindCopyOnWrite]++
			c.drop(j, KindCopyOnWrite, fmt.Sprintf("winner removed source %s%s", p, compactedBy(info, version)), version)
			continue
		}
		if reason := c.reconcile(ctx, ss, add, version); reason != "" {
			c.conflicts[KindDVUpdateDropped]++
			c.drop(j, KindDVUpdateDropped, reason, version)
			continue
		}
		c.conflicts[KindReconciled]++
	}
	if !touched {
		c.conflicts[KindNoConflict]++
	}
	return nil
}

// compactedBy says, for a winner (its commitInfo info) that removed a
// job's source, when it was a compaction of the same files, and when it
// was compactord's, that two of them run on the table without taking turns.
// Nothing from the log is echoed: its values are only compared.
func compactedBy(info deltaactions.CommitInfo, version int64) string {
	op, engine := info.Operation(), info.EngineInfo()
	switch {
	case strings.HasPrefix(engine, "compactord"):
		return fmt.Sprintf(": version %d is another compactord's compaction of the same files; if two daemons run on this table, "+
			"give each its own daemon { replica = \"...\" } (or --replica) so that they take turns through the table's lease", version)
	case op == "OPTIMIZE":
		return fmt.Sprintf(": version %d is another writer's compaction (OPTIMIZE) of the same files; let one compactor own the table", version)
	}
	return ""
}

// reconcile remaps a winner's in-place DV update of ss onto our output. It
// returns a non-empty reason when the job must be dropped instead.
func (c *compaction) reconcile(ctx context.Context, ss *sourceState, add *deltaactions.Add, version int64) string {
	switch {
	case !c.dvAllowed:
		return fmt.Sprintf("winner rewrote the DV of %s but the table does not allow deletion vectors", ss.read.Path)
	case ss.job.sortable && ss.job.job.Origins == nil:
		return fmt.Sprintf("winner rewrote the DV of %s in a sorted job without an origin map", ss.read.Path)
	case !ss.job.sortable && ss.run == nil:
		return fmt.Sprintf("winner rewrote the DV of %s, which has no run in any output", ss.read.Path)
	}
	if ss.readDV == nil {
		r, err := c.dvs.readDV(ctx, ss.read.DeletionVector)
		if err != nil {
			return fmt.Sprintf("read read-time DV of %s: %v", ss.read.Path, err)
		}
		ss.readDV = r
		ss.lastDV = r
	}
	w, err := c.dvs.readDV(ctx, add.DeletionVector)
	if err != nil {
		return fmt.Sprintf("read winner DV of %s at version %d: %v", ss.read.Path, version, err)
	}
	if miss := roaring64.AndNot(ss.lastDV, w); !miss.IsEmpty() {
		return fmt.Sprintf("winner DV of %s at version %d drops %d earlier deletions", ss.read.Path, version, miss.GetCardinality())
	}
	var m map[int]*roaring64.Bitmap
	if ss.job.sortable {
		m, err = composition.Sorted(ss.job.job.Origins, ss.idx, ss.readDV, w)
		if err != nil {
			return fmt.Sprintf("remap %s at version %d through the origin map: %v", ss.read.Path, version, err)
		}
	} else {
		bm, err := composition.Forward(ss.readDV, w, *ss.run)
		if err != nil {
			return fmt.Sprintf("remap %s at version %d: %v", ss.read.Path, version, err)
		}
		m = map[int]*roaring64.Bitmap{ss.out: bm}
	}
	before, after := cardinality(ss.remap), cardinality(m)
	ss.remap = m
	ss.lastDV = w
	ss.current = add
	ss.reconciled = true
	c.reconciled = append(c.reconciled, Reconciliation{WinnerVersion: version, Source: ss.read.Path, RowsRemapped: int64(after - before)})
	return ""
}

func cardinality(m map[int]*roaring64.Bitmap) uint64 {
	var n uint64
	for _, b := range m {
		n += b.GetCardinality()
	}
	return n
}

// attemptActions builds the remove and add actions of the surviving jobs.
// DV files for reconciled outputs are written here (tracked in the
// attempt's objects by the dvIO).
func (c *compaction) attemptActions(ctx context.Context) (removes []*deltaactions.Remove, adds []*deltaactions.Add, err error) {
	type outRef struct {
		j   *jobState
		idx int
	}
	var needDV []outRef
	var bitmaps []*roaring64.Bitmap
	for _, j := range c.jobs {
		if j.dropped != nil {
			continue
		}
		dels := make([]*roaring64.Bitmap, len(j.job.Outputs))
		for _, ss := range j.sources {
			for o, bm := range ss.remap {
				if bm.IsEmpty() {
					continue
				}
				if o < 0 || o >= len(dels) {
					return nil, nil, fmt.Errorf("job %s: remapped rows name output %d of %d", j.job.ID, o, len(dels))
				}
				if dels[o] == nil {
					dels[o] = roaring64.New()
				}
				dels[o].Or(bm)
			}
		}
		for i, d := range dels {
			if d != nil && !d.IsEmpty() {
				needDV = append(needDV, outRef{j, i})
				bitmaps = append(bitmaps, d)
			}
		}
	}
	descs := map[outRef]*deltaactions.DeletionVector{}
	if len(bitmaps) > 0 {
		ds, err := c.dvs.writeDVs(ctx, bitmaps)
		if err != nil {
			return nil, nil, fmt.Errorf("write reconciled deletion vectors: %w", err)
		}
		for i, r := range needDV {
			descs[r] = ds[i]
		}
	}
	for _, j := range c.jobs {
		if j.dropped != nil {
			continue
		}
		for _, ss := range j.sources {
			var tag *composition.Run
			if ss.run != nil && !ss.reconciled {
				tag = ss.run
			}
			rm, err := compactionRemove(ss.current, physicalRecords(ss), tag, c.deleteTime)
			if err != nil {
				return nil, nil, err
			}
			removes = append(removes, rm)
		}
		for i, o := range j.job.Outputs {
			a := *o.Add
			a.DataChange = false
			if d, ok := descs[outRef{j, i}]; ok {
				a.DeletionVector = d
				wide, err := statscollect.MarkStatsWideChecked(a.Stats)
				if err != nil {
					return nil, nil, fmt.Errorf("output %s: %w", a.Path, err)
				}
				a.Stats = wide
				a.ParsedStats = nil
			}
			adds = append(adds, &a)
		}
	}
	return removes, adds, nil
}

func physicalRecords(ss *sourceState) int64 {
	if ss.run != nil {
		return ss.run.SourceNumPhysicalRecords
	}
	return numRecords(ss.read)
}

// compactionRemove builds the tombstone of a compacted source the way DBR
// does: dataChange=false, extendedFileMetadata, partitionValues, size, the
// source's DV and tags, reduced stats {"numRecords":N}, and (when the run is
// known and still describes the removed file) compactedInto/compactionInfo.
func compactionRemove(src *deltaactions.Add, numRecords int64, run *composition.Run, deleteTime int64) (*deltaactions.Remove, error) {
	rm := removeWithTimestamp(src, deleteTime, false)
	rm.Stats, rm.Tags = "", nil // reduced stats and our own tags, below
	if numRecords >= 0 {
		rm.Stats = fmt.Sprintf(`{"numRecords":%d}`, numRecords)
	}
	tags := map[string]string{}
	for k, v := range src.Tags {
		tags[k] = v
	}
	// Never carry a composition that is not ours (or no longer right).
	delete(tags, composition.TagCompactedInto)
	delete(tags, composition.TagCompactionInfo)
	if run != nil {
		into, info, err := composition.Encode(*run)
		if err != nil {
			return nil, err
		}
		tags[composition.TagCompactedInto] = into
		tags[composition.TagCompactionInfo] = info
	}
	if len(tags) > 0 {
		rm.Tags = tags
	}
	return rm, nil
}

// metrics returns DBR-style operationMetrics for the surviving jobs.
func (c *compaction) metrics(removes []*deltaactions.Remove, adds []*deltaactions.Add) map[string]string {
	var removedBytes, addedBytes int64
	dvRemoved := 0
	for _, r := range removes {
		if r.Size != nil {
			removedBytes += *r.Size
		}
		if r.DeletionVector != nil {
			dvRemoved++
		}
	}
	sizes := make([]int64, 0, len(adds))
	for _, a := range adds {
		addedBytes += a.Size
		sizes = append(sizes, a.Size)
	}
	sort.Slice(sizes, func(i, k int) bool { return sizes[i] < sizes[k] })
	pct := func(p float64) string {
		if len(sizes) == 0 {
			return "0"
		}
		return strconv.FormatInt(sizes[int(p*float64(len(sizes)-1))], 10)
	}
	return map[string]string{
		"numRemovedFiles":           strconv.Itoa(len(removes)),
		"numRemovedBytes":           strconv.FormatInt(removedBytes, 10),
		"numAddedFiles":             strconv.Itoa(len(adds)),
		"numAddedBytes":             strconv.FormatInt(addedBytes, 10),
		"numDeletionVectorsRemoved": strconv.Itoa(dvRemoved),
		"minFileSize":               pct(0),
		"p25FileSize":               pct(0.25),
		"p50FileSize":               pct(0.5),
		"p75FileSize":               pct(0.75),
		"maxFileSize":               pct(1),
	}
}
