package predicate

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/stats"
)

// The differential test: thousands of random (reads, winner file) cases,
// where each file really holds rows and its statistics are computed from
// them the way Delta writers do (timestamps truncated to ms, string
// prefixes with a tie-break max, wide bounds after deletions, some stats
// missing). A brute-force oracle evaluates the reads on the live rows. A
// file the matcher skips while the oracle finds a matching row is a missed
// conflict: there must be none.

var (
	dcolID    = Column{Path: []string{"id"}, Kind: KindInt}
	dcolScore = Column{Path: []string{"score"}, Kind: KindFloat}
	dcolName  = Column{Path: []string{"s", "name"}, Kind: KindString}
	dcolTS    = Column{Path: []string{"ts"}, Kind: KindTimestamp}
	dcolP     = Column{Path: []string{"p"}, Kind: KindInt}
	dataCols  = []Column{dcolID, dcolScore, dcolName, dcolTS}
)

type simFile struct {
	rows []MapRow // live rows, partition column included
	add  *actions.Add
}

var names = []string{"a", "ab", "abc", "abcd", "abcde", "b", "ba", "bz", "c", "zz", "é", "ü"}

func randValue(r *rand.Rand, c Column) *Value {
	if r.IntN(8) == 0 {
		return nil
	}
	var v Value
	switch c.Kind {
	case KindInt:
		v = Int(int64(r.IntN(40)))
	case KindFloat:
		if r.IntN(30) == 0 {
			v = Float(math.NaN())
		} else {
			v = Float(float64(r.IntN(400)) / 10)
		}
	case KindString:
		v = String(names[r.IntN(len(names))])
	case KindTimestamp:
		// Sub-millisecond values exercise the truncated max statistic.
		v = Timestamp(int64(r.IntN(20))*1000 + int64(r.IntN(3))*400)
	}
	return &v
}

func genFile(r *rand.Rand) simFile {
	n := 1 + r.IntN(6)
	var part *string
	if r.IntN(10) != 0 {
		s := fmt.Sprint(1 + r.IntN(3))
		part = &s
	}
	phys := make([]MapRow, n)
	for i := range phys {
		row := MapRow{}
		for _, c := range dataCols {
			row[dotted(c.Path)] = randValue(r, c)
		}
		if part != nil {
			v := ParseMust(KindInt, *part)
			row["p"] = &v
		} else {
			row["p"] = nil
		}
		phys[i] = row
	}
	var live []MapRow
	deleted := 0
	for _, row := range phys {
		if r.IntN(5) == 0 {
			deleted++
			continue
		}
		live = append(live, row)
	}
	add := &actions.Add{Path: "x.parquet", PartitionValues: map[string]*string{"p": part}}
	if r.IntN(10) != 0 { // 10% of files carry no stats at all
		add.ParsedStats = statsOf(r, phys, deleted > 0)
	}
	return simFile{rows: live, add: add}
}

func ParseMust(k Kind, s string) Value {
	v, err := ParseLiteral(k, s)
	if err != nil {
		panic(err)
	}
	return v
}

