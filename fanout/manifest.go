package fanout

import (
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/objstore"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/compactord/compactord/composition"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/failure"
)

// manifestFormat is the version of the result, failure and intent JSON.
const manifestFormat = 1

// Per-attempt objects of a unit, in the unit's directory
// (_compactord/plans/<id>/units/<index>/):
//
//	intent-<attempt>.json    the keys the attempt may have written, rewritten
//	                         (one put) before each new object is created
//	origins-<attempt>-<job>.bin  a sorted job's origin map (EncodeTo)
//	result-<attempt>.json    the result manifest, written last: its presence
//	                         means the attempt finished
//	failure-<attempt>.json   why the attempt failed (written on a failure exit)
const (
	intentPrefix  = "intent-"
	resultPrefix  = "result-"
	failurePrefix = "failure-"
	originsPrefix = "origins-"
)

// NewAttemptID returns a fresh attempt id (the time, so ids of one unit
// sort by start, and random digits).
func NewAttemptID(now time.Time) string { return NewPlanID(now) }

// ResultManifest is what a finished unit wrote: one entry per job.
type ResultManifest struct {
	Format  int         `json:"format"`
	Plan    string      `json:"plan"`
	Unit    int         `json:"unit"`
	Attempt string      `json:"attempt"`
	Jobs    []JobResult `json:"jobs"`
}

// JobResult is one rewritten job of a unit.
type JobResult struct {
	// Job is the job's index in the stored plan's jobs.
	Job int `json:"job"`
	// ID is the job's id.
	ID string `json:"id"`
	// Sources are the paths of the sources read, in write order (source k
	// of the origin map).
	Sources []string `json:"sources"`
	// Outputs are the written files, in write order.
	Outputs []OutputResult `json:"outputs"`
	// Runs is the composition of an order-keeping job.
	Runs []composition.Run `json:"runs,omitempty"`
	// Sorted is set for a job that permuted rows.
	Sorted bool `json:"sorted,omitempty"`
	// Origins is the key of the sorted job's encoded origin map.
	Origins string `json:"origins,omitempty"`
	// BytesRead and BytesWritten are the job's source and output bytes.
	BytesRead    int64 `json:"bytesRead"`
	BytesWritten int64 `json:"bytesWritten"`
}

// OutputResult is one written data file.
type OutputResult struct {
	// Add is the add action to commit.
	Add *actions.Add `json:"add"`
	// Key is the object key under the table root.
	Key string `json:"key"`
	// Rows is the number of rows written.
	Rows int64 `json:"rows"`
}

// FailureManifest is what a failed attempt wrote: its error, its class, the
// corrupt objects it met, so that the coordinator can quarantine them, and
// the objects the log names that it found missing, so that the scheduler
// counts their misses as it does a local run's.
type FailureManifest struct {
	Format  int             `json:"format"`
	Plan    string          `json:"plan"`
	Unit    int             `json:"unit"`
	Attempt string          `json:"attempt"`
	Class   string          `json:"class"`
	Error   string          `json:"error"`
	Corrupt []CorruptObject `json:"corrupt,omitempty"`
	// Missing are the failure.MissingFileErrors of the error, in the same
	// shape (Error is the store's answer).
	Missing []CorruptObject `json:"missing,omitempty"`
}

// CorruptObject is a failure.CorruptFileError as stored.
type CorruptObject struct {
	Kind     string `json:"kind"`
	Path     string `json:"path"`
	DataFile string `json:"dataFile,omitempty"`
	Error    string `json:"error"`
}

