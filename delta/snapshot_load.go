package delta

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/delta/props"
	"github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/failure"
)

// LoadSnapshot replays the log of t up to version (version < 0 = latest)
// and returns the table state at that version.
//
// Replay starts from the newest complete checkpoint at or before the
// version (classic, multi-part, or V2 with sidecars; incomplete multi-part
// sets are ignored) and applies the JSON commits after it. The listing is
// authoritative; _last_checkpoint is only a hint (a missing, stale, corrupt
// or checksum-failing hint is ignored). Log compaction files are ignored:
// the commits they summarize are read instead. Every error names the table
// and the file at fault; a version that does not exist wraps
// logpath.ErrVersionNotFound.
func LoadSnapshot(ctx context.Context, t *Table, version int64) (*Snapshot, error) {
	listed := t.clock()
	files, err := listLog(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.URL, err)
	}
	commits := map[int64]logpath.File{}
	latest := int64(-1)
	for _, f := range files {
		if f.Kind == logpath.Compaction {
			continue
		}
		if f.Kind == logpath.Commit {
			commits[f.Version] = f
		}
		latest = max(latest, f.Version)
	}
	if latest < 0 {
		return nil, NoCommitsError(ctx, t)
	}
	target := version
	if target < 0 {
		target = latest
	}
	if target > latest {
		return nil, fmt.Errorf("table %s: version %d requested, latest is %d: %w", t.URL, target, latest, logpath.ErrVersionNotFound)
	}
	hint, _, err := readLastCheckpoint(ctx, t)
	if err != nil {
		return nil, err
	}
	cps, incomplete := checkpointsByVersion(files, hint)
	var cp *checkpoint
	for i := range cps {
		if cps[i].version <= target {
			cp = &cps[i]
			break
		}
	}
	first := int64(0)
	if cp != nil {
		first = cp.version + 1
	}
	for v := first; v <= target; v++ {
		if _, ok := commits[v]; !ok {
			return nil, missingCommitError(t, v, target, cp, incomplete)
		}
	}

	// Read the checkpoint and the commits concurrently.
	var cpActs cpActions
	commitActions := make([][]actions.Action, target-first+1)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	if cp != nil {
		g.Go(func() error {
			var err error
			cpActs, err = readCheckpoint(gctx, t, *cp)
			return err
		})
	}
	for v := first; v <= target; v++ {
		g.Go(func() error {
			acts, err := ReadCommit(gctx, t, v)
			commitActions[v-first] = acts
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	r := newReplay(0)
	if cp != nil {
		if err := r.apply(cpActs.others, true); err != nil {
			return nil, fmt.Errorf("table %s: checkpoint %s: %w", t.URL, cp.files[0].Key, err)
		}
	}
	// The checkpoint's file actions are reconciled on their own, then the
	// commits' replace those of the keys they act on.
	keys := t.FileKeys()
	cpAdds, cpRemoves := reconcile(keys, cpActs.files)
	cpActs.files = nil
	for i, acts := range commitActions {
		if err := r.apply(acts, false); err != nil {
			return nil, fmt.Errorf("table %s: %s: %w", t.URL, logpath.CommitKey(first+int64(i)), err)
		}
	}
	newAdds, newRemoves := reconcile(keys, r.files)
	if r.protocol == nil {
		return nil, fmt.Errorf("table %s: no protocol action in the log up to version %d", t.URL, target)
	}
	if r.metadata == nil {
		return nil, fmt.Errorf("table %s: no metaData action in the log up to version %d", t.URL, target)
	}
	snap := &Snapshot{
		Version:  target,
		Protocol: *r.protocol,
		Metadata: *r.metadata,
		Txns:     r.txns,
		Domains:  r.domains,
		props:    props.ParseProperties(r.metadata.Configuration),
	}
	if snap.Schema, err = schema.ParseSchema(r.metadata.SchemaString); err != nil {
		// A feature this build does not read often brings types it does
		// not parse (geospatial's geometry): name the feature first.
		if ferr := Readable(snap); ferr != nil {
			return nil, fmt.Errorf("table %s: version %d: %w (and the schema does not parse: %v)", t.URL, target, ferr, err)
		}
		return nil, fmt.Errorf("table %s: version %d: schema: %w", t.URL, target, err)
	}
	snap.Files, snap.Tombstones = overlayFiles(keys, cpAdds, cpRemoves, newAdds, newRemoves)
	// A checkpoint's stats were checked as it was decoded; the commits'
	// adds that are live are checked here (those a later commit removed
	// are not: no reader of the snapshot sees them).
	if bad, err := checkStats(newAdds); err != nil {
		return nil, commitStatsError(t, bad, commitActions, first, err)
	}
	if snap.Timestamp, err = commitTimestamp(ctx, t, snap, commits, cp, commitActions, first); err != nil {
		return nil, err
	}
	if target == latest {
		// The listing found latest the newest version: HasNewer's first
		// check of it needs no second request.
		t.newest.loaded(latest, listed, snap.Properties().LogRetention)
	}
	return snap, nil
}

// missingCommitError explains why version v cannot be replayed.
func missingCommitError(t *Table, v, target int64, cp *checkpoint, incomplete map[int64]string) error {
	var why []string
	for cv, reason := range incomplete {
		if cv <= target && (cp == nil || cv > cp.version) {
			why = append(why, fmt.Sprintf("checkpoint %d ignored: %s", cv, reason))
		}
	}
	sort.Strings(why)
	base := "no checkpoint covers it"
	if cp != nil {
		base = fmt.Sprintf("replaying from checkpoint %d", cp.version)
	}
	msg := fmt.Sprintf("table %s: cannot load version %d: commit %s is missing (%s", t.URL, target, logpath.CommitKey(v), base)
	if len(why) > 0 {
		msg += "; " + strings.Join(why, "; ")
	}
	return fmt.Errorf("%s): %w", msg, logpath.ErrVersionNotFound)
}

// commitTimestamp returns the in-commit timestamp of the snapshot's version
// when in-commit timestamps are enabled, else the commit file's
// modification time (the checkpoint's when the commit file is gone).
func commitTimestamp(ctx context.Context, t *Table, snap *Snapshot, commits map[int64]logpath.File, cp *checkpoint, commitActions [][]actions.Action, first int64) (int64, error) {
	if snap.Properties().InCommitTimestamps {
		var acts []actions.Action
		if snap.Version >= first {
			acts = commitActions[snap.Version-first]
		} else if _, ok := commits[snap.Version]; ok {
			var err error
			if acts, err = ReadCommit(ctx, t, snap.Version); err != nil {
				return 0, err
			}
		}
		for _, a := range acts {
			if a.CommitInfo != nil {
				if ts, ok := a.CommitInfo.InCommitTimestamp(); ok {
					return ts, nil
				}
			}
		}
	}
	if f, ok := commits[snap.Version]; ok {
		return f.ModTime.UnixMilli(), nil
	}
	if cp != nil && cp.version == snap.Version {
		return cp.files[0].ModTime.UnixMilli(), nil
	}
	return 0, nil
}

// checkStats checks the stats of files (checkAddStats) and returns the
// first file that fails.
func checkStats(files []*actions.Add) (*actions.Add, error) {
	for _, a := range files {
		if err := checkAddStats(a); err != nil {
			return a, err
		}
	}
	return nil, nil
}

// checkAddStats checks that a's JSON stats parse (ParseStats would accept
// them), building nothing, and that its numRecords fits its deletion
// vector (checkRowCounts); the error names the file.
func checkAddStats(a *actions.Add) error {
	if a.ParsedStats != nil {
		if st := a.ParsedStats; st.NumRecords != nil {
			return checkRowCounts(a, *st.NumRecords, true)
		}
		return nil
	}
	if a.Stats == "" {
		return nil
	}
	n, has, err := stats.ScanStats(a.Stats, true)
	if err != nil {
		return fmt.Errorf("file %s: %w", a.Path, err)
	}
	return checkRowCounts(a, n, has)
}

// commitStatsError names the commit, among commits (the actions of the
// versions from first on), that added bad: its stats failed checkStats
// with err after the replay, which keeps no version per file.
func commitStatsError(t *Table, bad *actions.Add, commits [][]actions.Action, first int64, err error) error {
	for i := len(commits) - 1; i >= 0; i-- {
		for j := range commits[i] {
			if commits[i][j].Add == bad {
				return fmt.Errorf("table %s: %w", t.URL, corruptLog(failure.Commit, logpath.CommitKey(first+int64(i)), err))
			}
		}
	}
	return fmt.Errorf("table %s: %w", t.URL, err)
}
