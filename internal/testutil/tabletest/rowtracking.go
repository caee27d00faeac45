package tabletest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
)

// The materialized row tracking columns of the tables NewRowTrackingTable
// builds (names shaped like Spark's).
const (
	RowIDColumn            = "_row-id-col-5e1f0c2a-7d4b-4c8e-9a61-2b3f8d0e6c17"
	RowCommitVersionColumn = "_row-commit-version-col-0b9d6e3f-1a2c-4f5e-8d7b-6c4a2e1f9b03"
)

// Layouts of a row tracking table.
const (
	// LayoutFlat: unpartitioned, unclustered.
	LayoutFlat = "flat"
	// LayoutPartitioned: partitioned by a string column p.
	LayoutPartitioned = "partitioned"
	// LayoutClustered: clustered by id (clustering feature and domain).
	LayoutClustered = "clustered"
)

// RowTrackingSpec describes a generated table with row tracking enabled.
type RowTrackingSpec struct {
	// Layout is LayoutFlat, LayoutPartitioned or LayoutClustered.
	Layout string
	// Commits are the data commits after version 0 (protocol, metadata):
	// commit k (version k+1) adds one file per entry.
	Commits [][]RowTrackingFile
	// Suspended sets delta.rowTrackingSuspended=true (and leaves row
	// tracking disabled, as the protocol asks).
	Suspended bool
}

// RowTrackingFile is one data file of a RowTrackingSpec.
type RowTrackingFile struct {
	// IDs are the file's rows (ids must be unique in the table and below
	// RowIDBase: materialized row ids are the ids themselves).
	IDs []int64
	// Part is the partition value of LayoutPartitioned.
	Part string
	// Materialized gives the file the materialized columns: rows at even
	// physical index hold a preserved row id (the row's id) and, past the
	// first data commit, a preserved commit version (one below the file's);
	// rows at odd index hold nulls, so their stable values come from
	// baseRowId and defaultRowCommitVersion.
	Materialized bool
}

// RowIDBase is the first fresh row id of a NewRowTrackingTable: the ids
// below it stand for rows assigned before, now materialized.
const RowIDBase = 10000

// rtRow is a row of a file with the materialized columns.
type rtRow struct {
	ID      *int64  `parquet:"id"`
	V       *string `parquet:"v"`
	RowID   *int64  `parquet:"_row-id-col-5e1f0c2a-7d4b-4c8e-9a61-2b3f8d0e6c17"`
	Version *int64  `parquet:"_row-commit-version-col-0b9d6e3f-1a2c-4f5e-8d7b-6c4a2e1f9b03"`
}

// NewRowTrackingTable writes spec as a DV-enabled table with row tracking
// enabled (rowTracking and domainMetadata writer features, the
// materialized column names, the delta.rowTracking domain): every file has
// a baseRowId (ranges with a gap of 3 between files, from RowIDBase) and
// its commit's version as defaultRowCommitVersion, and each commit raises
// the high-water mark past what it assigned.
func NewRowTrackingTable(t testing.TB, spec RowTrackingSpec) *delta.Table {
	t.Helper()
	tbl := Open(t, "file://"+t.TempDir())
	features := []string{"deletionVectors", "domainMetadata", "rowTracking"}
	schema, parts := Schema, "[]"
	conf := map[string]string{
		"delta.enableDeletionVectors":                              "true",
		"delta.enableRowTracking":                                  "true",
		"delta.rowTracking.materializedRowIdColumnName":            RowIDColumn,
		"delta.rowTracking.materializedRowCommitVersionColumnName": RowCommitVersionColumn,
	}
	if spec.Suspended {
		conf["delta.enableRowTracking"] = "false"
		conf["delta.rowTrackingSuspended"] = "true"
	}
	var extra []string
	switch spec.Layout {
	case LayoutFlat:
	case LayoutPartitioned:
		schema = strings.Replace(Schema, `]}`, `,{"name":"p","type":"string","nullable":true,"metadata":{}}]}`, 1)
		parts = `["p"]`
	case LayoutClustered:
		features = append(features, "clustering")
		extra = append(extra, `{"domainMetadata":{"domain":"delta.clustering","configuration":"{\"clusteringColumns\":[[\"id\"]]}","removed":false}}`)
	default:
		t.Fatalf("unknown layout %q", spec.Layout)
	}
	wf, _ := json.Marshal(features)
	cj, _ := json.Marshal(conf)
	lines := append([]string{
		`{"commitInfo":{"operation":"CREATE TABLE","txnId":"create"}}`,
		fmt.Sprintf(`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":%s}}`, wf),
		fmt.Sprintf(`{"metaData":{"id":"%s","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":%s,"configuration":%s,"createdTime":1}}`, uuid.NewString(), schema, parts, cj),
	}, extra...)
	PutCommit(t, tbl, 0, lines)
	next := int64(RowIDBase)
	for k, files := range spec.Commits {
		version := int64(k + 1)
		lines := []string{fmt.Sprintf(`{"commitInfo":{"operation":"WRITE","txnId":"write-%d"}}`, version)}
		for _, f := range files {
			var a *actions.Add
			if f.Materialized {
				a = writeMaterializedFile(t, tbl, f.IDs, version)
			} else {
				a = WriteDataFile(t, tbl, f.IDs)
			}
			if spec.Layout == LayoutPartitioned {
				p := f.Part
				a.PartitionValues = map[string]*string{"p": &p}
			}
			if !spec.Suspended {
				base, v := next, version
				a.BaseRowID, a.DefaultRowCommitVersion = &base, &v
				next += int64(len(f.IDs)) + 3
			}
			b, err := actions.MarshalAction(actions.Action{Add: a})
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, string(b))
		}
		if !spec.Suspended {
			b, _ := actions.MarshalAction(actions.Action{DomainMetadata: delta.RowTrackingDomain(next - 1)})
			lines = append(lines, string(b))
		}
		PutCommit(t, tbl, version, lines)
	}
	return tbl
}

