package fanout

import (
	"github.com/compactord/compactord/internal/redact"
	"github.com/compactord/compactord/objstore"

	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/writer"
)

// PlansDir is the directory, under the table root, that holds stored plans:
// one <id>/ directory per fanned-out run.
const PlansDir = "_compactord/plans/"

// planFormat is the version of the stored plan's JSON.
const planFormat = 1

// StoredPlan is what a coordinator writes to <table>/_compactord/plans/<id>/plan.json:
// the compaction plan plus everything a worker needs to rewrite one unit
// the way a local run would.
type StoredPlan struct {
	// Format is the stored plan's format version (1).
	Format int `json:"format"`
	// ID is the plan's id (<id> of its directory).
	ID string `json:"id"`
	// Table is the table URL the plan was made for, as shown: StorePlan
	// redacts its credentials, since the plan is an object in the table's
	// store (a worker opens the table from its plan URL, not from this).
	Table string `json:"table"`
	// ReadVersion is the snapshot version the plan was made against (the
	// workers load it; the same as Plan.ReadVersion).
	ReadVersion int64 `json:"readVersion"`
	// Created is when the coordinator stored the plan.
	Created time.Time `json:"created"`
	// Coordinator names the process that stored it (host and pid), for logs.
	Coordinator string `json:"coordinator"`
	// EngineInfo is the coordinator's engine (e.g. "compactord/0.1.0").
	EngineInfo string `json:"engineInfo"`
	// Writer are the writer settings of the table's policy.
	Writer WriterSettings `json:"writer"`
	// Units lists, for each unit index, the indexes of the plan's jobs it
	// rewrites.
	Units [][]int `json:"units"`
	// Plan is the compaction plan (as `compactord plan` writes it).
	Plan *planner.CompactionPlan `json:"plan"`
}

// WriterSettings are the serializable writer options (writer.Options less
// its logger, callbacks and local paths, which are the worker's own).
type WriterSettings struct {
	TargetFileSize    int64  `json:"targetFileSize,omitempty"`
	RowGroupBytes     int64  `json:"rowGroupBytes,omitempty"`
	RowGroupRows      int64  `json:"rowGroupRows,omitempty"`
	PageBufferSize    int    `json:"pageBufferSize,omitempty"`
	Compression       string `json:"compression,omitempty"`
	ZstdLevel         int    `json:"zstdLevel,omitempty"`
	ReadBufferSize    int    `json:"readBufferSize,omitempty"`
	BatchRows         int    `json:"batchRows,omitempty"`
	MaxConcurrentJobs int    `json:"maxConcurrentJobs,omitempty"`
	DisableCopyPath   bool   `json:"disableCopyPath,omitempty"`
	InMemoryPages     bool   `json:"inMemoryPages,omitempty"`
	SortMemoryBytes   int    `json:"sortMemoryBytes,omitempty"`
	OriginMemoryBytes int    `json:"originMemoryBytes,omitempty"`
	SortBuckets       int    `json:"sortBuckets,omitempty"`
	SortSampleSize    int    `json:"sortSampleSize,omitempty"`
	SortSeed          uint64 `json:"sortSeed,omitempty"`
}

// SettingsOf returns the serializable part of o.
func SettingsOf(o writer.Options) WriterSettings {
	return WriterSettings{
		TargetFileSize: o.TargetFileSize, RowGroupBytes: o.RowGroupBytes, RowGroupRows: o.RowGroupRows,
		PageBufferSize: o.PageBufferSize, Compression: o.Compression, ZstdLevel: o.ZstdLevel,
		ReadBufferSize: o.ReadBufferSize, BatchRows: o.BatchRows, MaxConcurrentJobs: o.MaxConcurrentJobs,
		DisableCopyPath: o.DisableCopyPath, InMemoryPages: o.InMemoryPages,
		SortMemoryBytes: o.Sort.MemoryBytes, OriginMemoryBytes: o.Sort.OriginMemoryBytes,
		SortBuckets: o.Sort.Buckets, SortSampleSize: o.Sort.SampleSize, SortSeed: o.Sort.Seed,
	}
}

// Options returns writer options with these settings (the rest zero: the
// worker sets its logger and spill directory).
func (s WriterSettings) Options() writer.Options {
	return writer.Options{
		TargetFileSize: s.TargetFileSize, RowGroupBytes: s.RowGroupBytes, RowGroupRows: s.RowGroupRows,
		PageBufferSize: s.PageBufferSize, Compression: s.Compression, ZstdLevel: s.ZstdLevel,
		ReadBufferSize: s.ReadBufferSize, BatchRows: s.BatchRows, MaxConcurrentJobs: s.MaxConcurrentJobs,
		DisableCopyPath: s.DisableCopyPath, InMemoryPages: s.InMemoryPages,
		Sort: writer.SortOptions{MemoryBytes: s.SortMemoryBytes, OriginMemoryBytes: s.OriginMemoryBytes,
			Buckets: s.SortBuckets, SampleSize: s.SortSampleSize, Seed: s.SortSeed},
	}
}

// NewPlanID returns a fresh plan id: the UTC time (so ids sort by age and a
// sweep can tell an old plan from its name) and 8 random hex digits.
func NewPlanID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:])
}

// planIDTime reads the time back from a plan id (ok false for a name that
// is not one).
func planIDTime(id string) (time.Time, bool) {
	stamp, _, ok := strings.Cut(id, "-")
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse("20060102T150405.000Z", stamp)
	return t, err == nil
}

