package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/checkpointwrite"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// oneShot is a one-shot command whose commits land on a multiple of
// delta.checkpointInterval=2 of the table setup builds.
type oneShot struct {
	name string
	// setup builds the table (interval 2, plus conf) under dir.
	setup func(t *testing.T, dir string, conf map[string]string) *delta.Table
	args  func(url string) []string
	// latest is the version the command's last commit lands on; want the
	// multiple that gets the checkpoint.
	latest, want int64
}

func intervalTwo(conf map[string]string) tabletest.Spec {
	c := map[string]string{"delta.checkpointInterval": "2"}
	for k, v := range conf {
		c[k] = v
	}
	return tabletest.Spec{Config: c}
}

// withCommit1 is a table of files at version 0 and one more file added by
// another writer at version 1 (without statistics when noStats).
func withCommit1(noStats bool, files ...[]int64) func(t *testing.T, dir string, conf map[string]string) *delta.Table {
	return func(t *testing.T, dir string, conf map[string]string) *delta.Table {
		tbl := tabletest.NewTableWith(t, "file://"+filepath.ToSlash(dir), intervalTwo(conf), files...)
		a := tabletest.WriteDataFile(t, tbl, tabletest.IDRange(100, 10))
		if noStats {
			a.Stats = ""
		}
		tabletest.PutCommit(t, tbl, 1, []string{tabletest.AddLine(t, a)})
		return tbl
	}
}

func oneShots() []oneShot {
	return []oneShot{
		{name: "compact", setup: withCommit1(false, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10)),
			args: func(u string) []string { return []string{"compact", u} }, latest: 2, want: 2},
		// Three jobs in three commits, 1 to 3: the multiple in the middle
		// is checkpointed.
		{name: "compact in batches", setup: func(t *testing.T, dir string, conf map[string]string) *delta.Table {
			return tabletest.NewTableWith(t, "file://"+filepath.ToSlash(dir), intervalTwo(conf), tabletest.Batches(6, 10)...)
		}, args: func(u string) []string {
			return []string{"compact", u, "--commit-every-jobs", "1", "--target-file-size", "1300B", "--min-file-size", "1300B"}
		}, latest: 3, want: 2},
		{name: "expire", setup: withCommit1(false, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10)),
			args: func(u string) []string {
				return []string{"expire", u, "--column", "id", "--epoch-unit", "days", "--before", "5"}
			}, latest: 2, want: 2},
		{name: "backfill-stats", setup: withCommit1(true, tabletest.IDRange(0, 10)),
			args: func(u string) []string { return []string{"backfill-stats", u} }, latest: 2, want: 2},
		// VACUUM START at 1, END at 2.
		{name: "vacuum", setup: func(t *testing.T, dir string, conf map[string]string) *delta.Table {
			tbl := tabletest.NewTableWith(t, "file://"+filepath.ToSlash(dir), intervalTwo(conf), tabletest.IDRange(0, 10))
			orphan, err := tabletest.WriteDataFile(t, tbl, tabletest.IDRange(50, 5)).Key()
			if err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-time.Hour)
			if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(orphan)), old, old); err != nil {
				t.Fatal(err)
			}
			return tbl
		}, args: func(u string) []string {
			return []string{"vacuum", u, "--mode", "full", "--retention", "0h", "--force-retention"}
		}, latest: 2, want: 2},
	}
}

// stepJSON is the "checkpoint" of a command's JSON.
type stepJSON struct {
	Checkpoint *struct {
		Written []struct {
			Version int64  `json:"version"`
			Key     string `json:"key"`
		} `json:"written"`
		Repaired *struct {
			Version int64 `json:"version"`
			Was     int64 `json:"was"`
		} `json:"lastCheckpointRepaired"`
		Errors []string `json:"errors"`
	} `json:"checkpoint"`
}

// oneShotRun is what one one-shot command did to its table, in text or in
// JSON.
type oneShotRun struct {
	c              oneShot
	dir            string
	tbl            *delta.Table
	asJSON         bool
	stdout, stderr string
	// json is the JSON's checkpoint step (asJSON only).
	json stepJSON
}

// eachOneShot runs every one-shot command, in text and in JSON, on its
// table built with conf, checks that its commits landed on c.latest, and
// hands check what it printed.
func eachOneShot(t *testing.T, conf map[string]string, check func(t *testing.T, r oneShotRun)) {
	for _, c := range oneShots() {
		for _, asJSON := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/json=%v", c.name, asJSON), func(t *testing.T) {
				r := oneShotRun{c: c, dir: t.TempDir(), asJSON: asJSON}
				r.tbl = c.setup(t, r.dir, conf)
				args := c.args(r.tbl.URL)
				if asJSON {
					args = append(args, "--json")
				}
				r.stdout, r.stderr = runOneShot(t, args)
				wantLatest(t, r.tbl, c.latest)
				if asJSON {
					if err := json.Unmarshal([]byte(r.stdout), &r.json); err != nil {
						t.Fatalf("%v in %s", err, r.stdout)
					}
				}
				check(t, r)
			})
		}
	}
}

func runOneShot(t *testing.T, args []string) (stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := mainExit(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("%v: exit %d; stdout:\n%s\nstderr:\n%s", args, code, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

func checkpointExists(t *testing.T, dir string, v int64) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(logpath.CheckpointKey(v))))
	return err == nil
}

