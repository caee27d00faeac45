package commit

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logstore"
	"github.com/compactord/compactord/failure"
)

// The errors of commit and delta carry their own classes: failure.Of knows
// none of their types.
func TestErrorClasses(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want failure.Class
	}{
		{"a lost race beyond the retry budget is retried", fmt.Errorf("x: %w", ErrTooManyAttempts), failure.Retry},
		{"a concurrent metadata change is retried (re-plan)", fmt.Errorf("x: %w", ErrMetadataChanged), failure.Retry},
		{"a conflicting DML is retried", fmt.Errorf("x: %w", ErrConflict), failure.Retry},
		{"cancellation is retried", fmt.Errorf("x: %w", context.Canceled), failure.Retry},
		{"a store without put-if-absent halts the table", fmt.Errorf("x: %w", logstore.ErrNoPutIfAbsent), failure.Halt},
		{"an inconsistent log halts", fmt.Errorf("x: %w", ErrInconsistentLog), failure.Halt},
		{"a malformed commit halts", fmt.Errorf("x: %w", actions.ErrMalformedAction), failure.Halt},
		{"a corrupt DV quarantines", fmt.Errorf("x: %w", delta.ErrCorruptDV), failure.Quarantine},
		{"an unsupported table feature halts", fmt.Errorf("load: %w", errors.Join(&delta.UnsupportedFeatureError{Feature: "geospatial", Kind: delta.KindReader})), failure.Halt},
		{"an explicit class wins", failure.With(failure.Halt, ErrConflict), failure.Halt},
		{"an explicit class survives wrapping", fmt.Errorf("run: %w", failure.With(failure.Quarantine, errors.New("bad file"))), failure.Quarantine},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := failure.Of(tt.err); got != tt.want {
				t.Fatalf("Of(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
