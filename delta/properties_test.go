package delta

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta/props"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/units"
)

func TestUnsetPropertiesTakeDeltasDefaults(t *testing.T) {
	p := props.ParseProperties(nil)
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	want := props.Properties{
		CheckpointInterval: 10, CheckpointPolicy: "classic",
		CheckpointWriteStatsAsJSON: true, CheckpointWriteStatsAsStruct: true,
		CheckpointRetention: 2 * units.Day, DeletedFileRetention: units.Week, LogRetention: 30 * units.Day,
		ExpiredLogCleanup: true, NumIndexedCols: 32, StringPrefixLength: 32, RandomPrefixLength: 2,
		IsolationLevel: "Serializable", InCommitTimestampEnablementVersion: -1,
		InCommitTimestampEnablementTimestamp: -1, ColumnMappingMode: "none",
	}
	if !reflect.DeepEqual(*p, want) {
		t.Fatalf("defaults\n got %+v\nwant %+v", *p, want)
	}
}

func TestEveryPropertyIsParsedIntoItsField(t *testing.T) {
	p := props.ParseProperties(map[string]string{
		props.PropTargetFileSize:                           "1g",
		props.PropCheckpointInterval:                       "3",
		props.PropCheckpointPolicy:                         "v2",
		props.PropCheckpointWriteStatsAsJSON:               "false",
		props.PropCheckpointWriteStatsAsStruct:             "FALSE",
		props.PropCheckpointRetentionDuration:              "interval 36 hours",
		props.PropDeletedFileRetentionDuration:             "interval 2 weeks",
		props.PropLogRetentionDuration:                     "90 days",
		props.PropEnableExpiredLogCleanup:                  "false",
		props.PropSetTransactionRetentionDuration:          "interval 1 day",
		props.PropNumIndexedCols:                           "-1",
		props.PropStatsColumns:                             "a, B.c",
		props.PropStringPrefixLength:                       "8",
		props.PropEnableDeletionVectors:                    "true",
		props.PropRandomizeFilePrefixes:                    "True",
		props.PropRandomPrefixLength:                       " 5 ",
		props.PropIsolationLevel:                           "writeserializable",
		props.PropAppendOnly:                               "true",
		props.PropEnableChangeDataFeed:                     "true",
		props.PropEnableInCommitTimestamps:                 "true",
		props.PropInCommitTimestampEnablementVersion:       "4",
		props.PropInCommitTimestampEnablementTimestamp:     "1700000000000",
		props.PropEnableRowTracking:                        "true",
		props.PropRowTrackingSuspended:                     "false",
		props.PropMaterializedRowIDColumnName:              "_row-id-col-x",
		props.PropMaterializedRowCommitVersionColumnName:   "_row-commit-version-col-y",
		props.PropRequireCheckpointProtectionBeforeVersion: "7",
		props.PropColumnMappingMode:                        "Name",
		props.PropColumnMappingMaxColumnID:                 "12",
		props.PropUniversalFormatEnabledFormats:            "iceberg, hudi",
		"delta.someFutureProperty":                         "whatever",
	})
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	want := props.Properties{
		TargetFileSize: 1 << 30, CheckpointInterval: 3, CheckpointPolicy: "v2",
		CheckpointRetention: 36 * time.Hour, DeletedFileRetention: 2 * units.Week, LogRetention: 90 * units.Day,
		SetTransactionRetention: units.Day, NumIndexedCols: -1, StatsColumns: [][]string{{"a"}, {"b", "c"}},
		StringPrefixLength: 8, DeletionVectors: true, RandomizeFilePrefixes: true, RandomPrefixLength: 5,
		IsolationLevel: "WriteSerializable", AppendOnly: true, ChangeDataFeed: true, InCommitTimestamps: true,
		InCommitTimestampEnablementVersion: 4, InCommitTimestampEnablementTimestamp: 1700000000000,
		RowTracking: true, MaterializedRowIDColumn: "_row-id-col-x",
		MaterializedRowCommitVersionColumn: "_row-commit-version-col-y", RequireCheckpointProtectionBeforeVersion: 7,
		ColumnMappingMode: "name", ColumnMappingMaxColumnID: 12, UniversalFormats: []string{"iceberg", "hudi"},
	}
	if !reflect.DeepEqual(*p, want) {
		t.Fatalf("parsed\n got %+v\nwant %+v", *p, want)
	}
}

