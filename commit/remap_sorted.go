package commit

import (
	"fmt"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/compactord/compactord/writer"
)

// RemapSorted translates a winner's deletion vector on source sourceIdx (an
// index into the job's Sources) of a sorted job into deleted rows of the
// job's outputs: output index -> row positions. Sorted rewrites permute
// rows, so there is no run to offset into; the writer's origin map says
// where each (source, physical row) went.
//
// Only the incremental deletions winnerDV \ readDV are remapped. It is
// all-or-nothing: it fails (and the caller must drop the job) when the
// winner resurrected a read-time deletion, or when any incremental deletion
// is not a row the job read live (the map does not hold it), so that no
// deletion can be lost.
func RemapSorted(origins *writer.OriginMap, sourceIdx int, readDV, winnerDV *roaring64.Bitmap) (map[int]*roaring64.Bitmap, error) {
	if origins == nil {
		return nil, fmt.Errorf("sorted job without an origin map")
	}
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
	inc := roaring64.AndNot(winnerDV, readDV)
	if inc.IsEmpty() {
		return map[int]*roaring64.Bitmap{}, nil
	}
	out, err := origins.Locate(sourceIdx, inc)
	if err != nil {
		return nil, fmt.Errorf("locate deletions of source %d: %w", sourceIdx, err)
	}
	var found uint64
	for _, bm := range out {
		found += bm.GetCardinality()
	}
	if found != inc.GetCardinality() {
		return nil, fmt.Errorf("%d of %d incremental deletions of source %d are not rows the job read live",
			inc.GetCardinality()-found, inc.GetCardinality(), sourceIdx)
	}
	return out, nil
}
