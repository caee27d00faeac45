package vacuum

import (
	"github.com/compactord/compactord/objstore"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/logpath"
)

// lastVacuumInfoKey is Spark's record of the last vacuum
// (LastVacuumInfo.scala), shared with Spark so that either engine's lite
// vacuum continues where the other's stopped.
const lastVacuumInfoKey = logpath.LogDir + "_last_vacuum_info"

// lastVacuumInfo is the content of _delta_log/_last_vacuum_info.
type lastVacuumInfo struct {
	LatestCommitVersionOutsideOfRetentionWindow *int64 `json:"latestCommitVersionOutsideOfRetentionWindow,omitempty"`
}

// readLastVacuumInfo returns the last vacuum's newest commit outside its
// window, or nil when there is none or the file is unreadable (Spark
// ignores a corrupt file too).
func readLastVacuumInfo(ctx context.Context, t *delta.Table) (*int64, error) {
	data, err := objstore.ReadAllLimit(ctx, t.Bucket, lastVacuumInfoKey, maxStateBytes)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound || errors.Is(err, objstore.ErrTooLarge) {
			return nil, nil // none, or as good as corrupt: lite goes back to version 0
		}
		return nil, fmt.Errorf("read %s: %w", lastVacuumInfoKey, err)
	}
	var info lastVacuumInfo
	if json.Unmarshal(data, &info) != nil {
		return nil, nil
	}
	return info.LatestCommitVersionOutsideOfRetentionWindow, nil
}

func writeLastVacuumInfo(ctx context.Context, t *delta.Table, v int64) error {
	data, err := json.Marshal(lastVacuumInfo{LatestCommitVersionOutsideOfRetentionWindow: &v})
	if err != nil {
		return err
	}
	if err := t.Bucket.WriteAll(ctx, lastVacuumInfoKey, data, nil); err != nil {
		return fmt.Errorf("write %s: %w", lastVacuumInfoKey, err)
	}
	return nil
}

// commitFile is one commit of the log listing.
type commitFile struct {
	version int64
	modTime time.Time
}

// parseCommitName returns the version of a "%020d.json" name.
func parseCommitName(name string) (int64, bool) {
	s, ok := strings.CutSuffix(name, ".json")
	if !ok || len(s) != 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil && v >= 0
}

// history answers "which commit was the table at, at time T" from one
// listing of the log, as Spark's DeltaHistoryManager: commit timestamps are
// the files' modification times made strictly increasing, or the
// in-commit timestamps from the version the table enabled them at.
type history struct {
	t        *delta.Table
	commits  []commitFile // sorted by version
	ictFrom  int64        // first version with in-commit timestamps; -1 none
	adjusted []int64      // monotonic modification times, ms
	ict      map[int]int64
}

func newHistory(t *delta.Table, snap *delta.Snapshot, commits []commitFile) *history {
	sort.Slice(commits, func(i, j int) bool { return commits[i].version < commits[j].version })
	h := &history{t: t, commits: commits, ictFrom: -1, ict: map[int]int64{}}
	if p := snap.Properties(); p.InCommitTimestamps {
		h.ictFrom = max(p.InCommitTimestampEnablementVersion, 0)
	}
	h.adjusted = make([]int64, len(commits))
	for i, c := range commits {
		ts := c.modTime.UnixMilli()
		if i > 0 && ts <= h.adjusted[i-1] {
			ts = h.adjusted[i-1] + 1
		}
		h.adjusted[i] = ts
	}
	return h
}

// earliest returns the oldest commit version in the log, -1 when none.
func (h *history) earliest() int64 {
	if len(h.commits) == 0 {
		return -1
	}
	return h.commits[0].version
}

func (h *history) timestamp(ctx context.Context, i int) (int64, error) {
	c := h.commits[i]
	if h.ictFrom < 0 || c.version < h.ictFrom {
		return h.adjusted[i], nil
	}
	if ts, ok := h.ict[i]; ok {
		return ts, nil
	}
	acts, err := delta.ReadCommit(ctx, h.t, c.version)
	if err != nil {
		return 0, err
	}
	for _, a := range acts {
		if a.CommitInfo != nil {
			if ts, ok := a.CommitInfo.InCommitTimestamp(); ok {
				h.ict[i] = ts
				return ts, nil
			}
		}
	}
	return 0, fmt.Errorf("table %s: version %d has no in-commit timestamp although the table enables them", h.t.URL, c.version)
}

// latestAtOrBefore returns the newest commit version whose timestamp is at
// or before ms, or -1 when every listed commit is newer. The listed
// versions must be contiguous from earliest (a gap is an inconsistent log).
func (h *history) latestAtOrBefore(ctx context.Context, ms int64) (int64, error) {
	for i := 1; i < len(h.commits); i++ {
		if h.commits[i].version != h.commits[i-1].version+1 {
			return 0, fmt.Errorf("table %s: the log lists version %d after %d (a gap)", h.t.URL, h.commits[i].version, h.commits[i-1].version)
		}
	}
	var ferr error
	n := sort.Search(len(h.commits), func(i int) bool {
		if ferr != nil {
			return true
		}
		ts, err := h.timestamp(ctx, i)
		if err != nil {
			ferr = err
			return true
		}
		return ts > ms
	})
	if ferr != nil {
		return 0, ferr
	}
	if n == 0 {
		return -1, nil
	}
	return h.commits[n-1].version, nil
}

// ErrCannotVacuumLite is wrapped when a lite vacuum needs commits that log
// cleanup already deleted (Spark's DELTA_CANNOT_VACUUM_LITE).
var ErrCannotVacuumLite = errors.New("lite vacuum cannot find the commits it needs; run a full vacuum")
