package delta

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/tablepath"
)

// Log replay without a map of every file: the file actions of a
// checkpoint, and those of the commits after it, are each sorted by their
// logical key (path, then DV unique id) with the last action of a key
// winning; the commits' then replace the checkpoint's of the same key in a
// merge. The result comes out sorted, and a snapshot of a million files
// costs a sort instead of a million-entry hash map and a sort.

// replay accumulates log actions in version order.
type replay struct {
	protocol *deltaactions.Protocol
	metadata *deltaactions.Metadata
	// files are the file actions applied, in order.
	files   []fileEntry
	txns    map[string]deltaactions.Txn
	domains map[string]deltaactions.DomainMetadata
}

// fileEntry is one add or remove action (exactly one is set).
type fileEntry struct {
	add *deltaactions.Add
	rm  *deltaactions.Remove
}

func (e fileEntry) path() string {
	if e.add != nil {
		return e.add.Path
	}
	return e.rm.Path
}

func (e fileEntry) dv() *deltaactions.DeletionVector {
	if e.add != nil {
		return e.add.DeletionVector
	}
	return e.rm.DeletionVector
}

func newReplay(sizeHint int) *replay {
	return &replay{
		files:   make([]fileEntry, 0, sizeHint),
		txns:    map[string]deltaactions.Txn{},
		domains: map[string]deltaactions.DomainMetadata{},
	}
}

// apply applies one commit (or a checkpoint: fromCheckpoint) in order.
// Within a commit the protocol allows remove(path, oldDV) with
// add(path, newDV); keys differ, so order does not matter.
func (r *replay) apply(actions []deltaactions.Action, fromCheckpoint bool) error {
	for i := range actions {
		a := &actions[i]
		switch {
		case a.Add != nil:
			r.files = append(r.files, fileEntry{add: a.Add})
		case a.Remove != nil:
			r.files = append(r.files, fileEntry{rm: a.Remove})
		case a.Protocol != nil:
			r.protocol = a.Protocol
		case a.Metadata != nil:
			r.metadata = a.Metadata
		case a.Txn != nil:
			r.txns[a.Txn.AppID] = *a.Txn
		case a.DomainMetadata != nil:
			if a.DomainMetadata.Removed {
				delete(r.domains, a.DomainMetadata.Domain)
			} else {
				r.domains[a.DomainMetadata.Domain] = *a.DomainMetadata
			}
		case a.CheckpointMetadata != nil, a.Sidecar != nil:
			if !fromCheckpoint {
				return fmt.Errorf("%s action outside a checkpoint", a.Kind())
			}
		}
	}
	return nil
}

// FileKeys gives each file action path of a table its replay key: the
// canonical key inside the table root (tablepath.Root.ReplayKey), so that
// one file spelled two ways (relative and absolute, or encoded otherwise)
// is one key, as Spark's replay matches them. Log replay matches adds and
// removes by it, and so must every check of a winning commit's actions
// against the files a transaction read. The zero value keys a path by
// itself.
type FileKeys struct {
	root *tablepath.Root
}

// FileKeys returns the file keys of t (by path itself when its URL has no
// root, which opening the table would have refused).
func (t *Table) FileKeys() FileKeys {
	root, err := tablepath.ParseRoot(t.URL)
	if err != nil {
		return FileKeys{}
	}
	return FileKeys{root: &root}
}

// Of returns path's replay key.
func (k FileKeys) Of(path string) string {
	if k.root == nil {
		return path
	}
	return k.root.ReplayKey(path)
}

func (k FileKeys) add(a *deltaactions.Add) (string, *deltaactions.DeletionVector) {
	return k.Of(a.Path), a.DeletionVector
}

func (k FileKeys) remove(r *deltaactions.Remove) (string, *deltaactions.DeletionVector) {
	return k.Of(r.Path), r.DeletionVector
}

