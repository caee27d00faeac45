package planner

import (
	"fmt"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
)

// IsSmallFile is the one rule of what a small file is, shared by the
// planner, the daemon's backlog and triggers, and `compactord inspect`: a
// file below both the minimum file size and the target file size. (A file
// at least the target size never shares a bin, so it is never merged
// whatever the minimum size.) Zero sizes are not defaults here: resolve
// them first (SmallFileThreshold does).
func IsSmallFile(size, targetFileSize, minFileSize int64) bool {
	return size < min(targetFileSize, minFileSize)
}

// SmallFileThreshold returns the size below which IsSmallFile calls a file
// of snap small under p: min(MinFileSize, TargetFileSize), with p's zero
// sizes resolved as Plan resolves them (the table property
// delta.targetFileSize, then the defaults).
func SmallFileThreshold(snap *delta.Snapshot, p Policy) (int64, error) {
	s, err := resolve(p, snap.Properties())
	if err != nil {
		return 0, fmt.Errorf("table version %d: %w", snap.Version, err)
	}
	return min(s.minSize, s.target), nil
}

// Backlog is the merge work waiting in a snapshot, as Plan sees it.
type Backlog struct {
	// SmallFiles and SmallBytes count every small file (IsSmallFile) of
	// the snapshot, whether a plan would merge it now or not.
	SmallFiles int
	SmallBytes int64
	// MergeableFiles and MergeableBytes count the small files that a plan
	// would merge with at least one other file, before the per-run caps
	// (work beyond one run's caps is still waiting): the small_files
	// trigger's count.
	MergeableFiles int
	MergeableBytes int64
	// Held groups the small files a plan leaves alone by reason (in the
	// settle window, alone in their bin, quarantined, ...), without paths.
	// A small file rewritten alone (a deletion-vector purge) is neither
	// mergeable nor held.
	Held []Skip
}

// BacklogOf plans snap under p, as Plan does but without the per-run caps,
// and counts the small files: those its jobs would merge (a trigger on
// this count fires exactly when Plan finds merge work) and those it leaves
// alone, by reason.
func BacklogOf(snap *delta.Snapshot, p Policy) (Backlog, error) {
	st, err := plan(snap, p)
	if err != nil {
		return Backlog{}, err
	}
	var b Backlog
	merged := map[*actions.Add]bool{}
	for _, j := range st.jobs {
		if len(j.Sources) < 2 {
			continue
		}
		for _, a := range j.Sources {
			merged[a] = true
		}
	}
	held := map[SkipCode]*skipAcc{}
	for _, fs := range [][]*fileInfo{st.files, st.excluded} {
		for _, f := range fs {
			if !f.small {
				continue
			}
			b.SmallFiles++
			b.SmallBytes += f.add.Size
			switch {
			case merged[f.add]:
				b.MergeableFiles++
				b.MergeableBytes += f.add.Size
			case f.skip != "":
				held[f.skip] = held[f.skip].add(f)
			}
		}
	}
	b.Held = st.skipList(held)
	for i := range b.Held {
		b.Held[i].Paths, b.Held[i].MorePaths = nil, 0
	}
	return b, nil
}
