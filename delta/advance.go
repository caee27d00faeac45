package delta

import (
	"context"
	"errors"
	"fmt"
	"slices"

	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
)

// Advance returns snap moved forward by the commits after its version, read
// one by one until the first version that does not exist: what a poller that
// already holds a snapshot pays for a few new commits, instead of a listing
// and a checkpoint read. snap is not modified (the result shares its
// unchanged actions, which callers treat as read-only).
//
// ok is false, with a nil snapshot, when a full LoadSnapshot is the right
// answer instead: no commit follows snap (a gap, or nothing new), a commit
// changes the protocol or the metadata (schema, properties and features are
// parsed once per load), a commit holds an action this build does not model,
// or more than maxCommits commits follow.
func Advance(ctx context.Context, t *Table, snap *Snapshot, maxCommits int) (next *Snapshot, ok bool, err error) {
	if _, err := syncLog(ctx, t); err != nil {
		return nil, false, fmt.Errorf("table %s: %w", t.URL, err)
	}
	r := newReplay(0)
	for k, v := range snap.Txns {
		r.txns[k] = v
	}
	for k, v := range snap.Domains {
		r.domains[k] = v
	}
	version, ts := snap.Version, snap.Timestamp
	var commits [][]deltaactions.Action // from snap.Version+1 on, to name a bad file's commit
	for v := snap.Version + 1; ; v++ {
		if v > snap.Version+int64(maxCommits) {
			return nil, false, nil
		}
		asked := t.clock()
		actions, modTime, err := readCommit(ctx, t, v)
		if errors.Is(err, logpath.ErrVersionNotFound) {
			if v > snap.Version+1 {
				// Commit v-1 was just read and v is not there yet: v-1 is
				// the newest, and the poller's next HasNewer of it needs
				// one request. (A first commit missing is a gap, no
				// finding.)
				t.newest.found(v-1, asked)
			}
			break
		}
		if err != nil {
			return nil, false, err
		}
		for i := range actions {
			if a := &actions[i]; a.Protocol != nil || a.Metadata != nil || a.Unknown != nil {
				return nil, false, nil
			}
		}
		if err := r.apply(actions, false); err != nil {
			return nil, false, fmt.Errorf("table %s: %s: %w", t.URL, logpath.CommitKey(v), err)
		}
		commits = append(commits, actions)
		version, ts = v, modTime.UnixMilli()
		if snap.Properties().InCommitTimestamps {
			for _, a := range actions {
				if a.CommitInfo != nil {
					if ict, ok := a.CommitInfo.InCommitTimestamp(); ok {
						ts = ict
					}
				}
			}
		}
	}
	if version == snap.Version {
		return nil, false, nil
	}
	next = &Snapshot{
		Version:   version,
		Timestamp: ts,
		Protocol:  snap.Protocol,
		Metadata:  snap.Metadata,
		Schema:    snap.Schema,
		Txns:      r.txns,
		Domains:   r.domains,
		props:     snap.props,
		// Advancing a slim snapshot keeps its cut files: the result is
		// slim too (and so refused by WriteCheckpoint).
		slim: snap.slim,
	}
	keys := t.FileKeys()
	adds, removes := reconcile(keys, r.files)
	next.Files, next.Tombstones = overlayFiles(keys, sortedByKey(snap.Files, keys.add), sortedByKey(snap.Tombstones, keys.remove), adds, removes)
	// snap's files had their stats checked when they were read.
	if bad, err := checkStats(adds); err != nil {
		return nil, false, commitStatsError(t, bad, commits, snap.Version+1, err)
	}
	return next, true, nil
}

// sortedByKey returns xs if they are sorted by key (as a loaded
// snapshot's files and tombstones are), else a sorted copy.
func sortedByKey[T any](xs []T, key func(T) (string, *deltaactions.DeletionVector)) []T {
	byKey := func(a, b T) int {
		pa, dva := key(a)
		pb, dvb := key(b)
		return cmpFileKey(pa, dva, pb, dvb)
	}
	if slices.IsSortedFunc(xs, byKey) {
		return xs
	}
	xs = slices.Clone(xs)
	sortByPath(xs, func(x T) string { p, _ := key(x); return p }, byKey)
	return xs
}
