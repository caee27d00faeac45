package delta

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/props"
	"github.com/compactord/compactord/delta/schema"
)

// DomainRowTracking is the domain of the row id high-water mark.
const DomainRowTracking = "delta.rowTracking"

// Names of the row tracking metadata columns as readers request them.
const (
	ColumnRowID            = "_row_id"
	ColumnRowCommitVersion = "_row_commit_version"
)

// ErrNoBaseRowID means a file of a table whose row tracking is enabled has
// no baseRowId (or no defaultRowCommitVersion): the stable ids of its rows
// cannot be computed, so they cannot be preserved.
var ErrNoBaseRowID = errors.New("row tracking is enabled but the file has no baseRowId or defaultRowCommitVersion")

// RowTracking is a table version's row tracking state (PROTOCOL.md "Row
// Tracking").
type RowTracking struct {
	// Supported: rowTracking is among the protocol's writer features, so
	// writers assign fresh row ids and commit versions to what they add.
	Supported bool
	// Enabled: also delta.enableRowTracking=true, so stable ids are
	// present for every row and writers preserve them through the
	// materialized columns.
	Enabled bool
	// Suspended: delta.rowTrackingSuspended=true, so writers assign no
	// baseRowId or defaultRowCommitVersion.
	Suspended bool
	// RowIDColumn and RowCommitVersionColumn are the physical names of the
	// materialized columns (delta.rowTracking.materialized*ColumnName).
	RowIDColumn, RowCommitVersionColumn string
	// HighWaterMark is the delta.rowTracking domain's rowIdHighWaterMark,
	// -1 when the domain is absent (no row id assigned yet).
	HighWaterMark int64
}

// RowTrackingOf returns the snapshot's row tracking state. It fails when
// the domain does not parse, when tracking is enabled without the feature
// or without both materialized column names, or when a name collides with
// a physical column of the table.
func RowTrackingOf(s *Snapshot) (RowTracking, error) {
	p := s.Properties()
	rt := RowTracking{
		Supported:              slices.Contains(s.Protocol.EffectiveWriterFeatures(), "rowTracking"),
		Enabled:                p.RowTracking,
		Suspended:              p.RowTrackingSuspended,
		RowIDColumn:            p.MaterializedRowIDColumn,
		RowCommitVersionColumn: p.MaterializedRowCommitVersionColumn,
		HighWaterMark:          -1,
	}
	if d, ok := s.Domains[DomainRowTracking]; ok && !d.Removed && rt.Supported {
		hwm, err := ParseRowIDHighWaterMark(d.Configuration)
		if err != nil {
			return rt, fmt.Errorf("version %d: domain %s: %w", s.Version, DomainRowTracking, err)
		}
		rt.HighWaterMark = hwm
	}
	if !rt.Enabled {
		return rt, nil
	}
	if !rt.Supported {
		return rt, fmt.Errorf("version %d: %s=true but the protocol lacks the rowTracking writer feature", s.Version, props.PropEnableRowTracking)
	}
	if rt.RowIDColumn == "" || rt.RowCommitVersionColumn == "" {
		return rt, fmt.Errorf("version %d: row tracking is enabled but %s or %s is not set", s.Version, props.PropMaterializedRowIDColumnName, props.PropMaterializedRowCommitVersionColumnName)
	}
	if rt.RowIDColumn == rt.RowCommitVersionColumn {
		return rt, fmt.Errorf("version %d: both materialized row tracking columns are named %q", s.Version, rt.RowIDColumn)
	}
	if s.Schema != nil {
		mode, err := deltaactions.ColumnMappingMode(&s.Metadata)
		if err != nil {
			return rt, err
		}
		for _, f := range s.Schema.Fields {
			if n := schema.PhysName(f, mode); n == rt.RowIDColumn || n == rt.RowCommitVersionColumn {
				return rt, fmt.Errorf("version %d: materialized row tracking column %q is also a table column", s.Version, n)
			}
		}
	}
	return rt, nil
}

// Materialize reports whether rewritten files carry the materialized row
// id and row commit version columns (row tracking enabled).
func (rt RowTracking) Materialize() bool { return rt.Enabled }

