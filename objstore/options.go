package objstore

import (
	"cmp"
	"errors"
	"fmt"
	"time"
)

// Options are the deadlines and retry limits of a wrapped bucket. The zero
// value of a field means its default (DefaultOptions).
type Options struct {
	// MetadataTimeout bounds one attempt of a metadata call: Attributes,
	// one page of List, Delete, Copy (default 30s).
	MetadataTimeout time.Duration
	// OpenTimeout bounds one attempt at opening a read, until the store
	// answers with the response headers (default 30s).
	OpenTimeout time.Duration
	// ReadIdleTimeout bounds how long one body Read may make no progress
	// before the read is abandoned and resumed (default 60s).
	ReadIdleTimeout time.Duration
	// WriteTimeout bounds a write from its start to its Close (default
	// 10m; an output file of a few hundred MiB needs seconds).
	WriteTimeout time.Duration
	// MaxAttempts bounds the attempts of one call, the first included
	// (default 5). A body read counts each resume as an attempt.
	MaxAttempts int
	// InitialBackoff and MaxBackoff shape the exponential backoff between
	// attempts (defaults 100ms and 5s); each wait is randomized by ±50%.
	InitialBackoff, MaxBackoff time.Duration
}

// DefaultOptions returns the defaults: the deadlines are far above any
// healthy store's latency, and low enough that a store that accepts
// connections and never answers fails a call within minutes, not never.
func DefaultOptions() Options {
	return Options{
		MetadataTimeout: 30 * time.Second,
		OpenTimeout:     30 * time.Second,
		ReadIdleTimeout: 60 * time.Second,
		WriteTimeout:    10 * time.Minute,
		MaxAttempts:     5,
		InitialBackoff:  100 * time.Millisecond,
		MaxBackoff:      5 * time.Second,
	}
}

// ErrInvalidOptions is wrapped by Validate's errors.
var ErrInvalidOptions = errors.New("invalid object-store options")

// withDefaults fills zero fields from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	o.MetadataTimeout = cmp.Or(o.MetadataTimeout, d.MetadataTimeout)
	o.OpenTimeout = cmp.Or(o.OpenTimeout, d.OpenTimeout)
	o.ReadIdleTimeout = cmp.Or(o.ReadIdleTimeout, d.ReadIdleTimeout)
	o.WriteTimeout = cmp.Or(o.WriteTimeout, d.WriteTimeout)
	o.MaxAttempts = cmp.Or(o.MaxAttempts, d.MaxAttempts)
	o.InitialBackoff = cmp.Or(o.InitialBackoff, d.InitialBackoff)
	o.MaxBackoff = cmp.Or(o.MaxBackoff, d.MaxBackoff)
	return o
}

// Validate reports negative durations and attempt counts, and a backoff
// whose maximum is below its start.
func (o Options) Validate() error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"metadata timeout", o.MetadataTimeout}, {"open timeout", o.OpenTimeout},
		{"read idle timeout", o.ReadIdleTimeout}, {"write timeout", o.WriteTimeout},
		{"initial backoff", o.InitialBackoff}, {"max backoff", o.MaxBackoff},
	} {
		if f.d < 0 {
			return fmt.Errorf("%w: %s %v is negative", ErrInvalidOptions, f.name, f.d)
		}
	}
	if o.MaxAttempts < 0 {
		return fmt.Errorf("%w: max attempts %d is negative", ErrInvalidOptions, o.MaxAttempts)
	}
	d := o.withDefaults()
	if d.MaxBackoff < d.InitialBackoff {
		return fmt.Errorf("%w: max backoff %v is below initial backoff %v", ErrInvalidOptions, d.MaxBackoff, d.InitialBackoff)
	}
	return nil
}
