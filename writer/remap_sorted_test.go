package writer

import (
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/compactord/compactord/composition"
)

// permutedJob simulates a sorted job over sources with the given physical
// row counts and read-time DVs: every live row is written once, in a random
// order, into outputs of outRows rows each. It returns the origin map and,
// for checking, where each (source, physical row) went.
func permutedJob(t *testing.T, physical []int64, readDVs []*roaring64.Bitmap, outRows int64, memBytes int) (*OriginMap, map[[2]int64][2]int64) {
	t.Helper()
	var rows [][2]int64
	for s, n := range physical {
		for p := int64(0); p < n; p++ {
			if readDVs[s] != nil && readDVs[s].Contains(uint64(p)) {
				continue
			}
			rows = append(rows, [2]int64{int64(s), p})
		}
	}
	rng := rand.New(rand.NewPCG(11, 12))
	rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	m := NewOriginMap(t.TempDir(), memBytes)
	t.Cleanup(func() { m.Close() })
	where := map[[2]int64][2]int64{}
	out, k := int64(0), int64(0)
	for _, r := range rows {
		if err := m.Add(int(r[0]), r[1]); err != nil {
			t.Fatal(err)
		}
		where[r] = [2]int64{out, k}
		k++
		if k == outRows {
			if err := m.EndOutput(k); err != nil {
				t.Fatal(err)
			}
			out, k = out+1, 0
		}
	}
	if k > 0 {
		if err := m.EndOutput(k); err != nil {
			t.Fatal(err)
		}
	}
	return m, where
}

// The writer's origin map serves composition.Sorted, in memory and spilled.
func TestSortedRemapThroughOriginMap(t *testing.T) {
	physical := []int64{300, 500, 200}
	readDVs := []*roaring64.Bitmap{nil, bmOf(0, 7, 499), bmOf(10, 11)}
	tests := []struct {
		name    string
		source  int
		read    *roaring64.Bitmap
		winner  *roaring64.Bitmap
		wantErr bool
	}{
		{name: "source without a read-time DV", source: 0, winner: bmOf(0, 1, 150, 299)},
		{name: "only incremental deletions are remapped", source: 1, read: readDVs[1], winner: bmOf(0, 7, 499, 8, 250, 498)},
		{name: "winner equal to the read-time DV remaps nothing", source: 2, read: readDVs[2], winner: bmOf(10, 11)},
		{name: "winner resurrecting a read-time deletion is refused", source: 2, read: readDVs[2], winner: bmOf(10, 12), wantErr: true},
		{name: "a deletion beyond the source's rows is refused", source: 0, winner: bmOf(5, 300), wantErr: true},
		{name: "a deletion of a row the job did not read live is refused", source: 1, read: bmOf(0, 7), winner: bmOf(0, 7, 499, 3), wantErr: true},
	}
	for _, mem := range []struct {
		name  string
		bytes int
	}{{"in memory", 0}, {"spilled", 120}} {
		m, where := permutedJob(t, physical, readDVs, 128, mem.bytes)
		if mem.bytes > 0 && !m.Spilled() {
			t.Fatal("origin map did not spill")
		}
		for _, tt := range tests {
			t.Run(mem.name+"/"+tt.name, func(t *testing.T) {
				got, err := composition.Sorted(m, tt.source, tt.read, tt.winner)
				if tt.wantErr {
					if err == nil {
						t.Fatalf("remap succeeded: %v", got)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				want := map[int]*roaring64.Bitmap{}
				inc := roaring64.AndNot(tt.winner, orEmpty(tt.read))
				for it := inc.Iterator(); it.HasNext(); {
					p := it.Next()
					w := where[[2]int64{int64(tt.source), int64(p)}]
					if want[int(w[0])] == nil {
						want[int(w[0])] = roaring64.New()
					}
					want[int(w[0])].Add(uint64(w[1]))
				}
				if len(got) != len(want) {
					t.Fatalf("deletions in %d outputs, want %d", len(got), len(want))
				}
				for o, b := range want {
					if got[o] == nil || !got[o].Equals(b) {
						t.Errorf("output %d: %v, want %v", o, got[o], b)
					}
				}
			})
		}
	}
}

func orEmpty(b *roaring64.Bitmap) *roaring64.Bitmap {
	if b == nil {
		return roaring64.New()
	}
	return b
}

func TestSortedRemapWithoutOriginMapIsRefused(t *testing.T) {
	if _, err := composition.Sorted(nil, 0, nil, bmOf(1)); err == nil {
		t.Fatal("remap without an origin map succeeded")
	}
}

func bmOf(xs ...uint64) *roaring64.Bitmap { return roaring64.BitmapOf(xs...) }