// Assigns reports whether new files get a baseRowId and a
// defaultRowCommitVersion (supported and not suspended).
func (rt RowTracking) Assigns() bool { return rt.Supported && !rt.Suspended }

// ParseRowIDHighWaterMark reads rowIdHighWaterMark from the configuration
// of a delta.rowTracking domain (other keys, such as Spark's domainName,
// are ignored).
func ParseRowIDHighWaterMark(config string) (int64, error) {
	var c struct {
		HWM *json.Number `json:"rowIdHighWaterMark"`
	}
	if err := json.Unmarshal([]byte(config), &c); err != nil {
		return 0, fmt.Errorf("parse %q: %w", config, err)
	}
	if c.HWM == nil {
		return 0, fmt.Errorf("%q has no rowIdHighWaterMark", config)
	}
	v, err := strconv.ParseInt(c.HWM.String(), 10, 64)
	if err != nil || v < -1 {
		return 0, fmt.Errorf("rowIdHighWaterMark %s is not a row id", c.HWM)
	}
	return v, nil
}

// RowTrackingDomain returns the domainMetadata action recording hwm as the
// row id high-water mark (a single key, as PROTOCOL.md asks).
func RowTrackingDomain(hwm int64) *deltaactions.DomainMetadata {
	return &deltaactions.DomainMetadata{Domain: DomainRowTracking, Configuration: `{"rowIdHighWaterMark":` + strconv.FormatInt(hwm, 10) + `}`}
}

// RowTrackingHighWaterMark returns the rowIdHighWaterMark a commit's
// actions set and whether one of them sets it.
func RowTrackingHighWaterMark(actions []deltaactions.Action) (int64, bool, error) {
	for _, a := range actions {
		if d := a.DomainMetadata; d != nil && d.Domain == DomainRowTracking && !d.Removed {
			v, err := ParseRowIDHighWaterMark(d.Configuration)
			if err != nil {
				return 0, false, fmt.Errorf("domain %s: %w", DomainRowTracking, err)
			}
			return v, true, nil
		}
	}
	return 0, false, nil
}

// AssignRowIDs returns actions with fresh row tracking fields on every add
// that lacks them, for a commit at version on top of high-water mark hwm
// (-1: none): baseRowId ranges follow hwm one after another, each as long
// as the file's physical numRecords, and defaultRowCommitVersion is
// version. Adds that already carry them (re-committed files) are left as
// they are. When new ids were assigned, a delta.rowTracking domainMetadata
// with the new high-water mark comes first. Adds are copied, never
// modified, so a caller may assign again on a later attempt from the same
// actions. Without row tracking support, or while it is suspended, actions
// are returned unchanged.
func AssignRowIDs(rt RowTracking, actions []deltaactions.Action, version, hwm int64) ([]deltaactions.Action, error) {
	if !rt.Assigns() {
		return actions, nil
	}
	out := make([]deltaactions.Action, 0, len(actions)+1)
	next := hwm
	for _, a := range actions {
		if a.DomainMetadata != nil && a.DomainMetadata.Domain == DomainRowTracking {
			return nil, fmt.Errorf("commit sets domain %s itself; its high-water mark is assigned at commit", DomainRowTracking)
		}
		if a.Add == nil || (a.Add.BaseRowID != nil && a.Add.DefaultRowCommitVersion != nil) {
			out = append(out, a)
			continue
		}
		cp := *a.Add
		if cp.BaseRowID == nil {
			n, ok, err := cp.NumRecords()
			if err != nil {
				return nil, fmt.Errorf("add %s: %w", cp.Path, err)
			}
			if !ok {
				return nil, fmt.Errorf("add %s: row ids cannot be assigned without numRecords in its stats", cp.Path)
			}
			base := next + 1
			cp.BaseRowID = &base
			next += n
		}
		if cp.DefaultRowCommitVersion == nil {
			v := version
			cp.DefaultRowCommitVersion = &v
		}
		out = append(out, deltaactions.Action{Add: &cp})
	}
	if next != hwm {
		out = append([]deltaactions.Action{{DomainMetadata: RowTrackingDomain(next)}}, out...)
	}
	return out, nil
}
