package inspect

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/statsbackfill"
)

// Report is what `compactord inspect` prints (--json: this struct).
type Report struct {
	Table     string `json:"table"`
	Version   int64  `json:"version"`
	Timestamp int64  `json:"timestamp"`
	NumFiles  int    `json:"numFiles"`
	SizeBytes int64  `json:"sizeBytes"`
	// NumRecords is the live row count: stats numRecords minus DV
	// cardinality, summed over the files that have numRecords.
	NumRecords         int64 `json:"numRecords"`
	NumPhysicalRecords int64 `json:"numPhysicalRecords"`
	NumDeletedRows     int64 `json:"numDeletedRows"`
	// FilesWithoutStats counts files without numRecords; their rows are
	// counted from their parquet footers (RowsFromFooters files), and
	// FilesWithUnknownRows could not be read, or carry a deletion vector
	// that deletes more rows than their footer holds: only those are
	// missing from the counts above.
	FilesWithoutStats    int `json:"filesWithoutStats"`
	RowsFromFooters      int `json:"rowsFromFooters"`
	FilesWithUnknownRows int `json:"filesWithUnknownRows"`

	SizeHistogram      []SizeBucket `json:"sizeHistogram"`
	SmallFileThreshold int64        `json:"smallFileThresholdBytes"`
	SmallFiles         int          `json:"smallFiles"`
	SmallFilesBytes    int64        `json:"smallFilesBytes"`
	// SmallFilesToMerge counts the small files a compaction under the
	// default policy would merge (planner.BacklogOf, the daemon's
	// small-file backlog, settle window ignored): a small file alone in
	// its bin is not among them.
	SmallFilesToMerge int `json:"smallFilesToMerge"`

	FilesWithDVs int `json:"filesWithDeletionVectors"`
	// DeletedRowRatio is numDeletedRows / numPhysicalRecords.
	DeletedRowRatio float64 `json:"deletedRowRatio"`

	// Schema is the table's top-level columns in order (nested fields
	// are in their column's type).
	Schema []Column `json:"schema"`

	PartitionColumns  []string    `json:"partitionColumns"`
	NumPartitions     int         `json:"numPartitions"`
	Partitions        []Partition `json:"partitions"`
	ClusteringColumns [][]string  `json:"clusteringColumns"`
	// Clustering is the clustering state of a clustered table (nil
	// otherwise): what auto's threshold and the cube tiers look at.
	Clustering *Clustering `json:"clustering,omitempty"`
	// AutoClustering is CLUSTER BY AUTO's record (Load reads it; nil
	// when auto clustering never ran on the table).
	AutoClustering *AutoClustering `json:"autoClustering,omitempty"`
	// RowTracking is the row tracking state of a table whose protocol
	// supports it (nil otherwise).
	RowTracking *RowTracking `json:"rowTracking,omitempty"`

	Protocol              Protocol          `json:"protocol"`
	ImpliedReaderFeatures []string          `json:"impliedReaderFeatures,omitempty"`
	ImpliedWriterFeatures []string          `json:"impliedWriterFeatures,omitempty"`
	Properties            map[string]string `json:"properties"`

	Rewritable bool             `json:"rewritable"`
	Refusal    string           `json:"refusal"`
	Refusals   []FeatureRefusal `json:"refusals"`
}

// Column is one top-level column of a table's schema.
type Column struct {
	Name string `json:"name"`
	// Type is Delta's simple form: "long", "decimal(10,2)",
	// "struct<a:int,b:string>", "array<long>", "map<string,long>".
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
	// Partition is set on the table's partition columns.
	Partition bool `json:"partition"`
}

// RowTracking is a table's row tracking state (PROTOCOL.md "Row
// Tracking").
type RowTracking struct {
	Enabled   bool `json:"enabled"`
	Suspended bool `json:"suspended"`
	// HighWaterMark is the delta.rowTracking domain's rowIdHighWaterMark,
	// -1 when no row id was assigned yet.
	HighWaterMark          int64  `json:"rowIdHighWaterMark"`
	RowIDColumn            string `json:"materializedRowIdColumn"`
	RowCommitVersionColumn string `json:"materializedRowCommitVersionColumn"`
}

