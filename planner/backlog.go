package planner

import (
	"fmt"

	"github.com/compactord/compactord/delta"
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
	// SmallFiles and SmallBytes count the small files (IsSmallFile) that a
	// plan would merge with at least one other file, before the per-run
	// caps (work beyond one run's caps is still waiting). A small file
	// alone in its bin (nothing to merge it with) or still in its settle
	// window is not backlog.
	SmallFiles int
	SmallBytes int64
}

// BacklogOf plans snap under p, as Plan does but without the per-run caps,
// and counts the small files its jobs would merge: a trigger on this
// backlog fires exactly when Plan finds merge work.
func BacklogOf(snap *delta.Snapshot, p Policy) (Backlog, error) {
	st, err := plan(snap, p)
	if err != nil {
		return Backlog{}, err
	}
	var b Backlog
	for _, j := range st.jobs {
		if len(j.Sources) < 2 {
			continue
		}
		for _, a := range j.Sources {
			if st.s.smallFile(a.Size) {
				b.SmallFiles++
				b.SmallBytes += a.Size
			}
		}
	}
	return b, nil
}
