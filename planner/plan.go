package planner

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	deltastats "github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/internal/units"
)

// Curves named in a SortSpec (the values writer.SortSpec.Curve takes).
const (
	CurveHilbert = "hilbert"
	CurveZOrder  = "zorder"
)

// Tag keys and the clustering provider liquid clustering writes on its
// outputs (rules digest sec. 4).
const (
	TagZCubeID               = "ZCUBE_ID"
	TagZCubeZOrderBy         = "ZCUBE_ZORDER_BY"
	ClusteringProviderLiquid = "liquid"
)

// SortSpec asks the writer to order rows along a space-filling curve.
type SortSpec struct {
	// Columns are physical-name paths of the clustering columns.
	Columns [][]string `json:"columns"`
	// Curve is CurveHilbert (two or more columns) or CurveZOrder (one).
	Curve string `json:"curve"`
	// Buckets are the range buckets per column (in Columns order), at most
	// MaxRangeBuckets: fewer on a column of which the job covers only a
	// slice of the partition's range (see zcube.go, columnSpans.buckets).
	Buckets []int `json:"buckets,omitempty"`
}

// MaxRangeBuckets is the number of range buckets per clustering column for
// a job spanning a column's whole range (Delta's
// spark.databricks.io.skipping.mdc.rangeId.max).
const MaxRangeBuckets = 1000

// Job is one rewrite: source files of one partition into one or more outputs.
type Job struct {
	// ID is derived from the job's sources, so the same plan gets the same ids.
	ID string `json:"id"`
	// Strategy is binpack, lightweight or zcube.
	Strategy Strategy `json:"strategy"`
	// Reason says why these files were chosen.
	Reason string `json:"reason"`
	// PartitionValues of every source.
	PartitionValues map[string]*string `json:"partitionValues"`
	// Sources are the live add actions, in the order the writer should
	// read them (for lightweight: the column's (min, max) order).
	Sources []*actions.Add `json:"-"`
	// SourcePaths are Sources' log paths (as written in the log).
	SourcePaths []string `json:"sources"`
	// SourceBytes is the summed size of the sources.
	SourceBytes int64 `json:"sourceBytes"`
	// EstimatedBytes estimates the output bytes: each source's size scaled
	// by its live/physical rows.
	EstimatedBytes int64 `json:"estimatedBytes"`
	// LiveRows is the summed live rows (-1 when a source lacks numRecords).
	LiveRows int64 `json:"liveRows"`
	// TargetFileSize is the output file size to aim for.
	TargetFileSize int64 `json:"targetFileSize"`
	// OldestModificationTime is the smallest source modificationTime (ms).
	OldestModificationTime int64 `json:"oldestModificationTime"`
	// Sort is set for zcube jobs only.
	Sort *SortSpec `json:"sort,omitempty"`
	// ClusteringProvider is set on every output when non-empty.
	ClusteringProvider string `json:"clusteringProvider,omitempty"`
	// Tags are added to every output's add action.
	Tags map[string]string `json:"tags,omitempty"`
}

// Considered summarizes the files the plan looked at.
type Considered struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// UnclusteredFiles/Bytes count files without clustering provider or
	// Z-cube tags (clustered tables only).
	UnclusteredFiles int   `json:"unclusteredFiles,omitempty"`
	UnclusteredBytes int64 `json:"unclusteredBytes,omitempty"`
	// ZCubes counts the distinct Z-cubes of the current clustering columns.
	ZCubes int `json:"zcubes,omitempty"`
	// CandidateFiles/Bytes are the files eligible before bins and caps.
	CandidateFiles int   `json:"candidateFiles"`
	CandidateBytes int64 `json:"candidateBytes"`
}

// Skip groups the files left alone for one reason: why a plan (or a part
// of it) does nothing, as data.
type Skip struct {
	// Code names the reason; Reason says it in words.
	Code   SkipCode `json:"code"`
	Reason string   `json:"reason"`
	Files  int      `json:"files"`
	Bytes  int64    `json:"bytes"`
	// Detail gives the policy values behind the reason (the settle window
	// and when the first file leaves it, the cap, the size threshold).
	Detail string `json:"detail,omitempty"`
	// EligibleAt, for SkipSettling, is when the first of the files leaves
	// the settle window.
	EligibleAt *time.Time `json:"eligibleAt,omitempty"`
	// Paths lists up to MaxSkipPaths of the files, sorted.
	Paths []string `json:"paths,omitempty"`
	// MorePaths counts the paths left out of Paths.
	MorePaths int `json:"morePaths,omitempty"`
}

