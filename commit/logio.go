package commit

import (
	"context"
	"errors"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	deltadv "github.com/compactord/compactord/delta/dv"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/attempt"
)

// commitKey is the object key of version v's commit file.
func commitKey(v int64) string { return logpath.CommitKey(v) }

// readCommit reads and parses version v's commit. found is false when no
// commit exists at v yet.
func readCommit(ctx context.Context, t *delta.Table, v int64) (acts []actions.Action, found bool, err error) {
	acts, err = delta.ReadCommit(ctx, t, v)
	if err != nil {
		if errors.Is(err, logpath.ErrVersionNotFound) {
			return nil, false, nil
		}
		if errors.Is(err, actions.ErrMalformedAction) {
			return nil, false, failure.With(failure.Halt, err)
		}
		return nil, false, err
	}
	return acts, true, nil
}

// encodeAction renders one action as its log line (without newline).
func encodeAction(a actions.Action) ([]byte, error) { return actions.MarshalAction(a) }

// tableDVs is the dvIO of a real table: DVs are read with delta.ReadDV and
// written as one new DV file per attempt (inline when tiny), tracked in the
// attempt's objects.
type tableDVs struct {
	t *delta.Table
	// inlineMax is the largest cardinality written inline (0: never).
	inlineMax uint64
	// objs receives the key of every DV file written.
	objs *attempt.Objects
}

func (d tableDVs) readDV(ctx context.Context, dv *actions.DeletionVector) (*roaring64.Bitmap, error) {
	return delta.ReadDV(ctx, d.t, dv)
}

func (d tableDVs) writeDVs(ctx context.Context, bitmaps []*roaring64.Bitmap) ([]*actions.DeletionVector, error) {
	out := make([]*actions.DeletionVector, len(bitmaps))
	var fileIdx []int
	var fileBMs []*roaring64.Bitmap
	for i, b := range bitmaps {
		if b.GetCardinality() <= d.inlineMax {
			dv, err := delta.InlineDV(b)
			if err != nil {
				return nil, err
			}
			out[i] = dv
			continue
		}
		fileIdx = append(fileIdx, i)
		fileBMs = append(fileBMs, b)
	}
	if len(fileBMs) == 0 {
		return out, nil
	}
	if d.objs == nil {
		return nil, fmt.Errorf("table %s: write deletion vectors: no attempt.Objects to track the file in", d.t.URL)
	}
	// Tracked (and so in the attempt's intent record) before it is
	// created: a run killed during the put leaves no unnamed object.
	dvs, err := delta.WriteTrackedDV(ctx, d.t, "", fileBMs, d.objs.Track)
	if err != nil {
		return nil, err
	}
	for k, i := range fileIdx {
		out[i] = dvs[k]
	}
	return out, nil
}

// dvObjectKey returns the object key of a `u` descriptor's file.
func dvObjectKey(dv *actions.DeletionVector) (string, error) {
	if dv.StorageType != "u" || len(dv.PathOrInlineDv) < 20 {
		return "", fmt.Errorf("deletion vector %q is not a relative (u) file", dv.UniqueID())
	}
	return deltadv.DVFileKey(dv.PathOrInlineDv)
}
