package failure

import (
	"errors"
	"fmt"
)

// Class says what the caller (the scheduler) should do about an error.
type Class int

const (
	// Retry: transient (lost commit races beyond the retry budget, a
	// concurrent metadata change, throttling, I/O hiccups, cancellation).
	// Run again later.
	Retry Class = iota
	// Quarantine: one input is bad (a corrupt data file, a bad deletion
	// vector). Mark and skip it; keep the table moving.
	Quarantine
	// Halt: continuing could break an invariant (unsupported table feature,
	// a store that cannot put-if-absent, an inconsistent or corrupt log).
	// Stop this table, keep the daemon up, alert.
	Halt
)

// String names the class.
func (c Class) String() string {
	switch c {
	case Retry:
		return "retry"
	case Quarantine:
		return "quarantine"
	case Halt:
		return "halt"
	}
	return "unknown"
}

// Classed is implemented by errors that know their class.
type Classed interface {
	error
	FailureClass() Class
}

// Of returns the class of err: the outermost error in its chain that
// implements Classed decides (an explicit With, a typed error, a sentinel
// made with New); anything else, context cancellation included, is Retry.
func Of(err error) Class {
	var c Classed
	if errors.As(err, &c) {
		return c.FailureClass()
	}
	return Retry
}

// classError attaches a class to an error.
type classError struct {
	class Class
	err   error
}

func (e *classError) Error() string       { return e.err.Error() }
func (e *classError) Unwrap() error       { return e.err }
func (e *classError) FailureClass() Class { return e.class }

// With wraps err with a class that overrides the classes inside it; nil
// stays nil.
func With(c Class, err error) error {
	if err == nil {
		return nil
	}
	return &classError{class: c, err: err}
}

// sentinel is an error value with a class.
type sentinel struct {
	class Class
	msg   string
}

func (e *sentinel) Error() string       { return e.msg }
func (e *sentinel) FailureClass() Class { return e.class }

// New returns a sentinel error of class c: errors that wrap it (%w) have
// its class unless an outer error says otherwise.
func New(c Class, msg string) error { return &sentinel{class: c, msg: msg} }

// Kind names what sort of object a CorruptFileError is about.
type Kind string

// Kinds of objects.
const (
	DataFile       Kind = "data file"
	DeletionVector Kind = "deletion vector"
	Checkpoint     Kind = "checkpoint"
	Sidecar        Kind = "sidecar"
	Commit         Kind = "commit"
)

// CorruptFileError says that an object could be read from the store but
// its content is not what its format requires (a bad parquet footer or
// page, a deletion vector failing its checksum, an unparsable commit).
type CorruptFileError struct {
	// Kind is what sort of object Path is.
	Kind Kind
	// Path is the object's key in the table (as in the log for data files).
	Path string
	// DataFile is the data file (add path) the object belongs to: Path for
	// a data file, the file whose deletion vector Path is; empty for log
	// objects.
	DataFile string
	// Err says what is wrong.
	Err error
}

// Error implements error.
func (e *CorruptFileError) Error() string {
	return fileMessage("corrupt", e.Kind, e.Path, e.DataFile, e.Err)
}

// fileMessage is the message of a corrupt or missing object: what, its
// kind and path, the data file it belongs to when that is another, and the
// cause.
func fileMessage(what string, kind Kind, path, dataFile string, err error) string {
	if dataFile != "" && dataFile != path {
		return fmt.Sprintf("%s %s %s of data file %s: %v", what, kind, path, dataFile, err)
	}
	return fmt.Sprintf("%s %s %s: %v", what, kind, path, err)
}

// Unwrap returns the cause.
func (e *CorruptFileError) Unwrap() error { return e.Err }

// FailureClass is Quarantine for a data file or a deletion vector (skip
// the file, keep the table moving) and Halt for a log object (a table whose
// log cannot be read must not be written).
func (e *CorruptFileError) FailureClass() Class {
	if e.Kind == DataFile || e.Kind == DeletionVector {
		return Quarantine
	}
	return Halt
}

// CorruptDataFiles returns the data files (CorruptFileError.DataFile) that
// the corrupt-file errors anywhere in err's tree name, in tree order and
// without repeats (a run that failed several jobs joins their errors).
func CorruptDataFiles(err error) []string {
	var files []string
	for _, cf := range CorruptFiles(err) {
		files = append(files, cf.DataFile)
	}
	return distinctNonEmpty(files)
}

// CorruptFiles returns every corrupt-file error in err's tree, in tree
// order (a worker process reports them to its coordinator).
func CorruptFiles(err error) []*CorruptFileError { return inTree[*CorruptFileError](err) }

// MissingFileError says that an object the table's log references (a data
// file, a deletion vector) was not found in the store. Its class is Retry:
// a missing object may be a passing effect of the store, or the file of a
// snapshot that a newer commit replaced (a concurrent rewrite and vacuum by
// another engine). The scheduler quarantines it only when it stays missing
// for several runs while the newest snapshot still names it.
type MissingFileError struct {
	// Kind is what sort of object Path is.
	Kind Kind
	// Path is the object's key in the table (as in the log for data files).
	Path string
	// DataFile is the data file (add path) the object belongs to: Path for
	// a data file, the file whose deletion vector Path is.
	DataFile string
	// Err is the store's answer.
	Err error
}

// Error implements error.
func (e *MissingFileError) Error() string {
	return fileMessage("missing", e.Kind, e.Path, e.DataFile, e.Err)
}

// Unwrap returns the cause.
func (e *MissingFileError) Unwrap() error { return e.Err }

// FailureClass is Retry: one run's miss is not proof that the file is gone.
func (e *MissingFileError) FailureClass() Class { return Retry }

// MissingDataFiles returns the data files (MissingFileError.DataFile) that
// the missing-file errors anywhere in err's tree name, in tree order and
// without repeats.
func MissingDataFiles(err error) []string {
	var files []string
	for _, mf := range MissingFiles(err) {
		files = append(files, mf.DataFile)
	}
	return distinctNonEmpty(files)
}

// MissingFiles returns every missing-file error in err's tree, in tree
// order (a worker process reports them to its coordinator).
func MissingFiles(err error) []*MissingFileError { return inTree[*MissingFileError](err) }

// inTree returns every error of type E in err's tree, in tree order.
func inTree[E error](err error) []E {
	var out []E
	walkTree(err, func(e error) {
		if x, ok := e.(E); ok {
			out = append(out, x)
		}
	})
	return out
}

// distinctNonEmpty returns files without the empty ones and repeats, in
// order.
func distinctNonEmpty(files []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range files {
		if f != "" && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// walkTree calls f on every error of err's tree, in tree order.
func walkTree(err error, f func(error)) {
	if err == nil {
		return
	}
	f(err)
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, x := range u.Unwrap() {
			walkTree(x, f)
		}
	case interface{ Unwrap() error }:
		walkTree(u.Unwrap(), f)
	}
}