// MaxSkipPaths bounds Skip.Paths so plans of huge tables stay small.
const MaxSkipPaths = 50

// SkipCode is the typed reason of a Skip.
type SkipCode string

// Skip codes.
const (
	SkipLargeEnough       SkipCode = "large_enough"
	SkipSettling          SkipCode = "settling"
	SkipSingleFileBin     SkipCode = "single_file_bin"
	SkipClustered         SkipCode = "clustered"
	SkipLargeZCube        SkipCode = "large_zcube"
	SkipSingleZCube       SkipCode = "single_zcube"
	SkipCubeTier          SkipCode = "cube_tier"
	SkipOtherProvider     SkipCode = "other_provider"
	SkipOtherColumns      SkipCode = "other_columns"
	SkipByteCap           SkipCode = "byte_cap"
	SkipJobCap            SkipCode = "job_cap"
	SkipLightweightNoMore SkipCode = "lightweight_not_needed"
	SkipHalfTarget        SkipCode = "half_target"
	SkipQuarantined       SkipCode = "quarantined"
)

var skipText = map[SkipCode]string{
	SkipLargeEnough:       "not small and few deleted rows",
	SkipSettling:          "younger than the settle window",
	SkipSingleFileBin:     "alone in its bin (nothing to merge)",
	SkipClustered:         "clustered (in a z-cube); left to zcube",
	SkipLargeZCube:        "in a z-cube at least min cube size",
	SkipSingleZCube:       "the only partial z-cube and no unclustered data",
	SkipCubeTier:          "partial z-cube left as it is: the partition's partial cubes are few enough",
	SkipOtherProvider:     "clustered by another clustering provider",
	SkipOtherColumns:      "z-cube of other clustering columns (FULL re-clusters it)",
	SkipByteCap:           "job over the per-run byte cap",
	SkipJobCap:            "job over the per-run job cap",
	SkipLightweightNoMore: "unclustered but neither small nor with many deleted rows",
	SkipHalfTarget:        "at least half the target size: left for clustering (auto's lightweight tier)",
	SkipQuarantined:       "quarantined (found corrupt by an earlier run)",
}

// Text says the reason in words.
func (c SkipCode) Text() string {
	if t, ok := skipText[c]; ok {
		return t
	}
	return string(c)
}

// String is one line for logs and the command line: "22 files younger
// than the settle window (settle window 15m; ...)".
func (s Skip) String() string {
	noun := "files"
	if s.Files == 1 {
		noun = "file"
	}
	out := fmt.Sprintf("%d %s %s", s.Files, noun, s.Reason)
	if s.Detail != "" {
		out += " (" + s.Detail + ")"
	}
	return out
}

// ColumnRange is one clustering column's measured overlap for the
// lightweight tier.
type ColumnRange struct {
	Column string `json:"column"`
	// AvgRelativeRange is the mean over candidate files of
	// (rank(max) - rank(min)) / (distinct values - 1); files without
	// usable stats count 1.
	AvgRelativeRange float64 `json:"avgRelativeRange"`
	// FilesWithoutStats counts candidates lacking min/max for the column.
	FilesWithoutStats int `json:"filesWithoutStats"`
}

// Lightweight records how the lightweight tier grouped files.
type Lightweight struct {
	// Column is the logical name files were ordered by; "" when grouped by size.
	Column string `json:"column"`
	// Chosen is "policy", "auto" or "size".
	Chosen string `json:"chosen"`
	// Ranges are the measurements per clustering column (auto-pick only).
	Ranges []ColumnRange `json:"ranges,omitempty"`
}

