package logstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"gocloud.dev/blob"

	"github.com/compactord/compactord/internal/units"
)

// Default read limits. Spark sets none: a commit is read with Hadoop's line
// reader and Jackson, bounded only by the JVM's 2 GiB array and string
// limits. The defaults sit far above what any engine writes and far below
// what a daemon that shares a node can afford to allocate for one object.
const (
	// DefaultMaxLogLine bounds one action (one line of a commit or JSON
	// checkpoint). The largest real actions are adds whose stats carry long
	// strings (Spark truncates them to 32 characters; other writers may
	// not) and metaData of very wide schemas (a 10,000-column schema is
	// about 2 MiB); 256 MiB is a hundred times that.
	DefaultMaxLogLine int64 = 256 << 20
	// DefaultMaxLogFile bounds one commit file. A CONVERT TO DELTA or a
	// backfill of a million files writes one commit of about a million
	// adds of 0.3-1 KiB: under 1 GiB. A commit is parsed whole, and its
	// actions take two to three times its bytes in memory.
	DefaultMaxLogFile int64 = 1 << 30
	// DefaultMaxLastCheckpoint bounds _delta_log/_last_checkpoint: a few
	// hundred bytes, plus the checkpoint schema when Spark writes it (about
	// 100 bytes per leaf of stats_parsed and partitionValues_parsed, so
	// some 400 KiB for 1,000 columns). The file is a hint: one above the
	// limit is ignored and the log is listed instead, as for a corrupt one.
	DefaultMaxLastCheckpoint int64 = 1 << 20
)

// ReadLimits bound what reading the log allocates for one object, checked
// before the allocation (from the object's size) and again while reading
// (the object may grow between the two). Exceeding one is a
// *failure.CorruptFileError naming the object, the line and the limit (for
// _last_checkpoint, a hint ignored). Zero fields take the defaults.
type ReadLimits struct {
	// LogLine is the largest line of a commit or JSON checkpoint file, in
	// bytes (default DefaultMaxLogLine).
	LogLine int64
	// LogFile is the largest commit file, in bytes (default
	// DefaultMaxLogFile); it also bounds the DynamoDB log store's temp
	// file when a reader repairs an unpublished commit.
	LogFile int64
	// LastCheckpoint is the largest _delta_log/_last_checkpoint, in bytes
	// (default DefaultMaxLastCheckpoint).
	LastCheckpoint int64
}

// WithDefaults returns l with every zero field set to its default.
func (l ReadLimits) WithDefaults() ReadLimits {
	if l.LogLine <= 0 {
		l.LogLine = DefaultMaxLogLine
	}
	if l.LogFile <= 0 {
		l.LogFile = DefaultMaxLogFile
	}
	if l.LastCheckpoint <= 0 {
		l.LastCheckpoint = DefaultMaxLastCheckpoint
	}
	return l
}

// TooLargeError says that an object or one of its lines is over a read
// limit. The read paths return it inside a *failure.CorruptFileError
// naming the object.
type TooLargeError struct {
	// Line is the 1-based line over the limit; 0 when the whole object is.
	Line int
	// Size is the size in bytes seen: the object's or the line's, or the
	// number of bytes read before the limit stopped the read (AtLeast).
	Size int64
	// AtLeast says the object was cut off at Size bytes.
	AtLeast bool
	// Field names the limit, a field of ReadLimits ("LogLine").
	Field string
	// Limit is the limit in bytes.
	Limit int64
}

// Error implements error.
func (e *TooLargeError) Error() string {
	what := "object"
	if e.Line > 0 {
		what = fmt.Sprintf("line %d", e.Line)
	}
	size := fmt.Sprintf("%d bytes", e.Size)
	if e.AtLeast {
		size = "more than " + size
	}
	return fmt.Sprintf("%s is %s, over the read limit of %s (ReadLimits.%s)", what, size, units.FormatBytes(e.Limit), e.Field)
}

// ReadBounded reads the object at key into a buffer of its size when that
// is at most limit bytes; an object over the limit, by its reported size
// or by what was read, is a *TooLargeError (naming field), found before
// its content is allocated. Other errors are the store's.
func ReadBounded(ctx context.Context, b *blob.Bucket, key string, limit int64, field string) ([]byte, time.Time, error) {
	r, err := b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer r.Close()
	if s := r.Size(); s > limit {
		return nil, time.Time{}, &TooLargeError{Size: s, Field: field, Limit: limit}
	}
	var buf bytes.Buffer
	// One read past the size meets the end of the object without growing.
	buf.Grow(int(max(r.Size(), 0)) + bytes.MinRead)
	n, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, time.Time{}, err
	}
	if n > limit {
		// The object grew past the limit after its size was reported.
		return nil, time.Time{}, &TooLargeError{Size: limit, AtLeast: true, Field: field, Limit: limit}
	}
	return buf.Bytes(), r.ModTime(), nil
}
