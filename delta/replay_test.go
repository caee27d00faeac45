package delta

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/internal/deltatest"
)

// Reconciling a checkpoint's actions and then overlaying the commits'
// gives what applying every action in order to a map of keys gives, for
// any mix of adds and removes of one path with and without DVs, repeated
// keys within the checkpoint, and paths longer than several sort keys.
func TestReplayMatchesSequentialApply(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	dvs := []*deltaactions.DeletionVector{nil,
		{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*", SizeInBytes: 34, Cardinality: 1},
		{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*", Offset: ptrTo(int32(9)), SizeInBytes: 34, Cardinality: 2},
		{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@fTlm1", SizeInBytes: 40, Cardinality: 3}}
	for round := 0; round < 300; round++ {
		var paths []string
		for i := 0; i < 1+r.IntN(12); i++ {
			paths = append(paths, fmt.Sprintf("day=2024-01-%02d/part-%05d-6f1c0e2a-%s-c000.snappy.parquet", r.IntN(3), r.IntN(4), strings.Repeat("x", r.IntN(40))))
		}
		var actions []deltaactions.Action
		for i := r.IntN(60); i > 0; i-- {
			p, dv := paths[r.IntN(len(paths))], dvs[r.IntN(len(dvs))]
			if r.IntN(3) == 0 {
				actions = append(actions, deltaactions.Action{Remove: &deltaactions.Remove{Path: p, DeletionVector: dv}})
			} else {
				actions = append(actions, deltaactions.Action{Add: &deltaactions.Add{Path: p, DeletionVector: dv}})
			}
		}
		// The model: apply in order to maps by key.
		adds, rms := map[string]*deltaactions.Add{}, map[string]*deltaactions.Remove{}
		for _, a := range actions {
			if a.Add != nil {
				adds[a.Add.FileKey()] = a.Add
				delete(rms, a.Add.FileKey())
			} else {
				rms[a.Remove.FileKey()] = a.Remove
				delete(adds, a.Remove.FileKey())
			}
		}
		cut := r.IntN(len(actions) + 1)
		cpAdds, cpRms := reconcile(FileKeys{}, entriesOf(actions[:cut]))
		newAdds, newRms := reconcile(FileKeys{}, entriesOf(actions[cut:]))
		gotAdds, gotRms := overlayFiles(FileKeys{}, cpAdds, cpRms, newAdds, newRms)
		checkReplayed(t, round, gotAdds, adds, FileKeys{}.add)
		checkReplayed(t, round, gotRms, rms, FileKeys{}.remove)
		// Advance's path: the base is an earlier result.
		againAdds, againRms := overlayFiles(FileKeys{}, sortedByKey(gotAdds, FileKeys{}.add), sortedByKey(gotRms, FileKeys{}.remove), nil, nil)
		if !slices.Equal(againAdds, gotAdds) || !slices.Equal(againRms, gotRms) {
			t.Fatalf("round %d: an empty overlay changed the files", round)
		}
	}
}

func entriesOf(actions []deltaactions.Action) []fileEntry {
	r := newReplay(len(actions))
	if err := r.apply(actions, false); err != nil {
		panic(err)
	}
	return r.files
}

// checkReplayed checks that got holds exactly the actions of want (by
// identity), sorted by key.
func checkReplayed[T comparable](t *testing.T, round int, got []T, want map[string]T, key func(T) (string, *deltaactions.DeletionVector)) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("round %d: %d entries, want %d", round, len(got), len(want))
	}
	for i, x := range got {
		p, dv := key(x)
		if want[p+"\x00"+dv.UniqueID()] != x {
			t.Fatalf("round %d: entry %s %s is not the last action of its key", round, p, dv.UniqueID())
		}
		if i > 0 {
			pp, pdv := key(got[i-1])
			if cmpFileKey(pp, pdv, p, dv) >= 0 {
				t.Fatalf("round %d: %s before %s: not sorted by key", round, pp, p)
			}
		}
	}
}

// sortByPath keeps equal elements in their input order.
func TestSortByPathIsStable(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	type item struct {
		path string
		n    int
	}
	for round := 0; round < 100; round++ {
		var xs []item
		n := 2 + r.IntN(300)
		if round%4 == 0 {
			n = 2 + r.IntN(3000) // runs of equal paths longer than an insertion sort's
		}
		for i := 0; i < n; i++ {
			xs = append(xs, item{fmt.Sprintf("p/%s%d", strings.Repeat("y", r.IntN(3)*20), r.IntN(5)), i})
		}
		sortByPath(xs, func(x item) string { return x.path }, func(a, b item) int { return 0 })
		want := slices.Clone(xs)
		slices.SortStableFunc(want, func(a, b item) int { return strings.Compare(a.path, b.path) })
		if !slices.Equal(xs, want) {
			t.Fatalf("round %d: not a stable sort", round)
		}
	}
}

// BenchmarkSortByPath sorts the entries of a million-file checkpoint (the
// benchmark table's paths, in its order) as snapshot loading does.
func BenchmarkSortByPath(b *testing.B) {
	const n = 1_000_000
	entries := make([]fileEntry, n)
	for i := range entries {
		entries[i] = fileEntry{add: &deltaactions.Add{Path: deltatest.BenchPath(i)}}
	}
	work := make([]fileEntry, n)
	b.ReportAllocs()
	for b.Loop() {
		copy(work, entries)
		sortByPath(work, fileEntry.path, func(a, b fileEntry) int { return 0 })
	}
}

// Many paths that share more than a key's bytes after their common
// prefix (files of many jobs in one deep partition, each job's part
// 00000) sort by the bytes past the key, in input order where equal.
func TestSortByPathOfPathsLongerThanAKey(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	deep := "country=XX/region=some-long-region-name/date=2024-01-01/hour=05/part-00000-"
	type item struct {
		path string
		n    int
	}
	var xs []item
	for i := 0; i < 5000; i++ {
		xs = append(xs, item{fmt.Sprintf("%s%s%08x", []string{"a/", "b/"}[r.IntN(2)], deep, r.IntN(2000)), i})
	}
	sortByPath(xs, func(x item) string { return x.path }, func(a, b item) int { return 0 })
	if !slices.IsSortedFunc(xs, func(a, b item) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return cmp.Compare(a.n, b.n)
	}) {
		t.Fatal("not sorted by path, then input order")
	}
}