// CompactionPlan is what one compaction run would do (the type Plan
// returns; `compactord plan --out` writes it as JSON).
type CompactionPlan struct {
	// ReadVersion is the snapshot version planned against.
	ReadVersion int64 `json:"readVersion"`
	// Strategy is the strategy used (never auto).
	Strategy Strategy `json:"strategy"`
	// Requested is the policy's strategy.
	Requested Strategy `json:"requested"`
	// Reason says why Strategy was used.
	Reason string `json:"reason"`
	// Full is true for an OPTIMIZE FULL style re-clustering.
	Full bool `json:"full"`
	// ClusteringColumns are the logical names of the clustering columns
	// (empty for unclustered tables).
	ClusteringColumns []string `json:"clusteringColumns"`
	// ClusteringSource is "table", "policy" or "".
	ClusteringSource string `json:"clusteringSource,omitempty"`
	// OperationParameters are the commitInfo operationParameters of the
	// OPTIMIZE commit, in Spark's shapes (JSON lists as strings).
	OperationParameters map[string]any `json:"operationParameters"`
	// TargetFileSize, MinFileSize are the resolved sizes used.
	TargetFileSize int64 `json:"targetFileSize"`
	MinFileSize    int64 `json:"minFileSize"`
	// Lightweight is set for lightweight plans.
	Lightweight *Lightweight `json:"lightweight,omitempty"`
	Considered  Considered   `json:"considered"`
	Jobs        []*Job       `json:"jobs"`
	Skipped     []Skip       `json:"skipped"`
}

// ErrNoClusteringColumns is returned when lightweight or zcube is asked for
// on a table without clustering columns and the policy names none.
var ErrNoClusteringColumns = errors.New("no clustering columns (table is not clustered and the policy names none)")

// Plan plans one compaction run of snap under p. It is a pure function: the
// same snapshot and policy give the same plan, byte for byte once marshaled.
func Plan(snap *delta.Snapshot, p Policy) (*CompactionPlan, error) {
	st, err := plan(snap, p)
	if err != nil {
		return nil, err
	}
	st.admit()
	st.plan.OperationParameters = st.operationParameters()
	st.plan.Skipped = st.skipList(st.skips)
	return st.plan, nil
}

// plan runs the planner up to the jobs, before the per-run caps admit
// them: what Plan and BacklogOf share.
func plan(snap *delta.Snapshot, p Policy) (*state, error) {
	if snap == nil {
		return nil, errors.New("plan: nil snapshot")
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("plan table version %d: %w", snap.Version, err)
	}
	s, err := resolve(p, snap.Properties())
	if err != nil {
		return nil, fmt.Errorf("plan table version %d: %w", snap.Version, err)
	}
	cols, colSource, err := clusteringColumns(snap, p)
	if err != nil {
		return nil, fmt.Errorf("plan table version %d: %w", snap.Version, err)
	}
	pl := &CompactionPlan{
		ReadVersion:       snap.Version,
		Requested:         s.Strategy,
		Full:              s.Full,
		ClusteringColumns: []string{},
		ClusteringSource:  colSource,
		TargetFileSize:    s.target,
		MinFileSize:       s.minSize,
		Jobs:              []*Job{},
		Skipped:           []Skip{},
	}
	for _, c := range cols {
		pl.ClusteringColumns = append(pl.ClusteringColumns, c.name())
	}
	partKeys, err := actions.PartitionValueKeys(&snap.Metadata, snap.Schema)
	if err != nil {
		return nil, fmt.Errorf("plan table version %d: %w", snap.Version, err)
	}
	st := &state{s: s, snap: snap, partKeys: partKeys, cols: cols, plan: pl, skips: map[SkipCode]*skipAcc{}}
	st.classify()

	strategy, reason, err := st.choose()
	if err != nil {
		return nil, fmt.Errorf("plan table version %d: %w", snap.Version, err)
	}
	pl.Strategy, pl.Reason = strategy, reason
	switch strategy {
	case StrategyBinpack:
		st.binpack()
	case StrategyLightweight:
		if err := st.lightweight(); err != nil {
			return nil, fmt.Errorf("plan table version %d: %w", snap.Version, err)
		}
	case StrategyZCube:
		st.zcube()
	}
	return st, nil
}

