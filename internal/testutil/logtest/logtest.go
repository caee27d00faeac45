// Package logtest builds Delta logs for the tests of the log operations
// (checkpoints, log cleanup): real commit files written through the
// table's put-if-absent log store, with adds, removes, txns and domains,
// whose data files do not exist (the operations never read them), and
// commit times set on the files as a clock would have left them; and a
// log store whose put has an unknown outcome (AmbiguousLog).
//
// It must not be imported by production code.
package logtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
)

// Spec describes the table Build creates.
type Spec struct {
	// Protocol of version 0 (default reader 1 / writer 2).
	Protocol *deltaactions.Protocol
	// Configuration of the metadata (table properties).
	Configuration map[string]string
	// Partitioned makes the table partitioned by "p" (string).
	Partitioned bool
}

// Schema is the table schema Build writes.
const Schema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},{"name":"p","type":"string","nullable":true,"metadata":{}}]}`

// Create writes version 0 (protocol + metaData) into an empty table dir and
// opens it.
func Create(t testing.TB, dir string, spec Spec) *delta.Table {
	t.Helper()
	tbl, err := delta.OpenTable(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	p := deltaactions.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	if spec.Protocol != nil {
		p = *spec.Protocol
	}
	created := int64(1_600_000_000_000)
	m := deltaactions.Metadata{ID: "logtest", Format: deltaactions.Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString: Schema, PartitionColumns: []string{}, Configuration: spec.Configuration, CreatedTime: &created}
	if m.Configuration == nil {
		m.Configuration = map[string]string{}
	}
	if spec.Partitioned {
		m.PartitionColumns = []string{"p"}
	}
	Commit(t, tbl, 0, deltaactions.Action{Protocol: &p}, deltaactions.Action{Metadata: &m})
	return tbl
}

// Commit writes version v with the given actions (a commitInfo first,
// engineInfo "logtest").
func Commit(t testing.TB, tbl *delta.Table, v int64, actions ...deltaactions.Action) {
	t.Helper()
	CommitAs(t, tbl, v, "logtest", actions...)
}

// CommitAs is Commit with the given commitInfo.engineInfo.
func CommitAs(t testing.TB, tbl *delta.Table, v int64, engine string, actions ...deltaactions.Action) {
	t.Helper()
	ci := deltaactions.CommitInfo{"timestamp": json.RawMessage(fmt.Sprint(1_600_000_000_000 + v)), "operation": json.RawMessage(`"WRITE"`),
		"txnId": json.RawMessage(fmt.Sprintf(`"logtest-%d"`, v)), "engineInfo": json.RawMessage(fmt.Sprintf("%q", engine))}
	body, err := deltaactions.MarshalAction(deltaactions.Action{CommitInfo: ci})
	if err != nil {
		t.Fatal(err)
	}
	body = append(body, '\n')
	for _, a := range actions {
		b, err := deltaactions.MarshalAction(a)
		if err != nil {
			t.Fatal(err)
		}
		body = append(append(body, b...), '\n')
	}
	if err := tbl.Log.PutIfAbsent(context.Background(), logpath.CommitKey(v), body); err != nil {
		t.Fatal(err)
	}
}

// AddFile returns an add of a (never written) data file with JSON stats.
func AddFile(name string, part string, rows int64) *deltaactions.Add {
	pv := map[string]*string{}
	if part != "" {
		pv["p"] = &part
	}
	return &deltaactions.Add{Path: name, PartitionValues: pv, Size: 1000 + rows, ModificationTime: 1_600_000_000_000, DataChange: true,
		Stats: fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":1,"ts":"2020-09-13T12:26:40.000Z"},"maxValues":{"id":%d,"ts":"2020-09-13T12:26:41.000Z"},"nullCount":{"id":0,"ts":0}}`, rows, rows),
		Tags:  map[string]string{"INSERTION_TIME": "1600000000000000"}}
}

// RemoveFile returns a remove of a at deletionTimestamp ts.
func RemoveFile(a *deltaactions.Add, ts int64) *deltaactions.Remove {
	ext := true
	size := a.Size
	return &deltaactions.Remove{Path: a.Path, DeletionTimestamp: &ts, DataChange: true, ExtendedFileMetadata: &ext,
		PartitionValues: a.PartitionValues, Size: &size, Stats: a.Stats, Tags: a.Tags}
}