// writeMaterializedFile writes ids with the materialized columns (see
// RowTrackingFile.Materialized) and returns its add action.
func writeMaterializedFile(t testing.TB, tbl *delta.Table, ids []int64, version int64) *actions.Add {
	t.Helper()
	rows := make([]rtRow, len(ids))
	for i, r := range idRows(ids) {
		rows[i] = rtRow{ID: r.ID, V: r.V}
		if i%2 == 0 {
			rows[i].RowID = r.ID
			if version > 1 {
				pv := version - 1
				rows[i].Version = &pv
			}
		}
	}
	return idsAdd(WriteParquet(t, tbl, rows), ids)
}

// StableID is a row's stable row id and row commit version.
type StableID struct{ RowID, Version int64 }

// StableIDs reads every live row of the table's latest version as PROTOCOL.md
// tells readers to (the materialized value when non-null, else baseRowId +
// physical index and defaultRowCommitVersion), with parquet-go alone: id ->
// stable id. Every live file must have baseRowId and
// defaultRowCommitVersion, and no id may occur twice.
func StableIDs(t testing.TB, tbl *delta.Table) (map[int64]StableID, *delta.Snapshot) {
	t.Helper()
	ctx := context.Background()
	snap := Latest(t, tbl)
	p := snap.Properties()
	out := map[int64]StableID{}
	for _, f := range snap.Files {
		if f.BaseRowID == nil || f.DefaultRowCommitVersion == nil {
			t.Fatalf("version %d: live file %s has no baseRowId/defaultRowCommitVersion", snap.Version, f.Path)
		}
		dv, err := delta.ReadDV(ctx, tbl, f.DeletionVector)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range FileInt64s(t, tbl, f, "id", p.MaterializedRowIDColumn, p.MaterializedRowCommitVersionColumn) {
			if dv.Contains(uint64(i)) {
				continue
			}
			s := StableID{RowID: *f.BaseRowID + int64(i), Version: *f.DefaultRowCommitVersion}
			if r[1] != nil {
				s.RowID = *r[1]
			}
			if r[2] != nil {
				s.Version = *r[2]
			}
			if _, dup := out[*r[0]]; dup {
				t.Fatalf("version %d: id %d is live twice", snap.Version, *r[0])
			}
			out[*r[0]] = s
		}
	}
	return out, snap
}

// WantStableIDs checks that every row of want is live with exactly its
// stable id, that no other row is live, and that no two live rows share a
// row id.
func WantStableIDs(t testing.TB, tbl *delta.Table, want map[int64]StableID) {
	t.Helper()
	got, snap := StableIDs(t, tbl)
	var diff []string
	for id, w := range want {
		if g, ok := got[id]; !ok {
			diff = append(diff, fmt.Sprintf("id %d lost", id))
		} else if g != w {
			diff = append(diff, fmt.Sprintf("id %d: %+v, want %+v", id, g, w))
		}
	}
	byRowID := map[int64]int64{}
	for id, g := range got {
		if _, ok := want[id]; !ok {
			diff = append(diff, fmt.Sprintf("id %d live, not wanted", id))
		}
		if other, dup := byRowID[g.RowID]; dup {
			diff = append(diff, fmt.Sprintf("ids %d and %d share row id %d", id, other, g.RowID))
		}
		byRowID[g.RowID] = id
	}
	if len(diff) > 0 {
		sort.Strings(diff)
		t.Fatalf("version %d: %d differences, first: %s", snap.Version, len(diff), strings.Join(diff[:min(len(diff), 10)], "; "))
	}
}