// fileInfo is what the planner derives from one add action.
type fileInfo struct {
	add       *actions.Add
	partKey   string
	records   int64 // -1 when unknown
	deleted   int64
	logical   int64 // size scaled by live/physical rows
	settling  bool
	purge     bool // deleted/physical rows above the ratio (or DV without numRecords)
	small     bool
	zcubeID   string // "" when not in a z-cube
	zorderBy  []string
	provider  string
	clustered bool
	skip      SkipCode // why the plan left the file alone ("" when it did not)

	// stats are the file's statistics parsed on first use (fullStats):
	// only clustering reads min/max, and snapshots keep stats unparsed.
	stats     *deltastats.Stats
	statsRead bool
}

// fullStats returns the file's parsed statistics, parsing them once per
// plan; nil when it has none (or stats that do not parse: no bounds).
func (f *fileInfo) fullStats() *deltastats.Stats {
	if !f.statsRead {
		f.stats, _ = f.add.FullStats()
		f.statsRead = true
	}
	return f.stats
}

type skipAcc struct {
	files int
	bytes int64
	paths []string
	// oldest is the smallest modificationTime (ms) of the files.
	oldest int64
}

// state carries one planning run.
type state struct {
	s    settings
	snap *delta.Snapshot
	// partKeys are the keys of the partition columns in add.partitionValues
	// (physical names under column mapping).
	partKeys []string
	cols     []column
	plan     *CompactionPlan
	files    []*fileInfo
	excluded []*fileInfo // Policy.Exclude's files, in no job
	skips    map[SkipCode]*skipAcc
	jobs     []*Job
}

func (st *state) skip(code SkipCode, f *fileInfo) {
	f.skip = code
	st.skips[code] = st.skips[code].add(f)
}

func (a *skipAcc) add(f *fileInfo) *skipAcc {
	if a == nil {
		a = &skipAcc{oldest: f.add.ModificationTime}
	}
	a.files++
	a.bytes += f.add.Size
	a.paths = append(a.paths, f.add.Path)
	a.oldest = min(a.oldest, f.add.ModificationTime)
	return a
}

// skipList renders skip groups sorted by code, with the policy values
// behind each reason.
func (st *state) skipList(skips map[SkipCode]*skipAcc) []Skip {
	codes := make([]SkipCode, 0, len(skips))
	for c := range skips {
		codes = append(codes, c)
	}
	sort.Slice(codes, func(i, j int) bool { return codes[i] < codes[j] })
	out := make([]Skip, 0, len(codes))
	for _, c := range codes {
		a := skips[c]
		sort.Strings(a.paths)
		sk := Skip{Code: c, Reason: c.Text(), Files: a.files, Bytes: a.bytes, Paths: a.paths}
		sk.Detail, sk.EligibleAt = st.detail(c, a)
		if len(sk.Paths) > MaxSkipPaths {
			sk.MorePaths = len(sk.Paths) - MaxSkipPaths
			sk.Paths = sk.Paths[:MaxSkipPaths]
		}
		out = append(out, sk)
	}
	return out
}

// detail names the policy values behind a skip reason and, for the settle
// window, when the first of its files becomes eligible.
func (st *state) detail(c SkipCode, a *skipAcc) (string, *time.Time) {
	s := st.s
	switch c {
	case SkipSettling:
		at := time.UnixMilli(a.oldest).Add(s.SettleWindow).UTC()
		return fmt.Sprintf("settle window %s; the first becomes eligible at %s", units.FormatDuration(s.SettleWindow), units.FormatTime(at)), &at
	case SkipLargeEnough, SkipLightweightNoMore:
		return fmt.Sprintf("small means below %s = min(min file size %s, target file size %s); deleted rows at most %g of a file",
			units.FormatBytes(min(s.minSize, s.target)), units.FormatBytes(s.minSize), units.FormatBytes(s.target), s.maxDeletedRatio), nil
	case SkipSingleFileBin:
		return fmt.Sprintf("no other candidate of its partition fits beside it within the target file size %s", units.FormatBytes(s.target)), nil
	case SkipByteCap:
		return "max bytes per run " + units.FormatBytes(s.MaxBytesPerRun), nil
	case SkipJobCap:
		return fmt.Sprintf("max jobs per run %d", s.MaxJobsPerRun), nil
	case SkipHalfTarget:
		return "target file size " + units.FormatBytes(s.target), nil
	case SkipLargeZCube:
		return "min cube size " + units.FormatBytes(s.minCube), nil
	case SkipCubeTier:
		return fmt.Sprintf("partial cubes merge, cube merge min cubes (%d) at a time, while more than 2 x sqrt(the partition's files)", s.cubeMinCubes), nil
	case SkipQuarantined:
		return "left alone until the table's policy changes or the daemon restarts", nil
	}
	return "", nil
}

