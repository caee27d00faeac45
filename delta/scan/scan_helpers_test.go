package scan

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/internal/deltatest"
	"github.com/compactord/compactord/delta/schema"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob"
)

// openScanTable opens a directory as a Table through a file:// bucket.
func openScanTable(t testing.TB, dir string) *delta.Table {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	u := "file://" + abs
	b, err := blob.OpenBucket(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return &delta.Table{URL: u, Bucket: b}
}

// replayJSONLog builds a snapshot from the JSON commits alone (no
// checkpoints), independently of the package's log replay. It reports false
// when the log does not start at version 0.
func replayJSONLog(t testing.TB, root string) (*delta.Snapshot, bool) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "_delta_log", "[0-9]*.json"))
	var commits []string
	for _, f := range files {
		base := filepath.Base(f)
		if len(base) == 25 { // 20 digits + ".json"
			commits = append(commits, f)
		}
	}
	sort.Strings(commits)
	if len(commits) == 0 || filepath.Base(commits[0]) != "00000000000000000000.json" {
		return nil, false
	}
	snap := &delta.Snapshot{}
	live := map[string]*actions.Add{}
	for i, p := range commits {
		deltatest.EachLogLine(t, p, func(raw []byte) {
			var line struct {
				MetaData *actions.Metadata `json:"metaData"`
				Protocol *actions.Protocol `json:"protocol"`
				Add      *struct {
					Path            string                  `json:"path"`
					PartitionValues map[string]*string      `json:"partitionValues"`
					Size            int64                   `json:"size"`
					DeletionVector  *actions.DeletionVector `json:"deletionVector"`
				} `json:"add"`
				Remove *struct {
					Path           string                  `json:"path"`
					DeletionVector *actions.DeletionVector `json:"deletionVector"`
				} `json:"remove"`
			}
			if err := json.Unmarshal(raw, &line); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			switch {
			case line.MetaData != nil:
				snap.Metadata = *line.MetaData
			case line.Protocol != nil:
				snap.Protocol = *line.Protocol
			case line.Add != nil:
				a := &actions.Add{Path: line.Add.Path, PartitionValues: line.Add.PartitionValues, Size: line.Add.Size, DeletionVector: line.Add.DeletionVector}
				for k, old := range live {
					if old.Path == a.Path {
						delete(live, k)
					}
				}
				live[a.FileKey()] = a
			case line.Remove != nil:
				r := &actions.Remove{Path: line.Remove.Path, DeletionVector: line.Remove.DeletionVector}
				delete(live, r.FileKey())
			}
		})
		snap.Version = int64(i)
	}
	for _, a := range live {
		snap.Files = append(snap.Files, a)
	}
	sort.Slice(snap.Files, func(i, j int) bool { return snap.Files[i].Path < snap.Files[j].Path })
	s, err := schema.ParseSchema(snap.Metadata.SchemaString)
	if err != nil {
		t.Fatal(err)
	}
	snap.Schema = s
	return snap, true
}

// loadTestSnapshot loads the latest snapshot of a test table with
// LoadSnapshot; where the log starts at version 0 the live files are
// cross-checked against an independent replay of the JSON commits.
func loadTestSnapshot(t *testing.T, root string) *delta.Snapshot {
	t.Helper()
	snap, err := delta.LoadSnapshot(context.Background(), openScanTable(t, root), -1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Schema == nil {
		if snap.Schema, err = schema.ParseSchema(snap.Metadata.SchemaString); err != nil {
			t.Fatal(err)
		}
	}
	if ref, ok := replayJSONLog(t, root); ok {
		var a, b []string
		for _, f := range snap.Files {
			a = append(a, f.FileKey())
		}
		for _, f := range ref.Files {
			b = append(b, f.FileKey())
		}
		sort.Strings(a)
		sort.Strings(b)
		if strings.Join(a, "|") != strings.Join(b, "|") || ref.Version != snap.Version {
			t.Fatalf("LoadSnapshot (v%d, %d files) and JSON replay (v%d, %d files) disagree", snap.Version, len(a), ref.Version, len(b))
		}
	}
	return snap
}