func TestAMalformedPropertyKeepsItsDefaultAndIsReportedByName(t *testing.T) {
	for _, c := range []struct {
		key, value string
		field      func(*props.Properties) any
		def        any
	}{
		{props.PropTargetFileSize, "huge", func(p *props.Properties) any { return p.TargetFileSize }, int64(0)},
		{props.PropTargetFileSize, "0", func(p *props.Properties) any { return p.TargetFileSize }, int64(0)},
		{props.PropCheckpointInterval, "0", func(p *props.Properties) any { return p.CheckpointInterval }, 10},
		{props.PropCheckpointPolicy, "V2", func(p *props.Properties) any { return p.CheckpointPolicy }, "classic"},
		{props.PropLogRetentionDuration, "interval 1 month", func(p *props.Properties) any { return p.LogRetention }, 30 * units.Day},
		{props.PropDeletedFileRetentionDuration, "7d", func(p *props.Properties) any { return p.DeletedFileRetention }, units.Week},
		{props.PropDeletedFileRetentionDuration, "interval -1 day", func(p *props.Properties) any { return p.DeletedFileRetention }, units.Week},
		{props.PropEnableDeletionVectors, "yes", func(p *props.Properties) any { return p.DeletionVectors }, false},
		{props.PropRandomPrefixLength, "33", func(p *props.Properties) any { return p.RandomPrefixLength }, 2},
		{props.PropIsolationLevel, "SnapshotIsolation", func(p *props.Properties) any { return p.IsolationLevel }, "Serializable"},
		{props.PropNumIndexedCols, "-2", func(p *props.Properties) any { return p.NumIndexedCols }, 32},
		{props.PropColumnMappingMode, "path", func(p *props.Properties) any { return p.ColumnMappingMode }, "none"},
		{props.PropStatsColumns, "a,,b", func(p *props.Properties) any { return p.StatsColumns == nil }, true},
	} {
		p := props.ParseProperties(map[string]string{c.key: c.value, props.PropCheckpointInterval + "x": "1", props.PropAppendOnly: "true"})
		if got := c.field(p); got != c.def {
			t.Errorf("%s=%q: field %v, want the default %v", c.key, c.value, got, c.def)
		}
		err := p.Check(c.key)
		var pe *props.PropertyError
		if !errors.As(err, &pe) || pe.Key != c.key || pe.Value != c.value || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s=%q: Check = %v", c.key, c.value, err)
		}
		if err := p.Check(props.PropAppendOnly); err != nil || !p.AppendOnly {
			t.Errorf("%s=%q: an unrelated valid property: %v, %v", c.key, c.value, err, p.AppendOnly)
		}
		if p.Check() == nil {
			t.Errorf("%s=%q: Check() of all properties is nil", c.key, c.value)
		}
	}
}

// Every property that Spark, Databricks and delta-rs wrote into the test
// tables parses, and a loaded snapshot carries exactly what its metadata
// parses to.
func TestThePropertiesOfEveryTestTableParse(t *testing.T) {
	root := testutil.DeltaTestdata(t)
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	loaded := 0
	for _, e := range entries {
		dir := filepath.Join(root, e.Name(), "delta")
		if _, err := os.Stat(filepath.Join(dir, "_delta_log")); err != nil {
			continue
		}
		snap, err := LoadSnapshot(context.Background(), openDir(t, dir), -1)
		if err != nil {
			continue // the corrupt-log tables; their own tests cover them
		}
		loaded++
		p := snap.Properties()
		if err := p.Check(); err != nil {
			t.Errorf("%s: %v", e.Name(), err)
		}
		if !reflect.DeepEqual(p, props.ParseProperties(snap.Metadata.Configuration)) {
			t.Errorf("%s: the loaded properties differ from the metadata's", e.Name())
		}
		if v := snap.Metadata.Configuration[props.PropCheckpointInterval]; v != "" && v != strconv.Itoa(p.CheckpointInterval) {
			t.Errorf("%s: checkpointInterval %q parsed as %d", e.Name(), v, p.CheckpointInterval)
		}
	}
	if loaded < 40 {
		t.Fatalf("only %d test tables loaded", loaded)
	}
}
