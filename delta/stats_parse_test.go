package delta

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/internal/deltatest"
	deltastats "github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/internal/testutil"
)

// referenceStats parses with encoding/json (UseNumber), the behaviour
// ParseStats must match.
func referenceStats(s string) (*deltastats.Stats, error) {
	if !json.Valid([]byte(s)) {
		return nil, json.Unmarshal([]byte(s), new(any))
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var st deltastats.Stats
	if err := dec.Decode(&st); err != nil {
		return nil, err
	}
	return &st, nil
}

func TestParseStatsMatchesEncodingJSON(t *testing.T) {
	cases := []string{
		`{"numRecords":10,"minValues":{"value":0},"maxValues":{"value":9},"nullCount":{"value":0},"tightBounds":false}`,
		`{"numRecords":3,"minValues":{"a":-1.5e3,"s":{"x":"2000-01-01T00:00:00.000-08:00","y":"t\u00e9\"q\\"}},"maxValues":{"a":0.25},"nullCount":{"a":0,"s":{"x":1,"y":0},"arr":2}}`,
		` { "numRecords" : 0 , "unknownStat" : [1, {"a": null}], "tightBounds" : true } `,
		`{"numRecords":null,"minValues":null}`,
		`{}`,
	}
	for _, s := range cases {
		got, err := deltastats.ParseStats(s)
		if err != nil {
			t.Fatalf("ParseStats(%s): %v", s, err)
		}
		want, err := referenceStats(s)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ParseStats(%s)\n got %+v\nwant %+v", s, got, want)
		}
	}
}

func TestParseStatsRejectsMalformedJSON(t *testing.T) {
	for _, s := range []string{`{`, `{"numRecords":}`, `{"numRecords":1.5}`, `{"numRecords":"1"}`, `{"minValues":[1]}`,
		`{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":"x}`, `{"a":1}x`, `[1]`, `{"a":tru}`, `{"tightBounds":1}`, "{\"a\":\"\x01\"}", `{"a" 1}`} {
		if _, err := deltastats.ParseStats(s); err == nil {
			t.Errorf("ParseStats(%q) succeeded", s)
		}
	}
	if st, err := deltastats.ParseStats(""); st != nil || err != nil {
		t.Errorf("ParseStats(\"\") = %v, %v; want nil, nil", st, err)
	}
}

func FuzzParseStats(f *testing.F) {
	f.Add(`{"numRecords":10,"minValues":{"value":0,"s":"a\"b"},"maxValues":{"value":9},"nullCount":{"value":0},"tightBounds":false}`)
	f.Add(`{"numRecords":1,"minValues":{"d":1.5E-7,"n":{"x":[true,null]}}}`)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := deltastats.ParseStats(s)
		want, werr := referenceStats(s)
		if s == "" || (werr == nil && reflect.DeepEqual(want, &deltastats.Stats{}) && err == nil && got == nil) {
			return // "" and null mean no stats; encoding/json gives an empty Stats for null
		}
		if (err == nil) != (werr == nil) {
			// encoding/json is stricter about a few shapes ParseStats
			// skips (unknown keys are validated the same way, though).
			t.Fatalf("ParseStats(%q) err=%v, encoding/json err=%v", s, err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseStats(%q) = %+v, want %+v", s, got, want)
		}
	})
}

// checkScanAgrees fails when the allocation-free scan snapshot loading
// validates stats with disagrees with ParseStats on s: the same inputs
// fail, and the same numRecords is read (also by the early-stopping scan
// NumRecords uses, for stats without a repeated numRecords key).
func checkScanAgrees(t *testing.T, s string) {
	t.Helper()
	st, err := deltastats.ParseStats(s)
	n, ok, serr := deltastats.ScanStats(s, true)
	if qn, qok, decided := deltastats.QuickScanStats(s); decided {
		// The quick check decides only what the full scan accepts, alike.
		fn, fok, ferr := deltastats.FullScanStats(s, true)
		if ferr != nil || qn != fn || qok != fok {
			t.Fatalf("quickScanStats(%q) = %d, %v; the full scan: %d, %v, %v", s, qn, qok, fn, fok, ferr)
		}
	}
	if (err == nil) != (serr == nil) {
		t.Fatalf("scanStats(%q) err=%v, ParseStats err=%v", s, serr, err)
	}
	if err != nil {
		return
	}
	wantOK := st != nil && st.NumRecords != nil
	if ok != wantOK || (ok && n != *st.NumRecords) {
		t.Fatalf("scanStats(%q) = %d, %v; ParseStats numRecords = %+v", s, n, ok, st)
	}
	if a := (&actions.Add{Path: "f", Stats: s}); strings.Count(strings.ToLower(s), "numrecords") <= 1 {
		got, gotOK, err := a.NumRecords()
		if err != nil || gotOK != wantOK || (gotOK && got != n) {
			t.Fatalf("NumRecords of %q = %d, %v, %v; want %d, %v", s, got, gotOK, err, n, wantOK)
		}
	}
}

