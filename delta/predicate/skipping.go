package predicate

import (
	"fmt"
	"time"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/stats"
)

// Read is one read a transaction made: a partition predicate and a data
// predicate over the same rows (nil means TRUE). A transaction's reads are
// independent: a file matters if it could match ANY read, each read's own
// partition and data predicates ANDed — never (OR P) AND (OR D).
type Read struct {
	Partition Expr
	Data      Expr
}

// Matcher decides whether a file added by a concurrent winner could contain
// rows that a transaction's reads would have seen (conflict-time data
// skipping).
type Matcher struct {
	// PartitionKinds maps each partition column (physical name) to its kind.
	PartitionKinds map[string]Kind
	// PartitionZones maps timestamp partition columns (physical name) to
	// the zone their zone-less values were written in (the writer's
	// session time zone); absent: UTC.
	PartitionZones map[string]*time.Location
	// SkipStats turns data skipping off: only partition predicates prune.
	SkipStats bool
}

// MayMatchReads reports whether add could hold a row matching any of reads.
// wholeTable reads (and a non-blind transaction with no recorded reads) keep
// every file. On an evaluation error the file is kept and the error
// returned, so the caller can count the fallback.
func (m Matcher) MayMatchReads(reads []Read, wholeTable bool, add *actions.Add) (bool, error) {
	if wholeTable || len(reads) == 0 {
		return true, nil
	}
	var firstErr error
	for _, r := range reads {
		ok, err := m.mayMatchRead(r, add)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("file %s: %w", add.Path, err)
			}
			return true, firstErr
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

func (m Matcher) mayMatchRead(r Read, add *actions.Add) (bool, error) {
	if r.Partition != nil {
		t, err := EvalRow(r.Partition, partitionRow{values: add.PartitionValues, kinds: m.PartitionKinds, zones: m.PartitionZones})
		if err != nil {
			return true, err
		}
		if t != True {
			return false, nil
		}
	}
	if r.Data == nil || m.SkipStats {
		return true, nil
	}
	st := add.ParsedStats
	if st == nil && add.Stats != "" {
		// Winners' actions come straight from their commit files.
		parsed, err := stats.ParseStats(add.Stats)
		if err != nil {
			return true, err
		}
		st = parsed
	}
	return MayMatch(r.Data, DeltaStats{Stats: st})
}

// partitionRow exposes a file's partition values as a Row.
type partitionRow struct {
	values map[string]*string
	kinds  map[string]Kind
	zones  map[string]*time.Location
}

func (p partitionRow) Lookup(col Column) (Value, bool, error) {
	if len(col.Path) != 1 {
		return Value{}, false, fmt.Errorf("partition predicate on nested column %s", col)
	}
	name := col.Path[0]
	kind, isPart := p.kinds[name]
	if !isPart {
		return Value{}, false, fmt.Errorf("column %s is not a partition column", col)
	}
	raw, ok := p.values[name]
	if !ok {
		return Value{}, false, fmt.Errorf("file has no partition value for %s", col)
	}
	if raw == nil || *raw == "" {
		// JSON null and the empty string both mean NULL (protocol digest, section 8).
		return Value{}, false, nil
	}
	if *raw == actions.HiveDefaultPartition {
		return Value{}, false, nil // NULL, as the Delta core reads it
	}
	var v Value
	var err error
	if kind == KindTimestamp {
		v, err = ParseTimestampIn(*raw, p.zones[name])
	}
	if kind != KindTimestamp || err != nil {
		v, err = ParseLiteral(kind, *raw)
	}
	if err != nil {
		return Value{}, false, fmt.Errorf("partition value of %s: %w", col, err)
	}
	return v, true, nil
}
