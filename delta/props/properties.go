package props

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/internal/units"
)

// Table property keys (metaData.configuration) this build reads. Each is
// parsed once, into Properties, by ParseProperties.
const (
	PropTargetFileSize                           = "delta.targetFileSize"
	PropCheckpointInterval                       = "delta.checkpointInterval"
	PropCheckpointPolicy                         = "delta.checkpointPolicy"
	PropCheckpointWriteStatsAsJSON               = "delta.checkpoint.writeStatsAsJson"
	PropCheckpointWriteStatsAsStruct             = "delta.checkpoint.writeStatsAsStruct"
	PropCheckpointRetentionDuration              = "delta.checkpointRetentionDuration"
	PropDeletedFileRetentionDuration             = "delta.deletedFileRetentionDuration"
	PropLogRetentionDuration                     = "delta.logRetentionDuration"
	PropEnableExpiredLogCleanup                  = "delta.enableExpiredLogCleanup"
	PropSetTransactionRetentionDuration          = "delta.setTransactionRetentionDuration"
	PropNumIndexedCols                           = "delta.dataSkippingNumIndexedCols"
	PropStatsColumns                             = "delta.dataSkippingStatsColumns"
	PropStringPrefixLength                       = "delta.dataSkippingStringPrefixLength"
	PropEnableDeletionVectors                    = "delta.enableDeletionVectors"
	PropRandomizeFilePrefixes                    = "delta.randomizeFilePrefixes"
	PropRandomPrefixLength                       = "delta.randomPrefixLength"
	PropIsolationLevel                           = "delta.isolationLevel"
	PropAppendOnly                               = "delta.appendOnly"
	PropEnableChangeDataFeed                     = "delta.enableChangeDataFeed"
	PropEnableInCommitTimestamps                 = "delta.enableInCommitTimestamps"
	PropInCommitTimestampEnablementVersion       = "delta.inCommitTimestampEnablementVersion"
	PropInCommitTimestampEnablementTimestamp     = "delta.inCommitTimestampEnablementTimestamp"
	PropEnableRowTracking                        = "delta.enableRowTracking"
	PropRowTrackingSuspended                     = "delta.rowTrackingSuspended"
	PropMaterializedRowIDColumnName              = "delta.rowTracking.materializedRowIdColumnName"
	PropMaterializedRowCommitVersionColumnName   = "delta.rowTracking.materializedRowCommitVersionColumnName"
	PropRequireCheckpointProtectionBeforeVersion = "delta.requireCheckpointProtectionBeforeVersion"
	PropColumnMappingMode                        = "delta.columnMapping.mode"
	PropColumnMappingMaxColumnID                 = "delta.columnMapping.maxColumnId"
	PropUniversalFormatEnabledFormats            = "delta.universalFormat.enabledFormats"
)

// Defaults of the table properties (Delta's DeltaConfigs defaults).
const (
	// DefaultCheckpointInterval is delta.checkpointInterval's default.
	DefaultCheckpointInterval = 10
	// DefaultCheckpointRetention is delta.checkpointRetentionDuration's
	// default (interval 2 days).
	DefaultCheckpointRetention = 2 * units.Day
	// DefaultDeletedFileRetention is delta.deletedFileRetentionDuration's
	// default (interval 1 week).
	DefaultDeletedFileRetention = units.Week
	// DefaultLogRetention is delta.logRetentionDuration's default
	// (interval 30 days).
	DefaultLogRetention = 30 * units.Day
	// DefaultNumIndexedCols is delta.dataSkippingNumIndexedCols' default.
	DefaultNumIndexedCols = 32
	// DefaultStringPrefixLength is Spark's default string stats prefix
	// (spark.databricks.delta.stats.skipping.string.prefixLength).
	DefaultStringPrefixLength = 32
	// DefaultRandomPrefixLength is delta.randomPrefixLength's default.
	DefaultRandomPrefixLength = 2
	// MaxRandomPrefixLength bounds delta.randomPrefixLength for this build
	// (a directory name, not a path).
	MaxRandomPrefixLength = 32
)

// Checkpoint policies (delta.checkpointPolicy).
const (
	CheckpointPolicyClassic = "classic"
	CheckpointPolicyV2      = "v2"
)

