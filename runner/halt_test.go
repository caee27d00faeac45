package runner

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/scheduler"
)

func localPolicy(name, dir string) policies.Policy {
	p := policies.DefaultPolicy()
	p.Name, p.URL = name, "file://"+dir
	return p
}

// A path that does not exist and a directory without a _delta_log are
// tables to wait for (scheduler.ErrUnavailable, not a halt); a log that
// has versions but misses one is not.
func TestAPollOfATableThatIsNotThereIsUnavailableNotAHalt(t *testing.T) {
	root := t.TempDir()
	b := &Backend{Tables: NewTables()}
	defer b.Tables.Close()
	for _, c := range []struct{ what, dir, says string }{
		{"no such path", filepath.Join(root, "nope"), "no such file or directory"},
		{"no _delta_log", root, "no commits"},
	} {
		_, err := b.Poll(t.Context(), localPolicy("t", c.dir), -1)
		if !errors.Is(err, scheduler.ErrUnavailable) || failure.Of(err) == failure.Halt || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v (class %v): want unavailable, saying %q", c.what, err, failure.Of(err), c.says)
		}
	}

	dir := filepath.Join(root, "gap")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tbl := tabletest.NewTable(t, "file://"+dir, tabletest.IDRange(0, 10))
	tabletest.PutCommit(t, tbl, 1, []string{tabletest.AddLine(t, tabletest.WriteDataFile(t, tbl, tabletest.IDRange(10, 10)))})
	tabletest.PutCommit(t, tbl, 2, []string{tabletest.AddLine(t, tabletest.WriteDataFile(t, tbl, tabletest.IDRange(20, 10)))})
	if err := os.Remove(filepath.Join(dir, "_delta_log", "00000000000000000001.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Poll(t.Context(), localPolicy("gap", dir), -1); err == nil || errors.Is(err, scheduler.ErrUnavailable) {
		t.Errorf("a log missing a commit: %v, want an error that is not unavailable", err)
	}
}

// The stored halt: written with the policy's digest, read back while the
// policy is the same, ignored under a changed policy, cleared in place
// (nothing deleted) by a resume; a table that never halted gets no object.
func TestTheHaltStoreKeepsAHaltUntilItIsClearedOrThePolicyChanges(t *testing.T) {
	dir := t.TempDir()
	tabletest.NewTable(t, "file://"+dir, tabletest.IDRange(0, 10))
	b := &Backend{Tables: NewTables(), LeaseHolder: "r1"}
	defer b.Tables.Close()
	st := b.HaltStore()
	p := localPolicy("t", dir)
	key := filepath.Join(dir, filepath.FromSlash(HaltKey))

	if err := st.Save(t.Context(), p, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(key); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("clearing no halt wrote %s (%v)", HaltKey, err)
	}
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := st.Save(t.Context(), p, &scheduler.Halt{Reason: strings.Repeat("x", 3*scheduler.MaxHaltReason), Since: since}); err != nil {
		t.Fatal(err)
	}
	h, err := st.Load(t.Context(), p)
	if err != nil || h == nil || len(h.Reason) != scheduler.MaxHaltReason || !h.Since.Equal(since) {
		t.Fatalf("Load: %+v, %v", h, err)
	}
	raw, _ := os.ReadFile(key)
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil || doc["halted"] != true || doc["replica"] != "r1" || !strings.HasPrefix(doc["policy"].(string), "sha256:") {
		t.Fatalf("%s: %s (%v)", HaltKey, raw, err)
	}

	changed := p
	changed.Concurrency = p.Concurrency + 1
	if h, err := st.Load(t.Context(), changed); err != nil || h != nil {
		t.Fatalf("Load under a changed policy: %+v, %v; want none", h, err)
	}
	moved := p
	moved.Source = "elsewhere.hcl:3,1-10"
	if h, err := st.Load(t.Context(), moved); err != nil || h == nil {
		t.Fatalf("Load of the same policy declared elsewhere: %+v, %v; want the halt", h, err)
	}

	if err := st.Save(t.Context(), p, nil); err != nil {
		t.Fatal(err)
	}
	if h, err := st.Load(t.Context(), p); err != nil || h != nil {
		t.Fatalf("Load after the resume: %+v, %v", h, err)
	}
	raw, _ = os.ReadFile(key)
	if err := json.Unmarshal(raw, &doc); err != nil || doc["halted"] != false || doc["cleared"] == nil {
		t.Fatalf("%s after the resume: %s (%v)", HaltKey, raw, err)
	}

	// An unreadable record is no halt, and the next save replaces it.
	if err := os.WriteFile(key, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if h, err := st.Load(t.Context(), p); err != nil || h != nil {
		t.Fatalf("Load of an unreadable record: %+v, %v", h, err)
	}
	if err := st.Save(t.Context(), p, &scheduler.Halt{Reason: "again", Since: since}); err != nil {
		t.Fatal(err)
	}
	if h, err := st.Load(t.Context(), p); err != nil || h == nil || h.Reason != "again" {
		t.Fatalf("Load after replacing an unreadable record: %+v, %v", h, err)
	}
}

// The reason /status and the page show for a table to wait for names the
// table once (the policy's name and the URL delta opened), not the URL
// once per layer that wrapped the error.
func TestTheWaitingReasonNamesTheTableOnce(t *testing.T) {
	root := t.TempDir()
	b := &Backend{Tables: NewTables()}
	defer b.Tables.Close()
	nope := filepath.Join(root, "nope")
	noLog := "table file://" + root + ": no commits or checkpoints in _delta_log/ (not a Delta table?): table version not found"
	for _, c := range []struct{ what, dir, poll, run string }{
		{"no such path", nope, "table t: open table file://" + nope + ": no such file or directory", "table t: open table file://" + nope + ": no such file or directory"},
		{"no _delta_log", root, "table t: " + noLog, "table t: load snapshot: " + noLog},
	} {
		_, perr := b.Poll(t.Context(), localPolicy("t", c.dir), -1)
		_, rerr := b.Run(t.Context(), scheduler.RunRequest[policies.Policy]{Table: "t", Op: "compaction", Policy: localPolicy("t", c.dir)})
		for i, err := range []error{perr, rerr} {
			want := []string{c.poll, c.run}[i]
			if err == nil || err.Error() != want {
				t.Errorf("%s: %v\nwant %s", c.what, err, want)
			}
		}
	}
}
