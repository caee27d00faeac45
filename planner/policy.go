package planner

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	deltaprops "github.com/compactord/compactord/delta/props"
)

// Strategy names how a plan rewrites files.
type Strategy string

// Strategies a Policy may ask for.
const (
	// StrategyAuto picks binpack for unclustered tables, and lightweight or
	// zcube for clustered tables by the unclustered-bytes threshold.
	StrategyAuto Strategy = "auto"
	// StrategyBinpack packs small files (and DV-heavy files) per partition.
	StrategyBinpack Strategy = "binpack"
	// StrategyLightweight packs small unclustered files of a clustered
	// table in (min, max) order of one clustering column, without sorting.
	StrategyLightweight Strategy = "lightweight"
	// StrategyZCube clusters unclustered files and partial Z-cubes along a
	// Hilbert (or Z-order) curve and tags the outputs as a new Z-cube.
	StrategyZCube Strategy = "zcube"
)

// JobOrder names the order in which jobs are admitted under the per-run caps.
type JobOrder string

// Job orders (the names follow Iceberg's rewrite-job-order).
const (
	JobOrderBytesAsc  JobOrder = "bytes-asc"
	JobOrderBytesDesc JobOrder = "bytes-desc"
	JobOrderFilesAsc  JobOrder = "files-asc"
	JobOrderFilesDesc JobOrder = "files-desc"
	// JobOrderOldestFirst orders jobs by the oldest source modification time.
	JobOrderOldestFirst JobOrder = "oldest-first"
)

// Defaults used for zero-valued Policy fields.
const (
	// DefaultTargetFileSize is the output size when neither the policy nor
	// the table property delta.targetFileSize sets one.
	DefaultTargetFileSize int64 = 128 << 20
	// DefaultMinFileSize is Delta OPTIMIZE's optimize.minFileSize (1 GiB).
	DefaultMinFileSize int64 = 1 << 30
	// DefaultMaxDeletedRowsRatio is Delta OPTIMIZE's optimize.maxDeletedRowsRatio.
	DefaultMaxDeletedRowsRatio = 0.05
	// DefaultMaxUnclusteredBytes is the lightweight tier's maxUnclusteredBytes.
	DefaultMaxUnclusteredBytes int64 = 10 << 30
	// DefaultMaxRelativeFileRange is the lightweight tier's maxRelativeFileRange.
	DefaultMaxRelativeFileRange = 0.5
	// DefaultMinCubeSize is Delta's minCubeSize threshold (100 GiB): cubes at
	// least this large are not merged by incremental clustering.
	DefaultMinCubeSize int64 = 100 << 30
	// DefaultCubeMergeMinCubes is the CubeMergeMinCubes used when it is 0:
	// a merge takes 4 adjacent partial cubes (Cassandra's size-tiered
	// min_threshold). bench/clustering.sh (Delta's size ratios scaled down,
	// policy every 10 batches) and bench/README.md give the figures.
	DefaultCubeMergeMinCubes = 4
	// DefaultSettleWindow is DefaultPolicy's settle window.
	DefaultSettleWindow = 15 * time.Minute
	// MaxClusteringColumns is Delta's clusteredTable.numClusteringColumnsLimit.
	MaxClusteringColumns = 4
)

