package pq

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/objstore"
)

// ErrCorruptParquet is wrapped by the errors the panic guard makes of a
// panic that parquet-go (or a blob driver) raised on malformed input.
var ErrCorruptParquet = errors.New("corrupt parquet")

// Guard is the panic guard for calls into parquet-go and the blob drivers.
// Deferred directly by the function that makes the calls
// (defer pq.Guard(&err, failure.DataFile, key)), it turns a panic raised by
// those libraries on malformed input into a *failure.CorruptFileError of
// kind naming object (class Quarantine for data files and deletion
// vectors), wrapping ErrCorruptParquet. A panic that is a bug of ours is
// not recovered (see InputPanic).
func Guard(err *error, kind failure.Kind, object string) {
	if p := recover(); p != nil {
		cf := &failure.CorruptFileError{Kind: kind, Path: object, Err: InputPanic(p)}
		if kind == failure.DataFile {
			cf.DataFile = object
		}
		*err = cf
	}
}

// RecoverParquet is Guard for a caller that does not know the object's
// name: deferred directly (defer pq.RecoverParquet(&err)), it turns a
// panic that parquet-go raised on malformed input into an error wrapping
// ErrCorruptParquet in *err, which the caller names and classifies
// (DataFileError). A bug of ours is not recovered (see InputPanic).
func RecoverParquet(err *error) {
	if p := recover(); p != nil {
		*err = InputPanic(p)
	}
}

// InputPanic is the rule of the panic guard, for a deferred function that
// has recovered p itself: when the panic was raised inside a library that
// decodes or transports untrusted bytes (parquet-go and its compression
// codecs, the Roaring decoder, the gocloud blob drivers and their SDKs) it
// returns an error wrapping ErrCorruptParquet; otherwise, a panic raised in
// compactord's own code (a nil dereference, an index out of range, an
// explicit panic), it panics again with p, so that a real bug crashes
// loudly, in tests first.
func InputPanic(p any) error {
	CheckLibraryPanic(p)
	return fmt.Errorf("%w: %v", ErrCorruptParquet, p)
}

// CheckLibraryPanic applies the guard's rule to a recovered panic p for a
// caller that builds its own error (a blob driver that panicked while
// writing: the outcome is unknown, not a corrupt file): it returns when p
// was raised inside one of the input libraries, and panics again with p
// otherwise.
func CheckLibraryPanic(p any) {
	if !raisedInLibrary() {
		panic(p)
	}
}

// inputLibraries are the module path prefixes whose panics the guard
// takes for malformed input.
var inputLibraries = [...]string{
	"github.com/parquet-go/",
	"github.com/klauspost/compress/",
	"github.com/andybalholm/brotli",
	"github.com/pierrec/lz4/",
	"github.com/RoaringBitmap/",
	"github.com/bits-and-blooms/",
	"gocloud.dev/",
	"github.com/Azure/",
	"cloud.google.com/",
	"github.com/aws/",
	"google.golang.org/",
}

// raisedInLibrary reports whether the panic being handled (the caller runs
// in a deferred function) was raised inside one of inputLibraries: the
// first frame below runtime.gopanic that is neither the runtime nor the
// standard library decides.
func raisedInLibrary() bool {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case !panicking:
			panicking = f.Function == "runtime.gopanic"
		case strings.HasPrefix(f.Function, "runtime."), isStdlib(f.Function):
		default:
			for _, lib := range inputLibraries {
				if strings.HasPrefix(f.Function, lib) {
					return true
				}
			}
			return false
		}
		if !more {
			return false
		}
	}
}

// isStdlib reports whether fn (a qualified function name) is in the
// standard library: its import path has no dot in its first element.
func isStdlib(fn string) bool {
	if i := strings.IndexByte(fn, '['); i >= 0 {
		fn = fn[:i] // type arguments may name any package
	}
	slash := strings.IndexByte(fn, '/')
	if slash < 0 {
		return true // "bytes.(*Reader).Read": a one-element import path
	}
	return !strings.Contains(fn[:slash], ".")
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
