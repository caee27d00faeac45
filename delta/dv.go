package delta

import (
	"context"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// ReadDV loads the deleted row indexes of a descriptor (u, i or p), checking
// size and CRC. A nil descriptor yields an empty bitmap.
func ReadDV(ctx context.Context, t *Table, dv *DeletionVector) (*roaring64.Bitmap, error) {
	return nil, ErrNotImplemented
}

// WriteDV writes the bitmaps into one new DV file
// (<prefix>deletion_vector_<uuid>.bin under the table root, prefix may be
// empty) and returns one descriptor per bitmap, in order.
func WriteDV(ctx context.Context, t *Table, prefix string, bitmaps []*roaring64.Bitmap) ([]*DeletionVector, error) {
	return nil, ErrNotImplemented
}
