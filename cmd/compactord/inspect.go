package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/statsbackfill"
)

// inspectReport is what `compactord inspect` prints (--json: this struct).
type inspectReport struct {
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

	SizeHistogram      []sizeBucket `json:"sizeHistogram"`
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

	PartitionColumns  []string           `json:"partitionColumns"`
	NumPartitions     int                `json:"numPartitions"`
	Partitions        []partitionSummary `json:"partitions"`
	ClusteringColumns [][]string         `json:"clusteringColumns"`
	// Clustering is the clustering state of a clustered table (nil
	// otherwise): what auto's threshold and the cube tiers look at.
	Clustering *clusteringReport `json:"clustering,omitempty"`
	// RowTracking is the row tracking state of a table whose protocol
	// supports it (nil otherwise).
	RowTracking *rowTrackingReport `json:"rowTracking,omitempty"`

	Protocol              protocolReport    `json:"protocol"`
	ImpliedReaderFeatures []string          `json:"impliedReaderFeatures,omitempty"`
	ImpliedWriterFeatures []string          `json:"impliedWriterFeatures,omitempty"`
	Properties            map[string]string `json:"properties"`

	Rewritable bool            `json:"rewritable"`
	Refusal    string          `json:"refusal"`
	Refusals   []refusalReport `json:"refusals"`
}

// rowTrackingReport is a table's row tracking state (PROTOCOL.md "Row
// Tracking").
type rowTrackingReport struct {
	Enabled   bool `json:"enabled"`
	Suspended bool `json:"suspended"`
	// HighWaterMark is the delta.rowTracking domain's rowIdHighWaterMark,
	// -1 when no row id was assigned yet.
	HighWaterMark          int64  `json:"rowIdHighWaterMark"`
	RowIDColumn            string `json:"materializedRowIdColumn"`
	RowCommitVersionColumn string `json:"materializedRowCommitVersionColumn"`
}

// clusteringReport counts a clustered table's files by how they were
// clustered.
type clusteringReport struct {
	// UnclusteredFiles/Bytes: files no clustering wrote (no provider, no
	// Z-cube tag): auto clusters them once their bytes reach its threshold.
	UnclusteredFiles int   `json:"unclusteredFiles"`
	UnclusteredBytes int64 `json:"unclusteredBytes"`
	// ZCubes lists each Z-cube's id, files and bytes, largest first.
	ZCubes []zcubeSummary `json:"zcubes"`
	// OtherFiles are clustered without a Z-cube tag (clustered on write,
	// or by another provider).
	OtherFiles int `json:"otherFiles"`
}

type zcubeSummary struct {
	ID    string `json:"id"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
}

type protocolReport struct {
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures"`
	WriterFeatures   []string `json:"writerFeatures"`
}

type refusalReport struct {
	Feature string `json:"feature"`
	Kind    string `json:"kind"`
	Reason  string `json:"reason"`
}

type sizeBucket struct {
	// Label is the range, e.g. "1 MiB-8 MiB"; Lower <= size < Upper.
	Label string `json:"label"`
	Lower int64  `json:"lowerBytes"`
	// Upper is absent from the open last bucket (">=1 GiB").
	Upper int64 `json:"upperBytes,omitempty"`
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

type partitionSummary struct {
	Values       map[string]*string `json:"values"`
	Files        int                `json:"files"`
	Bytes        int64              `json:"bytes"`
	SmallFiles   int                `json:"smallFiles"`
	FilesWithDVs int                `json:"filesWithDeletionVectors"`
}

// histogramBounds are the upper bounds of the size histogram buckets.
var histogramBounds = []int64{1 * units.MiB, 8 * units.MiB, 32 * units.MiB, 128 * units.MiB, 512 * units.MiB, 1 * units.GiB}

// runInspect describes a table: `compactord inspect URL [--version N]
// [--json] [--small-file-size SIZE]`.
func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommandFlags(ctx, "inspect", "warn", stderr)
	version := fs.versionVar("table version `N` to inspect (default: latest)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	small := fs.String("small-file-size", "", "files below this size count as small, e.g. 64MiB (units B, KiB/k, MiB/m, GiB/g; powers of 1024) (default: the planner's rule, min(1GiB, the table's target file size))")
	maxParts := fs.countVar("partitions", 20, "text output: list at most this many partitions (JSON lists all)")
	ctx, url, store, err := fs.parseTable(ctx, args, stderr)
	if err != nil {
		return err
	}
	threshold := int64(-1)
	if *small != "" {
		if threshold, err = units.ParseSize(*small); err != nil {
			return fmt.Errorf("%w: --small-file-size: %v", errUsage, err)
		}
	}
	t, err := store.open(ctx, url)
	if err != nil {
		return err
	}
	defer t.Close()
	rep, snap, err := inspectTable(ctx, t, *version, threshold)
	if err != nil {
		return err
	}
	countFooterRows(ctx, t, snap, rep)
	if *asJSON {
		return writeJSONTo(stdout, rep)
	}
	return writeInspectText(stdout, rep, *maxParts)
}

