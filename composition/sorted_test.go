package composition

import (
	"errors"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// sliceOrigins is an Origins over a plain list: outputs[o][k] is the
// (source, physical row) of row k of output o.
type sliceOrigins struct {
	outputs [][][2]int64
	err     error
}

func (s sliceOrigins) Locate(source int, rows *roaring64.Bitmap) (map[int]*roaring64.Bitmap, error) {
	if s.err != nil {
		return nil, s.err
	}
	out := map[int]*roaring64.Bitmap{}
	for o, rs := range s.outputs {
		for k, r := range rs {
			if r[0] == int64(source) && rows.Contains(uint64(r[1])) {
				if out[o] == nil {
					out[o] = roaring64.New()
				}
				out[o].Add(uint64(k))
			}
		}
	}
	return out, nil
}

func (s sliceOrigins) NumOutputs() int { return len(s.outputs) }

func (s sliceOrigins) NumRows() int64 {
	var n int64
	for _, o := range s.outputs {
		n += int64(len(o))
	}
	return n
}

var _ Origins = sliceOrigins{}

func TestSorted(t *testing.T) {
	// Source 0 has rows 0..3 with row 1 deleted at read time; source 1 rows
	// 0..1. Rows were permuted over two outputs.
	orig := sliceOrigins{outputs: [][][2]int64{
		{{1, 1}, {0, 3}, {0, 0}},
		{{1, 0}, {0, 2}},
	}}
	tests := []struct {
		name    string
		origins Origins
		source  int
		read    *roaring64.Bitmap
		winner  *roaring64.Bitmap
		want    map[int][]uint64
		wantErr bool
	}{
		{name: "incremental deletions land where the origin map says", origins: orig, source: 0, read: bm(1), winner: bm(1, 0, 2),
			want: map[int][]uint64{0: {2}, 1: {1}}},
		{name: "a winner equal to the read-time DV remaps nothing", origins: orig, source: 0, read: bm(1), winner: bm(1), want: map[int][]uint64{}},
		{name: "a resurrected read-time deletion is refused", origins: orig, source: 0, read: bm(1), winner: bm(0), wantErr: true},
		{name: "a deletion of a row the job did not write is refused", origins: orig, source: 1, winner: bm(0, 2), wantErr: true},
		{name: "no origin map is refused", origins: nil, source: 0, winner: bm(0), wantErr: true},
		{name: "a failing origin map is refused", origins: sliceOrigins{err: errors.New("spill file gone")}, source: 0, winner: bm(0), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Sorted(tt.origins, tt.source, tt.read, tt.winner)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("want an error, got %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got deletions in %d outputs, want %d", len(got), len(tt.want))
			}
			for o, rows := range tt.want {
				if !got[o].Equals(roaring64.BitmapOf(rows...)) {
					t.Errorf("output %d: got %v want %v", o, got[o].ToArray(), rows)
				}
			}
		})
	}
}

func TestCheck(t *testing.T) {
	deleted := map[string]int64{"a": 0, "b": 2, "c": 0}
	good := func() []Run {
		return []Run{
			{Source: "a", Output: 0, RowOffsetInTarget: 0, SourceNumPhysicalRecords: 5, LiveRows: 5},
			{Source: "b", Output: 0, RowOffsetInTarget: 5, SourceNumPhysicalRecords: 4, LiveRows: 2},
			{Source: "c", Output: 1, RowOffsetInTarget: 0, SourceNumPhysicalRecords: 3, LiveRows: 3},
		}
	}
	tests := []struct {
		name    string
		edit    func([]Run) []Run
		rows    []int64
		wantErr bool
	}{
		{name: "contiguous runs that sum to the outputs pass", edit: func(r []Run) []Run { return r }, rows: []int64{7, 3}},
		{name: "a gap between runs is refused", edit: func(r []Run) []Run { r[1].RowOffsetInTarget = 6; return r }, rows: []int64{7, 3}, wantErr: true},
		{name: "overlapping runs are refused", edit: func(r []Run) []Run { r[1].RowOffsetInTarget = 4; return r }, rows: []int64{7, 3}, wantErr: true},
		{name: "live rows that ignore the read-time DV are refused", edit: func(r []Run) []Run { r[1].LiveRows = 4; return r }, rows: []int64{9, 3}, wantErr: true},
		{name: "a source with two runs is refused", edit: func(r []Run) []Run { return append(r, r[2]) }, rows: []int64{7, 6}, wantErr: true},
		{name: "a missing source is refused", edit: func(r []Run) []Run { return r[:2] }, rows: []int64{7, 0}, wantErr: true},
		{name: "a run of a file that is not a source is refused", edit: func(r []Run) []Run { r[2].Source = "z"; return r }, rows: []int64{7, 3}, wantErr: true},
		{name: "a run in an output the job did not write is refused", edit: func(r []Run) []Run { r[2].Output = 2; return r }, rows: []int64{7, 3}, wantErr: true},
		{name: "an output with more rows than its runs is refused", edit: func(r []Run) []Run { return r }, rows: []int64{8, 3}, wantErr: true},
		{name: "a job without outputs and without live rows passes", edit: func(r []Run) []Run {
			for i := range r {
				r[i].Output, r[i].LiveRows, r[i].SourceNumPhysicalRecords = -1, 0, deleted[r[i].Source]
			}
			return r
		}, rows: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.edit(good()), deleted, tt.rows)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Check = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestCheckOrigins(t *testing.T) {
	orig := sliceOrigins{outputs: [][][2]int64{{{0, 0}, {0, 1}}, {{1, 0}}}}
	if err := CheckOrigins(orig, []int64{2, 1}); err != nil {
		t.Fatal(err)
	}
	for name, rows := range map[string][]int64{"fewer outputs": {3}, "more rows": {2, 2}} {
		if err := CheckOrigins(orig, rows); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
	if err := CheckOrigins(nil, []int64{1}); err == nil {
		t.Error("nil origin map: want an error")
	}
}
