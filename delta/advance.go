package delta

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	r := newReplay(len(snap.Files))
	for _, a := range snap.Files {
		r.adds[fileKey{a.Path, a.DeletionVector.UniqueID()}] = a
	}
	for _, rm := range snap.Tombstones {
		r.removes[fileKey{rm.Path, rm.DeletionVector.UniqueID()}] = rm
	}
	for k, v := range snap.Txns {
		r.txns[k] = v
	}
	for k, v := range snap.Domains {
		r.domains[k] = v
	}
	version, ts := snap.Version, snap.Timestamp
	for v := snap.Version + 1; ; v++ {
		if v > snap.Version+int64(maxCommits) {
			return nil, false, nil
		}
		actions, modTime, err := readCommit(ctx, t, v)
		if errors.Is(err, ErrVersionNotFound) {
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
			return nil, false, fmt.Errorf("table %s: %s: %w", t.URL, CommitKey(v), err)
		}
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
	}
	next.Files, next.Tombstones = r.sorted()
	if err := r.checkCommitStats(); err != nil {
		return nil, false, fmt.Errorf("table %s: version %d: %w", t.URL, version, err)
	}
	return next, true, nil
}

// sorted returns the replay's live files and tombstones, each sorted by path.
func (r *replay) sorted() ([]*Add, []*Remove) {
	files := make([]*Add, 0, len(r.adds))
	for _, a := range r.adds {
		files = append(files, a)
	}
	sortByPath(files, func(a *Add) string { return a.Path })
	tombs := make([]*Remove, 0, len(r.removes))
	for _, rm := range r.removes {
		tombs = append(tombs, rm)
	}
	sortByPath(tombs, func(r *Remove) string { return r.Path })
	return files, tombs
}

// sortByPath sorts xs by path (byte order). Comparing a million paths
// through their actions misses the cache twice a comparison, so each is
// first given a key: the 16 bytes after the prefix all paths share, big
// endian, compared as two integers; only equal keys compare the paths.
func sortByPath[T any](xs []T, path func(T) string) {
	if len(xs) < 2 {
		return
	}
	first := path(xs[0])
	lcp := len(first)
	for _, x := range xs[1:] {
		p := path(x)
		n := min(lcp, len(p))
		i := 0
		for i < n && p[i] == first[i] {
			i++
		}
		lcp = i
	}
	type keyed struct {
		hi, lo uint64
		x      T
	}
	ks := make([]keyed, len(xs))
	for i, x := range xs {
		var b [16]byte
		copy(b[:], path(x)[lcp:])
		ks[i] = keyed{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:]), x}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if c := cmp.Compare(a.hi, b.hi); c != 0 {
			return c
		}
		if c := cmp.Compare(a.lo, b.lo); c != 0 {
			return c
		}
		return strings.Compare(path(a.x), path(b.x))
	})
	for i := range ks {
		xs[i] = ks[i].x
	}
}
