package commit

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/compactord/compactord/delta"
)

func TestClassSaysWhatTheSchedulerShouldDo(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want ErrorClass
	}{
		{"a lost race beyond the retry budget is retried", fmt.Errorf("x: %w", ErrTooManyAttempts), Retry},
		{"a concurrent metadata change is retried (re-plan)", fmt.Errorf("x: %w", ErrMetadataChanged), Retry},
		{"a conflicting DML is retried", fmt.Errorf("x: %w", ErrConflict), Retry},
		{"cancellation is retried", fmt.Errorf("x: %w", context.Canceled), Retry},
		{"a store without put-if-absent halts the table", fmt.Errorf("x: %w", delta.ErrNoPutIfAbsent), Halt},
		{"our own put-if-absent refusal halts", fmt.Errorf("x: %w", ErrNoPutIfAbsent), Halt},
		{"a malformed commit halts", fmt.Errorf("x: %w", delta.ErrMalformedAction), Halt},
		{"a corrupt DV quarantines", fmt.Errorf("x: %w", delta.ErrCorruptDV), Quarantine},
		{"an unsupported table feature halts", fmt.Errorf("load: %w", errors.Join(&delta.UnsupportedFeatureError{Feature: "geospatial", Kind: delta.KindReader})), Halt},
		{"an explicit class wins", WithClass(Halt, ErrConflict), Halt},
		{"an explicit class survives wrapping", fmt.Errorf("run: %w", WithClass(Quarantine, errors.New("bad file"))), Quarantine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Class(tt.err); got != tt.want {
				t.Fatalf("Class(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
	if WithClass(Halt, nil) != nil {
		t.Fatal("WithClass(nil) must stay nil")
	}
}
