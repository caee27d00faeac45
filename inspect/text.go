package inspect

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/compactord/compactord/internal/units"
)

// maxInspectCubes bounds the Z-cubes the text report lists.
const maxInspectCubes = 20

// WriteText writes r as `compactord inspect` prints it, listing at most
// maxParts partitions.
func WriteText(w io.Writer, r *Report, maxParts int) error {
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
	p("schema\t%d columns\n", len(r.Schema))
	for _, c := range r.Schema {
		null := "nullable"
		if !c.Nullable {
			null = "not null"
		}
		if c.Partition {
			null += ", partition column"
		}
		p("  %s\t%s\t%s\n", c.Name, c.Type, null)
	}
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
	if a := r.AutoClustering; a != nil {
		keys := "none"
		if len(a.Keys) > 0 {
			keys = strings.Join(a.Keys, ", ")
		}
		p("auto clustering\tkeys %s\t%d predicates, %.1f a day\n", keys, a.Predicates, a.EvidencePerDay)
		if a.Verdict != "" {
			p("  last verdict\t%s\t%s\n", a.Checked.Format(time.RFC3339), a.Verdict)
		}
		if d := a.LastDecision; d != nil {
			state := "set"
			if !d.Applied {
				state = "refused"
			}
			p("  last change\t%s\t%s -> %s %s (version %d)\n", d.At.Format(time.RFC3339), listOrNone(d.Old), listOrNone(d.New), state, d.Version)
		}
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