// Grow appends commits from..to (inclusive): each adds two files and
// removes one of the previous commit's, and every fifth sets a txn.
func Grow(t testing.TB, tbl *delta.Table, from, to int64, partitioned bool) {
	t.Helper()
	for v := from; v <= to; v++ {
		part := ""
		if partitioned {
			part = fmt.Sprintf("p%d", v%3)
		}
		acts := []deltaactions.Action{
			{Add: AddFile(fmt.Sprintf("part-%05d-a.parquet", v), part, v+1)},
			{Add: AddFile(fmt.Sprintf("part-%05d-b.parquet", v), part, v+2)},
		}
		if v > 1 {
			prevPart := ""
			if partitioned {
				prevPart = fmt.Sprintf("p%d", (v-1)%3)
			}
			acts = append(acts, deltaactions.Action{Remove: RemoveFile(AddFile(fmt.Sprintf("part-%05d-a.parquet", v-1), prevPart, v), 1_600_000_000_000+v*1000)})
		}
		if v%5 == 0 {
			lu := 1_600_000_000_000 + v
			acts = append(acts, deltaactions.Action{Txn: &deltaactions.Txn{AppID: "app", Version: v, LastUpdated: &lu}})
		}
		Commit(t, tbl, v, acts...)
	}
}

// SetTimes sets the modification time of every file of version v in the
// log (commits, checkpoints, checksums) to at(v).
func SetTimes(t testing.TB, dir string, at func(v int64) time.Time) {
	t.Helper()
	l, err := delta.ListLog(context.Background(), Open(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Entries {
		ts := at(e.Version)
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(e.Key)), ts, ts); err != nil {
			t.Fatal(err)
		}
	}
}

// Open opens the table directory dir through delta.OpenTable (a file://
// URL), closed when the test ends.
func Open(t testing.TB, dir string) *delta.Table {
	t.Helper()
	tbl, err := delta.OpenTable(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	return tbl
}

// State is a snapshot's content in comparable form.
type State struct {
	Version    int64
	Protocol   string
	Metadata   string
	Files      []string
	Tombstones []string
	Txns       map[string]int64
	Domains    map[string]string
}

// StateOf renders a snapshot: files with DVs, sizes, partition values,
// stats; tombstones by path, DV and deletion time.
func StateOf(s *delta.Snapshot) State {
	st := State{Version: s.Version, Txns: map[string]int64{}, Domains: map[string]string{}}
	p, _ := json.Marshal(NormProtocol(s.Protocol))
	st.Protocol = string(p)
	m := s.Metadata
	m.Extra = nil
	mb, _ := json.Marshal(m)
	st.Metadata = string(mb)
	for _, f := range s.Files {
		pv, _ := json.Marshal(f.PartitionValues)
		dv, _ := json.Marshal(f.DeletionVector)
		st.Files = append(st.Files, fmt.Sprintf("%s|%d|%s|%s|%s", f.Path, f.Size, pv, dv, f.Stats))
	}
	for _, r := range s.Tombstones {
		var ts int64
		if r.DeletionTimestamp != nil {
			ts = *r.DeletionTimestamp
		}
		st.Tombstones = append(st.Tombstones, fmt.Sprintf("%s|%s|%d", r.Path, r.DeletionVector.UniqueID(), ts))
	}
	sort.Strings(st.Files)
	sort.Strings(st.Tombstones)
	for k, v := range s.Txns {
		st.Txns[k] = v.Version
	}
	for k, v := range s.Domains {
		st.Domains[k] = v.Configuration
	}
	return st
}

// NormProtocol is p as two readers of one protocol compare it: no unknown
// fields, empty feature lists as none.
func NormProtocol(p deltaactions.Protocol) deltaactions.Protocol {
	p.Extra = nil
	if len(p.ReaderFeatures) == 0 {
		p.ReaderFeatures = nil
	}
	if len(p.WriterFeatures) == 0 {
		p.WriterFeatures = nil
	}
	return p
}

// SameState reports whether two states are equal.
func SameState(a, b State) bool { return reflect.DeepEqual(a, b) }
