package delta

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/compactord/compactord/delta/actions"
	deltadv "github.com/compactord/compactord/delta/dv"
	"github.com/compactord/compactord/failure"
)

// corruptLog names a log object (commit, checkpoint part, sidecar) whose
// content is malformed (class Halt: a log that cannot be read is never
// written past).
func corruptLog(kind failure.Kind, key string, err error) error {
	var cf *failure.CorruptFileError
	if errors.As(err, &cf) {
		return err
	}
	return &failure.CorruptFileError{Kind: kind, Path: key, Err: err}
}

// corruptDV names a deletion vector whose content is malformed; dataFile is
// the file it belongs to when known.
func corruptDV(where, dataFile string, err error) error {
	return &failure.CorruptFileError{Kind: failure.DeletionVector, Path: where, DataFile: dataFile, Err: err}
}

// CorruptFileDV is the *failure.CorruptFileError for the deletion vector of
// add that err found malformed, naming the vector's object and add's file.
func CorruptFileDV(add *actions.Add, err error) error {
	return corruptDV(dvObjectName(add.DeletionVector), add.Path, err)
}

// LoadFileDV reads the deletion vector of add, a file of numRows physical
// rows, and checks it against its descriptor and the file: nil when the file
// has no deleted rows. A malformed deletion vector is a
// *failure.CorruptFileError naming add's path.
func LoadFileDV(ctx context.Context, t *Table, add *actions.Add, numRows int64) (*roaring64.Bitmap, error) {
	if add.DeletionVector == nil {
		return nil, nil
	}
	dv, err := ReadDV(ctx, t, add.DeletionVector)
	if err != nil {
		var (
			cf *failure.CorruptFileError
			mf *failure.MissingFileError
		)
		if errors.As(err, &cf) && cf.DataFile == "" {
			cf.DataFile = add.Path
		}
		if errors.As(err, &mf) && mf.DataFile == "" {
			mf.DataFile = add.Path
		}
		return nil, fmt.Errorf("data file %s: %w", add.Path, err)
	}
	where := dvObjectName(add.DeletionVector)
	// The rows the bitmap holds are not printed (ReadDV).
	if c := int64(dv.GetCardinality()); c != add.DeletionVector.Cardinality {
		return nil, corruptDV(where, add.Path, fmt.Errorf("%w: the bitmap's cardinality does not match the descriptor's cardinality (%d)", ErrCorruptDV, add.DeletionVector.Cardinality))
	}
	if dv.IsEmpty() {
		return nil, nil
	}
	if m := dv.Maximum(); numRows < 0 || m >= uint64(numRows) {
		return nil, corruptDV(where, add.Path, fmt.Errorf("%w: deletes a row past the end of the file (%d rows)", ErrCorruptDV, numRows))
	}
	return dv, nil
}

// dvObjectName names the object of a deletion vector descriptor: the DV
// file's key (or absolute path, its userinfo redacted), or "inline".
func dvObjectName(dv *actions.DeletionVector) string {
	switch dv.StorageType {
	case "i":
		return "inline"
	case "u":
		if key, err := deltadv.DVFileKey(dv.PathOrInlineDv); err == nil {
			return key
		}
	case "p":
		if u, err := url.Parse(dv.PathOrInlineDv); err == nil && u.User != nil {
			return u.Redacted()
		}
	}
	return dv.PathOrInlineDv
}