// PlanDir is the directory key (with a trailing slash) of plan id.
func PlanDir(id string) string { return PlansDir + id + "/" }

// planKey is the key of plan id's plan.json.
func planKey(id string) string { return PlanDir(id) + "plan.json" }

// unitDir is the directory key of a unit's attempts' files.
func unitDir(id string, index int) string {
	return PlanDir(id) + "units/" + strconv.Itoa(index) + "/"
}

// PlanURL is the URL a worker is given for plan id of the table at
// tableURL: the table URL with the plan's key appended to its path (query
// parameters, such as an S3 endpoint, are kept).
func PlanURL(tableURL, id string) (string, error) {
	u, err := url.Parse(tableURL)
	if err != nil {
		return "", fmt.Errorf("plan URL of table %q: %w", tableURL, err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + planKey(id)
	u.RawPath = ""
	return u.String(), nil
}

// SplitPlanURL splits a plan URL (PlanURL) into the table URL and the plan's
// key under the table root.
func SplitPlanURL(planURL string) (tableURL, key string, err error) {
	u, err := url.Parse(planURL)
	if err != nil {
		return "", "", fmt.Errorf("plan URL %q: %w", planURL, err)
	}
	i := strings.LastIndex(u.Path, "/"+PlansDir)
	if i < 0 || !strings.HasSuffix(u.Path, "/plan.json") {
		return "", "", fmt.Errorf("plan URL %q is not <table>/%s<id>/plan.json", planURL, PlansDir)
	}
	key = u.Path[i+1:]
	u.Path = u.Path[:i]
	u.RawPath = ""
	return u.String(), key, nil
}

// SplitUnits groups n jobs into at most maxUnits units (0: one job per
// unit), balancing the summed source bytes: each job, largest first, goes
// to the unit with the fewest bytes so far. Each unit's job indexes are in
// plan order.
func SplitUnits(jobs []*planner.Job, maxUnits int) [][]int {
	n := len(jobs)
	if maxUnits <= 0 || maxUnits >= n {
		units := make([][]int, n)
		for i := range units {
			units[i] = []int{i}
		}
		return units
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	// Stable: equal sizes keep plan order.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(jobs[b].SourceBytes, jobs[a].SourceBytes) })
	units := make([][]int, maxUnits)
	load := make([]int64, maxUnits)
	for _, j := range order {
		best := 0
		for u := 1; u < maxUnits; u++ {
			if load[u] < load[best] {
				best = u
			}
		}
		units[best] = append(units[best], j)
		load[best] += jobs[j].SourceBytes
	}
	for _, u := range units {
		slices.Sort(u)
	}
	return units
}

// StorePlan writes sp as plan.json of its plan directory on t's bucket (one
// put; a fresh id, so it never overwrites) and returns the plan's URL.
func StorePlan(ctx context.Context, t *delta.Table, sp *StoredPlan) (string, error) {
	if sp.ID == "" || sp.Plan == nil {
		return "", errors.New("store plan: no id or no plan")
	}
	sp.Format = planFormat
	sp.Table = redact.URL(sp.Table)
	if sp.Coordinator == "" {
		host, _ := os.Hostname()
		sp.Coordinator = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	data, err := json.Marshal(sp)
	if err != nil {
		return "", fmt.Errorf("store plan %s of %s: %w", sp.ID, t.URL, err)
	}
	if err := t.Bucket.WriteAll(ctx, planKey(sp.ID), data, nil); err != nil {
		return "", fmt.Errorf("store plan %s of %s: %w", sp.ID, t.URL, err)
	}
	return PlanURL(t.URL, sp.ID)
}

// LoadPlan reads the stored plan at key of t. A missing plan (its run is
// over and cleaned) is a Halt: no attempt will find it.
func LoadPlan(ctx context.Context, t *delta.Table, key string) (*StoredPlan, error) {
	data, err := objstore.ReadAllLimit(ctx, t.Bucket, key, maxControlObject)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, failure.With(failure.Halt, fmt.Errorf("stored plan %s of %s: %w", key, t.URL, err))
	}
	if err != nil {
		return nil, fmt.Errorf("read stored plan %s of %s: %w", key, t.URL, err)
	}
	sp := &StoredPlan{}
	if err := json.Unmarshal(data, sp); err != nil {
		return nil, failure.With(failure.Halt, fmt.Errorf("stored plan %s of %s: %w", key, t.URL, err))
	}
	if sp.Format != planFormat || sp.Plan == nil || path.Base(path.Dir(key)) != sp.ID {
		return nil, failure.With(failure.Halt, fmt.Errorf("stored plan %s of %s: format %d, id %q: not a plan this build reads", key, t.URL, sp.Format, sp.ID))
	}
	if sp.Plan.ReadVersion != sp.ReadVersion {
		return nil, failure.With(failure.Halt, fmt.Errorf("stored plan %s of %s: read version %d, plan's %d", key, t.URL, sp.ReadVersion, sp.Plan.ReadVersion))
	}
	for u, jobs := range sp.Units {
		for _, j := range jobs {
			if j < 0 || j >= len(sp.Plan.Jobs) {
				return nil, failure.With(failure.Halt, fmt.Errorf("stored plan %s of %s: unit %d names job %d of %d", key, t.URL, u, j, len(sp.Plan.Jobs)))
			}
		}
	}
	return sp, nil
}