// Policy says what a plan may rewrite. The zero value is usable: every
// zero field means its documented default, except SettleWindow,
// MaxBytesPerRun and MaxJobsPerRun where zero means "none"/"unlimited".
// DefaultPolicy returns the recommended values.
type Policy struct {
	// Strategy is auto, binpack, lightweight or zcube. "" means auto.
	// An explicit binpack/lightweight/zcube is used as is, whatever the
	// table's shape (lightweight and zcube need clustering columns).
	Strategy Strategy
	// TargetFileSize is the output (bin) size in bytes. 0 means the table
	// property delta.targetFileSize, else DefaultTargetFileSize (128 MiB).
	TargetFileSize int64
	// MinFileSize: files smaller than this are compaction candidates. 0 means
	// DefaultMinFileSize (1 GiB, Delta OPTIMIZE's default). Files at least
	// TargetFileSize large never share a bin, so only files below
	// min(MinFileSize, TargetFileSize) are merged in practice.
	MinFileSize int64
	// MaxDeletedRowsRatio: files whose DV-deleted / physical rows exceed it
	// are candidates whatever their size (a single such file is a job of its
	// own: a DV purge). 0 means DefaultMaxDeletedRowsRatio (0.05); to purge
	// every DV use a tiny positive value; 1 disables purging.
	MaxDeletedRowsRatio float64
	// SettleWindow: files modified less than this long before Now are left
	// alone (their writer may still be adding neighbours). 0 means none.
	SettleWindow time.Duration
	// MaxBytesPerRun caps the summed source bytes of the admitted jobs.
	// 0 means unlimited. A job larger than the cap is never admitted.
	MaxBytesPerRun int64
	// MaxJobsPerRun caps the number of jobs. 0 means unlimited.
	MaxJobsPerRun int
	// JobOrder is the admission order under the caps (and the order of
	// Plan.Jobs). "" means files-desc (most files first).
	JobOrder JobOrder
	// ClusteringColumns overrides the table's clustering columns: logical
	// column paths (nested fields as path elements). nil means the table's.
	ClusteringColumns [][]string
	// LightweightColumn is the logical path of the clustering column the
	// lightweight tier orders files by. nil means auto-pick.
	LightweightColumn []string
	// MaxUnclusteredBytes: on clustered tables auto uses lightweight while
	// the unclustered bytes stay below it, zcube at or above it.
	// 0 means DefaultMaxUnclusteredBytes (10 GiB).
	MaxUnclusteredBytes int64
	// MaxRelativeFileRange: the lightweight tier orders by a column only if
	// its files' average relative range (on value ranks) is at most this;
	// otherwise it groups by size. 0 means DefaultMaxRelativeFileRange (0.5).
	MaxRelativeFileRange float64
	// MinCubeSize: Z-cubes whose logical size reaches it are not merged by
	// incremental clustering. 0 means DefaultMinCubeSize (100 GiB).
	MinCubeSize int64
	// CubeMergeMinCubes bounds incremental clustering's merges: the new
	// unclustered data becomes a cube of its own, and partial Z-cubes are
	// merged only while a partition holds more of them (the new one
	// included) than 2 x sqrt(its files), this many at a time: the run of
	// adjacent cubes (along the clustering column they are narrowest on)
	// whose largest is smallest. A partition without unclustered data merges
	// all its partial cubes (it is quiet: one merge settles it). 0 means
	// DefaultCubeMergeMinCubes (4); a negative value means Delta's
	// behaviour: every partial cube is merged on every clustering run.
	// 1 is invalid (a merge takes at least two cubes).
	CubeMergeMinCubes int
	// Full re-clusters every file (OPTIMIZE FULL). Only with auto or zcube.
	Full bool
	// Exclude lists data file paths (as in add actions) the plan must
	// leave alone: files an earlier run found corrupt (quarantined). The
	// plan reports them as SkipQuarantined and otherwise ignores them.
	Exclude map[string]bool
	// Now is the planning clock (the planner never reads the wall clock).
	// Required when SettleWindow > 0.
	Now time.Time
}

// DefaultPolicy returns the recommended policy: auto strategy, Delta's
// defaults, bounded cube merging (DefaultCubeMergeMinCubes), a 15 minute
// settle window, no caps, files-desc order. Callers set Now before planning.
func DefaultPolicy() Policy {
	return Policy{
		Strategy:             StrategyAuto,
		MinFileSize:          DefaultMinFileSize,
		MaxDeletedRowsRatio:  DefaultMaxDeletedRowsRatio,
		SettleWindow:         DefaultSettleWindow,
		JobOrder:             JobOrderFilesDesc,
		MaxUnclusteredBytes:  DefaultMaxUnclusteredBytes,
		MaxRelativeFileRange: DefaultMaxRelativeFileRange,
		MinCubeSize:          DefaultMinCubeSize,
		CubeMergeMinCubes:    DefaultCubeMergeMinCubes,
	}
}

// ErrInvalidPolicy is wrapped by every error Validate returns.
var ErrInvalidPolicy = errors.New("invalid planner policy")