// partitionKey renders partition values in the table's partition column
// order, distinguishing null from the empty string.
func partitionKey(cols []string, pv map[string]*string) string {
	var b strings.Builder
	for _, c := range cols {
		b.WriteString(c)
		if v := pv[c]; v == nil {
			b.WriteString("\x01null")
		} else {
			b.WriteString("=")
			b.WriteString(*v)
		}
		b.WriteByte(0)
	}
	return b.String()
}

func (st *state) classify() {
	files := make([]*actions.Add, 0, len(st.snap.Files))
	for _, a := range st.snap.Files {
		if a != nil {
			files = append(files, a)
		}
	}
	// A loaded snapshot's files are sorted by path already: only a
	// snapshot built otherwise is sorted here.
	byPath := func(a, b *actions.Add) int { return strings.Compare(a.Path, b.Path) }
	if !slices.IsSortedFunc(files, byPath) {
		slices.SortStableFunc(files, byPath)
	}
	cutoff := int64(0)
	if st.s.SettleWindow > 0 {
		cutoff = st.s.Now.Add(-st.s.SettleWindow).UnixMilli()
	}
	names := make([]string, len(st.cols))
	for i, c := range st.cols {
		names[i] = c.name()
	}
	for _, a := range files {
		if st.s.Exclude[a.Path] {
			f := &fileInfo{add: a, small: st.s.smallFile(a.Size)}
			st.skip(SkipQuarantined, f)
			st.excluded = append(st.excluded, f)
			continue
		}
		f := &fileInfo{add: a, partKey: partitionKey(st.partKeys, a.PartitionValues), records: -1}
		f.deleted = a.NumDeleted()
		if n, ok, err := a.NumRecords(); err == nil && ok {
			f.records = n
		}
		f.logical = a.Size
		if f.records > 0 && f.deleted > 0 {
			live := f.records - f.deleted
			if live < 0 {
				live = 0
			}
			f.logical = int64(float64(a.Size) * float64(live) / float64(f.records))
		}
		f.settling = st.s.SettleWindow > 0 && a.ModificationTime > cutoff
		switch {
		case f.deleted > 0 && f.records <= 0:
			f.purge = true
		case f.deleted > 0:
			f.purge = float64(f.deleted)/float64(f.records) > st.s.maxDeletedRatio
		}
		f.small = st.s.smallFile(a.Size)
		if a.ClusteringProvider != nil {
			f.provider = *a.ClusteringProvider
		}
		if id, ok := a.Tags[TagZCubeID]; ok {
			f.zcubeID = id
			var by []string
			if raw, ok := a.Tags[TagZCubeZOrderBy]; ok && json.Unmarshal([]byte(raw), &by) == nil {
				f.zorderBy = by
			}
		}
		f.clustered = f.zcubeID != "" || f.provider != ""
		st.plan.Considered.Files++
		st.plan.Considered.Bytes += a.Size
		if len(st.cols) > 0 && !f.clustered {
			st.plan.Considered.UnclusteredFiles++
			st.plan.Considered.UnclusteredBytes += a.Size
		}
		st.files = append(st.files, f)
	}
	cubes := map[string]bool{}
	for _, f := range st.files {
		if f.zcubeID != "" && sameNames(f.zorderBy, names) {
			cubes[f.zcubeID] = true
		}
	}
	st.plan.Considered.ZCubes = len(cubes)
}

