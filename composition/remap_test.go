package composition

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

func bm(xs ...uint64) *roaring64.Bitmap { return roaring64.BitmapOf(xs...) }

func TestForward(t *testing.T) {
	tests := []struct {
		name    string
		read    *roaring64.Bitmap
		winner  *roaring64.Bitmap
		run     Run
		want    []uint64
		wantErr bool
	}{
		{name: "source without a read-time DV maps rows one to one after its offset",
			read: nil, winner: bm(0, 50, 99), run: Run{RowOffsetInTarget: 100, SourceNumPhysicalRecords: 100, LiveRows: 100}, want: []uint64{100, 150, 199}},
		{name: "only incremental deletions are remapped and later positions shift down",
			read: bm(10), winner: bm(10, 5, 50), run: Run{RowOffsetInTarget: 0, SourceNumPhysicalRecords: 100, LiveRows: 99}, want: []uint64{5, 49}},
		{name: "seed example: a pre-existing DV on an earlier row shifts by one",
			read: bm(0), winner: bm(0, 50), run: Run{RowOffsetInTarget: 199, SourceNumPhysicalRecords: 100, LiveRows: 99}, want: []uint64{199 + 49}},
		{name: "winner identical to read-time DV remaps nothing",
			read: bm(1, 2), winner: bm(1, 2), run: Run{RowOffsetInTarget: 7, SourceNumPhysicalRecords: 4, LiveRows: 2}, want: nil},
		{name: "winner that resurrects a read-time deletion is refused",
			read: bm(1, 2), winner: bm(2, 3), run: Run{RowOffsetInTarget: 0, SourceNumPhysicalRecords: 4, LiveRows: 2}, wantErr: true},
		{name: "empty winner over a non-empty read DV is refused",
			read: bm(1), winner: nil, run: Run{RowOffsetInTarget: 0, SourceNumPhysicalRecords: 4, LiveRows: 3}, wantErr: true},
		{name: "a deleted row beyond the physical rows is refused",
			read: nil, winner: bm(4), run: Run{RowOffsetInTarget: 0, SourceNumPhysicalRecords: 4, LiveRows: 4}, wantErr: true},
		{name: "a run whose length disagrees with physical minus read-time deletions is refused",
			read: bm(0), winner: bm(0, 1), run: Run{RowOffsetInTarget: 0, SourceNumPhysicalRecords: 4, LiveRows: 4}, wantErr: true},
		{name: "a run parsed from tags takes its length from physical minus read-time deletions",
			read: bm(1), winner: bm(0, 1, 3), run: Run{RowOffsetInTarget: 5, SourceNumPhysicalRecords: 4, LiveRows: Unknown, Output: Unknown}, want: []uint64{5, 7}},
		{name: "a run parsed from tags still refuses rows beyond the source",
			read: bm(1), winner: bm(1, 4), run: Run{RowOffsetInTarget: 5, SourceNumPhysicalRecords: 4, LiveRows: Unknown, Output: Unknown}, wantErr: true},
		{name: "a negative offset is refused",
			read: nil, winner: bm(0), run: Run{RowOffsetInTarget: -1, SourceNumPhysicalRecords: 4, LiveRows: 4}, wantErr: true},
		{name: "DBR v17 layout: third source at offset 5 with read-time DV {1}",
			read: bm(1), winner: bm(0, 1), run: Run{RowOffsetInTarget: 5, SourceNumPhysicalRecords: 2, LiveRows: 1}, want: []uint64{5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Forward(tt.read, tt.winner, tt.run)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("want error, got %v", got.ToArray())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g := got.ToArray(); !slices.Equal(g, tt.want) && !(len(g) == 0 && len(tt.want) == 0) {
				t.Fatalf("got %v want %v", g, tt.want)
			}
		})
	}
}

// TestForwardMatchesSimulation checks the closed form against a direct
// simulation of compaction: write the live rows of random sources in order,
// then delete rows by identity and compare positions.
func TestForwardMatchesSimulation(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		type row struct{ src, phys int }
		var out []row
		nsrc := 1 + r.IntN(4)
		reads := make([]*roaring64.Bitmap, nsrc)
		runs := make([]Run, nsrc)
		phys := make([]int, nsrc)
		for s := 0; s < nsrc; s++ {
			phys[s] = 1 + r.IntN(200)
			reads[s] = roaring64.New()
			for i := 0; i < phys[s]; i++ {
				if r.IntN(4) == 0 {
					reads[s].Add(uint64(i))
				}
			}
			start := int64(len(out))
			for i := 0; i < phys[s]; i++ {
				if !reads[s].Contains(uint64(i)) {
					out = append(out, row{s, i})
				}
			}
			runs[s] = Run{RowOffsetInTarget: start, SourceNumPhysicalRecords: int64(phys[s]), LiveRows: int64(len(out)) - start}
		}
		for s := 0; s < nsrc; s++ {
			w := reads[s].Clone()
			for i := 0; i < phys[s]; i++ {
				if r.IntN(5) == 0 {
					w.Add(uint64(i))
				}
			}
			got, err := Forward(reads[s], w, runs[s])
			if err != nil {
				t.Fatal(err)
			}
			want := roaring64.New()
			for pos, rw := range out {
				if rw.src == s && w.Contains(uint64(rw.phys)) {
					want.Add(uint64(pos))
				}
			}
			if !got.Equals(want) {
				t.Fatalf("trial %d source %d: got %v want %v", trial, s, got.ToArray(), want.ToArray())
			}
		}
	}
}
