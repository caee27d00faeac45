package composition

import (
	"fmt"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// Origins says where the rows of a sorted job's sources landed. The
// writer's origin map implements it.
type Origins interface {
	// Locate returns, for the given physical rows of source (an index into
	// the job's sources), output index -> row positions in that output.
	// Rows the job did not write (deleted at read time) are absent.
	Locate(source int, physRows *roaring64.Bitmap) (map[int]*roaring64.Bitmap, error)
	// NumOutputs is the number of outputs the map covers.
	NumOutputs() int
	// NumRows is the number of output rows it covers, over all outputs.
	NumRows() int64
}

// incremental returns winnerDV \ readDV after checking that the winner
// kept every read-time deletion (nil bitmaps are empty).
func incremental(readDV, winnerDV *roaring64.Bitmap) (*roaring64.Bitmap, error) {
	if readDV == nil {
		readDV = roaring64.New()
	}
	if winnerDV == nil {
		winnerDV = roaring64.New()
	}
	if missing := roaring64.AndNot(readDV, winnerDV); !missing.IsEmpty() {
		return nil, fmt.Errorf("winner DV is not a superset of the read-time DV (%d rows resurrected, first %d)",
			missing.GetCardinality(), missing.Minimum())
	}
	return roaring64.AndNot(winnerDV, readDV), nil
}

// Forward translates a winner's deletion vector on a source of an
// order-preserving job into output row positions of the source's run (seed
// Case 4a; the reverse direction, 4b, calls it with its own deletions as
// the "winner"). readDV is the DV the compaction read the source with (nil:
// none). Only the incremental deletions winnerDV \ readDV are remapped:
// physical row i lands at RowOffsetInTarget + i - rank(readDV, i).
//
// A run with LiveRows Unknown (parsed from tags) gets its length from
// SourceNumPhysicalRecords - |readDV|; otherwise the two must agree.
// Forward fails (and the caller must drop the job or conflict) when the
// winner resurrected a read-time deletion, when a deleted row lies beyond
// the source's physical rows, or when a position falls outside the run:
// nothing that is not provably right is remapped.
func Forward(readDV, winnerDV *roaring64.Bitmap, run Run) (*roaring64.Bitmap, error) {
	inc, err := incremental(readDV, winnerDV)
	if err != nil {
		return nil, err
	}
	if readDV == nil {
		readDV = roaring64.New()
	}
	live := run.SourceNumPhysicalRecords - int64(readDV.GetCardinality())
	if run.LiveRows == Unknown {
		run.LiveRows = live
	}
	switch {
	case run.RowOffsetInTarget < 0 || run.LiveRows < 0:
		return nil, fmt.Errorf("invalid run of %s: offset %d, %d live rows", run.Source, run.RowOffsetInTarget, run.LiveRows)
	case run.LiveRows != live:
		return nil, fmt.Errorf("run of %d live rows does not match %d physical - %d read-time deleted",
			run.LiveRows, run.SourceNumPhysicalRecords, readDV.GetCardinality())
	}
	out := roaring64.New()
	it := inc.Iterator()
	for it.HasNext() {
		i := it.Next()
		if i >= uint64(run.SourceNumPhysicalRecords) {
			return nil, fmt.Errorf("deleted row %d is beyond the source's %d physical rows", i, run.SourceNumPhysicalRecords)
		}
		// i is not in readDV, so Rank(i) counts exactly the read-time
		// deletions strictly below i.
		pos := int64(i) - int64(readDV.Rank(i))
		if pos < 0 || pos >= run.LiveRows {
			return nil, fmt.Errorf("deleted row %d maps to live rank %d outside the run of %d rows", i, pos, run.LiveRows)
		}
		out.Add(uint64(run.RowOffsetInTarget + pos))
	}
	return out, nil
}

// Sorted translates a winner's deletion vector on source (an index into the
// job's sources) of a job that permuted rows into deleted rows of the job's
// outputs: output index -> row positions. There is no run to offset into;
// origins says where each (source, physical row) went.
//
// Only the incremental deletions winnerDV \ readDV are remapped. It is
// all-or-nothing: it fails when origins is nil, when the winner resurrected
// a read-time deletion, or when any incremental deletion is not a row the
// job wrote, so that no deletion can be lost.
func Sorted(origins Origins, source int, readDV, winnerDV *roaring64.Bitmap) (map[int]*roaring64.Bitmap, error) {
	if origins == nil {
		return nil, fmt.Errorf("sorted job without an origin map")
	}
	inc, err := incremental(readDV, winnerDV)
	if err != nil {
		return nil, err
	}
	if inc.IsEmpty() {
		return map[int]*roaring64.Bitmap{}, nil
	}
	out, err := origins.Locate(source, inc)
	if err != nil {
		return nil, fmt.Errorf("locate deletions of source %d: %w", source, err)
	}
	var found uint64
	for _, bm := range out {
		found += bm.GetCardinality()
	}
	if found != inc.GetCardinality() {
		return nil, fmt.Errorf("%d of %d incremental deletions of source %d are not rows the job read live",
			inc.GetCardinality()-found, inc.GetCardinality(), source)
	}
	return out, nil
}