func sameNames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// choose resolves auto and checks an explicit strategy can run.
func (st *state) choose() (Strategy, string, error) {
	s := st.s
	clustered := len(st.cols) > 0
	switch s.Strategy {
	case StrategyBinpack:
		return StrategyBinpack, "requested by policy", nil
	case StrategyLightweight:
		if !clustered {
			return "", "", fmt.Errorf("lightweight: %w", ErrNoClusteringColumns)
		}
		return StrategyLightweight, "requested by policy", nil
	case StrategyZCube:
		if !clustered {
			return "", "", fmt.Errorf("zcube: %w", ErrNoClusteringColumns)
		}
		if s.Full {
			return StrategyZCube, "requested by policy (full)", nil
		}
		return StrategyZCube, "requested by policy", nil
	}
	if !clustered {
		if s.Full {
			return "", "", fmt.Errorf("full clustering: %w", ErrNoClusteringColumns)
		}
		return StrategyBinpack, "auto: table has no clustering columns", nil
	}
	ub := st.plan.Considered.UnclusteredBytes
	switch {
	case s.Full:
		return StrategyZCube, "auto: full re-clustering requested", nil
	case ub == 0:
		return StrategyZCube, "auto: clustered table without unclustered data; merge partial z-cubes", nil
	case ub >= s.maxUnclustered:
		return StrategyZCube, fmt.Sprintf("auto: %d unclustered bytes reach the threshold of %d", ub, s.maxUnclustered), nil
	}
	return StrategyLightweight, fmt.Sprintf("auto: %d unclustered bytes below the threshold of %d", ub, s.maxUnclustered), nil
}

func (st *state) operationParameters() map[string]any {
	clusterBy := []string{}
	if st.plan.Strategy == StrategyZCube {
		clusterBy = st.plan.ClusteringColumns
	}
	cb, _ := json.Marshal(clusterBy) // a []string always marshals
	op := map[string]any{
		"predicate": "[]",
		"zOrderBy":  "[]",
		"auto":      false,
		"clusterBy": string(cb),
	}
	if len(st.cols) > 0 {
		op["isFull"] = st.plan.Full && st.plan.Strategy == StrategyZCube
	}
	return op
}