// cmpFileKey orders logical file keys: by path, then DV unique id (built
// only when the paths are equal).
func cmpFileKey(p1 string, dv1 *deltaactions.DeletionVector, p2 string, dv2 *deltaactions.DeletionVector) int {
	if c := strings.Compare(p1, p2); c != 0 {
		return c
	}
	if dv1 == nil || dv2 == nil {
		// No DV sorts first: its unique id is "".
		return cmp.Compare(boolInt(dv1 != nil), boolInt(dv2 != nil))
	}
	return strings.Compare(dv1.UniqueID(), dv2.UniqueID())
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// reconcile returns the live adds and the tombstones of entries (in log
// order: the last action of a key wins), each sorted by key.
func reconcile(keys FileKeys, entries []fileEntry) ([]*deltaactions.Add, []*deltaactions.Remove) {
	same := sortByPath(entries, func(e fileEntry) string { return keys.Of(e.path()) }, func(a, b fileEntry) int {
		return cmpFileKey("", a.dv(), "", b.dv())
	})
	adds := make([]*deltaactions.Add, 0, len(entries))
	var rms []*deltaactions.Remove
	for i, e := range entries {
		// A later action of the same key wins: entries[i+1] has the key
		// of entries[i] when their paths are the same and so are their DVs.
		if len(same) > 0 && same[0] == i+1 {
			same = same[1:]
			if cmpFileKey("", e.dv(), "", entries[i+1].dv()) == 0 {
				continue
			}
		}
		if e.add != nil {
			adds = append(adds, e.add)
		} else {
			rms = append(rms, e.rm)
		}
	}
	return slices.Clip(adds), rms
}

// overlayFiles returns the files and tombstones of base (each sorted by
// key, keys unique) after the reconciled actions of later commits (adds
// and rms, as reconcile returns them): a key the commits act on takes the
// commits' action, whatever base held for it.
func overlayFiles(keys FileKeys, baseAdds []*deltaactions.Add, baseRms []*deltaactions.Remove, adds []*deltaactions.Add, rms []*deltaactions.Remove) ([]*deltaactions.Add, []*deltaactions.Remove) {
	return overlay(keys, baseAdds, adds, adds, rms, keys.add), overlay(keys, baseRms, rms, adds, rms, keys.remove)
}

// overlay merges base without the keys of adds and rms with over (all
// sorted by key). The few keys of the commits are looked up in base, which
// is copied in runs between them: base's files are not read.
func overlay[T any](keys FileKeys, base, over []T, adds []*deltaactions.Add, rms []*deltaactions.Remove, key func(T) (string, *deltaactions.DeletionVector)) []T {
	find := func(p string, dv *deltaactions.DeletionVector) (int, bool) {
		return slices.BinarySearchFunc(base, 0, func(b T, _ int) int {
			bp, bdv := key(b)
			return cmpFileKey(bp, bdv, p, dv)
		})
	}
	var drop []int
	for _, a := range adds {
		if i, ok := find(keys.add(a)); ok {
			drop = append(drop, i)
		}
	}
	for _, r := range rms {
		if i, ok := find(keys.remove(r)); ok {
			drop = append(drop, i)
		}
	}
	slices.Sort(drop)
	drop = slices.Compact(drop)
	out := make([]T, 0, len(base)+len(over)-len(drop))
	// appendBase appends base[lo:hi] without the dropped indexes.
	appendBase := func(lo, hi int) {
		for len(drop) > 0 && drop[0] < hi {
			out = append(out, base[lo:drop[0]]...)
			lo = drop[0] + 1
			drop = drop[1:]
		}
		out = append(out, base[lo:hi]...)
	}
	cur := 0
	for _, o := range over {
		pos, _ := find(key(o))
		appendBase(cur, pos)
		out = append(out, o)
		cur = pos
	}
	appendBase(cur, len(base))
	return out
}

// sortByPath sorts xs stably by path (byte order), then by tie. Comparing
// a million paths through their actions misses the cache twice a
// comparison, so each is given a key, read in one pass in input order: the
// keyBytes bytes after the prefix all paths share, big endian, with the
// element's index, and the keys are radix sorted (radixKeyed). Runs of
// equal keys are then sorted by the next keyBytes bytes of their paths,
// and so on; only paths that are equal (or differ past their last key)
// compare as strings. The key is long enough for the paths
// engines write (a partition directory, part-NNNNN, a job's UUID) to
// differ within it, so the recursion, whose reads follow the sorted order
// and miss the cache, is rare.
//
// same lists, in increasing order, the indexes i of the sorted xs whose
// path is the path of xs[i-1].
func sortByPath[T any](xs []T, path func(T) string, tie func(a, b T) int) (same []int) {
	if len(xs) < 2 {
		return nil
	}
	first := path(xs[0])
	lcp := len(first)
	for _, x := range xs[1:] {
		p := path(x)
		n := min(lcp, len(p))
		i := 0
		for i < n && p[i] == first[i] {
			i++
		}
		lcp = i
	}
	// The keys hold no pointer (the collector does not scan them) and are
	// smaller to move than keys that carry their element.
	ks := make([]keyed, len(xs))
	for i := range ks {
		ks[i].i = i
	}
	sortKeyed(ks, 0, lcp, func(i int) string { return path(xs[i]) }, func(i, j int) int { return tie(xs[i], xs[j]) }, &same)
	// A gather: its reads are independent, where following the
	// permutation's cycles in place waits for one cache miss at a time.
	sorted := make([]T, len(xs))
	for i := range ks {
		sorted[i] = xs[ks[i].i]
	}
	copy(xs, sorted)
	return same
}

// keyBytes is the length of a sortByPath key.
const keyBytes = 64

// keyed is an element of sortByPath: keyBytes bytes of its path from some
// offset, and its index in the input (its element, and a stable order).
type keyed struct {
	k [keyBytes / 8]uint64
	i int
}

// cmpKeys orders two keys as their bytes.
func cmpKeys(a, b *[keyBytes / 8]uint64) int {
	for w := range a {
		if a[w] != b[w] {
			return cmp.Compare(a[w], b[w])
		}
	}
	return 0
}

// sortKeyed sorts ks (whose paths share their first off bytes; ks starts
// at index at of the whole) and appends to same the indexes whose path is
// their predecessor's. path and tie take input indexes.
func sortKeyed(ks []keyed, at, off int, path func(int) string, tie func(i, j int) int, same *[]int) {
	longest := 0
	for j := range ks {
		p := path(ks[j].i)
		longest = max(longest, len(p))
		var b [keyBytes]byte
		if off < len(p) {
			copy(b[:], p[off:])
		}
		for w := range ks[j].k {
			ks[j].k[w] = binary.BigEndian.Uint64(b[w*8:])
		}
	}
	radixKeyed(ks, 0)
	// Runs of equal keys: paths that are equal (or differ past the key).
	for lo := 0; lo < len(ks); {
		hi := lo + 1
		for hi < len(ks) && ks[hi].k == ks[lo].k {
			hi++
		}
		switch {
		case hi-lo == 1:
		case longest > off+keyBytes:
			sortKeyed(ks[lo:hi], at+lo, off+keyBytes, path, tie, same)
		default:
			// The keys hold every remaining byte: equal keys are equal
			// paths or paths that differ in trailing zero bytes.
			run := ks[lo:hi]
			slices.SortFunc(run, func(a, b keyed) int {
				if c := strings.Compare(pathFrom(path(a.i), off), pathFrom(path(b.i), off)); c != 0 {
					return c
				}
				if c := tie(a.i, b.i); c != 0 {
					return c
				}
				return cmp.Compare(a.i, b.i)
			})
			for j := lo + 1; j < hi; j++ {
				if path(ks[j].i) == path(ks[j-1].i) {
					*same = append(*same, at+j)
				}
			}
		}
		lo = hi
	}
}

// radixKeyed sorts ks by key from byte d of the key (the bytes before it
// are equal in all of ks): a most-significant-byte radix sort in place
// (American flag sort), which reads and moves each key a few times
// instead of comparing it some twenty times; small runs are insertion
// sorted. Equal keys are left in any order: sortKeyed orders them.
func radixKeyed(ks []keyed, d int) {
	for len(ks) > 32 {
		if d == keyBytes {
			return // all keys equal
		}
		w, sh := d/8, uint(56-8*(d%8))
		digit := func(x *keyed) byte { return byte(x.k[w] >> sh) }
		var count [256]int
		for j := range ks {
			count[digit(&ks[j])]++
		}
		if count[digit(&ks[0])] == len(ks) {
			d++ // one byte for all: the next decides
			continue
		}
		var start, next [256]int
		sum := 0
		for b := range count {
			start[b] = sum
			sum += count[b]
		}
		next = start
		for b := range count {
			end := start[b] + count[b]
			for next[b] < end {
				x := ks[next[b]]
				for c := digit(&x); c != byte(b); c = digit(&x) {
					x, ks[next[c]] = ks[next[c]], x
					next[c]++
				}
				ks[next[b]] = x
				next[b]++
			}
		}
		for b := range count {
			if count[b] > 1 {
				radixKeyed(ks[start[b]:start[b]+count[b]], d+1)
			}
		}
		return
	}
	for j := 1; j < len(ks); j++ {
		x := ks[j]
		m := j
		for m > 0 && cmpKeys(&x.k, &ks[m-1].k) < 0 {
			ks[m] = ks[m-1]
			m--
		}
		ks[m] = x
	}
}

// pathFrom returns p from byte off ("" when p is shorter).
func pathFrom(p string, off int) string {
	if off >= len(p) {
		return ""
	}
	return p[off:]
}