// statsOf computes Delta statistics over all physical rows, as a writer
// would have before the deletions.
func statsOf(r *rand.Rand, phys []MapRow, wide bool) *stats.Stats {
	n := int64(len(phys))
	minV, maxV, nulls := map[string]any{}, map[string]any{}, map[string]any{}
	put := func(m map[string]any, path []string, v any) {
		for _, p := range path[:len(path)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[path[len(path)-1]] = v
	}
	for _, c := range dataCols {
		if r.IntN(12) == 0 {
			continue // column not indexed
		}
		var lo, hi *Value
		nullCount := 0
		hasNaN := false
		for _, row := range phys {
			v := row[dotted(c.Path)]
			if v == nil {
				nullCount++
				continue
			}
			if v.Kind == KindFloat && math.IsNaN(v.F) {
				hasNaN = true
			}
			if lo == nil || mustCmp(*v, *lo) < 0 {
				lo = v
			}
			if hi == nil || mustCmp(*v, *hi) > 0 {
				hi = v
			}
		}
		put(nulls, c.Path, json.Number(fmt.Sprint(nullCount)))
		if lo == nil || hasNaN {
			continue
		}
		put(minV, c.Path, statValue(*lo, false))
		put(maxV, c.Path, statValue(*hi, true))
	}
	tight := !wide
	return &stats.Stats{NumRecords: &n, MinValues: minV, MaxValues: maxV, NullCount: nulls, TightBounds: &tight}
}

func mustCmp(a, b Value) int {
	c, err := Compare(a, b)
	if err != nil {
		panic(err)
	}
	return c
}

const prefixLen = 3

func statValue(v Value, isMax bool) any {
	switch v.Kind {
	case KindInt:
		return json.Number(fmt.Sprint(v.I))
	case KindFloat:
		return json.Number(fmt.Sprint(v.F))
	case KindString:
		runes := []rune(v.S)
		if len(runes) <= prefixLen {
			return v.S
		}
		p := string(runes[:prefixLen])
		if isMax {
			return p + "\U0010FFFF"
		}
		return p
	case KindTimestamp:
		ms := v.I / 1000 // truncation to milliseconds, as Spark writes
		return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
	}
	panic("kind")
}

func randLeaf(r *rand.Rand, cols []Column) Expr {
	c := cols[r.IntN(len(cols))]
	v := randValue(r, c)
	for v == nil || (v.Kind == KindFloat && math.IsNaN(v.F) && r.IntN(2) == 0) {
		v = randValue(r, c)
	}
	switch r.IntN(6) {
	case 0:
		return IsNull{Col: c, Negated: r.IntN(2) == 0}
	case 1:
		vals := []Value{*v}
		if w := randValue(r, c); w != nil {
			vals = append(vals, *w)
		}
		return In{Col: c, Values: vals, Negated: r.IntN(3) == 0}
	}
	return Cmp{Col: c, Op: Op(r.IntN(6)), Value: *v}
}

func randExpr(r *rand.Rand, cols []Column, depth int) Expr {
	if depth == 0 || r.IntN(3) == 0 {
		return randLeaf(r, cols)
	}
	a, b := randExpr(r, cols, depth-1), randExpr(r, cols, depth-1)
	switch r.IntN(3) {
	case 0:
		return And{a, b}
	case 1:
		return Or{a, b}
	}
	return Not(And{a, b})
}

func TestDifferentialAgainstOracle(t *testing.T) {
	cases := 20000
	if testing.Short() {
		cases = 3000
	}
	r := rand.New(rand.NewPCG(1, 2))
	m := Matcher{PartitionKinds: map[string]Kind{"p": KindInt}}
	var kept, skipped, falseConflicts, noMatch, evalErrors int
	for i := 0; i < cases; i++ {
		var reads []Read
		for j := 0; j < 1+r.IntN(3); j++ {
			var rd Read
			if r.IntN(2) == 0 {
				rd.Partition = randExpr(r, []Column{dcolP}, 1)
			}
			if r.IntN(6) != 0 {
				rd.Data = randExpr(r, dataCols, 2)
			}
			reads = append(reads, rd)
		}
		f := genFile(r)
		keep, err := m.MayMatchReads(reads, false, f.add)
		if err != nil {
			evalErrors++
		}
		oracle := false
		for _, row := range f.rows {
			for _, rd := range reads {
				var e And
				if rd.Partition != nil {
					e = append(e, rd.Partition)
				}
				if rd.Data != nil {
					e = append(e, rd.Data)
				}
				tv, err := EvalRow(e, row)
				if err != nil {
					t.Fatal(err)
				}
				if tv == True {
					oracle = true
				}
			}
		}
		if oracle && !keep {
			t.Fatalf("missed conflict: reads %v skipped a file whose live row matches\nrows=%v\nstats=%+v", readsString(reads), rowsString(f.rows), f.add.ParsedStats)
		}
		if keep {
			kept++
		} else {
			skipped++
		}
		if !oracle {
			noMatch++
			if keep {
				falseConflicts++
			}
		}
	}
	t.Logf("cases=%d kept=%d skipped=%d evalErrors=%d; false-conflict rate = %d/%d = %.1f%% of non-matching files",
		cases, kept, skipped, evalErrors, falseConflicts, noMatch, 100*float64(falseConflicts)/float64(max(noMatch, 1)))
	if skipped == 0 {
		t.Fatal("the matcher never skipped a file: the test exercises nothing")
	}
}

func readsString(reads []Read) string {
	var parts []string
	for _, r := range reads {
		parts = append(parts, fmt.Sprintf("{P: %v, D: %v}", r.Partition, r.Data))
	}
	return strings.Join(parts, " OR ")
}

func rowsString(rows []MapRow) string {
	var parts []string
	for _, row := range rows {
		var cells []string
		for k, v := range row {
			if v == nil {
				cells = append(cells, k+"=NULL")
			} else {
				cells = append(cells, k+"="+v.String())
			}
		}
		parts = append(parts, "{"+strings.Join(cells, " ")+"}")
	}
	return strings.Join(parts, ", ")
}