// Err rebuilds the failure as an error carrying its class, every corrupt
// object as a *failure.CorruptFileError and every missing one as a
// *failure.MissingFileError.
func (f *FailureManifest) Err() error {
	var errs []error
	for _, c := range f.Corrupt {
		errs = append(errs, &failure.CorruptFileError{Kind: failure.Kind(c.Kind), Path: c.Path, DataFile: c.DataFile, Err: errors.New(c.Error)})
	}
	for _, m := range f.Missing {
		errs = append(errs, &failure.MissingFileError{Kind: failure.Kind(m.Kind), Path: m.Path, DataFile: m.DataFile, Err: errors.New(m.Error)})
	}
	base := fmt.Errorf("unit %d attempt %s: %s", f.Unit, f.Attempt, f.Error)
	if len(errs) > 0 {
		return &storedError{msg: base.Error(), errs: errs}
	}
	switch f.Class {
	case failure.Halt.String():
		return failure.With(failure.Halt, base)
	case failure.Quarantine.String():
		return failure.With(failure.Quarantine, base)
	}
	return base
}

// storedError is a worker's error read back: its message, and the
// corrupt-file errors it carried (so failure.Of and
// failure.CorruptDataFiles see them).
type storedError struct {
	msg  string
	errs []error
}

func (e *storedError) Error() string   { return e.msg }
func (e *storedError) Unwrap() []error { return e.errs }

// corruptObjects lists the corrupt-file errors in err's tree.
func corruptObjects(err error) []CorruptObject {
	var out []CorruptObject
	for _, cf := range failure.CorruptFiles(err) {
		out = append(out, storedObject(cf.Kind, cf.Path, cf.DataFile, cf.Err))
	}
	return out
}

// missingObjects lists the missing-file errors in err's tree.
func missingObjects(err error) []CorruptObject {
	var out []CorruptObject
	for _, mf := range failure.MissingFiles(err) {
		out = append(out, storedObject(mf.Kind, mf.Path, mf.DataFile, mf.Err))
	}
	return out
}

// storedObject is a corrupt or missing object as a manifest stores it
// (its error as the message; "" for none).
func storedObject(kind failure.Kind, path, dataFile string, err error) CorruptObject {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	return CorruptObject{Kind: string(kind), Path: path, DataFile: dataFile, Error: msg}
}

// intentKey is where a unit's attempt keeps its intent record
// (attempt.Journal): beside the plan, for the coordinator to clean up after
// a killed attempt.
func intentKey(plan string, unit int, attempt string) string {
	return unitDir(plan, unit) + intentPrefix + attempt + ".json"
}

// writeJSON puts v as JSON at key (one put: the object appears whole).
func writeJSON(ctx context.Context, t *delta.Table, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	if err := t.Bucket.WriteAll(ctx, key, data, nil); err != nil {
		return fmt.Errorf("write %s of %s: %w", key, t.URL, err)
	}
	return nil
}

// maxControlObject bounds the read of a stored plan, a manifest or an
// intent record: a writer of the table can put a huge one under
// _compactord/plans/, and it is refused unread (a plan of 100,000 jobs is
// well under it).
const maxControlObject = 256 << 20

// readJSON reads the JSON object at key into v.
func readJSON(ctx context.Context, t *delta.Table, key string, v any) error {
	data, err := objstore.ReadAllLimit(ctx, t.Bucket, key, maxControlObject)
	if err != nil {
		return fmt.Errorf("read %s of %s: %w", key, t.URL, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %s of %s: %w", key, t.URL, err)
	}
	return nil
}

// ExitCode is the exit code a worker ends with after err: ExitOK for nil,
// ExitQuarantine for a failure.Quarantine error, ExitHalt for failure.Halt,
// ExitRetry for anything else.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	switch failure.Of(err) {
	case failure.Quarantine:
		return ExitQuarantine
	case failure.Halt:
		return ExitHalt
	}
	return ExitRetry
}

// ParseIndex reads a unit index as the Job controller writes it
// (JOB_COMPLETION_INDEX: a decimal string) and checks it against units.
func ParseIndex(s string, units int) (int, error) {
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || strconv.Itoa(i) != s {
		return 0, fmt.Errorf("%s=%q is not a unit index", IndexEnv, s)
	}
	if i >= units {
		return 0, fmt.Errorf("%s=%d: the plan has %d units", IndexEnv, i, units)
	}
	return i, nil
}
