package delta

import (
	"errors"
	"fmt"
	"math"

	"github.com/compactord/compactord/delta/actions"
)

// Load-time validation of the numbers of file actions. The protocol
// defines an add's size as the file's length in bytes, numRecords as its
// physical row count and a deletion vector's cardinality as the number of
// distinct rows it deletes, each below numRecords: none can be negative,
// and a cardinality above numRecords deletes rows the file does not have.
// Such a number is not read past (a planner summing sizes, `inspect`
// printing "-92 live" rows, a formatter on -2^63): the table is corrupt, and
// the error names the commit or checkpoint part and the file, as every
// other malformed action does. Values are refused, not clamped: a clamped
// size or count would be a guess that the next commit (a compaction's
// remove, its row-count checks) would write back as fact.

// checkFileAction checks the numbers of the add, remove or cdc action a
// that need no statistics: sizes and deletion-vector descriptors.
func checkFileAction(a *actions.Action) error {
	switch {
	case a.Add != nil:
		if a.Add.Size < 0 {
			return fmt.Errorf("add %s: negative size", a.Add.Path)
		}
		if err := checkDVDescriptor(a.Add.DeletionVector); err != nil {
			return fmt.Errorf("add %s: %w", a.Add.Path, err)
		}
	case a.Remove != nil:
		if s := a.Remove.Size; s != nil && *s < 0 {
			return fmt.Errorf("remove %s: negative size", a.Remove.Path)
		}
		if err := checkDVDescriptor(a.Remove.DeletionVector); err != nil {
			return fmt.Errorf("remove %s: %w", a.Remove.Path, err)
		}
	case a.CDC != nil:
		if a.CDC.Size < 0 {
			return fmt.Errorf("cdc %s: negative size", a.CDC.Path)
		}
	}
	return nil
}

// checkDVDescriptor refuses a descriptor whose numbers no writer makes: a
// negative offset, sizeInBytes or cardinality.
func checkDVDescriptor(dv *actions.DeletionVector) error {
	switch {
	case dv == nil:
		return nil
	case dv.Offset != nil && *dv.Offset < 0:
		return errors.New("deletion vector with a negative offset")
	case dv.SizeInBytes < 0:
		return errors.New("deletion vector with a negative sizeInBytes")
	case dv.Cardinality < 0:
		return errors.New("deletion vector with a negative cardinality")
	}
	return nil
}

// checkRowCounts checks an add's numRecords statistic (n, when has)
// against itself and its deletion vector.
func checkRowCounts(a *actions.Add, n int64, has bool) error {
	if !has {
		return nil
	}
	if n < 0 {
		return fmt.Errorf("file %s: negative numRecords", a.Path)
	}
	if c := a.NumDeleted(); c > n {
		return fmt.Errorf("file %s: its deletion vector deletes %d rows but the file has %d (numRecords)", a.Path, c, n)
	}
	return nil
}

// checkDVRange refuses an offset or sizeInBytes a checkpoint stores as a
// long that does not fit the descriptor's int.
func checkDVRange(field string, v int64) error {
	if v < 0 || v > math.MaxInt32 {
		return fmt.Errorf("deletion vector %s out of range", field)
	}
	return nil
}
