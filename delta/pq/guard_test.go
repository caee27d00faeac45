package pq

import (
	"errors"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/failure"
)

// guarded runs f under Guard and returns the error it left.
func guarded(f func()) (err error) {
	defer Guard(&err, failure.DataFile, "part-0.parquet")
	f()
	return nil
}

func TestGuardTurnsAPanicInParquetGoIntoACorruptFileNamingTheObject(t *testing.T) {
	// parquet-go panics on a decimal precision it cannot hold, as it does
	// on many malformed footers and pages.
	err := guarded(func() { parquet.Decimal(0, 100, parquet.Int32Type) })
	var cf *failure.CorruptFileError
	if !errors.As(err, &cf) || cf.Kind != failure.DataFile || cf.Path != "part-0.parquet" || cf.DataFile != "part-0.parquet" {
		t.Fatalf("err = %#v, want a CorruptFileError naming part-0.parquet", err)
	}
	if !errors.Is(err, ErrCorruptParquet) || failure.Of(err) != failure.Quarantine {
		t.Fatalf("err = %v (class %v), want ErrCorruptParquet, Quarantine", err, failure.Of(err))
	}
}

func TestGuardLetsABugOfOursCrash(t *testing.T) {
	tests := []struct {
		name string
		bug  func()
	}{
		{"nil map write", func() {
			var m map[string]int
			m["a"] = 1
		}},
		{"index out of range", func() {
			s := []int{}
			i := 3
			_ = s[i]
		}},
		{"explicit panic", func() { panic("invariant broken") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("the guard recovered a panic raised in compactord's own code")
				}
			}()
			err := guarded(tc.bug)
			t.Fatalf("the guard returned %v", err)
		})
	}
}

func TestRecoverParquetFollowsTheSameRule(t *testing.T) {
	err := func() (err error) {
		defer RecoverParquet(&err)
		parquet.Decimal(0, 100, parquet.Int32Type)
		return nil
	}()
	if !errors.Is(err, ErrCorruptParquet) {
		t.Fatalf("err = %v, want ErrCorruptParquet", err)
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(error).Error(), "nil map") {
			t.Fatalf("recovered %v, want the nil map panic to reach the caller", p)
		}
	}()
	_ = func() (err error) {
		defer RecoverParquet(&err)
		var m map[string]int
		m["a"] = 1
		return nil
	}()
}

func TestIsStdlib(t *testing.T) {
	for fn, want := range map[string]bool{
		"bytes.(*Reader).Read":                                   true,
		"encoding/binary.littleEndian.Uint32":                    true,
		"github.com/parquet-go/parquet-go.(*File).ReadPageIndex": false,
		"slices.SortFunc[go.shape.[]*github.com/x/y.T]":          true,
		"github.com/compactord/compactord/delta/pq.Guard":        false,
	} {
		if got := isStdlib(fn); got != want {
			t.Errorf("isStdlib(%q) = %v, want %v", fn, got, want)
		}
	}
}
