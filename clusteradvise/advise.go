package clusteradvise

import (
	"errors"
	"hash/fnv"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/compactord/compactord/delta/predicate"
)

// MaxKeyColumns is the most columns a key may have (liquid clustering's
// limit).
const MaxKeyColumns = 4

// Options tune Advise and Decide. Zero fields take DefaultOptions' values.
type Options struct {
	// Horizon is the time over which a re-clustering's bytes are
	// amortised, and the least time a key is kept after a change.
	Horizon time.Duration
	// Margin is how much fewer bytes a new key must read than the current
	// key (same estimator, same evidence) to replace it: 0.2 = 20% fewer.
	Margin float64
	// Confirm is how long a replacement key must keep winning before it
	// replaces the current key.
	Confirm time.Duration
	// MinGain is how much fewer bytes than the current layout a key must
	// read to be adopted at all: 0.5 = half.
	MinGain float64
	// MinTableBytes is the size under which a table gets no key.
	MinTableBytes int64
	// MaxKeyColumns bounds a candidate key (at most MaxKeyColumns).
	MaxKeyColumns int
	// MaxCandidateColumns is how many of the evidence's columns (the most
	// weighted) candidate keys are drawn from.
	MaxCandidateColumns int
	// MaxPredicates is how many of the evidence's predicates (the most
	// weighted) are replayed.
	MaxPredicates int
}

