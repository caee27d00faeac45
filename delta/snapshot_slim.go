package delta

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unique"

	"github.com/compactord/compactord/delta/actions"
	deltastats "github.com/compactord/compactord/delta/stats"
)

// Slim returns a copy of s for a poller to hold between polls: no
// tombstones, and every file's stats cut down to numRecords plus, for
// each physical column path of columns, its minValues, maxValues and
// nullCount (what planning reads: the clustering columns). Everything
// else of a file is kept (an empty partitionValues map as nil, which reads
// and is written the same). Planning a slim snapshot gives the plan of s.
//
// A slim snapshot must never be committed against or checkpointed (its
// stats are not the log's): IsSlim reports it, and WriteCheckpoint
// refuses it. Files of prev (a slim snapshot of the same table, or nil)
// that s shares by pointer, as Advance shares them, are reused as they
// are when prev was cut to the same columns.
func (s *Snapshot) Slim(columns [][]string, prev *Snapshot) (*Snapshot, error) {
	if !s.SlimmableTo(columns) {
		return nil, fmt.Errorf("version %d: the snapshot's stats are cut to other columns already: load it whole to cut it to these", s.Version)
	}
	out := *s
	out.Tombstones = nil
	out.slim = &slimInfo{columns: columns}
	// Empty maps read as nil ones and are written as empty ones
	// (actions' MarshalJSON): a slim snapshot, held between polls by the
	// thousand, keeps none.
	out.Txns, out.Domains = nilIfEmpty(out.Txns), nilIfEmpty(out.Domains)
	out.Metadata.Format.Options = nilIfEmpty(out.Metadata.Format.Options)
	out.Metadata.Configuration = nilIfEmpty(out.Metadata.Configuration)
	reuse := prev != nil && prev.slim != nil && slices.EqualFunc(prev.slim.columns, columns, slices.Equal[[]string])
	out.Files = make([]*actions.Add, len(s.Files))
	// The cut files are allocated slimChunk at a time, not one by one: a
	// small table's few files are one object instead of a few among its
	// first poll's garbage, and a file removed later keeps at most a
	// chunk of its neighbours' memory alive.
	var chunk []actions.Add
	j := 0
	for i, a := range s.Files {
		if reuse {
			for j < len(prev.Files) && prev.Files[j].Path < a.Path {
				j++
			}
			if j < len(prev.Files) && prev.Files[j] == a {
				out.Files[i] = a
				continue
			}
		}
		stats, err := slimStats(a, columns)
		if err != nil {
			return nil, fmt.Errorf("version %d: file %s: %w", s.Version, a.Path, err)
		}
		if len(chunk) == cap(chunk) {
			packPaths(chunk)
			chunk = make([]actions.Add, 0, min(slimChunk, len(s.Files)-i))
		}
		chunk = append(chunk, *a)
		na := &chunk[len(chunk)-1]
		na.Stats, na.ParsedStats = stats, nil
		// An unpartitioned file's empty map, as the log's JSON gave it:
		// nil reads the same and is written as {} (actions' MarshalJSON,
		// and the tombstones and jobs made from an add).
		na.PartitionValues = nilIfEmpty(na.PartitionValues)
		out.Files[i] = na
	}
	packPaths(chunk)
	return &out, nil
}

// packPaths makes the paths of files one string: the paths decoding the
// log left each in its own allocation, among the garbage of the load.
func packPaths(files []actions.Add) {
	if len(files) < 2 {
		return
	}
	var b strings.Builder
	n := 0
	for i := range files {
		n += len(files[i].Path)
	}
	b.Grow(n)
	for i := range files {
		b.WriteString(files[i].Path)
	}
	all := b.String()
	for i := range files {
		n := len(files[i].Path)
		files[i].Path, all = all[:n], all[n:]
	}
}

// IsSlim reports whether s came from Slim (or from Advance of a slim
// snapshot).
func (s *Snapshot) IsSlim() bool { return s.slim != nil }

// SlimmableTo reports whether Slim(columns, ...) can cut s: s is whole, or
// slim and cut to exactly these columns (an advanced slim snapshot whose
// new files are still whole). A snapshot cut to other columns has lost
// stats that columns may need.
func (s *Snapshot) SlimmableTo(columns [][]string) bool {
	return s.slim == nil || slices.EqualFunc(s.slim.columns, columns, slices.Equal[[]string])
}

// slimChunk is how many cut files Slim allocates together at most.
const slimChunk = 16

// slimInfo is what Slim kept.
type slimInfo struct{ columns [][]string }

// slimStats returns a's stats as JSON cut to numRecords and the
// statistics of columns ("" when a has none).
func slimStats(a *actions.Add, columns [][]string) (string, error) {
	if len(columns) == 0 {
		n, ok, err := a.NumRecords()
		if err != nil || !ok {
			return "", err
		}
		// The same few strings over and over (files of a table, tables of
		// a fleet, often hold as many rows): one copy of each.
		return unique.Make(`{"numRecords":` + strconv.FormatInt(n, 10) + `}`).Value(), nil
	}
	st, err := a.FullStats()
	if err != nil || st == nil {
		return "", err
	}
	cut := deltastats.Stats{NumRecords: st.NumRecords}
	for _, c := range columns {
		cut.MinValues = copyStat(cut.MinValues, st.MinValues, c)
		cut.MaxValues = copyStat(cut.MaxValues, st.MaxValues, c)
		cut.NullCount = copyStat(cut.NullCount, st.NullCount, c)
	}
	b, err := json.Marshal(cut)
	if err != nil {
		return "", fmt.Errorf("stats: %w", err)
	}
	return unique.Make(string(b)).Value(), nil
}

// nilIfEmpty is m, or nil when m is empty.
func nilIfEmpty[M ~map[K]V, K comparable, V any](m M) M {
	if len(m) == 0 {
		return nil
	}
	return m
}

// copyStat copies the value at path of the nested stats map from into
// to (created when needed), nesting it the same way.
func copyStat(to, from map[string]any, path []string) map[string]any {
	v, ok := from[path[0]]
	if !ok {
		return to
	}
	if len(path) > 1 {
		sub, _ := v.(map[string]any)
		if sub == nil {
			return to
		}
		prev, _ := to[path[0]].(map[string]any)
		inner := copyStat(prev, sub, path[1:])
		if inner == nil {
			return to
		}
		v = inner
	}
	if to == nil {
		to = map[string]any{}
	}
	to[path[0]] = v
	return to
}
