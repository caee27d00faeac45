package vacuum

import (
	"errors"
	"fmt"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/props"
	"github.com/compactord/compactord/internal/units"
)

// PropDeletedFileRetention is the table property with the retention of
// tombstones and, so, of VACUUM.
const PropDeletedFileRetention = props.PropDeletedFileRetentionDuration

// DefaultRetention is Delta's default for PropDeletedFileRetention
// ("interval 1 week").
const DefaultRetention = 7 * 24 * time.Hour

// ErrRetentionTooShort is wrapped when a retention below the table's is
// asked for without ForceRetention.
var ErrRetentionTooShort = errors.New("retention shorter than the table's delta.deletedFileRetentionDuration")

// TableRetention returns the table's tombstone retention: its
// delta.deletedFileRetentionDuration (Snapshot.Properties, Spark's
// interval syntax), or the one-week default; an unparseable value is an
// error.
func TableRetention(snap *delta.Snapshot) (time.Duration, error) {
	p := snap.Properties()
	if err := p.Check(PropDeletedFileRetention); err != nil {
		return 0, err
	}
	return p.DeletedFileRetention, nil
}

// checkRetention applies Spark's checkRetentionPeriodSafety: a negative
// retention is refused; one shorter than the table's is refused unless
// forced.
func checkRetention(retention, table time.Duration, force bool) error {
	if retention < 0 {
		return fmt.Errorf("vacuum retention %s is negative", units.FormatDuration(retention))
	}
	if retention < table && !force {
		return fmt.Errorf("%w: asked for %s, the table keeps tombstones for %s; files that concurrent writers and readers of versions inside %s still need could be deleted (give --force-retention to vacuum anyway)",
			ErrRetentionTooShort, units.FormatDuration(retention), units.FormatDuration(table), units.FormatDuration(table))
	}
	return nil
}

// ParseRetention reads a retention given on the command line or in a
// policy: Spark's interval syntax ("interval 7 days", "168 hours") or a
// compact duration ("168h", "7d", "0h").
func ParseRetention(s string) (time.Duration, error) { return units.ParseDuration(s) }
