package writer

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

func filepathGlob(dir string) ([]string, error) {
	return filepath.Glob(filepath.Join(dir, "*"))
}

func TestOriginMapLocatesRowsInMemoryAndSpilled(t *testing.T) {
	// A permutation of 3 sources' rows over outputs of 700, 0 (empty) and
	// 1300 rows, with DV-style gaps in the physical indexes.
	rng := rand.New(rand.NewPCG(3, 3))
	type origin struct {
		src  int
		phys int64
	}
	var all []origin
	for s := 0; s < 3; s++ {
		for p := int64(0); len(all) < (s+1)*2000/3; p++ {
			if rng.IntN(5) == 0 {
				continue // deleted at read time
			}
			all = append(all, origin{s, p})
		}
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	counts := []int64{700, 0, int64(len(all)) - 700}
	tests := []struct {
		name      string
		mem       int
		wantSpill bool
	}{
		{name: "in memory", mem: 1 << 20},
		{name: "spilled (bound of 100 entries)", mem: 100 * originEntrySize, wantSpill: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			m := NewOriginMap(dir, tt.mem)
			defer m.Close()
			i := 0
			for _, c := range counts {
				for k := int64(0); k < c; k++ {
					if err := m.Add(all[i].src, all[i].phys); err != nil {
						t.Fatal(err)
					}
					i++
				}
				if err := m.EndOutput(c); err != nil {
					t.Fatal(err)
				}
			}
			if m.Spilled() != tt.wantSpill {
				t.Fatalf("spilled %v, want %v", m.Spilled(), tt.wantSpill)
			}
			if entries, _ := filepathGlob(dir); len(entries) != 0 {
				t.Errorf("spill file visible: %v", entries)
			}
			// Ask for every 7th live row of source 1 plus rows that were
			// never live; expect exactly the live ones back, where written.
			want := map[int]*roaring64.Bitmap{}
			ask := roaring64.New()
			g := 0
			for o, c := range counts {
				for k := int64(0); k < c; k++ {
					if a := all[g]; a.src == 1 && a.phys%7 == 0 {
						ask.Add(uint64(a.phys))
						if want[o] == nil {
							want[o] = roaring64.New()
						}
						want[o].Add(uint64(k))
					}
					src, phys, err := m.Origin(o, k)
					if err != nil || src != all[g].src || phys != all[g].phys {
						t.Fatalf("Origin(%d, %d) = %d, %d, %v; want %v", o, k, src, phys, err, all[g])
					}
					g++
				}
			}
			ask.Add(1 << 40) // not a row of the source
			got, err := m.Locate(1, ask)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("Locate found rows in %d outputs, want %d", len(got), len(want))
			}
			for o, bm := range want {
				if got[o] == nil || !got[o].Equals(bm) {
					t.Errorf("output %d: got %v, want %v", o, got[o], bm)
				}
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Locate(1, ask); err == nil {
				t.Error("Locate after Close succeeded")
			}
		})
	}
}

func TestOriginMapRefusesMismatchedOutputCounts(t *testing.T) {
	m := NewOriginMap(os.TempDir(), 0)
	defer m.Close()
	for p := int64(0); p < 5; p++ {
		if err := m.Add(0, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.EndOutput(4); err == nil {
		t.Fatal("endOutput accepted 4 rows for 5 origins")
	}
	if _, err := m.Locate(0, roaring64.BitmapOf(1)); err == nil {
		t.Fatal("Locate on an unfinished map succeeded")
	}
}

func TestNilOriginMapClose(t *testing.T) {
	var m *OriginMap
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}
