package pq

import (
	"errors"
	"fmt"

	"gocloud.dev/gcerrors"

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