// Validate reports the first invalid field, wrapping ErrInvalidPolicy.
func (p Policy) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidPolicy, fmt.Sprintf(format, args...))
	}
	switch p.Strategy {
	case "", StrategyAuto, StrategyBinpack, StrategyLightweight, StrategyZCube:
	default:
		return bad("strategy %q is not one of auto, binpack, lightweight, zcube", p.Strategy)
	}
	switch p.JobOrder {
	case "", JobOrderBytesAsc, JobOrderBytesDesc, JobOrderFilesAsc, JobOrderFilesDesc, JobOrderOldestFirst:
	default:
		return bad("job order %q is not one of bytes-asc, bytes-desc, files-asc, files-desc, oldest-first", p.JobOrder)
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"target file size", p.TargetFileSize},
		{"min file size", p.MinFileSize},
		{"max bytes per run", p.MaxBytesPerRun},
		{"max jobs per run", int64(p.MaxJobsPerRun)},
		{"max unclustered bytes", p.MaxUnclusteredBytes},
		{"min cube size", p.MinCubeSize},
	} {
		if f.v < 0 {
			return bad("%s is negative (%d)", f.name, f.v)
		}
	}
	if p.SettleWindow < 0 {
		return bad("settle window is negative (%s)", p.SettleWindow)
	}
	if p.SettleWindow > 0 && p.Now.IsZero() {
		return bad("settle window %s needs Now (the planning clock)", p.SettleWindow)
	}
	if math.IsNaN(p.MaxDeletedRowsRatio) || p.MaxDeletedRowsRatio < 0 || p.MaxDeletedRowsRatio > 1 {
		return bad("max deleted rows ratio %v is outside [0, 1]", p.MaxDeletedRowsRatio)
	}
	if math.IsNaN(p.MaxRelativeFileRange) || p.MaxRelativeFileRange < 0 || p.MaxRelativeFileRange > 1 {
		return bad("max relative file range %v is outside [0, 1]", p.MaxRelativeFileRange)
	}
	if p.CubeMergeMinCubes == 1 {
		return bad("cube merge min cubes is 1 (want 0 for the default, >= 2, or negative for Delta's merge-everything)")
	}
	if p.Full && p.Strategy != "" && p.Strategy != StrategyAuto && p.Strategy != StrategyZCube {
		return bad("full clustering needs strategy auto or zcube, not %s", p.Strategy)
	}
	if len(p.ClusteringColumns) > MaxClusteringColumns {
		return bad("%d clustering columns exceed the limit of %d", len(p.ClusteringColumns), MaxClusteringColumns)
	}
	seen := map[string]bool{}
	for i, c := range p.ClusteringColumns {
		if err := validPath(c); err != nil {
			return bad("clustering column %d: %v", i, err)
		}
		k := strings.Join(c, ".")
		if seen[k] {
			return bad("clustering column %q is listed twice", k)
		}
		seen[k] = true
	}
	if p.LightweightColumn != nil {
		if err := validPath(p.LightweightColumn); err != nil {
			return bad("lightweight column: %v", err)
		}
	}
	return nil
}

func validPath(path []string) error {
	if len(path) == 0 {
		return errors.New("empty column path")
	}
	for _, e := range path {
		if e == "" {
			return fmt.Errorf("empty element in column path %q", strings.Join(path, "."))
		}
	}
	return nil
}

// settings are a Policy with every default resolved against one snapshot.
type settings struct {
	Policy
	target, minSize, maxUnclustered, minCube int64
	maxDeletedRatio, maxRelRange             float64
	cubeMinCubes                             int
}

// TargetFileSize is the output size of a table's rewrites: size when set
// (a policy's or a flag's), else the table's delta.targetFileSize (an error
// names it when it is malformed), else DefaultTargetFileSize.
func TargetFileSize(size int64, props *deltaprops.Properties) (int64, error) {
	if size > 0 {
		return size, nil
	}
	if err := props.Check(deltaprops.PropTargetFileSize); err != nil {
		return 0, err
	}
	return cmp.Or(props.TargetFileSize, DefaultTargetFileSize), nil
}

func resolve(p Policy, props *deltaprops.Properties) (settings, error) {
	s := settings{Policy: p}
	if s.Strategy == "" {
		s.Strategy = StrategyAuto
	}
	if s.JobOrder == "" {
		s.JobOrder = JobOrderFilesDesc
	}
	var err error
	if s.target, err = TargetFileSize(p.TargetFileSize, props); err != nil {
		return s, err
	}
	s.minSize = orDefault(p.MinFileSize, DefaultMinFileSize)
	s.maxUnclustered = orDefault(p.MaxUnclusteredBytes, DefaultMaxUnclusteredBytes)
	s.minCube = orDefault(p.MinCubeSize, DefaultMinCubeSize)
	s.maxDeletedRatio = p.MaxDeletedRowsRatio
	if s.maxDeletedRatio == 0 {
		s.maxDeletedRatio = DefaultMaxDeletedRowsRatio
	}
	s.cubeMinCubes = p.CubeMergeMinCubes
	if s.cubeMinCubes == 0 {
		s.cubeMinCubes = DefaultCubeMergeMinCubes
	}
	s.maxRelRange = p.MaxRelativeFileRange
	if s.maxRelRange == 0 {
		s.maxRelRange = DefaultMaxRelativeFileRange
	}
	return s, nil
}

// smallFile is the one rule of what a small file is (IsSmallFile), under
// the resolved sizes.
func (s settings) smallFile(size int64) bool {
	return IsSmallFile(size, s.target, s.minSize)
}

func orDefault(v, d int64) int64 {
	if v == 0 {
		return d
	}
	return v
}
