package composition

import (
	"errors"
	"fmt"
)

// Unknown marks a Run field that the record's origin does not carry: the
// output index and live row count of a run parsed from tags.
const Unknown = -1

// Run is where one source's live rows landed: one contiguous run of one
// output, written in the source's physical order with the rows deleted at
// read time skipped. Output row RowOffsetInTarget+k holds the source's k-th
// live row, so physical row i (not deleted at read time) is at
// RowOffsetInTarget + i - |{d in read-time DV : d < i}|.
//
// The writer fills Source, Output, the offsets and LiveRows (Target once the
// output is closed); a run parsed from tags has Source and Target, the two
// offsets, and Output and LiveRows Unknown.
type Run struct {
	// Source is the source's path as in the log.
	Source string
	// Target is the output's path as in the log (the compactedInto entry);
	// empty while the output is still being written.
	Target string
	// Output is the index of the output among the job's outputs. A source
	// without live rows still gets the output it would have landed in
	// (LiveRows 0); it is -1 when the whole job wrote no output, or Unknown
	// when the run was parsed from tags.
	Output int
	// RowOffsetInTarget is the output row of the source's first live row.
	RowOffsetInTarget int64
	// SourceNumPhysicalRecords is the source's physical row count,
	// including the rows its read-time DV deletes.
	SourceNumPhysicalRecords int64
	// LiveRows is how many rows the source contributed (physical rows minus
	// the read-time DV's cardinality), or Unknown.
	LiveRows int64
}

// Check verifies the runs of an order-preserving job before they are
// trusted for tags or remaps: every source exactly one run, the runs of each
// output contiguous from row 0 in the order given, live rows equal to
// physical rows minus the read-time deletions, and every output's row count
// equal to the sum of its runs. deleted maps each source path to its
// read-time DV cardinality (the job's sources); outputRows holds the rows
// written to each output, in output order.
func Check(runs []Run, deleted map[string]int64, outputRows []int64) error {
	seen := make(map[string]bool, len(runs))
	next := make([]int64, len(outputRows))
	for _, r := range runs {
		del, ok := deleted[r.Source]
		if !ok {
			return fmt.Errorf("composition names %q, which is not a source", r.Source)
		}
		if seen[r.Source] {
			return fmt.Errorf("source %s has more than one run", r.Source)
		}
		seen[r.Source] = true
		if r.Output == -1 && r.LiveRows == 0 && len(outputRows) == 0 {
			continue
		}
		if r.Output < 0 || r.Output >= len(outputRows) {
			return fmt.Errorf("source %s run names output %d of %d", r.Source, r.Output, len(outputRows))
		}
		if r.RowOffsetInTarget != next[r.Output] {
			return fmt.Errorf("source %s run starts at %d, want %d", r.Source, r.RowOffsetInTarget, next[r.Output])
		}
		if r.LiveRows != r.SourceNumPhysicalRecords-del {
			return fmt.Errorf("source %s contributed %d rows, want %d physical - %d deleted", r.Source, r.LiveRows, r.SourceNumPhysicalRecords, del)
		}
		next[r.Output] += r.LiveRows
	}
	if len(seen) != len(deleted) {
		return fmt.Errorf("%d sources but %d runs", len(deleted), len(seen))
	}
	for i, n := range outputRows {
		if n != next[i] {
			return fmt.Errorf("output %d has %d rows, runs sum to %d", i, n, next[i])
		}
	}
	return nil
}

// CheckOrigins verifies that a sorted job's origin map covers exactly its
// outputs: as many outputs, and as many rows, as the job wrote.
func CheckOrigins(o Origins, outputRows []int64) error {
	if o == nil {
		return errors.New("sorted job without an origin map")
	}
	var rows int64
	for _, n := range outputRows {
		rows += n
	}
	if o.NumOutputs() != len(outputRows) || o.NumRows() != rows {
		return fmt.Errorf("origin map covers %d outputs and %d rows, the job wrote %d and %d",
			o.NumOutputs(), o.NumRows(), len(outputRows), rows)
	}
	return nil
}
