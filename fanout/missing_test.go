package fanout

import (
	"context"
	"slices"
	"testing"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/failure"
)

// A data file missing in a worker's unit comes back to the coordinator as
// a failure.MissingFileError naming it, as a local run returns it, so that
// the scheduler counts its misses and quarantines it after DefaultMissingRuns;
// it is no corrupt file, and the other unit still commits.
func TestAMissingSourceOfAUnitComesBackAsAMissingFile(t *testing.T) {
	ctx := context.Background()
	tbl, pl, snap := planned(t, 4, 10)
	gone := snap.Files[2].Path
	key, err := snap.Files[2].Key()
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.Bucket.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	res, err := compaction.RunPlan(ctx, tbl, pl, compaction.RunOptions{
		Executor: &Executor{Launcher: inProcess{}}, CommitEveryJobs: 1})
	if err == nil {
		t.Fatal("the run succeeded with a missing source")
	}
	if got := failure.MissingDataFiles(err); !slices.Equal(got, []string{gone}) {
		t.Fatalf("run error %v names %v as missing, want [%s]", err, got, gone)
	}
	if got := failure.CorruptDataFiles(err); len(got) != 0 {
		t.Errorf("run error names %v as corrupt, want none", got)
	}
	if res == nil || res.JobsCommitted != 1 {
		t.Errorf("result %+v, want the other unit's job committed", res)
	}
}
