package logging

import (
	"io"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/internal/redact"
)

// New is the logger of every command: hclog at level on w, text or
// JSON. JSON lines carry durations as Go's duration strings ("1m0s"), as
// the text lines do, not as nanosecond counts, and do not escape <, > and &.
// Every line passes redact.Text: whatever package logs a table URL (a
// "table" field, an error naming it), its credentials never reach w. hclog
// writes each entry in one Write, which redact.Writer needs, and JSON
// escaping off keeps the '&' between query parameters as it is.
func New(w io.Writer, format, level string) hclog.Logger {
	l := hclog.New(&hclog.LoggerOptions{
		Name:               "compactord",
		Output:             redact.Writer(w),
		JSONFormat:         format == "json",
		JSONEscapeDisabled: true,
		Level:              hclog.LevelFromString(level),
	})
	if format != "json" {
		return l
	}
	return durationStrings{l}
}

// durationStrings is an hclog.Logger whose key/value arguments (also those
// of With) have every time.Duration replaced by its String(): hclog's JSON
// format marshals a Duration as its int64 nanoseconds.
type durationStrings struct{ hclog.Logger }

// stringDurations returns args with each time.Duration (or *time.Duration)
// value as its String(); args is not modified.
func stringDurations(args []any) []any {
	var out []any
	for i, a := range args {
		var s string
		switch d := a.(type) {
		case time.Duration:
			s = d.String()
		case *time.Duration:
			if d == nil {
				continue
			}
			s = d.String()
		default:
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = s
	}
	if out == nil {
		return args
	}
	return out
}

func (l durationStrings) Log(level hclog.Level, msg string, args ...any) {
	l.Logger.Log(level, msg, stringDurations(args)...)
}
func (l durationStrings) Trace(msg string, args ...any) {
	l.Logger.Trace(msg, stringDurations(args)...)
}
func (l durationStrings) Debug(msg string, args ...any) {
	l.Logger.Debug(msg, stringDurations(args)...)
}
func (l durationStrings) Info(msg string, args ...any) { l.Logger.Info(msg, stringDurations(args)...) }
func (l durationStrings) Warn(msg string, args ...any) { l.Logger.Warn(msg, stringDurations(args)...) }
func (l durationStrings) Error(msg string, args ...any) {
	l.Logger.Error(msg, stringDurations(args)...)
}

func (l durationStrings) With(args ...any) hclog.Logger {
	return durationStrings{l.Logger.With(stringDurations(args)...)}
}
func (l durationStrings) Named(name string) hclog.Logger {
	return durationStrings{l.Logger.Named(name)}
}
func (l durationStrings) ResetNamed(name string) hclog.Logger {
	return durationStrings{l.Logger.ResetNamed(name)}
}

var _ hclog.Logger = durationStrings{}
