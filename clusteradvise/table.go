package clusteradvise

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/predicate"
	"github.com/compactord/compactord/delta/scan"
	"github.com/compactord/compactord/delta/schema"
)

// Bounds of ReadSample.
const (
	// DefaultSampleRows is the sample's default size.
	DefaultSampleRows = 20_000
	// MaxSampleFiles is the most files a sample reads, spread evenly over
	// the live files.
	MaxSampleFiles = 64
	// MaxSampleBytes bounds the bytes of the files a sample reads (at
	// least one file is read).
	MaxSampleBytes = 1 << 30
)

// TableColumns maps the snapshot's top-level columns of a type a key can
// use (not partition columns) to their predicate columns (physical paths
// under column mapping).
func TableColumns(snap *delta.Snapshot) (map[string]predicate.Column, error) {
	out := map[string]predicate.Column{}
	if snap.Schema == nil {
		return out, nil
	}
	part := map[string]bool{}
	for _, p := range snap.Metadata.PartitionColumns {
		part[p] = true
	}
	mode := snap.Metadata.Configuration["delta.columnMapping.mode"]
	for _, f := range snap.Schema.Fields {
		if part[f.Name] || f.Type == nil {
			continue
		}
		k := predicate.KindOf(f.Type.Name)
		if !keyable(k) {
			continue
		}
		path := []string{f.Name}
		if mode == "name" || mode == "id" {
			p, err := snap.Schema.PhysicalPath([]string{f.Name})
			if err != nil {
				return nil, fmt.Errorf("version %d: column %s: %w", snap.Version, f.Name, err)
			}
			path = p
		}
		out[f.Name] = predicate.Column{Path: path, Kind: k}
	}
	return out, nil
}

// CurrentKey returns the snapshot's clustering columns as logical names.
func CurrentKey(snap *delta.Snapshot) ([]string, error) {
	paths, err := delta.ClusteringColumns(snap)
	if err != nil || len(paths) == 0 {
		return nil, err
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		logical := p
		if snap.Schema != nil {
			if l, err := snap.Schema.LogicalPath(p); err == nil {
				logical = l
			}
		}
		out = append(out, strings.Join(logical, "."))
	}
	return out, nil
}