func TestScanStatsAgreesWithParseStats(t *testing.T) {
	for _, s := range []string{
		`{"numRecords":10,"minValues":{"value":0},"maxValues":{"value":9},"nullCount":{"value":0},"tightBounds":false}`,
		`{"minValues":{"a":-1.5e3,"s":{"x":"t\u00e9\"q\\"}},"nullCount":{"a":0,"arr":2},"NUMRECORDS":3}`,
		` { "numRecords" : 0 , "unknownStat" : [1, {"a": null}], "tightBounds" : true } `,
		`{"numRecords":null,"minValues":null}`, `{"numRecords":4,"numRecords":null}`, `{}`, `null`, ` null `,
		`{`, `{"numRecords":}`, `{"numRecords":1.5}`, `{"numRecords":"1"}`, `{"numRecords":[1]}`, `{"minValues":[1]}`,
		`{"maxValues":"x"}`, `{"nullCount":3}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":"x}`, `{"a":1}x`, `[1]`,
		`{"a":tru}`, `{"tightBounds":1}`, "{\"a\":\"\x01\"}", `{"a" 1}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`,
		`{"numRecords":99999999999999999999}`, `{"a":{"b":[1,2,{"c":"\n"}]},"numRecords":-2}`, `{"a":[}`, `{"a":[1,]}`,
		"{\"s\":\"\xff\"}", `{"numRecords":1 2}`, `nul`,
		// The quick check's edges: it decides these or leaves them.
		`{"numRecords":-0}`, `{"numRecords":007}`, `{"numRecords":-}`, `{"numRecords":123456789012345678}`,
		`{"numRecords":1234567890123456789}`, `{"numRecords":12345678901234567890}`, `{"numRecords":1e3}`,
		`{"NumRecords":5,"minValues":{}}`, `{"tightBounds":null,"minValues":null,"numRecords":null}`, `{"tightBounds":"true"}`,
		`{"minValues":{"a":{"b":{}}},"x":[[],{},[1,[2]]]}`, `{"a":1e5,"b":-0.5E+3,"c":0.0}`, `{"a":1e}`, `{"a":0.}`,
		`{"a":[1,2]} `, "\t{\"a\":\n1}\r", "{\"\xc3\xa9\":1}", "{\"a\":\"\xc3\xa9\"}", `{"a":[1 2]}`, `{"a":{"b" 1}}`,
		`{"a":{"b":1,}}`, `{"a":{,}}`, `{"a":[,1]}`, `{"a":{"b":1]}`, `{"a":[1}`, `{"a":truex}`, `{"a":fals}`, `{"a":n}`,
		`{"a":"x"`, `{"a":"`, `{"a"`, `{"numRecords":5`, `{}}`, `{} {}`, `{"minValues":[]}`, `{"nullCount":"{}"}`,
		strings.Repeat(`{"a":`, 47) + `1` + strings.Repeat(`}`, 47),
		strings.Repeat(`{"a":`, 49) + `1` + strings.Repeat(`}`, 49),
		strings.Repeat(`{"a":`, 66) + `1` + strings.Repeat(`}`, 66),
		`{"a":` + strings.Repeat(`[`, 60) + strings.Repeat(`]`, 60) + `}`,
	} {
		checkScanAgrees(t, s)
	}
}

