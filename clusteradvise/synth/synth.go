package synth

import (
	"fmt"
	"math/rand/v2"

	"github.com/compactord/compactord/clusteradvise"
	"github.com/compactord/compactord/delta/predicate"
)

// Columns are the synthetic table's columns.
var Columns = []string{"a", "b", "c", "d", "e", "f", "g", "h"}

// Domain is the value range [0, Domain) of every column but b; b has
// BCardinality distinct values.
const (
	Domain       = 1_000_000
	BCardinality = 1000
	// RowBytes is the bytes a row stands for in file sizes.
	RowBytes = 64
)

// Table is a synthetic table held in memory: Data[col][row].
type Table struct {
	Rows int
	Data map[string][]int64
}

// NewTable returns rows rows of uniform values, seeded.
func NewTable(rows int, seed uint64) *Table {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	t := &Table{Rows: rows, Data: map[string][]int64{}}
	for _, c := range Columns {
		vals := make([]int64, rows)
		for i := range vals {
			if c == "b" {
				vals[i] = r.Int64N(BCardinality)
			} else {
				vals[i] = r.Int64N(Domain)
			}
		}
		t.Data[c] = vals
	}
	return t
}

// ColumnMap is the table's columns for clusteradvise.Input.
func ColumnMap() map[string]predicate.Column {
	m := map[string]predicate.Column{}
	for _, c := range Columns {
		m[c] = predicate.Column{Path: []string{c}, Kind: predicate.KindInt}
	}
	return m
}

// Sample returns n rows drawn without replacement (all rows when n >= Rows).
func (t *Table) Sample(n int, seed uint64) *clusteradvise.Sample {
	idx := make([]int, t.Rows)
	for i := range idx {
		idx[i] = i
	}
	if n < t.Rows {
		r := rand.New(rand.NewPCG(seed, 7))
		r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		idx = idx[:n]
	}
	s := &clusteradvise.Sample{Rows: len(idx), Values: map[string][]*predicate.Value{}}
	for _, c := range Columns {
		col := t.Data[c]
		backing := make([]predicate.Value, len(idx))
		vals := make([]*predicate.Value, len(idx))
		for i, j := range idx {
			backing[i] = predicate.Int(col[j])
			vals[i] = &backing[i]
		}
		s.Values[c] = vals
	}
	return s
}

// Files lays the whole table out on key (nil: ingest order) in files of
// rowsPerFile rows and returns them as the advisor's current layout.
func (t *Table) Files(key []string, rowsPerFile int) ([]clusteradvise.File, error) {
	all := t.Sample(t.Rows, 0)
	n := max(1, (t.Rows+rowsPerFile-1)/rowsPerFile)
	stats, err := clusteradvise.Layout(all, key, ColumnMap(), n)
	if err != nil {
		return nil, err
	}
	out := make([]clusteradvise.File, len(stats))
	for i, s := range stats {
		rows, _ := s.NumRecords()
		out[i] = clusteradvise.File{Size: rows * RowBytes, Stats: s}
	}
	return out, nil
}

// The workloads.
const (
	WorkloadA       = "a"       // ranges on a
	WorkloadBC      = "bc"      // equality on b, ranges on c
	WorkloadUniform = "uniform" // a range or equality on any one column
	WorkloadB       = "b"       // equality on b
)

// Workload returns n predicate texts of the workload, seeded. Ranges cover
// 0.2% to 1% of the domain.
func Workload(kind string, n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 11))
	rng := func(col string) string {
		w := Domain/500 + r.Int64N(Domain/125)
		lo := r.Int64N(Domain - w)
		return fmt.Sprintf("%s BETWEEN %d AND %d", col, lo, lo+w)
	}
	out := make([]string, 0, n)
	for range n {
		switch kind {
		case WorkloadA:
			out = append(out, rng("a"))
		case WorkloadB:
			out = append(out, fmt.Sprintf("b = %d", r.Int64N(BCardinality)))
		case WorkloadBC:
			if r.IntN(2) == 0 {
				out = append(out, fmt.Sprintf("b = %d", r.Int64N(BCardinality)))
			} else {
				out = append(out, rng("c"))
			}
		default:
			c := Columns[r.IntN(len(Columns))]
			if c == "b" {
				out = append(out, fmt.Sprintf("b = %d", r.Int64N(BCardinality)))
			} else {
				out = append(out, rng(c))
			}
		}
	}
	return out
}
