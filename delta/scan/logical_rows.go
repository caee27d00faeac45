package scan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/props"
	"github.com/compactord/compactord/delta/schema"
	"github.com/parquet-go/parquet-go"
)

// LogicalScanOptions tune ScanLogicalRows.
type LogicalScanOptions struct {
	// Limit stops after this many rows (0 = all).
	Limit int64
	// Location is the zone of zone-less timestamp partition values (nil =
	// UTC).
	Location *time.Location
	// Scan tunes the per-file scans.
	Scan ScanOptions
	// RowIDs appends each row's stable row id and row commit version as
	// the fields _row_id and _row_commit_version (ColumnRowID,
	// ColumnRowCommitVersion). The table's row tracking must be enabled.
	RowIDs bool
}

// ScanLogicalRows calls fn with every live row of the snapshot as a logical
// row (logical column names, partition values attached), file by file in
// snapshot order. The snapshot must be readable by this build. fn must not
// retain the row after it returns.
func ScanLogicalRows(ctx context.Context, t *delta.Table, snap *delta.Snapshot, opts LogicalScanOptions, fn func(add *actions.Add, row *schema.LogicalStruct) error) (int64, error) {
	if err := delta.Readable(snap); err != nil {
		return 0, err
	}
	dec, err := NewRowDecoder(snap, opts.Location)
	if err != nil {
		return 0, err
	}
	if opts.RowIDs {
		rt, err := delta.RowTrackingOf(snap)
		if err != nil {
			return 0, err
		}
		if !rt.Enabled {
			return 0, fmt.Errorf("version %d: row ids requested but row tracking is not enabled (%s)", snap.Version, props.PropEnableRowTracking)
		}
		if dec.scanShape, err = newRewriteShape(snap); err != nil {
			return 0, err
		}
	}
	var total int64
	rows := make([]parquet.Row, 256)
	for _, add := range snap.Files {
		if opts.Limit > 0 && total >= opts.Limit {
			break
		}
		pv, err := dec.PartitionValues(add)
		if err != nil {
			return total, fmt.Errorf("file %s: %w", add.Path, err)
		}
		n, err := scanLogicalFile(ctx, t, dec, add, pv, rows, opts, total, fn)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func scanLogicalFile(ctx context.Context, t *delta.Table, dec *RowDecoder, add *actions.Add, pv map[string]any, rows []parquet.Row, opts LogicalScanOptions, done int64, fn func(*actions.Add, *schema.LogicalStruct) error) (int64, error) {
	shape := dec.shape
	if dec.scanShape != nil {
		shape = dec.scanShape
	}
	s, err := openFileScan(ctx, t, shape, add, opts.Scan)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, rerr := s.ReadRows(rows, nil)
		for _, r := range rows[:n] {
			if opts.Limit > 0 && done+total >= opts.Limit {
				return total, nil
			}
			var ids []parquet.Value
			if dec.scanShape != nil {
				r, ids = r[:len(r)-2], r[len(r)-2:]
			}
			lr, err := dec.Decode(r, pv)
			if err != nil {
				return total, fmt.Errorf("data file %s: %w", s.key, err)
			}
			if ids != nil {
				lr.Names = append(lr.Names, delta.ColumnRowID, delta.ColumnRowCommitVersion)
				lr.Values = append(lr.Values, ids[0].Int64(), ids[1].Int64())
			}
			if err := fn(add, lr); err != nil {
				return total, err
			}
			total++
		}
		if errors.Is(rerr, io.EOF) {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}
