package commit

import (
	"fmt"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// Run is where one source's live rows landed in an output: a contiguous run
// starting at RowOffsetInTarget, LiveRows long, written in physical order
// with the read-time deleted rows skipped.
type Run struct {
	RowOffsetInTarget        int64
	SourceNumPhysicalRecords int64
	LiveRows                 int64
}

// RemapForward translates a winner's deletion vector on a source into output
// row positions (seed Case 4a). readDV is the DV the compaction read the
// source with (nil = none), winnerDV the source's DV after the winning
// commit. Only the incremental deletions winnerDV \ readDV are remapped:
// physical row i lands at RowOffsetInTarget + i - rank(readDV, i), where
// rank counts the read-time deletions below i.
//
// It fails (and the caller must drop the job) when readDV is not a subset of
// winnerDV (the winner resurrected rows), when a deleted row lies beyond the
// source's physical rows, or when a position falls outside the source's live
// run: nothing that is not provably right is remapped.
func RemapForward(readDV, winnerDV *roaring64.Bitmap, run Run) (*roaring64.Bitmap, error) {
	out := roaring64.New()
	if winnerDV == nil || winnerDV.IsEmpty() {
		if readDV != nil && !readDV.IsEmpty() {
			return nil, fmt.Errorf("winner DV drops %d read-time deletions", readDV.GetCardinality())
		}
		return out, nil
	}
	if readDV == nil {
		readDV = roaring64.New()
	}
	if !readDV.IsEmpty() {
		missing := roaring64.AndNot(readDV, winnerDV)
		if !missing.IsEmpty() {
			return nil, fmt.Errorf("winner DV is not a superset of the read-time DV (%d rows resurrected, first %d)",
				missing.GetCardinality(), missing.Minimum())
		}
	}
	if run.LiveRows < 0 || run.RowOffsetInTarget < 0 {
		return nil, fmt.Errorf("invalid run %+v", run)
	}
	if want := run.SourceNumPhysicalRecords - int64(readDV.GetCardinality()); want != run.LiveRows {
		return nil, fmt.Errorf("run of %d live rows does not match %d physical - %d read-time deleted",
			run.LiveRows, run.SourceNumPhysicalRecords, readDV.GetCardinality())
	}
	inc := roaring64.AndNot(winnerDV, readDV)
	it := inc.Iterator()
	for it.HasNext() {
		i := it.Next()
		if int64(i) >= run.SourceNumPhysicalRecords || int64(i) < 0 {
			return nil, fmt.Errorf("deleted row %d is beyond the source's %d physical rows", i, run.SourceNumPhysicalRecords)
		}
		// i is not in readDV, so Rank(i) counts exactly the read-time
		// deletions strictly below i.
		live := int64(i) - int64(readDV.Rank(i))
		if live < 0 || live >= run.LiveRows {
			return nil, fmt.Errorf("deleted row %d maps to live rank %d outside the run of %d rows", i, live, run.LiveRows)
		}
		out.Add(uint64(run.RowOffsetInTarget + live))
	}
	return out, nil
}