// HighWaterMark returns the row id high-water mark of the table's latest
// version (-1 when none).
func HighWaterMark(t testing.TB, tbl *delta.Table) int64 {
	t.Helper()
	rt, err := delta.RowTrackingOf(Latest(t, tbl))
	if err != nil {
		t.Fatal(err)
	}
	return rt.HighWaterMark
}

// Append commits one new file of ids as a blind append through
// commit.Txn (which assigns its row ids), in partition part when the table
// is partitioned, and returns the committed version.
func Append(t testing.TB, tbl *delta.Table, part string, ids []int64) int64 {
	t.Helper()
	snap := Latest(t, tbl)
	a := WriteDataFile(t, tbl, ids)
	if len(snap.Metadata.PartitionColumns) > 0 {
		a.PartitionValues = map[string]*string{snap.Metadata.PartitionColumns[0]: &part}
	}
	tx := &commit.Txn{Table: tbl, Snapshot: snap, Operation: "WRITE", IsolationLevel: "WriteSerializable", IsBlindAppend: true,
		Actions: []actions.Action{{Add: a}}}
	v, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// CheckRowTrackingCommit checks commit version of a row tracking table
// read at snapshot before: adds of files live in before (re-committed with
// a new DV) keep their baseRowId and defaultRowCommitVersion; every other
// add gets the next fresh range above before's high-water mark (raised to
// winnerHWM, the mark of commits that won a race, when larger) and version
// as its commit version; removes carry their add's fields; the commit sets
// the high-water mark to its last new id when it added any, and tags
// delta.rowTracking.preserved=true.
func CheckRowTrackingCommit(t testing.TB, tbl *delta.Table, version int64, before *delta.Snapshot, winnerHWM int64) {
	t.Helper()
	rt, err := delta.RowTrackingOf(before)
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]*actions.Add{}
	for _, f := range before.Files {
		live[f.Path] = f
	}
	acts := Committed(t, tbl, version)
	start := max(rt.HighWaterMark, winnerHWM)
	next := start + 1
	for _, a := range acts {
		switch {
		case a.CommitInfo != nil:
			var tags map[string]string
			if raw := a.CommitInfo["tags"]; raw != nil {
				_ = json.Unmarshal(raw, &tags)
			}
			if tags["delta.rowTracking.preserved"] != "true" {
				t.Errorf("version %d: commitInfo tags %v, want delta.rowTracking.preserved=true", version, tags)
			}
		case a.Add != nil:
			if old, ok := live[a.Add.Path]; ok {
				if optInt(a.Add.BaseRowID) != optInt(old.BaseRowID) || optInt(a.Add.DefaultRowCommitVersion) != optInt(old.DefaultRowCommitVersion) {
					t.Errorf("re-committed add %s: baseRowId %s defaultRowCommitVersion %s, want %s and %s", a.Add.Path,
						optInt(a.Add.BaseRowID), optInt(a.Add.DefaultRowCommitVersion), optInt(old.BaseRowID), optInt(old.DefaultRowCommitVersion))
				}
				continue
			}
			n, _, _ := a.Add.NumRecords()
			if optInt(a.Add.BaseRowID) != strconv.FormatInt(next, 10) || optInt(a.Add.DefaultRowCommitVersion) != strconv.FormatInt(version, 10) {
				t.Errorf("new add %s: baseRowId %s defaultRowCommitVersion %s, want %d and %d", a.Add.Path,
					optInt(a.Add.BaseRowID), optInt(a.Add.DefaultRowCommitVersion), next, version)
			}
			next += n
		case a.Remove != nil:
			if old := live[a.Remove.Path]; old == nil || optInt(a.Remove.BaseRowID) != optInt(old.BaseRowID) || optInt(a.Remove.DefaultRowCommitVersion) != optInt(old.DefaultRowCommitVersion) {
				t.Errorf("remove %s: baseRowId %s defaultRowCommitVersion %s, not its add's", a.Remove.Path, optInt(a.Remove.BaseRowID), optInt(a.Remove.DefaultRowCommitVersion))
			}
		}
	}
	hwm, ok, err := delta.RowTrackingHighWaterMark(acts)
	switch {
	case err != nil:
		t.Fatal(err)
	case next == start+1 && ok:
		t.Errorf("version %d adds no new file but sets the high-water mark to %d", version, hwm)
	case next > start+1 && (!ok || hwm != next-1):
		t.Errorf("version %d: high-water mark %d (set %v), want %d, the last new id", version, hwm, ok, next-1)
	}
}

func optInt(p *int64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatInt(*p, 10)
}
