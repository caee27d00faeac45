package failure

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestOfReadsTheClassTheErrorCarries(t *testing.T) {
	halt := New(Halt, "store cannot put-if-absent")
	corrupt := &CorruptFileError{Kind: DataFile, Path: "a.parquet", DataFile: "a.parquet", Err: errors.New("bad footer")}
	for _, tt := range []struct {
		name string
		err  error
		want Class
	}{
		{"an unclassed error is retried", errors.New("throttled"), Retry},
		{"cancellation is retried", fmt.Errorf("run: %w", context.Canceled), Retry},
		{"a wrapped sentinel keeps its class", fmt.Errorf("commit: %w", halt), Halt},
		{"a corrupt data file is quarantined", fmt.Errorf("job 3: %w", corrupt), Quarantine},
		{"a corrupt deletion vector is quarantined", &CorruptFileError{Kind: DeletionVector, Path: "dv.bin", Err: errors.New("crc")}, Quarantine},
		{"a corrupt commit halts", &CorruptFileError{Kind: Commit, Path: "_delta_log/1.json", Err: errors.New("line 2")}, Halt},
		{"a corrupt checkpoint halts", &CorruptFileError{Kind: Checkpoint, Path: "_delta_log/10.checkpoint.parquet", Err: errors.New("footer")}, Halt},
		{"the outermost explicit class wins", With(Retry, fmt.Errorf("x: %w", halt)), Retry},
		{"a class inside a join is found", errors.Join(errors.New("job 1: throttled"), corrupt), Quarantine},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Of(tt.err); got != tt.want {
				t.Fatalf("Of(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
	if With(Halt, nil) != nil {
		t.Fatal("With(nil) must stay nil")
	}
}

func TestCorruptDataFilesNamesEveryCorruptFileOnceAndNoLogObject(t *testing.T) {
	a := &CorruptFileError{Kind: DataFile, Path: "a.parquet", DataFile: "a.parquet", Err: errors.New("footer")}
	dv := &CorruptFileError{Kind: DeletionVector, Path: "dv.bin", DataFile: "b.parquet", Err: errors.New("crc")}
	orphanDV := &CorruptFileError{Kind: DeletionVector, Path: "dv2.bin", Err: errors.New("crc")}
	log := &CorruptFileError{Kind: Commit, Path: "_delta_log/3.json", Err: errors.New("line 1")}
	err := fmt.Errorf("run: %w", errors.Join(fmt.Errorf("job 1: %w", a), errors.New("job 2: throttled"),
		fmt.Errorf("job 3: %w", dv), fmt.Errorf("job 4: %w", a), orphanDV, log))
	if got := CorruptDataFiles(err); !slices.Equal(got, []string{"a.parquet", "b.parquet"}) {
		t.Fatalf("CorruptDataFiles = %v", got)
	}
	if got := CorruptDataFiles(errors.New("plain")); got != nil {
		t.Fatalf("CorruptDataFiles(plain) = %v", got)
	}
}

func TestAMissingFileIsRetriedAndNamedOnceWhereverItIsInTheTree(t *testing.T) {
	a := &MissingFileError{Kind: DataFile, Path: "a.parquet", DataFile: "a.parquet", Err: errors.New("NotFound")}
	dv := &MissingFileError{Kind: DeletionVector, Path: "dv.bin", DataFile: "b.parquet", Err: errors.New("NotFound")}
	corrupt := &CorruptFileError{Kind: DataFile, Path: "c.parquet", DataFile: "c.parquet", Err: errors.New("footer")}
	err := fmt.Errorf("run: %w", errors.Join(fmt.Errorf("job 1: %w", a), fmt.Errorf("job 2: %w", dv), fmt.Errorf("job 3: %w", a)))
	if got := MissingDataFiles(err); !slices.Equal(got, []string{"a.parquet", "b.parquet"}) {
		t.Fatalf("MissingDataFiles = %v", got)
	}
	if Of(err) != Retry {
		t.Fatalf("Of(missing) = %v, want retry: one run's miss is no proof", Of(err))
	}
	if got := MissingDataFiles(errors.Join(err, corrupt)); len(got) != 2 || Of(errors.Join(corrupt, err)) != Quarantine {
		t.Fatalf("beside a corrupt file: missing %v, class %v", got, Of(errors.Join(corrupt, err)))
	}
	if got := CorruptDataFiles(err); got != nil {
		t.Fatalf("a missing file is not a corrupt one: %v", got)
	}
}
