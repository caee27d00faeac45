package predicate

import (
	"encoding/json"
	"testing"

	"github.com/compactord/compactord/delta/actions"
	deltastats "github.com/compactord/compactord/delta/stats"
)

var (
	colID = Column{Path: []string{"id"}, Kind: KindInt}
	colP  = Column{Path: []string{"p"}, Kind: KindInt}
)

func must(e Expr, err error) Expr {
	if err != nil {
		panic(err)
	}
	return e
}

func statsJSON(t *testing.T, s string) *deltastats.Stats {
	t.Helper()
	dec := json.NewDecoder(stringsReader(s))
	dec.UseNumber()
	var st deltastats.Stats
	if err := dec.Decode(&st); err != nil {
		t.Fatal(err)
	}
	return &st
}

func addWith(t *testing.T, stats string, part map[string]*string) *actions.Add {
	a := &actions.Add{Path: "f.parquet", PartitionValues: part}
	if stats != "" {
		a.ParsedStats = statsJSON(t, stats)
	}
	return a
}

func strp(s string) *string { return &s }

// The cases of the conflict-time data skipping design note, as the retention
// delete sees them: the transaction's reads against a winner's added file.
func TestMayMatchReadsSeedCases(t *testing.T) {
	idLt50 := must(NewCmp(colID, OpLt, Int(50)))
	idGe950 := must(NewCmp(colID, OpGe, Int(950)))
	appended := `{"numRecords":100,"minValues":{"id":1000},"maxValues":{"id":1100},"nullCount":{"id":0}}`
	p1 := must(NewCmp(colP, OpEq, Int(1)))
	p2 := must(NewCmp(colP, OpEq, Int(2)))
	idGe100 := must(NewCmp(colID, OpGe, Int(100)))
	partKinds := map[string]Kind{"p": KindInt}

	tests := []struct {
		name    string
		matcher Matcher
		reads   []Read
		whole   bool
		add     *actions.Add
		want    bool
	}{
		{"disjoint ranges do not conflict", Matcher{}, []Read{{Data: idLt50}}, false, addWith(t, appended, nil), false},
		{"overlapping ranges conflict", Matcher{}, []Read{{Data: idGe950}}, false, addWith(t, appended, nil), true},
		{"skipping switched off conflicts", Matcher{SkipStats: true}, []Read{{Data: idLt50}}, false, addWith(t, appended, nil), true},
		{"missing stats conflict", Matcher{}, []Read{{Data: idLt50}}, false, addWith(t, "", nil), true},
		{"stats without the column conflict", Matcher{}, []Read{{Data: idLt50}}, false, addWith(t, `{"numRecords":100}`, nil), true},
		{"partitioned table skips on a non-partition column", Matcher{PartitionKinds: partKinds},
			[]Read{{Partition: p1, Data: idLt50}}, false, addWith(t, appended, map[string]*string{"p": strp("1")}), false},
		{"partition predicate alone prunes another partition", Matcher{PartitionKinds: partKinds},
			[]Read{{Partition: p1}}, false, addWith(t, appended, map[string]*string{"p": strp("2")}), false},
		{"empty predicates keep every file", Matcher{}, nil, false, addWith(t, appended, nil), true},
		{"whole-table read keeps every file", Matcher{}, []Read{{Data: idLt50}}, true, addWith(t, appended, nil), true},
		{"cross terms are not mixed: p=1 AND id<50, p=2 AND id>=100 vs a p=1 file with id 150", Matcher{PartitionKinds: partKinds},
			[]Read{{Partition: p1, Data: idLt50}, {Partition: p2, Data: idGe100}}, false,
			addWith(t, `{"numRecords":1,"minValues":{"id":150},"maxValues":{"id":150},"nullCount":{"id":0}}`, map[string]*string{"p": strp("1")}), false},
		{"stats given only as the JSON string are parsed", Matcher{}, []Read{{Data: idLt50}}, false,
			&actions.Add{Path: "w.parquet", Stats: appended}, false},
		{"non-tight bounds are still outer bounds", Matcher{}, []Read{{Data: idLt50}}, false,
			addWith(t, `{"numRecords":100,"minValues":{"id":1000},"maxValues":{"id":1100},"nullCount":{"id":3},"tightBounds":false}`, nil), false},
		{"all-null column cannot match a comparison", Matcher{}, []Read{{Data: idLt50}}, false,
			addWith(t, `{"numRecords":5,"minValues":{},"maxValues":{},"nullCount":{"id":5}}`, nil), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.matcher.MayMatchReads(tc.reads, tc.whole, tc.add)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("MayMatchReads = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEvaluationFailureKeepsTheFile(t *testing.T) {
	idLt50 := must(NewCmp(colID, OpLt, Int(50)))
	bad := addWith(t, `{"numRecords":3,"minValues":{"id":"not a number"},"maxValues":{"id":9},"nullCount":{"id":0}}`, nil)
	keep, err := Matcher{}.MayMatchReads([]Read{{Data: idLt50}}, false, bad)
	if err == nil {
		t.Fatal("want an evaluation error for a malformed stat")
	}
	if !keep {
		t.Fatal("an evaluation failure must keep the file")
	}
}

func TestNotPreservesThreeValuedLogic(t *testing.T) {
	lt := must(NewCmp(colID, OpLt, Int(5)))
	in := must(NewIn(colID, Int(1), Int(2)))
	exprs := []Expr{lt, in, IsNull{Col: colID}, And{lt, in}, Or{lt, IsNull{Col: colID}}}
	for _, e := range exprs {
		for _, v := range []*Value{nil, ptr(Int(1)), ptr(Int(5)), ptr(Int(9))} {
			row := MapRow{"id": v}
			a, err := EvalRow(e, row)
			if err != nil {
				t.Fatal(err)
			}
			b, err := EvalRow(Not(e), row)
			if err != nil {
				t.Fatal(err)
			}
			want := map[Truth]Truth{True: False, False: True, Unknown: Unknown}[a]
			if b != want {
				t.Errorf("NOT(%s) on %v = %v, want %v", e, v, b, want)
			}
		}
	}
}

func ptr(v Value) *Value { return &v }
