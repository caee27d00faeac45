package planner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/delta/stats"
)

// fixture is the planner's small JSON description of a snapshot plus the
// policies to plan it with (planner/testdata/*.json).
type fixture struct {
	Version          int64             `json:"version"`
	PartitionColumns []string          `json:"partitionColumns"`
	Configuration    map[string]string `json:"configuration"`
	// Schema: top-level columns; nested fields via Fields.
	Schema  []fixtureField    `json:"schema"`
	Domains map[string]string `json:"domains"`
	// Now is the planning clock (RFC 3339).
	Now   string                   `json:"now"`
	Files []fixtureFile            `json:"files"`
	Cases map[string]fixturePolicy `json:"cases"`
}

type fixtureField struct {
	Name         string         `json:"name"`
	Type         string         `json:"type"`
	PhysicalName string         `json:"physicalName"`
	Fields       []fixtureField `json:"fields"`
}

type fixtureFile struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Age before Now (Go duration); default 24h.
	Age        string             `json:"age"`
	Partition  map[string]*string `json:"partition"`
	NumRecords *int64             `json:"numRecords"`
	// Deleted is the DV cardinality (0 = no DV).
	Deleted  int64             `json:"deleted"`
	Min      map[string]any    `json:"min"`
	Max      map[string]any    `json:"max"`
	Tags     map[string]string `json:"tags"`
	Provider *string           `json:"provider"`
}

type fixturePolicy struct {
	Strategy             Strategy   `json:"strategy"`
	TargetFileSize       int64      `json:"targetFileSize"`
	MinFileSize          int64      `json:"minFileSize"`
	MaxDeletedRowsRatio  float64    `json:"maxDeletedRowsRatio"`
	SettleWindow         string     `json:"settleWindow"`
	MaxBytesPerRun       int64      `json:"maxBytesPerRun"`
	MaxJobsPerRun        int        `json:"maxJobsPerRun"`
	JobOrder             JobOrder   `json:"jobOrder"`
	ClusteringColumns    [][]string `json:"clusteringColumns"`
	LightweightColumn    []string   `json:"lightweightColumn"`
	MaxUnclusteredBytes  int64      `json:"maxUnclusteredBytes"`
	MaxRelativeFileRange float64    `json:"maxRelativeFileRange"`
	MinCubeSize          int64      `json:"minCubeSize"`
	CubeMergeMinCubes    int        `json:"cubeMergeMinCubes"`
	Full                 bool       `json:"full"`
}

func loadFixture(path string) (*fixture, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var f fixture
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}

func (f fixtureField) toDelta() *schema.StructField {
	sf := &schema.StructField{Name: f.Name, Nullable: true, Type: &schema.DataType{Name: f.Type}}
	if f.Fields != nil {
		st := &schema.StructType{}
		for _, c := range f.Fields {
			st.Fields = append(st.Fields, c.toDelta())
		}
		sf.Type = &schema.DataType{Struct: st}
	}
	if f.PhysicalName != "" {
		raw, _ := json.Marshal(f.PhysicalName)
		sf.Metadata = map[string]json.RawMessage{"delta.columnMapping.physicalName": raw}
	}
	return sf
}

func (f *fixture) snapshot() (*delta.Snapshot, time.Time, error) {
	now, err := time.Parse(time.RFC3339, f.Now)
	if err != nil {
		return nil, now, fmt.Errorf("now: %w", err)
	}
	snap := &delta.Snapshot{
		Version: f.Version,
		Metadata: actions.Metadata{
			PartitionColumns: f.PartitionColumns,
			Configuration:    f.Configuration,
		},
		Domains: map[string]actions.DomainMetadata{},
	}
	if f.Schema != nil {
		snap.Schema = &schema.StructType{}
		for _, c := range f.Schema {
			snap.Schema.Fields = append(snap.Schema.Fields, c.toDelta())
		}
	}
	for name, conf := range f.Domains {
		snap.Domains[name] = actions.DomainMetadata{Domain: name, Configuration: conf}
	}
	for _, ff := range f.Files {
		age := 24 * time.Hour
		if ff.Age != "" {
			if age, err = time.ParseDuration(ff.Age); err != nil {
				return nil, now, fmt.Errorf("file %s: age: %w", ff.Path, err)
			}
		}
		a := &actions.Add{
			Path:               ff.Path,
			PartitionValues:    ff.Partition,
			Size:               ff.Size,
			ModificationTime:   now.Add(-age).UnixMilli(),
			Tags:               ff.Tags,
			ClusteringProvider: ff.Provider,
		}
		if a.PartitionValues == nil {
			a.PartitionValues = map[string]*string{}
		}
		if ff.NumRecords != nil || ff.Min != nil || ff.Max != nil {
			a.ParsedStats = &stats.Stats{NumRecords: ff.NumRecords, MinValues: ff.Min, MaxValues: ff.Max}
		}
		if ff.Deleted > 0 {
			a.DeletionVector = &actions.DeletionVector{StorageType: "u", PathOrInlineDv: "dv" + ff.Path, SizeInBytes: 40, Cardinality: ff.Deleted}
		}
		snap.Files = append(snap.Files, a)
	}
	return snap, now, nil
}

func (p fixturePolicy) policy(now time.Time) (Policy, error) {
	pol := Policy{
		Strategy:             p.Strategy,
		TargetFileSize:       p.TargetFileSize,
		MinFileSize:          p.MinFileSize,
		MaxDeletedRowsRatio:  p.MaxDeletedRowsRatio,
		MaxBytesPerRun:       p.MaxBytesPerRun,
		MaxJobsPerRun:        p.MaxJobsPerRun,
		JobOrder:             p.JobOrder,
		ClusteringColumns:    p.ClusteringColumns,
		LightweightColumn:    p.LightweightColumn,
		MaxUnclusteredBytes:  p.MaxUnclusteredBytes,
		MaxRelativeFileRange: p.MaxRelativeFileRange,
		MinCubeSize:          p.MinCubeSize,
		CubeMergeMinCubes:    p.CubeMergeMinCubes,
		Full:                 p.Full,
		Now:                  now,
	}
	if p.SettleWindow != "" {
		d, err := time.ParseDuration(p.SettleWindow)
		if err != nil {
			return pol, err
		}
		pol.SettleWindow = d
	}
	return pol, nil
}
