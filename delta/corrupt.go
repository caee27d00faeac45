package delta

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/objstore"
)

// ErrCorruptParquet is wrapped by the errors RecoverParquet makes of a
// parquet-go panic on malformed input.
var ErrCorruptParquet = errors.New("corrupt parquet")

// RecoverParquet, deferred directly by a function that decodes parquet
// (defer delta.RecoverParquet(&err)), turns a parquet-go panic on malformed
// input into an error wrapping ErrCorruptParquet in *err.
func RecoverParquet(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%w: %v", ErrCorruptParquet, p)
	}
}

// DataFileError classifies err, met while reading the data file path (as in
// its add action) through ra: when the store answered every read and the
// context is alive, the content is at fault and err becomes a
// *failure.CorruptFileError naming the file (class Quarantine); a missing
// object (the store answered NotFound) becomes a *failure.MissingFileError
// naming it (class Retry: the scheduler decides when a miss is lasting); a
// store failure, an ended context, or an error that already names a corrupt
// or missing object is returned as it is.
func DataFileError(path string, ra *ObjectReaderAt, err error) error {
	var (
		cf *failure.CorruptFileError
		mf *failure.MissingFileError
	)
	switch {
	case err == nil, errors.As(err, &cf), errors.As(err, &mf):
		return err
	case objstore.Code(err) == gcerrors.NotFound, ra != nil && objstore.Code(ra.StoreErr()) == gcerrors.NotFound:
		return &failure.MissingFileError{Kind: failure.DataFile, Path: path, DataFile: path, Err: err}
	case ra != nil && (ra.ctx.Err() != nil || ra.StoreErr() != nil):
		return err
	}
	return &failure.CorruptFileError{Kind: failure.DataFile, Path: path, DataFile: path, Err: err}
}

// MissingOr returns err as a *failure.MissingFileError naming the data file
// path when the store answered it NotFound (a stat or open of the file),
// and err as it is otherwise.
func MissingOr(path string, err error) error {
	var mf *failure.MissingFileError
	if err == nil || errors.As(err, &mf) || objstore.Code(err) != gcerrors.NotFound {
		return err
	}
	return &failure.MissingFileError{Kind: failure.DataFile, Path: path, DataFile: path, Err: err}
}

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
		if key, err := DVFileKey(dv.PathOrInlineDv); err == nil {
			return key
		}
	case "p":
		if u, err := url.Parse(dv.PathOrInlineDv); err == nil && u.User != nil {
			return u.Redacted()
		}
	}
	return dv.PathOrInlineDv
}