// newJob builds a job from sources of one partition (in write order).
func (st *state) newJob(strategy Strategy, reason string, fs []*fileInfo) *Job {
	j := &Job{
		Strategy:        strategy,
		Reason:          reason,
		PartitionValues: fs[0].add.PartitionValues,
		TargetFileSize:  st.s.target,
		LiveRows:        0,
	}
	if j.PartitionValues == nil {
		j.PartitionValues = map[string]*string{}
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00", strategy, st.snap.Version)
	for i, f := range fs {
		j.Sources = append(j.Sources, f.add)
		j.SourcePaths = append(j.SourcePaths, f.add.Path)
		j.SourceBytes += f.add.Size
		j.EstimatedBytes += f.logical
		if j.LiveRows >= 0 {
			if f.records < 0 {
				j.LiveRows = -1
			} else {
				j.LiveRows += max(0, f.records-f.deleted)
			}
		}
		if i == 0 || f.add.ModificationTime < j.OldestModificationTime {
			j.OldestModificationTime = f.add.ModificationTime
		}
		h.Write([]byte(f.add.FileKey()))
		h.Write([]byte{0})
	}
	sum := h.Sum(nil)
	j.ID = string(strategy) + "-" + hex.EncodeToString(sum[:6])
	return j
}

// uuidFrom formats 16 bytes of a digest as an RFC 9562 version 8 UUID.
func uuidFrom(sum []byte) string {
	var u [16]byte
	copy(u[:], sum)
	u[6] = u[6]&0x0f | 0x80
	u[8] = u[8]&0x3f | 0x80
	x := hex.EncodeToString(u[:])
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// packBins greedily cuts files (in the given order) into contiguous bins of
// at most maxBin bytes; a file larger than maxBin gets a bin of its own.
func packBins(fs []*fileInfo, maxBin int64) [][]*fileInfo {
	var bins [][]*fileInfo
	var cur []*fileInfo
	var size int64
	for _, f := range fs {
		if len(cur) > 0 && size+f.add.Size > maxBin {
			bins = append(bins, cur)
			cur, size = nil, 0
		}
		cur = append(cur, f)
		size += f.add.Size
	}
	if len(cur) > 0 {
		bins = append(bins, cur)
	}
	return bins
}

// byPartition groups files by partition, partitions in key order.
func byPartition(fs []*fileInfo) [][]*fileInfo {
	m := map[string][]*fileInfo{}
	var keys []string
	for _, f := range fs {
		if _, ok := m[f.partKey]; !ok {
			keys = append(keys, f.partKey)
		}
		m[f.partKey] = append(m[f.partKey], f)
	}
	sort.Strings(keys)
	out := make([][]*fileInfo, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

// compactionBins turns ordered candidates into jobs: bins up to the target
// size; a bin of one file is kept only as a DV purge.
func (st *state) compactionBins(strategy Strategy, fs []*fileInfo) {
	for _, bin := range packBins(fs, st.s.target) {
		if len(bin) == 1 {
			if bin[0].purge {
				st.jobs = append(st.jobs, st.newJob(strategy, "purge deleted rows", bin))
			} else {
				st.skip(SkipSingleFileBin, bin[0])
			}
			continue
		}
		purges := 0
		for _, f := range bin {
			if f.purge {
				purges++
			}
		}
		reason := fmt.Sprintf("merge %d small files", len(bin))
		if purges > 0 {
			reason = fmt.Sprintf("merge %d files (%d with many deleted rows)", len(bin), purges)
		}
		st.jobs = append(st.jobs, st.newJob(strategy, reason, bin))
	}
}

// compactionCandidate applies the size / deleted-rows / settle filters and
// records why a file is left alone.
func (st *state) compactionCandidate(f *fileInfo, notCandidate SkipCode) bool {
	if !f.small && !f.purge {
		st.skip(notCandidate, f)
		return false
	}
	if f.settling {
		st.skip(SkipSettling, f)
		return false
	}
	st.plan.Considered.CandidateFiles++
	st.plan.Considered.CandidateBytes += f.add.Size
	return true
}

func (st *state) binpack() {
	for _, part := range byPartition(st.files) {
		var cands []*fileInfo
		for _, f := range part {
			if st.compactionCandidate(f, SkipLargeEnough) {
				cands = append(cands, f)
			}
		}
		sort.SliceStable(cands, func(i, j int) bool {
			if cands[i].add.Size != cands[j].add.Size {
				return cands[i].add.Size < cands[j].add.Size
			}
			return cands[i].add.Path < cands[j].add.Path
		})
		st.compactionBins(StrategyBinpack, cands)
	}
}

// admit orders jobs by the policy's job order and applies the per-run caps.
func (st *state) admit() {
	jobs := st.jobs
	less := func(a, b *Job) int {
		switch st.s.JobOrder {
		case JobOrderBytesAsc:
			return cmp.Compare(a.SourceBytes, b.SourceBytes)
		case JobOrderBytesDesc:
			return cmp.Compare(b.SourceBytes, a.SourceBytes)
		case JobOrderFilesAsc:
			return cmp.Compare(int64(len(a.Sources)), int64(len(b.Sources)))
		case JobOrderFilesDesc:
			return cmp.Compare(int64(len(b.Sources)), int64(len(a.Sources)))
		case JobOrderOldestFirst:
			return cmp.Compare(a.OldestModificationTime, b.OldestModificationTime)
		}
		return 0
	}
	sort.SliceStable(jobs, func(i, j int) bool {
		if c := less(jobs[i], jobs[j]); c != 0 {
			return c < 0
		}
		ki := partitionKey(st.partKeys, jobs[i].PartitionValues)
		kj := partitionKey(st.partKeys, jobs[j].PartitionValues)
		if ki != kj {
			return ki < kj
		}
		return jobs[i].SourcePaths[0] < jobs[j].SourcePaths[0]
	})
	var bytes int64
	byPath := map[string]*fileInfo{}
	for _, f := range st.files {
		byPath[f.add.Path] = f
	}
	for _, j := range jobs {
		var reason SkipCode
		switch {
		case st.s.MaxJobsPerRun > 0 && len(st.plan.Jobs) >= st.s.MaxJobsPerRun:
			reason = SkipJobCap
		case st.s.MaxBytesPerRun > 0 && bytes+j.SourceBytes > st.s.MaxBytesPerRun:
			reason = SkipByteCap
		}
		if reason != "" {
			for _, p := range j.SourcePaths {
				st.skip(reason, byPath[p])
			}
			continue
		}
		bytes += j.SourceBytes
		st.plan.Jobs = append(st.plan.Jobs, j)
	}
}