// inspectTable loads version (< 0: latest) of t and reports on it, files
// below threshold counting as small (< 0: the planner's rule under the
// default policy). Rows of files without stats are not counted yet
// (countFooterRows does).
func inspectTable(ctx context.Context, t *delta.Table, version, threshold int64) (*inspectReport, *delta.Snapshot, error) {
	snap, err := delta.LoadSnapshot(ctx, t, version)
	if err != nil {
		return nil, nil, err
	}
	if threshold < 0 {
		if threshold, err = planner.SmallFileThreshold(snap, planner.DefaultPolicy()); err != nil {
			return nil, nil, err
		}
	}
	rep, err := buildInspectReport(t.Name(), snap, threshold)
	if err != nil {
		return nil, nil, err
	}
	return rep, snap, nil
}

// countFooterRows adds to rep the rows of the files without numRecords,
// read from their parquet footers.
func countFooterRows(ctx context.Context, t *delta.Table, snap *delta.Snapshot, rep *inspectReport) {
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

// maxInspectCubes bounds the Z-cubes the text report lists.
const maxInspectCubes = 20

// clusteringState groups a clustered table's files by Z-cube.
func clusteringState(snap *delta.Snapshot) *clusteringReport {
	cr := &clusteringReport{ZCubes: []zcubeSummary{}}
	cubes := map[string]*zcubeSummary{}
	for _, f := range snap.Files {
		id, tagged := f.Tags[planner.TagZCubeID]
		switch {
		case tagged:
			z := cubes[id]
			if z == nil {
				z = &zcubeSummary{ID: id}
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

func buildInspectReport(url string, snap *delta.Snapshot, smallThreshold int64) (*inspectReport, error) {
	rep := &inspectReport{
		Table:              url,
		Version:            snap.Version,
		Timestamp:          snap.Timestamp,
		NumFiles:           len(snap.Files),
		SmallFileThreshold: smallThreshold,
		PartitionColumns:   append([]string{}, snap.Metadata.PartitionColumns...),
		Properties:         snap.Metadata.Configuration,
		Protocol: protocolReport{
			MinReaderVersion: snap.Protocol.MinReaderVersion,
			MinWriterVersion: snap.Protocol.MinWriterVersion,
			ReaderFeatures:   append([]string{}, snap.Protocol.ReaderFeatures...),
			WriterFeatures:   append([]string{}, snap.Protocol.WriterFeatures...),
		},
		Refusals: []refusalReport{},
	}
	if rep.Properties == nil {
		rep.Properties = map[string]string{}
	}
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
		rep.SizeHistogram = append(rep.SizeHistogram, sizeBucket{Label: label, Lower: lower, Upper: ub})
		lower = ub
	}
	rep.SizeHistogram = append(rep.SizeHistogram, sizeBucket{Label: ">=" + units.FormatBytes(lower), Lower: lower})

	// Partition values are keyed by physical name under column mapping;
	// the report names the logical columns.
	partKeys, err := actions.PartitionValueKeys(&snap.Metadata, snap.Schema)
	if err != nil {
		return nil, err
	}
	parts := map[string]*partitionSummary{}
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
				p = &partitionSummary{Values: map[string]*string{}}
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
	rep.Partitions = make([]partitionSummary, 0, len(keys))
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
		rep.RowTracking = &rowTrackingReport{Enabled: rt.Enabled, Suspended: rt.Suspended, HighWaterMark: rt.HighWaterMark,
			RowIDColumn: rt.RowIDColumn, RowCommitVersionColumn: rt.RowCommitVersionColumn}
	}

	werr := delta.Writable(snap)
	rep.Rewritable = werr == nil
	if werr != nil {
		rep.Refusal = werr.Error()
		for _, e := range flattenErrors(werr) {
			var ufe *delta.UnsupportedFeatureError
			if errors.As(e, &ufe) {
				rep.Refusals = append(rep.Refusals, refusalReport{Feature: ufe.Feature, Kind: ufe.Kind, Reason: ufe.Reason})
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

func writeInspectText(w io.Writer, r *inspectReport, maxParts int) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format, a...) }
	p("table\t%s\n", r.Table)
	p("version\t%d (%s)\n", r.Version, time.UnixMilli(r.Timestamp).UTC().Format(time.RFC3339Nano))
	p("files\t%d (%s)\n", r.NumFiles, units.FormatBytes(r.SizeBytes))
	p("rows\t%d live, %d physical, %d deleted by DVs", r.NumRecords, r.NumPhysicalRecords, r.NumDeletedRows)
	if r.FilesWithoutStats > 0 {
		p(" (%d files without numRecords: %d counted from footers", r.FilesWithoutStats, r.RowsFromFooters)
		if r.FilesWithUnknownRows > 0 {
			p(", %d unreadable or with a deletion vector past their rows, not counted", r.FilesWithUnknownRows)
		}
		p(")")
	}
	p("\n")
	p("small files\t%d below %s (%s), %d to merge\n", r.SmallFiles, units.FormatBytes(r.SmallFileThreshold), units.FormatBytes(r.SmallFilesBytes), r.SmallFilesToMerge)
	p("deletion vectors\t%d files, deleted-row ratio %.4f\n", r.FilesWithDVs, r.DeletedRowRatio)
	p("file sizes\n")
	for _, b := range r.SizeHistogram {
		p("  %s\t%d files\t%s\n", b.Label, b.Files, units.FormatBytes(b.Bytes))
	}
	if len(r.PartitionColumns) > 0 {
		p("partitions\t%d by %s\n", r.NumPartitions, strings.Join(r.PartitionColumns, ", "))
		for i, part := range r.Partitions {
			if i == maxParts {
				p("  ...\t%d more\n", len(r.Partitions)-maxParts)
				break
			}
			var vals []string
			for _, c := range r.PartitionColumns {
				if v := part.Values[c]; v != nil {
					vals = append(vals, c+"="+*v)
				} else {
					vals = append(vals, c+"=null")
				}
			}
			p("  %s\t%d files\t%s\t%d small\t%d with DVs\n", strings.Join(vals, "/"), part.Files, units.FormatBytes(part.Bytes), part.SmallFiles, part.FilesWithDVs)
		}
	} else {
		p("partitions\tnone\n")
	}
	if len(r.ClusteringColumns) > 0 {
		var cols []string
		for _, c := range r.ClusteringColumns {
			cols = append(cols, strings.Join(c, "."))
		}
		p("clustering\t%s\n", strings.Join(cols, ", "))
		if c := r.Clustering; c != nil {
			p("  unclustered\t%d files\t%s\n", c.UnclusteredFiles, units.FormatBytes(c.UnclusteredBytes))
			if c.OtherFiles > 0 {
				p("  clustered, no z-cube\t%d files\n", c.OtherFiles)
			}
			p("  z-cubes\t%d\n", len(c.ZCubes))
			for i, z := range c.ZCubes {
				if i == maxInspectCubes {
					p("  ...\t%d more\n", len(c.ZCubes)-i)
					break
				}
				p("    %s\t%d files\t%s\n", z.ID, z.Files, units.FormatBytes(z.Bytes))
			}
		}
	} else {
		p("clustering\tnone\n")
	}
	if rt := r.RowTracking; rt != nil {
		state := "supported, not enabled"
		switch {
		case rt.Suspended:
			state = "suspended"
		case rt.Enabled:
			state = "enabled"
		}
		p("row tracking\t%s, high-water mark %d\n", state, rt.HighWaterMark)
		if rt.RowIDColumn != "" || rt.RowCommitVersionColumn != "" {
			p("  materialized\trow id %s, row commit version %s\n", rt.RowIDColumn, rt.RowCommitVersionColumn)
		}
	} else {
		p("row tracking\tnone\n")
	}
	p("protocol\treader %d, writer %d\n", r.Protocol.MinReaderVersion, r.Protocol.MinWriterVersion)
	rf := append(append([]string{}, r.Protocol.ReaderFeatures...), r.ImpliedReaderFeatures...)
	wf := append(append([]string{}, r.Protocol.WriterFeatures...), r.ImpliedWriterFeatures...)
	p("reader features\t%s\n", listOrNone(rf))
	p("writer features\t%s\n", listOrNone(wf))
	if r.Rewritable {
		p("rewritable\tyes\n")
	} else {
		p("rewritable\tno\n")
		for _, x := range r.Refusals {
			p("  %s (%s)\t%s\n", x.Feature, x.Kind, x.Reason)
		}
		if len(r.Refusals) == 0 {
			p("  %s\n", r.Refusal)
		}
	}
	return tw.Flush()
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// openSnapshot opens the table at url with store's options and loads
// version (< 0: latest).
func openSnapshot(ctx context.Context, store *storeFlags, url string, version int64) (*delta.Table, *delta.Snapshot, error) {
	t, err := store.open(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	snap, err := delta.LoadSnapshot(ctx, t, version)
	if err != nil {
		t.Close()
		return nil, nil, err
	}
	return t, snap, nil
}
