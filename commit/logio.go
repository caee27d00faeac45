package commit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/delta"
)

// commitKey is the object key of version v's commit file.
func commitKey(v int64) string { return delta.CommitKey(v) }

// readCommit reads and parses version v's commit. found is false when no
// commit exists at v yet.
func readCommit(ctx context.Context, t *delta.Table, v int64) (acts []delta.Action, found bool, err error) {
	acts, err = delta.ReadCommit(ctx, t, v)
	if err != nil {
		if errors.Is(err, delta.ErrVersionNotFound) {
			return nil, false, nil
		}
		if errors.Is(err, delta.ErrMalformedAction) {
			return nil, false, WithClass(Halt, err)
		}
		return nil, false, err
	}
	return acts, true, nil
}

// encodeAction renders one action as its log line (without newline).
func encodeAction(a delta.Action) ([]byte, error) { return delta.MarshalAction(a) }

// tableDVs is the dvIO of a real table: DVs are read with delta.ReadDV and
// written as one new DV file per attempt (inline when tiny).
type tableDVs struct {
	t *delta.Table
	// inlineMax is the largest cardinality written inline (0: never).
	inlineMax uint64
}

func (d tableDVs) readDV(ctx context.Context, dv *delta.DeletionVector) (*roaring64.Bitmap, error) {
	return delta.ReadDV(ctx, d.t, dv)
}

func (d tableDVs) writeDVs(ctx context.Context, bitmaps []*roaring64.Bitmap) ([]*delta.DeletionVector, []string, error) {
	out := make([]*delta.DeletionVector, len(bitmaps))
	var fileIdx []int
	var fileBMs []*roaring64.Bitmap
	for i, b := range bitmaps {
		if b.GetCardinality() <= d.inlineMax {
			dv, err := delta.InlineDV(b)
			if err != nil {
				return nil, nil, err
			}
			out[i] = dv
			continue
		}
		fileIdx = append(fileIdx, i)
		fileBMs = append(fileBMs, b)
	}
	var keys []string
	if len(fileBMs) > 0 {
		dvs, err := delta.WriteDV(ctx, d.t, "", fileBMs)
		if err != nil {
			return nil, nil, err
		}
		for k, i := range fileIdx {
			out[i] = dvs[k]
		}
		key, err := dvObjectKey(dvs[0])
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, key)
	}
	return out, keys, nil
}

// dvObjectKey returns the object key of a `u` descriptor's file.
func dvObjectKey(dv *delta.DeletionVector) (string, error) {
	if dv.StorageType != "u" || len(dv.PathOrInlineDv) < 20 {
		return "", fmt.Errorf("deletion vector %q is not a relative (u) file", dv.UniqueID())
	}
	return delta.DVFileKey(dv.PathOrInlineDv)
}

// deleteKeys removes objects written for an attempt that never committed.
func deleteKeys(ctx context.Context, t *delta.Table, keys []string) error {
	var errs []string
	for _, k := range keys {
		if err := t.Bucket.Delete(ctx, k); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			errs = append(errs, fmt.Sprintf("%s: %v", k, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("table %s: delete uncommitted objects: %s", t.URL, strings.Join(errs, "; "))
	}
	return nil
}