// Isolation levels (delta.isolationLevel), spelled as Delta writes them.
const (
	IsolationSerializable      = "Serializable"
	IsolationWriteSerializable = "WriteSerializable"
	IsolationSnapshot          = "SnapshotIsolation"
)

// Properties are a table's metaData.configuration, typed. Every field holds
// Delta's default when its property is unset, and also when it is
// malformed: then Check(key) returns the parse error, naming the property
// and its value. An operation that depends on a property must call
// Check for it (or Check() for all) before acting on the field; a
// malformed property it does not use is none of its business.
type Properties struct {
	// TargetFileSize is delta.targetFileSize in bytes (Spark byte string,
	// binary units: "1g", "128mb", "134217728"); 0 when unset.
	TargetFileSize int64

	// CheckpointInterval is delta.checkpointInterval: a checkpoint every
	// this many commits (default 10, must be positive).
	CheckpointInterval int
	// CheckpointPolicy is delta.checkpointPolicy: CheckpointPolicyClassic
	// (default) or CheckpointPolicyV2.
	CheckpointPolicy string
	// CheckpointWriteStatsAsJSON is delta.checkpoint.writeStatsAsJson: write
	// add.stats as JSON in checkpoints (default true).
	CheckpointWriteStatsAsJSON bool
	// CheckpointWriteStatsAsStruct is delta.checkpoint.writeStatsAsStruct:
	// write stats_parsed and partitionValues_parsed (default true).
	CheckpointWriteStatsAsStruct bool
	// CheckpointRetention is delta.checkpointRetentionDuration (default
	// 2 days).
	CheckpointRetention time.Duration

	// DeletedFileRetention is delta.deletedFileRetentionDuration: how long
	// a removed file must stay before VACUUM may delete it (default
	// 1 week).
	DeletedFileRetention time.Duration
	// LogRetention is delta.logRetentionDuration: how long commit files
	// stay before log cleanup may delete them (default 30 days).
	LogRetention time.Duration
	// ExpiredLogCleanup is delta.enableExpiredLogCleanup (default true).
	ExpiredLogCleanup bool
	// SetTransactionRetention is delta.setTransactionRetentionDuration:
	// txn actions older than this expire; 0 when unset (they never do).
	SetTransactionRetention time.Duration

	// NumIndexedCols is delta.dataSkippingNumIndexedCols: stats are
	// collected on the first this many leaf columns; -1 means all
	// (default 32). Ignored when StatsColumns is set.
	NumIndexedCols int
	// StatsColumns is delta.dataSkippingStatsColumns parsed: lower-cased
	// column paths; nil when unset.
	StatsColumns [][]string
	// StringPrefixLength is delta.dataSkippingStringPrefixLength: string
	// min/max stats keep this many characters (default 32).
	StringPrefixLength int

	// DeletionVectors is delta.enableDeletionVectors: commands may create
	// deletion vectors (default false; the feature must also be in the
	// protocol).
	DeletionVectors bool
	// RandomizeFilePrefixes is delta.randomizeFilePrefixes: new files go
	// under a random directory instead of the partition path (default
	// false).
	RandomizeFilePrefixes bool
	// RandomPrefixLength is delta.randomPrefixLength, the length of that
	// directory (default 2, 1..MaxRandomPrefixLength).
	RandomPrefixLength int
	// IsolationLevel is delta.isolationLevel: IsolationSerializable
	// (default) or IsolationWriteSerializable.
	IsolationLevel string
	// AppendOnly is delta.appendOnly (default false).
	AppendOnly bool
	// ChangeDataFeed is delta.enableChangeDataFeed (default false).
	ChangeDataFeed bool

	// InCommitTimestamps is delta.enableInCommitTimestamps (default false).
	InCommitTimestamps bool
	// InCommitTimestampEnablementVersion and ...Timestamp are
	// delta.inCommitTimestampEnablementVersion/Timestamp; -1 when unset.
	InCommitTimestampEnablementVersion   int64
	InCommitTimestampEnablementTimestamp int64

	// RowTracking is delta.enableRowTracking (default false).
	RowTracking bool
	// RowTrackingSuspended is delta.rowTrackingSuspended (default false).
	RowTrackingSuspended bool
	// MaterializedRowIDColumn and MaterializedRowCommitVersionColumn are
	// the delta.rowTracking.materialized*ColumnName properties; "" when
	// unset.
	MaterializedRowIDColumn            string
	MaterializedRowCommitVersionColumn string

	// RequireCheckpointProtectionBeforeVersion is
	// delta.requireCheckpointProtectionBeforeVersion (default 0).
	RequireCheckpointProtectionBeforeVersion int64

	// ColumnMappingMode is delta.columnMapping.mode: ColumnMappingNone
	// (default), ColumnMappingName or ColumnMappingID.
	ColumnMappingMode string
	// ColumnMappingMaxColumnID is delta.columnMapping.maxColumnId (default 0).
	ColumnMappingMaxColumnID int64

	// UniversalFormats is delta.universalFormat.enabledFormats split at
	// commas and trimmed ("iceberg", "hudi"); nil when unset.
	UniversalFormats []string

	invalid []*PropertyError
}