func wantLatest(t *testing.T, tbl *delta.Table, v int64) {
	t.Helper()
	if got := tabletest.Latest(t, tbl).Version; got != v {
		t.Fatalf("latest version %d, want %d (the command's commits)", got, v)
	}
}

// Each one-shot command whose commit lands on a multiple of
// delta.checkpointInterval checkpoints it as the daemon does, says so in
// its report and JSON, and points _last_checkpoint at it; no other version
// gets one.
func TestOneShotCommandsCheckpointTheirCommitsOnMultiples(t *testing.T) {
	eachOneShot(t, nil, func(t *testing.T, r oneShotRun) {
		c := r.c
		if !checkpointExists(t, r.dir, c.want) {
			t.Fatalf("no checkpoint at %d; stdout:\n%s", c.want, r.stdout)
		}
		for v := int64(1); v <= c.latest; v++ {
			if v != c.want && checkpointExists(t, r.dir, v) {
				t.Errorf("checkpoint at %d", v)
			}
		}
		if v, err := delta.LastCheckpointVersion(context.Background(), r.tbl); err != nil || v != c.want {
			t.Errorf("_last_checkpoint at %d (%v), want %d", v, err, c.want)
		}
		if !r.asJSON {
			if line := fmt.Sprintf("checkpoint written at version %d: %s", c.want, logpath.CheckpointKey(c.want)); !strings.Contains(r.stdout, line) {
				t.Errorf("stdout lacks %q:\n%s", line, r.stdout)
			}
			return
		}
		if cp := r.json.Checkpoint; cp == nil || len(cp.Written) != 1 || cp.Written[0].Version != c.want || len(cp.Errors) != 0 {
			t.Errorf("JSON checkpoint: %s", r.stdout)
		}
	})
}

// --checkpoint=false leaves the commit without a checkpoint.
func TestOneShotCommandsSkipTheCheckpointWhenAskedTo(t *testing.T) {
	for _, c := range oneShots() {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			tbl := c.setup(t, dir, nil)
			stdout, _ := runOneShot(t, append(c.args(tbl.URL), "--checkpoint=false", "--json"))
			wantLatest(t, tbl, c.latest)
			for v := int64(0); v <= c.latest; v++ {
				if checkpointExists(t, dir, v) {
					t.Errorf("checkpoint at %d", v)
				}
			}
			if strings.Contains(stdout, `"checkpoint"`) {
				t.Errorf("JSON has a checkpoint step: %s", stdout)
			}
		})
	}
}

// A checkpoint that fails (here: the table's
// delta.checkpoint.writeStatsAsJson is no boolean, which only a
// checkpoint reads) leaves the command's commits, exits 0, and is reported
// on stdout, in the JSON, and as a warning on stderr.
func TestOneShotCommandsReportAFailedCheckpointAndKeepTheirCommits(t *testing.T) {
	bad := map[string]string{"delta.checkpoint.writeStatsAsJson": "perhaps"}
	eachOneShot(t, bad, func(t *testing.T, r oneShotRun) {
		if checkpointExists(t, r.dir, r.c.want) {
			t.Fatal("the checkpoint was written")
		}
		if !strings.Contains(r.stderr, "checkpoint after the commit failed") || !strings.Contains(r.stderr, "writeStatsAsJson") {
			t.Errorf("stderr lacks the warning:\n%s", r.stderr)
		}
		if !r.asJSON {
			if !strings.Contains(r.stdout, "checkpoint failed (the commit stands; the next run retries it): ") {
				t.Errorf("stdout lacks the failure:\n%s", r.stdout)
			}
			return
		}
		if cp := r.json.Checkpoint; cp == nil || len(cp.Written) != 0 || len(cp.Errors) != 1 ||
			!strings.Contains(cp.Errors[0], "writeStatsAsJson") {
			t.Errorf("JSON checkpoint: %s", r.stdout)
		}
	})
}

// A checkpoint whose _last_checkpoint write failed (the hint still names
// the checkpoint before) is repaired by the next one-shot command's
// checkpoint step, though the command's commit is on no multiple.
func TestOneShotCommandRepairsALastCheckpointLeftBehind(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := withCommit1(false, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10))(t, dir, nil)
	// Version 2 by another writer, checkpointed; its _last_checkpoint
	// write "failed": none is left.
	tabletest.PutCommit(t, tbl, 2, []string{tabletest.AddLine(t, tabletest.WriteDataFile(t, tbl, tabletest.IDRange(200, 10)))})
	if _, err := checkpointwrite.WriteCheckpoint(ctx, tbl, tabletest.Latest(t, tbl), checkpointwrite.CheckpointOptions{SkipLastCheckpoint: true}); err != nil {
		t.Fatal(err)
	}
	if v, _ := delta.LastCheckpointVersion(ctx, tbl); v != -1 {
		t.Fatalf("_last_checkpoint at %d before the run", v)
	}
	stdout, _ := runOneShot(t, []string{"compact", tbl.URL, "--json"})
	wantLatest(t, tbl, 3)
	if v, err := delta.LastCheckpointVersion(ctx, tbl); err != nil || v != 2 {
		t.Fatalf("_last_checkpoint at %d (%v), want 2; stdout:\n%s", v, err, stdout)
	}
	var out stepJSON
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v in %s", err, stdout)
	}
	if out.Checkpoint == nil || out.Checkpoint.Repaired == nil || out.Checkpoint.Repaired.Version != 2 || out.Checkpoint.Repaired.Was != -1 {
		t.Errorf("JSON checkpoint: %s", stdout)
	}
}