func FuzzScanStats(f *testing.F) {
	f.Add(`{"numRecords":10,"minValues":{"value":0,"s":"a\"b"},"maxValues":{"value":9},"nullCount":{"value":0},"tightBounds":false}`)
	f.Add(`{"tightBounds":true,"numRecords":1,"minValues":{"d":1.5E-7,"n":{"x":[true,null]}}}`)
	f.Fuzz(checkScanAgrees)
}

// BenchmarkScanStats checks Spark-shaped stats strings as snapshot loading
// does for every file of a checkpoint.
func BenchmarkScanStats(b *testing.B) {
	stats := make([]string, 1024)
	n := 0
	for i := range stats {
		stats[i] = deltatest.BenchStats(i * 977)
		n += len(stats[i])
	}
	b.SetBytes(int64(n))
	for b.Loop() {
		for _, s := range stats {
			if _, _, err := deltastats.ScanStats(s, true); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// The quick check decides the stats the test tables' engines wrote
// (Spark, Databricks, delta-rs...), alike with the full scan: the ones
// it is meant for, compact or spaced JSON without escapes, none left to
// the full scan.
func TestQuickScanStatsDecidesEnginesStats(t *testing.T) {
	commits := enginesStats(t)
	seen, decided := 0, 0
	for _, stats := range commits {
		for _, s := range stats {
			seen++
			checkScanAgrees(t, s)
			if _, _, ok := deltastats.QuickScanStats(s); ok {
				decided++
			} else if !strings.Contains(s, `\`) {
				t.Errorf("the quick check left %q to the full scan", s)
			}
		}
	}
	if seen < 100 {
		t.Fatalf("only %d stats strings in %d commit files", seen, len(commits))
	}
	t.Logf("%d of %d stats strings decided by the quick check", decided, seen)
}

// enginesStats returns, per commit file of the test tables, the stats
// strings of its adds in order.
func enginesStats(t *testing.T) [][]string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(testutil.DeltaTestdata(t), "*", "delta", "_delta_log", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, path := range logs {
		out = append(out, deltatest.LogStrings(t, path, "add", "stats"))
	}
	return out
}

// checkShapeAgrees fails when the shape of p (a string the quick check
// decides) matches s and the full scan refuses s or reads another
// numRecords from it, or when p does not match its own shape.
func checkShapeAgrees(t *testing.T, p, s string) (matched bool) {
	t.Helper()
	var sh deltastats.StatsShape
	pn, phas, decided := deltastats.QuickScanShape(p, &sh)
	if !decided {
		return false
	}
	if n, has, ok := sh.Match(p); !ok || n != pn || has != phas {
		t.Fatalf("%q does not match its own shape: %d, %v, %v", p, n, has, ok)
	}
	n, has, ok := sh.Match(s)
	if !ok {
		return false
	}
	fn, fhas, err := deltastats.FullScanStats(s, true)
	if err != nil || fn != n || fhas != has {
		t.Fatalf("%q matched the shape of %q (%d, %v); the full scan: %d, %v, %v", s, p, n, has, fn, fhas, err)
	}
	return true
}

func TestStatsShapeAgreesWithTheFullScan(t *testing.T) {
	base := `{"numRecords":10,"minValues":{"id":1,"s":"a","n":{"x":[true,null]}},"maxValues":{"id":9},"nullCount":{"id":0},"tightBounds":true}`
	for _, tt := range []struct {
		p, s  string
		match bool
	}{
		{base, base, true},
		{base, `{"numRecords":12345,"minValues":{"id":"x","s":-1.5e3,"n":{"x":[false,"y"]}},"maxValues":{"id":null},"nullCount":{"id":7},"tightBounds":false}`, true},
		{base, `{"numRecords":-0,"minValues":{"id":1,"s":"a\u00e9","n":{"x":[true,null]}},"maxValues":{"id":9},"nullCount":{"id":0},"tightBounds":true}`, false},
		{base, `{"numRecords":null,"minValues":{"id":1,"s":"a","n":{"x":[true,null]}},"maxValues":{"id":9},"nullCount":{"id":0},"tightBounds":true}`, false},
		{base, `{"numRecords":1.5,"minValues":{"id":1,"s":"a","n":{"x":[true,null]}},"maxValues":{"id":9},"nullCount":{"id":0},"tightBounds":true}`, false},
		{base, `{"numRecords":"1","minValues":{"id":1,"s":"a","n":{"x":[true,null]}},"maxValues":{"id":9},"nullCount":{"id":0},"tightBounds":true}`, false},
		{base, `{"numRecords":10,"minValues":{"id":1,"s":"a","n":{"x":[true,null]}},"maxValues":{"id":9},"nullCount":{"id":0},"tightBounds":1}`, false},
		{base, `{"numRecords":10,"minValues":{"id":1,"s":"a","n":{"x":[true,null]}},"maxValues":{"id":9},"nullCount":{"id":0},"tightBounds":null}`, false},
		{base, `{"numRecords":10,"minValues":{"id":01,"s":"a","n":{"x":[true,null]}},"maxValues":{"id":9},"nullCount":{"id":0},"tightBounds":true}`, false},
		{base, `{"numRecords":10,"minValues":{"id":1,"s":"a,"n":{"x":[true,null]}},"maxValues":{"id":9},"nullCount":{"id":0},"tightBounds":true}`, false},
		{base, `{"numRecords":10,"minValues":{"id":1,"s":"a","n":{"x":[true,nul]}},"maxValues":{"id":9},"nullCount":{"id":0},"tightBounds":true}`, false},
		{base, `{"numRecords":10,"minValues":{"id":{},"s":"a","n":{"x":[true,null]}},"maxValues":{"id":9},"nullCount":{"id":0},"tightBounds":true}`, false},
		{base, `{"numRecords":10,"minValues":{"id":1,"s":"a","n":{"x":[true,null]}},"maxValues":{"id":9},"nullCount":{"id":0},"tightBounds":true} `, false},
		{base, `{"numRecords":10,"minValues":{"id":1,"s":"a","n":{"x":[true,null]}},"maxValues":{"id":9},"nullCount":{"id":0},"tightBounds":true`, false},
		{`{"minValues":null,"numRecords":null}`, `{"minValues":5,"numRecords":null}`, false},
		{`{"minValues":null,"numRecords":null}`, `{"minValues":null,"numRecords":3}`, false},
		{`{"numRecords":4,"numRecords":null}`, `{"numRecords":5,"numRecords":null}`, true},
		{`{"numRecords":4,"x":"s"}`, `{"numRecords":4,"x":"\x01"}`, false},
		{`{"numRecords":4,"x":"s"}`, "{\"numRecords\":4,\"x\":\"\xff\"}", true},
		{`{}`, `{}`, true},
		{`{}`, `{} `, false},
	} {
		if got := checkShapeAgrees(t, tt.p, tt.s); got != tt.match {
			t.Errorf("shape of %q matches %q: %v, want %v", tt.p, tt.s, got, tt.match)
		}
	}
}

func FuzzStatsShape(f *testing.F) {
	f.Add(`{"numRecords":10,"minValues":{"value":0,"s":"ab"},"maxValues":{"value":9},"nullCount":{"value":0},"tightBounds":false}`,
		`{"numRecords":11,"minValues":{"value":-3,"s":"c"},"maxValues":{"value":9.5e1},"nullCount":{"value":null},"tightBounds":true}`)
	f.Add(`{"numRecords":1,"minValues":{"d":1.5E-7,"n":{"x":[true,null]}}}`, `{"numRecords":1,"minValues":{"d":"1","n":{"x":[true,nul]}}}`)
	f.Fuzz(func(t *testing.T, p, s string) { checkShapeAgrees(t, p, s) })
}

// Consecutive stats strings of the test tables' commits mostly share a
// shape, and every match agrees with the full scan.
func TestStatsShapesOfEnginesStats(t *testing.T) {
	pairs, matched := 0, 0
	for _, stats := range enginesStats(t) {
		for i := 1; i < len(stats); i++ {
			pairs++
			if checkShapeAgrees(t, stats[i-1], stats[i]) {
				matched++
			}
		}
	}
	if pairs < 50 || matched < pairs/2 {
		t.Fatalf("%d of %d consecutive pairs of stats share a shape", matched, pairs)
	}
	t.Logf("%d of %d consecutive pairs of stats share a shape", matched, pairs)
}