// PropertyError is a table property that could not be parsed.
type PropertyError struct {
	// Key and Value are the property as the table has it.
	Key, Value string
	// Err says what is wrong with it.
	Err error
}

func (e *PropertyError) Error() string {
	return fmt.Sprintf("table property %s=%q: %v", e.Key, e.Value, e.Err)
}

func (e *PropertyError) Unwrap() error { return e.Err }

// Check returns the parse errors of the named properties (of every
// property when no key is given), joined; nil when they are all valid or
// unset.
func (p *Properties) Check(keys ...string) error {
	var errs []error
	for _, e := range p.invalid {
		if len(keys) == 0 || containsKey(keys, e.Key) {
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}

func containsKey(keys []string, k string) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

// set parses one property into p. It returns false for a key this build
// does not read; on an error p may be partly changed (ParseProperties
// restores it).
func (p *Properties) set(key, v string) (known bool, err error) {
	switch key {
	case PropTargetFileSize:
		p.TargetFileSize, err = units.ParseBytes(v)
		if err == nil && p.TargetFileSize <= 0 {
			err = errors.New("must be positive")
		}
	case PropCheckpointInterval:
		p.CheckpointInterval, err = parseInt(v, 1, math.MaxInt32)
	case PropCheckpointPolicy:
		// Delta matches the names exactly (CheckpointPolicy.fromName).
		p.CheckpointPolicy = v
		if v != CheckpointPolicyClassic && v != CheckpointPolicyV2 {
			err = fmt.Errorf("want %s or %s", CheckpointPolicyClassic, CheckpointPolicyV2)
		}
	case PropCheckpointWriteStatsAsJSON:
		p.CheckpointWriteStatsAsJSON, err = parseBool(v)
	case PropCheckpointWriteStatsAsStruct:
		p.CheckpointWriteStatsAsStruct, err = parseBool(v)
	case PropCheckpointRetentionDuration:
		p.CheckpointRetention, err = units.ParseInterval(v)
	case PropDeletedFileRetentionDuration:
		p.DeletedFileRetention, err = units.ParseInterval(v)
	case PropLogRetentionDuration:
		p.LogRetention, err = units.ParseInterval(v)
	case PropEnableExpiredLogCleanup:
		p.ExpiredLogCleanup, err = parseBool(v)
	case PropSetTransactionRetentionDuration:
		p.SetTransactionRetention, err = units.ParseInterval(v)
	case PropNumIndexedCols:
		p.NumIndexedCols, err = parseInt(v, -1, math.MaxInt32)
	case PropStatsColumns:
		p.StatsColumns, err = parseStatsColumns(v)
		if p.StatsColumns == nil {
			p.StatsColumns = [][]string{}
		}
	case PropStringPrefixLength:
		p.StringPrefixLength, err = parseInt(v, 1, math.MaxInt32)
	case PropEnableDeletionVectors:
		p.DeletionVectors, err = parseBool(v)
	case PropRandomizeFilePrefixes:
		p.RandomizeFilePrefixes, err = parseBool(v)
	case PropRandomPrefixLength:
		p.RandomPrefixLength, err = parseInt(v, 1, MaxRandomPrefixLength)
	case PropIsolationLevel:
		// Delta's IsolationLevel.fromString ignores case; a table may only
		// be Serializable or WriteSerializable.
		switch {
		case strings.EqualFold(v, IsolationSerializable):
			p.IsolationLevel = IsolationSerializable
		case strings.EqualFold(v, IsolationWriteSerializable):
			p.IsolationLevel = IsolationWriteSerializable
		default:
			err = fmt.Errorf("want %s or %s", IsolationSerializable, IsolationWriteSerializable)
		}
	case PropAppendOnly:
		p.AppendOnly, err = parseBool(v)
	case PropEnableChangeDataFeed:
		p.ChangeDataFeed, err = parseBool(v)
	case PropEnableInCommitTimestamps:
		p.InCommitTimestamps, err = parseBool(v)
	case PropInCommitTimestampEnablementVersion:
		p.InCommitTimestampEnablementVersion, err = parseInt64(v, 0)
	case PropInCommitTimestampEnablementTimestamp:
		p.InCommitTimestampEnablementTimestamp, err = parseInt64(v, math.MinInt64)
	case PropEnableRowTracking:
		p.RowTracking, err = parseBool(v)
	case PropRowTrackingSuspended:
		p.RowTrackingSuspended, err = parseBool(v)
	case PropMaterializedRowIDColumnName:
		p.MaterializedRowIDColumn = v
	case PropMaterializedRowCommitVersionColumnName:
		p.MaterializedRowCommitVersionColumn = v
	case PropRequireCheckpointProtectionBeforeVersion:
		p.RequireCheckpointProtectionBeforeVersion, err = parseInt64(v, 0)
	case PropColumnMappingMode:
		p.ColumnMappingMode, err = schema.ParseColumnMappingMode(v)
	case PropColumnMappingMaxColumnID:
		p.ColumnMappingMaxColumnID, err = parseInt64(v, 0)
	case PropUniversalFormatEnabledFormats:
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				p.UniversalFormats = append(p.UniversalFormats, f)
			}
		}
	default:
		return false, nil
	}
	return true, err
}