// DefaultOptions are the defaults of Options.
func DefaultOptions() Options {
	return Options{
		Horizon:             30 * 24 * time.Hour,
		Margin:              0.2,
		Confirm:             7 * 24 * time.Hour,
		MinGain:             0.5,
		MinTableBytes:       1 << 30,
		MaxKeyColumns:       MaxKeyColumns,
		MaxCandidateColumns: 6,
		MaxPredicates:       512,
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Horizon <= 0 {
		o.Horizon = d.Horizon
	}
	if o.Margin <= 0 {
		o.Margin = d.Margin
	}
	if o.Confirm <= 0 {
		o.Confirm = d.Confirm
	}
	if o.MinGain <= 0 {
		o.MinGain = d.MinGain
	}
	if o.MinTableBytes < 0 {
		o.MinTableBytes = 0
	}
	if o.MaxKeyColumns <= 0 || o.MaxKeyColumns > MaxKeyColumns {
		o.MaxKeyColumns = MaxKeyColumns
	}
	if o.MaxCandidateColumns <= 0 {
		o.MaxCandidateColumns = d.MaxCandidateColumns
	}
	if o.MaxPredicates <= 0 {
		o.MaxPredicates = d.MaxPredicates
	}
	return o
}

// File is one live file of the current layout.
type File struct {
	Size  int64
	Stats predicate.FileStats
}

// Input is what Advise needs of a table.
type Input struct {
	// Columns maps each logical top-level column name a key may use to its
	// predicate column (physical path, kind).
	Columns map[string]predicate.Column
	// Files are the live files (the current layout).
	Files []File
	// TargetFileSize is the size compactord writes files at.
	TargetFileSize int64
	// Current are the table's clustering keys (logical names), nil when
	// none.
	Current []string
	// Sample is a bounded sample of the table's rows, over (at least) the
	// columns the evidence references.
	Sample *Sample
	// Evidence is the record, decayed to now.
	Evidence *Record
}

// Estimate is one key's replay of the evidence.
type Estimate struct {
	// Key is the key (logical names); empty for the current layout.
	Key []string `json:"key"`
	// FilesRead and BytesRead are per predicate, weighted by the evidence.
	FilesRead float64 `json:"files_read"`
	BytesRead float64 `json:"bytes_read"`
	// Gain is 1 - BytesRead / the current layout's BytesRead.
	Gain float64 `json:"gain"`
	// SavedPerDay is the bytes not read a day at the evidence's rate.
	SavedPerDay float64 `json:"saved_bytes_per_day"`
	// ReclusterBytes is what adopting the key rewrites (0 for the current
	// key).
	ReclusterBytes int64 `json:"recluster_bytes"`
	// Score is SavedPerDay - ReclusterBytes / horizon days.
	Score float64 `json:"score"`
}

// PredicateEstimate is one replayed predicate.
type PredicateEstimate struct {
	Predicate string   `json:"predicate"`
	Weight    float64  `json:"weight"`
	Columns   []string `json:"columns"`
	Exact     bool     `json:"exact"`
	// CurrentFiles is the files it reads now; BestFiles under the best key.
	CurrentFiles int     `json:"current_files"`
	BestFiles    float64 `json:"best_files"`
}

// Advice is Advise's result.
type Advice struct {
	Files      int   `json:"files"`
	TableBytes int64 `json:"table_bytes"`
	// LayoutFiles is the number of files a re-clustered table would have.
	LayoutFiles int `json:"layout_files"`
	SampleRows  int `json:"sample_rows"`
	// EvidenceWeight and EvidenceRate are the evidence's total decayed
	// weight and its predicates a day; Unparsed counts the predicates the
	// parser could not read (their weight is left out).
	EvidenceWeight float64 `json:"evidence_weight"`
	EvidenceRate   float64 `json:"evidence_per_day"`
	Replayed       int     `json:"replayed"`
	Unparsed       int     `json:"unparsed"`
	// Baseline is the current layout; CurrentKey the current key's layout
	// under the estimator (nil without a current key).
	Baseline   Estimate  `json:"baseline"`
	CurrentKey *Estimate `json:"current_key,omitempty"`
	// Ranking is every candidate, best first.
	Ranking    []Estimate          `json:"ranking"`
	Predicates []PredicateEstimate `json:"predicates"`
}

// ErrNoSample is returned by Advise without a sample.
var ErrNoSample = errors.New("no sample of the table's values")

type replayed struct {
	entry  Entry
	expr   predicate.Expr
	exact  bool
	cols   []string
	weight float64 // normalised: the replayed weights sum to 1
}

// Advise replays the evidence against the current layout and against a
// Hilbert layout of the sample on every candidate key. It is pure.
func Advise(in Input, opts Options) (*Advice, error) {
	opts = opts.withDefaults()
	if in.Sample == nil {
		return nil, ErrNoSample
	}
	adv := &Advice{Files: len(in.Files), SampleRows: in.Sample.Rows}
	for _, f := range in.Files {
		adv.TableBytes += f.Size
	}
	target := in.TargetFileSize
	if target <= 0 {
		target = 128 << 20
	}
	adv.LayoutFiles = int(max(1, (adv.TableBytes+target/2)/target))
	if in.Evidence != nil {
		adv.EvidenceWeight = in.Evidence.TotalWeight()
		adv.EvidenceRate = in.Evidence.RatePerDay()
	}
	byPhysical := map[string]string{}
	for name, c := range in.Columns {
		byPhysical[pathKey(c.Path)] = name
	}
	resolve := func(parts []string) (predicate.Column, bool) {
		if c, ok := in.Columns[strings.Join(parts, ".")]; ok {
			return c, true
		}
		c, ok := in.Columns[parts[len(parts)-1]]
		return c, ok
	}
	// The predicates, heaviest first.
	var entries []Entry
	if in.Evidence != nil {
		entries = append(entries, in.Evidence.Entries...)
	}
	sort.SliceStable(entries, func(i, j int) bool {
		if entries[i].Weight != entries[j].Weight {
			return entries[i].Weight > entries[j].Weight
		}
		return entries[i].Predicate < entries[j].Predicate
	})
	var reps []replayed
	colWeight := map[string]float64{}
	var total float64
	for _, e := range entries {
		if len(reps) == opts.MaxPredicates {
			break
		}
		p, err := predicate.ParseSpark(e.Predicate, resolve)
		if err != nil {
			adv.Unparsed++
			continue
		}
		expr := p.Expr
		var cols []string
		for _, c := range p.Filters {
			cols = append(cols, byPhysical[pathKey(c.Path)])
		}
		// A join (a MERGE's condition) reads the files holding the source's
		// keys: replayed as an equality with a value of the sample chosen by
		// the text, so that the same predicate always replays the same way.
		for _, c := range p.Joins {
			name := byPhysical[pathKey(c.Path)]
			if v := sampleValue(in.Sample, name, e.Predicate); v != nil {
				eq, err := predicate.NewCmp(c, predicate.OpEq, *v)
				if err == nil {
					expr = predicate.And{expr, eq}
					cols = append(cols, name)
				}
			}
		}
		reps = append(reps, replayed{entry: e, expr: expr, exact: p.Exact, cols: dedup(cols), weight: e.Weight})
		total += e.Weight
		for _, c := range dedup(cols) {
			colWeight[c] += e.Weight
		}
	}
	adv.Replayed = len(reps)
	if total > 0 {
		for i := range reps {
			reps[i].weight /= total
		}
	}
	rate := adv.EvidenceRate * sharePct(total, adv.EvidenceWeight)
	horizonDays := opts.Horizon.Hours() / 24

	// The columns the replayed predicates read, for the simulated files'
	// statistics.
	statCols := map[string]predicate.Column{}
	for c := range colWeight {
		if col, ok := in.Columns[c]; ok {
			if _, sampled := in.Sample.Values[c]; sampled {
				statCols[c] = col
			}
		}
	}

	// The current layout.
	curFiles := make([]int, len(reps))
	for i, r := range reps {
		var files int
		var bytesRead float64
		for _, f := range in.Files {
			ok, err := predicate.MayMatch(r.expr, f.Stats)
			if ok || err != nil {
				files++
				bytesRead += float64(f.Size)
			}
		}
		curFiles[i] = files
		adv.Baseline.FilesRead += r.weight * float64(files)
		adv.Baseline.BytesRead += r.weight * bytesRead
	}

	fileBytes := float64(adv.TableBytes) / float64(adv.LayoutFiles)
	estimate := func(key []string) (Estimate, []float64, error) {
		groups, err := layoutOn(in.Sample, key, statCols, adv.LayoutFiles)
		if err != nil {
			return Estimate{}, nil, err
		}
		// A sample smaller than the file count simulates fewer, larger files.
		scale := float64(adv.LayoutFiles) / float64(max(1, len(groups)))
		est := Estimate{Key: key}
		per := make([]float64, len(reps))
		for i, r := range reps {
			var files int
			for _, g := range groups {
				ok, err := predicate.MayMatch(r.expr, g)
				if ok || err != nil {
					files++
				}
			}
			per[i] = float64(files) * scale
			est.FilesRead += r.weight * per[i]
		}
		est.BytesRead = est.FilesRead * fileBytes
		est.SavedPerDay = rate * (adv.Baseline.BytesRead - est.BytesRead)
		if adv.Baseline.BytesRead > 0 {
			est.Gain = 1 - est.BytesRead/adv.Baseline.BytesRead
		}
		if !sameKey(key, in.Current) {
			est.ReclusterBytes = adv.TableBytes
		}
		est.Score = est.SavedPerDay - float64(est.ReclusterBytes)/horizonDays
		return est, per, nil
	}

	if len(in.Current) > 0 && allIn(in.Current, in.Sample) {
		est, _, err := estimate(in.Current)
		if err != nil {
			return nil, err
		}
		adv.CurrentKey = &est
	}
	cands := candidateColumns(colWeight, in.Sample, in.Columns, opts.MaxCandidateColumns)
	perKey := map[string][]float64{}
	for _, key := range subsets(cands, opts.MaxKeyColumns) {
		est, per, err := estimate(key)
		if err != nil {
			return nil, err
		}
		adv.Ranking = append(adv.Ranking, est)
		perKey[strings.Join(key, "\x00")] = per
	}
	rank(adv.Ranking)
	for i, r := range reps {
		pe := PredicateEstimate{Predicate: r.entry.Predicate, Weight: r.entry.Weight, Columns: r.cols, Exact: r.exact, CurrentFiles: curFiles[i]}
		if len(adv.Ranking) > 0 {
			pe.BestFiles = perKey[strings.Join(adv.Ranking[0].Key, "\x00")][i]
		}
		adv.Predicates = append(adv.Predicates, pe)
	}
	return adv, nil
}

func sharePct(part, whole float64) float64 {
	if whole <= 0 {
		return 0
	}
	return math.Min(1, part/whole)
}

// rank sorts best first: by score, then fewer columns, then by name; a key
// within 2% of the best score and with fewer columns goes first (a longer
// key spreads the pruning of each column thinner for little gain).
func rank(ests []Estimate) {
	sort.SliceStable(ests, func(i, j int) bool {
		a, b := ests[i], ests[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if len(a.Key) != len(b.Key) {
			return len(a.Key) < len(b.Key)
		}
		return strings.Join(a.Key, ",") < strings.Join(b.Key, ",")
	})
	if len(ests) == 0 || ests[0].Score <= 0 {
		return
	}
	best := 0
	for i := 1; i < len(ests); i++ {
		if ests[i].Score >= 0.98*ests[0].Score && len(ests[i].Key) < len(ests[best].Key) {
			best = i
		}
	}
	if best > 0 {
		b := ests[best]
		copy(ests[1:best+1], ests[:best])
		ests[0] = b
	}
}

// candidateColumns are the evidence's most weighted columns that the
// sample holds and a key may use, heaviest first.
func candidateColumns(w map[string]float64, s *Sample, cols map[string]predicate.Column, n int) []string {
	var out []string
	for c := range w {
		col, ok := cols[c]
		if _, sampled := s.Values[c]; ok && sampled && keyable(col.Kind) {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if w[out[i]] != w[out[j]] {
			return w[out[i]] > w[out[j]]
		}
		return out[i] < out[j]
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

func keyable(k predicate.Kind) bool {
	switch k {
	case predicate.KindInt, predicate.KindFloat, predicate.KindDecimal, predicate.KindString, predicate.KindDate, predicate.KindTimestamp, predicate.KindBool:
		return true
	}
	return false
}

// subsets lists the non-empty subsets of cols of at most k elements, each
// in cols' order.
func subsets(cols []string, k int) [][]string {
	var out [][]string
	var rec func(start int, cur []string)
	rec = func(start int, cur []string) {
		if len(cur) > 0 {
			out = append(out, append([]string(nil), cur...))
		}
		if len(cur) == k {
			return
		}
		for i := start; i < len(cols); i++ {
			rec(i+1, append(cur, cols[i]))
		}
	}
	rec(0, nil)
	return out
}

func sampleValue(s *Sample, col, text string) *predicate.Value {
	vals := s.Values[col]
	if len(vals) == 0 {
		return nil
	}
	h := fnv.New64a()
	h.Write([]byte(text))
	start := int(h.Sum64() % uint64(len(vals)))
	for i := range vals {
		if v := vals[(start+i)%len(vals)]; v != nil {
			return v
		}
	}
	return nil
}

func dedup(in []string) []string {
	seen := map[string]bool{}
	out := in[:0:0]
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func allIn(cols []string, s *Sample) bool {
	for _, c := range cols {
		if _, ok := s.Values[c]; !ok {
			return false
		}
	}
	return true
}

// sameKey reports whether a and b are the same columns in any order.
func sameKey(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	as, bs := append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(as)
	sort.Strings(bs)
	for i := range as {
		if as[i] != bs[i] {
			return false
		}
	}
	return true
}

// String renders a key for reports: "a, b", or "(none)".
func keyString(k []string) string {
	if len(k) == 0 {
		return "(none)"
	}
	return strings.Join(k, ", ")
}
