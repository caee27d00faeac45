package logging

import (
	"fmt"
	"io"
	"reflect"
	"sort"
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
		return argsLogger{l, flattenMaps}
	}
	return argsLogger{l, stringDurations}
}

// argsLogger is an hclog.Logger whose key/value arguments (also those of
// With) pass fix first. In JSON, fix is stringDurations: hclog marshals a
// Duration as its int64 nanoseconds. In text, it is flattenMaps: hclog
// prints a map as Go's map[k:v ...].
type argsLogger struct {
	hclog.Logger
	fix func([]any) []any
}

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

// flattenMaps returns args with each map value of string keys (the
// operations' counts) replaced by one key/value pair per entry, key
// "name.entry", in sorted order; an empty map is left out. args is not
// modified.
func flattenMaps(args []any) []any {
	var out []any
	for i := 0; i+1 < len(args); i += 2 {
		v := reflect.ValueOf(args[i+1])
		if v.Kind() != reflect.Map || v.Type().Key().Kind() != reflect.String {
			if out != nil {
				out = append(out, args[i], args[i+1])
			}
			continue
		}
		if out == nil {
			out = append([]any(nil), args[:i]...)
		}
		keys := v.MapKeys()
		sort.Slice(keys, func(a, b int) bool { return keys[a].String() < keys[b].String() })
		for _, k := range keys {
			out = append(out, fmt.Sprintf("%v.%s", args[i], k.String()), v.MapIndex(k).Interface())
		}
	}
	if out == nil {
		return args
	}
	if len(args)%2 == 1 {
		out = append(out, args[len(args)-1])
	}
	return out
}

// Log logs at level with args fixed.
func (l argsLogger) Log(level hclog.Level, msg string, args ...any) {
	l.Logger.Log(level, msg, l.fix(args)...)
}

// Trace logs at trace level with args fixed.
func (l argsLogger) Trace(msg string, args ...any) { l.Logger.Trace(msg, l.fix(args)...) }

// Debug logs at debug level with args fixed.
func (l argsLogger) Debug(msg string, args ...any) { l.Logger.Debug(msg, l.fix(args)...) }

// Info logs at info level with args fixed.
func (l argsLogger) Info(msg string, args ...any) { l.Logger.Info(msg, l.fix(args)...) }

// Warn logs at warn level with args fixed.
func (l argsLogger) Warn(msg string, args ...any) { l.Logger.Warn(msg, l.fix(args)...) }

// Error logs at error level with args fixed.
func (l argsLogger) Error(msg string, args ...any) { l.Logger.Error(msg, l.fix(args)...) }

// With is the logger with args (fixed) on every line.
func (l argsLogger) With(args ...any) hclog.Logger {
	return argsLogger{l.Logger.With(l.fix(args)...), l.fix}
}

// Named is the sub-logger name, its arguments still fixed.
func (l argsLogger) Named(name string) hclog.Logger {
	return argsLogger{l.Logger.Named(name), l.fix}
}

// ResetNamed is the logger renamed, its arguments still fixed.
func (l argsLogger) ResetNamed(name string) hclog.Logger {
	return argsLogger{l.Logger.ResetNamed(name), l.fix}
}

var _ hclog.Logger = argsLogger{}