// Clustering counts a clustered table's files by how they were
// clustered.
type Clustering struct {
	// UnclusteredFiles/Bytes: files no clustering wrote (no provider, no
	// Z-cube tag): auto clusters them once their bytes reach its threshold.
	UnclusteredFiles int   `json:"unclusteredFiles"`
	UnclusteredBytes int64 `json:"unclusteredBytes"`
	// ZCubes lists each Z-cube's id, files and bytes, largest first.
	ZCubes []ZCube `json:"zcubes"`
	// OtherFiles are clustered without a Z-cube tag (clustered on write,
	// or by another provider).
	OtherFiles int `json:"otherFiles"`
}

// ZCube is one Z-cube of a clustered table.
type ZCube struct {
	ID    string `json:"id"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
}

// Protocol is the table's protocol action.
type Protocol struct {
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures"`
	WriterFeatures   []string `json:"writerFeatures"`
}

// FeatureRefusal is one table feature that keeps the table from being
// rewritten.
type FeatureRefusal struct {
	Feature string `json:"feature"`
	Kind    string `json:"kind"`
	Reason  string `json:"reason"`
}

// SizeBucket is one bucket of the file size histogram.
type SizeBucket struct {
	// Label is the range, e.g. "1 MiB-8 MiB"; Lower <= size < Upper.
	Label string `json:"label"`
	Lower int64  `json:"lowerBytes"`
	// Upper is absent from the open last bucket (">=1 GiB").
	Upper int64 `json:"upperBytes,omitempty"`
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

// Partition sums the files of one partition.
type Partition struct {
	Values       map[string]*string `json:"values"`
	Files        int                `json:"files"`
	Bytes        int64              `json:"bytes"`
	SmallFiles   int                `json:"smallFiles"`
	FilesWithDVs int                `json:"filesWithDeletionVectors"`
}

// histogramBounds are the upper bounds of the size histogram buckets.
var histogramBounds = []int64{1 * units.MiB, 8 * units.MiB, 32 * units.MiB, 128 * units.MiB, 512 * units.MiB, 1 * units.GiB}

// Load loads version (< 0: latest) of t and reports on it, files
// below threshold counting as small (< 0: the planner's rule under the
// default policy). Rows of files without stats are not counted yet
// (CountFooterRows does).
func Load(ctx context.Context, t *delta.Table, version, threshold int64) (*Report, *delta.Snapshot, error) {
	snap, err := delta.LoadSnapshot(ctx, t, version)
	if err != nil {
		return nil, nil, err
	}
	if threshold < 0 {
		if threshold, err = planner.SmallFileThreshold(snap, planner.DefaultPolicy()); err != nil {
			return nil, nil, err
		}
	}
	rep, err := Build(t.Name(), snap, threshold)
	if err != nil {
		return nil, nil, err
	}
	if err := LoadAutoClustering(ctx, t, rep); err != nil {
		return nil, nil, err
	}
	return rep, snap, nil
}

// CountFooterRows adds to rep the rows of the files without numRecords,
// read from their parquet footers.
func CountFooterRows(ctx context.Context, t *delta.Table, snap *delta.Snapshot, rep *Report) {
	var files []*actions.Add
	for _, f := range snap.Files {
		if _, ok := f.LiveRows(); !ok {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return
	}
	rows, _ := statsbackfill.FooterCounts(ctx, t, files, 8)
	for i, f := range files {
		// A DV deleting more rows than the footer holds does not belong to
		// the file (any read of it is refused as a corrupt DV): its live
		// rows are unknown, not negative.
		if rows[i] < 0 || f.NumDeleted() > rows[i] {
			rep.FilesWithUnknownRows++
			continue
		}
		rep.RowsFromFooters++
		rep.NumPhysicalRecords += rows[i]
		rep.NumDeletedRows += f.NumDeleted()
		rep.NumRecords += rows[i] - f.NumDeleted()
	}
	if rep.NumPhysicalRecords > 0 {
		rep.DeletedRowRatio = float64(rep.NumDeletedRows) / float64(rep.NumPhysicalRecords)
	}
}

// clusteringState groups a clustered table's files by Z-cube.
func clusteringState(snap *delta.Snapshot) *Clustering {
	cr := &Clustering{ZCubes: []ZCube{}}
	cubes := map[string]*ZCube{}
	for _, f := range snap.Files {
		id, tagged := f.Tags[planner.TagZCubeID]
		switch {
		case tagged:
			z := cubes[id]
			if z == nil {
				z = &ZCube{ID: id}
				cubes[id] = z
			}
			z.Files++
			z.Bytes += f.Size
		case f.ClusteringProvider != nil:
			cr.OtherFiles++
		default:
			cr.UnclusteredFiles++
			cr.UnclusteredBytes += f.Size
		}
	}
	for _, z := range cubes {
		cr.ZCubes = append(cr.ZCubes, *z)
	}
	sort.Slice(cr.ZCubes, func(i, j int) bool {
		if cr.ZCubes[i].Bytes != cr.ZCubes[j].Bytes {
			return cr.ZCubes[i].Bytes > cr.ZCubes[j].Bytes
		}
		return cr.ZCubes[i].ID < cr.ZCubes[j].ID
	})
	return cr
}

// Build reports on snap of the table shown as url, files below
// smallThreshold counting as small. It does no I/O.
func Build(url string, snap *delta.Snapshot, smallThreshold int64) (*Report, error) {
	rep := &Report{
		Table:              url,
		Version:            snap.Version,
		Timestamp:          snap.Timestamp,
		NumFiles:           len(snap.Files),
		SmallFileThreshold: smallThreshold,
		PartitionColumns:   append([]string{}, snap.Metadata.PartitionColumns...),
		Properties:         snap.Metadata.Configuration,
		Protocol: Protocol{
			MinReaderVersion: snap.Protocol.MinReaderVersion,
			MinWriterVersion: snap.Protocol.MinWriterVersion,
			ReaderFeatures:   append([]string{}, snap.Protocol.ReaderFeatures...),
			WriterFeatures:   append([]string{}, snap.Protocol.WriterFeatures...),
		},
		Refusals: []FeatureRefusal{},
	}
	if rep.Properties == nil {
		rep.Properties = map[string]string{}
	}
	rep.Schema = schemaOf(snap)
	if snap.Protocol.MinReaderVersion < 3 {
		rep.ImpliedReaderFeatures = snap.Protocol.EffectiveReaderFeatures()
	}
	if snap.Protocol.MinWriterVersion < 7 {
		rep.ImpliedWriterFeatures = snap.Protocol.EffectiveWriterFeatures()
	}
	lower := int64(0)
	for _, ub := range histogramBounds {
		label := "<" + units.FormatBytes(ub)
		if lower > 0 {
			label = units.FormatBytes(lower) + "-" + units.FormatBytes(ub)
		}
		rep.SizeHistogram = append(rep.SizeHistogram, SizeBucket{Label: label, Lower: lower, Upper: ub})
		lower = ub
	}
	rep.SizeHistogram = append(rep.SizeHistogram, SizeBucket{Label: ">=" + units.FormatBytes(lower), Lower: lower})

	// Partition values are keyed by physical name under column mapping;
	// the report names the logical columns.
	partKeys, err := actions.PartitionValueKeys(&snap.Metadata, snap.Schema)
	if err != nil {
		return nil, err
	}
	parts := map[string]*Partition{}
	for _, f := range snap.Files {
		rep.SizeBytes += f.Size
		b := sort.Search(len(histogramBounds), func(i int) bool { return f.Size < histogramBounds[i] })
		rep.SizeHistogram[b].Files++
		rep.SizeHistogram[b].Bytes += f.Size
		isSmall := f.Size < smallThreshold
		if isSmall {
			rep.SmallFiles++
			rep.SmallFilesBytes += f.Size
		}
		if f.DeletionVector != nil {
			rep.FilesWithDVs++
		}
		if n, ok, err := f.NumRecords(); err == nil && ok {
			rep.NumRecords += n - f.NumDeleted()
			rep.NumPhysicalRecords += n
			rep.NumDeletedRows += f.NumDeleted()
		} else {
			rep.FilesWithoutStats++
		}
		if len(snap.Metadata.PartitionColumns) > 0 {
			key := partitionKey(partKeys, f.PartitionValues)
			p := parts[key]
			if p == nil {
				p = &Partition{Values: map[string]*string{}}
				for i, c := range snap.Metadata.PartitionColumns {
					p.Values[c] = f.PartitionValues[partKeys[i]]
				}
				parts[key] = p
			}
			p.Files++
			p.Bytes += f.Size
			if isSmall {
				p.SmallFiles++
			}
			if f.DeletionVector != nil {
				p.FilesWithDVs++
			}
		}
	}
	if rep.NumPhysicalRecords > 0 {
		rep.DeletedRowRatio = float64(rep.NumDeletedRows) / float64(rep.NumPhysicalRecords)
	}
	keys := make([]string, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rep.Partitions = make([]Partition, 0, len(keys))
	for _, k := range keys {
		rep.Partitions = append(rep.Partitions, *parts[k])
	}
	rep.NumPartitions = len(rep.Partitions)

	cols, err := delta.ClusteringColumns(snap)
	if err != nil {
		return nil, err
	}
	pol := planner.DefaultPolicy()
	pol.SettleWindow = 0
	bl, err := planner.BacklogOf(snap, pol)
	if err != nil {
		return nil, err
	}
	rep.SmallFilesToMerge = bl.MergeableFiles
	rep.ClusteringColumns = cols
	if rep.ClusteringColumns == nil {
		rep.ClusteringColumns = [][]string{}
	}
	if len(cols) > 0 {
		rep.Clustering = clusteringState(snap)
	}

	rt, err := delta.RowTrackingOf(snap)
	if err != nil {
		return nil, err
	}
	if rt.Supported {
		rep.RowTracking = &RowTracking{Enabled: rt.Enabled, Suspended: rt.Suspended, HighWaterMark: rt.HighWaterMark,
			RowIDColumn: rt.RowIDColumn, RowCommitVersionColumn: rt.RowCommitVersionColumn}
	}

	werr := delta.Writable(snap)
	rep.Rewritable = werr == nil
	if werr != nil {
		rep.Refusal = werr.Error()
		for _, e := range flattenErrors(werr) {
			var ufe *delta.UnsupportedFeatureError
			if errors.As(e, &ufe) {
				rep.Refusals = append(rep.Refusals, FeatureRefusal{Feature: ufe.Feature, Kind: ufe.Kind, Reason: ufe.Reason})
			}
		}
	}
	return rep, nil
}

// flattenErrors unwraps errors.Join trees into their leaves.
func flattenErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flattenErrors(e)...)
		}
		return out
	}
	return []error{err}
}

// partitionKey is a stable key of a file's partition values (null differs
// from every string, including "null").
func partitionKey(cols []string, pv map[string]*string) string {
	var sb strings.Builder
	for _, c := range cols {
		if v := pv[c]; v != nil {
			sb.WriteString(strconv.Quote(*v))
		} else {
			sb.WriteString("<null>")
		}
		sb.WriteByte(0)
	}
	return sb.String()
}

// schemaOf lists snap's top-level columns, partition columns marked.
func schemaOf(snap *delta.Snapshot) []Column {
	cols := []Column{}
	if snap.Schema == nil {
		return cols
	}
	parts := map[string]bool{}
	for _, c := range snap.Metadata.PartitionColumns {
		parts[c] = true
	}
	for _, f := range snap.Schema.Fields {
		cols = append(cols, Column{Name: f.Name, Type: f.Type.String(), Nullable: f.Nullable, Partition: parts[f.Name]})
	}
	return cols
}