// ReadSample reads a sample of at most maxRows live rows (0:
// DefaultSampleRows) of the named columns: from at most MaxSampleFiles
// files (and about MaxSampleBytes) spread evenly over the snapshot's live
// files (in path order), an even share of each file's rows taken at a
// regular stride.
func ReadSample(ctx context.Context, t *delta.Table, snap *delta.Snapshot, cols map[string]predicate.Column, maxRows int) (*Sample, error) {
	if maxRows <= 0 {
		maxRows = DefaultSampleRows
	}
	files := append([]*actions.Add(nil), snap.Files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	nPick := MaxSampleFiles
	if len(files) > 0 {
		var total int64
		for _, f := range files {
			total += f.Size
		}
		if avg := total / int64(len(files)); avg > 0 {
			nPick = min(nPick, max(1, int(MaxSampleBytes/avg)))
		}
	}
	if len(files) > nPick {
		picked := make([]*actions.Add, 0, nPick)
		for i := range nPick {
			picked = append(picked, files[i*len(files)/nPick])
		}
		files = picked
	}
	s := &Sample{Values: map[string][]*predicate.Value{}}
	for name := range cols {
		s.Values[name] = nil
	}
	if len(files) == 0 {
		return s, nil
	}
	quota := max(1, maxRows/len(files))
	sub := *snap
	sub.Files = files
	seen := map[*actions.Add]int64{}
	taken := map[*actions.Add]int{}
	_, err := scan.ScanLogicalRows(ctx, t, &sub, scan.LogicalScanOptions{}, func(add *actions.Add, row *schema.LogicalStruct) error {
		i := seen[add]
		seen[add] = i + 1
		stride := int64(1)
		if n, ok := add.LiveRows(); ok && n > int64(quota) {
			stride = n / int64(quota) // the quota is reached within the file
		}
		if i%stride != 0 || taken[add] >= quota || s.Rows >= maxRows {
			return nil
		}
		taken[add]++
		s.Rows++
		for name, col := range cols {
			raw, _ := row.Get(name)
			s.Values[name] = append(s.Values[name], toValue(raw, col.Kind))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("table %s: version %d: clustering sample: %w", t.Name(), snap.Version, err)
	}
	return s, nil
}

// toValue converts a logical row value to a predicate value of kind k; nil
// for a null or a value of another type.
func toValue(raw any, k predicate.Kind) *predicate.Value {
	var v predicate.Value
	switch x := raw.(type) {
	case nil:
		return nil
	case int64:
		v = predicate.Int(x)
	case int32:
		v = predicate.Int(int64(x))
	case int16:
		v = predicate.Int(int64(x))
	case int8:
		v = predicate.Int(int64(x))
	case int:
		v = predicate.Int(int64(x))
	case float64:
		v = predicate.Float(x)
	case float32:
		v = predicate.Float(float64(x))
	case string:
		v = predicate.String(x)
	case bool:
		v = predicate.Bool(x)
	case schema.Date:
		v = predicate.Date(int64(x))
	case schema.Timestamp:
		v = predicate.Timestamp(int64(x))
	case schema.TimestampNTZ:
		v = predicate.Timestamp(int64(x))
	case schema.Decimal:
		d, err := predicate.Decimal(x.String())
		if err != nil {
			return nil
		}
		v = d
	default:
		return nil
	}
	if v.Kind != k {
		return nil
	}
	return &v
}

// InputOf builds Advise's input from a snapshot: its columns, live files
// and current key, the sample and the evidence.
func InputOf(snap *delta.Snapshot, sample *Sample, rec *Record, targetFileSize int64) (Input, error) {
	cols, err := TableColumns(snap)
	if err != nil {
		return Input{}, err
	}
	cur, err := CurrentKey(snap)
	if err != nil {
		return Input{}, err
	}
	files := make([]File, 0, len(snap.Files))
	for _, a := range snap.Files {
		st, err := a.FullStats()
		if err != nil {
			st = nil // unreadable statistics prune nothing
		}
		files = append(files, File{Size: a.Size, Stats: predicate.DeltaStats{Stats: st}})
	}
	return Input{Columns: cols, Files: files, TargetFileSize: targetFileSize, Current: cur, Sample: sample, Evidence: rec}, nil
}

// EvidenceColumns are the columns of cols that rec's predicates reference
// (what a sample needs to hold).
func EvidenceColumns(rec *Record, cols map[string]predicate.Column) map[string]predicate.Column {
	byPhysical := map[string]string{}
	for name, c := range cols {
		byPhysical[pathKey(c.Path)] = name
	}
	resolve := func(parts []string) (predicate.Column, bool) {
		c, ok := cols[parts[len(parts)-1]]
		return c, ok
	}
	out := map[string]predicate.Column{}
	for _, e := range rec.Entries {
		p, err := predicate.ParseSpark(e.Predicate, resolve)
		if err != nil {
			continue
		}
		for _, c := range append(p.Filters, p.Joins...) {
			if name, ok := byPhysical[pathKey(c.Path)]; ok {
				out[name] = cols[name]
			}
		}
	}
	return out
}

// AdviseTable samples the columns rec's predicates reference from the
// snapshot's files and advises on them (Advise). rec must be decayed to
// now.
func AdviseTable(ctx context.Context, t *delta.Table, snap *delta.Snapshot, rec *Record, targetFileSize int64, sampleRows int, opts Options) (*Advice, error) {
	cols, err := TableColumns(snap)
	if err != nil {
		return nil, err
	}
	need := EvidenceColumns(rec, cols)
	cur, err := CurrentKey(snap)
	if err != nil {
		return nil, err
	}
	for _, c := range cur {
		if col, ok := cols[c]; ok {
			need[c] = col
		}
	}
	sample, err := ReadSample(ctx, t, snap, need, sampleRows)
	if err != nil {
		return nil, err
	}
	in, err := InputOf(snap, sample, rec, targetFileSize)
	if err != nil {
		return nil, err
	}
	return Advise(in, opts)
}