// defaultProperties returns Properties with every default.
func defaultProperties() *Properties {
	return &Properties{
		CheckpointInterval:                   DefaultCheckpointInterval,
		CheckpointPolicy:                     CheckpointPolicyClassic,
		CheckpointWriteStatsAsJSON:           true,
		CheckpointWriteStatsAsStruct:         true,
		CheckpointRetention:                  DefaultCheckpointRetention,
		DeletedFileRetention:                 DefaultDeletedFileRetention,
		LogRetention:                         DefaultLogRetention,
		ExpiredLogCleanup:                    true,
		NumIndexedCols:                       DefaultNumIndexedCols,
		StringPrefixLength:                   DefaultStringPrefixLength,
		RandomPrefixLength:                   DefaultRandomPrefixLength,
		IsolationLevel:                       IsolationSerializable,
		InCommitTimestampEnablementVersion:   -1,
		InCommitTimestampEnablementTimestamp: -1,
		ColumnMappingMode:                    schema.ColumnMappingNone,
	}
}

// ParseProperties parses a metaData.configuration. Keys are matched
// exactly, as Delta writes them; values are trimmed. A malformed value
// leaves the field at its default and is reported by Check. An empty value
// counts as unset, except for delta.dataSkippingStatsColumns, where it
// means "no columns".
func ParseProperties(conf map[string]string) *Properties {
	p := defaultProperties()
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		raw := conf[k]
		v := strings.TrimSpace(raw)
		if v == "" && k != PropStatsColumns {
			continue
		}
		saved := *p
		if known, err := p.set(k, v); known && err != nil {
			*p = saved
			p.invalid = append(p.invalid, &PropertyError{Key: k, Value: raw, Err: err})
		}
	}
	return p
}

// parseBool reads a boolean as Scala's String.toBoolean does ("true" or
// "false", any case).
func parseBool(v string) (bool, error) {
	switch {
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	}
	return false, errors.New("want true or false")
}

func parseInt(v string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("want an integer in %d..%d", lo, hi)
	}
	return n, nil
}

func parseInt64(v string, lo int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo {
		return 0, fmt.Errorf("want an integer of at least %d", lo)
	}
	return n, nil
}

// parseStatsColumns parses delta.dataSkippingStatsColumns: a comma-separated
// list of column paths (splitColumnList); names are lower-cased.
func parseStatsColumns(s string) ([][]string, error) {
	paths, err := schema.SplitColumnList(s)
	for _, p := range paths {
		for i := range p {
			p[i] = strings.ToLower(p[i])
		}
	}
	return paths, err
}
