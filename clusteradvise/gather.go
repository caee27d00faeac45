package clusteradvise

import (
	"context"
	"errors"
	"fmt"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/logpath"
)

// MaxGatherCommits is the most commits one GatherLog reads; a longer gap
// reads its newest commits (older evidence would have decayed most).
const MaxGatherCommits = 1000

// GatherStats counts what one GatherLog did.
type GatherStats struct {
	Commits    int `json:"commits"`    // commit files read
	Predicates int `json:"predicates"` // predicates recorded
	Missing    int `json:"missing"`    // commits no longer in the log (cleaned up)
}

// GatherLog records the predicates of the DML commits after rec.LogVersion
// up to latest (each at its commit's time, weight 1) and advances
// rec.LogVersion. A commit the log no longer holds is skipped.
func GatherLog(ctx context.Context, t *delta.Table, rec *Record, latest int64) (GatherStats, error) {
	var st GatherStats
	from := rec.LogVersion + 1
	if latest-from+1 > MaxGatherCommits {
		from = latest - MaxGatherCommits + 1
	}
	for v := from; v <= latest; v++ {
		acts, err := delta.ReadCommit(ctx, t, v)
		if errors.Is(err, logpath.ErrVersionNotFound) {
			st.Missing++
			rec.LogVersion = v
			continue
		}
		if err != nil {
			return st, fmt.Errorf("table %s: gather clustering evidence: %w", t.Name(), err)
		}
		st.Commits++
		for _, a := range acts {
			if a.CommitInfo == nil {
				continue
			}
			at, ok := CommitTime(a.CommitInfo)
			if !ok {
				continue
			}
			for _, p := range CommitPredicates(a.CommitInfo) {
				if rec.Add(p, 1, at, SourceLog) == nil {
					st.Predicates++
				}
			}
		}
		rec.LogVersion = v
	}
	return st, nil
}
