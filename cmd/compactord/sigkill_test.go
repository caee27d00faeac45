package main

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/compactord/compactord/checkpoint"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil/logtest"
)

// killTable builds a log-only table (data files are never read by the log
// operations) of 700 commits with deletion vectors on some files and a
// checkpoints at 200 and 400, every log file aged years past a one-day retention.
func killTable(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	p := actions.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}}
	tbl := logtest.Create(t, dir, logtest.Spec{Protocol: &p, Configuration: map[string]string{
		"delta.enableDeletionVectors": "true", "delta.logRetentionDuration": "interval 1 days"}})
	const latest = 700
	for v := int64(1); v <= latest; v += 100 {
		logtest.Grow(t, tbl, v, v+98, false)
		// Version v+99 puts a DV on the b file of v+98.
		a := logtest.AddFile(fmt.Sprintf("part-%05d-b.parquet", v+98), "", v+100)
		off := int32(1)
		withDV := *a
		withDV.DeletionVector = &actions.DeletionVector{StorageType: "u", PathOrInlineDv: fmt.Sprintf("ab^-aqEH.-t@S}K{vb[*k^%03d", v%1000), Offset: &off, SizeInBytes: 34, Cardinality: 3}
		logtest.Commit(t, tbl, v+99, actions.Action{Remove: logtest.RemoveFile(a, 1_600_000_000_000+v)}, actions.Action{Add: &withDV})
		if v+99 == 200 || v+99 == 400 {
			if _, err := checkpoint.Write(context.Background(), tbl, v+99, checkpoint.Options{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	logtest.SetTimes(t, dir, func(v int64) time.Time {
		return time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(v) * time.Minute)
	})
	return dir
}

// copyTree copies a table dir keeping modification times (the log
// cleanup's retention reads them).
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "table")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if err := os.WriteFile(out, b, 0o644); err != nil {
			return err
		}
		return os.Chtimes(out, info.ModTime(), info.ModTime())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// stateAt loads version v of the table at dir (-1: latest).
func stateAt(t *testing.T, dir string, v int64) (logtest.State, error) {
	t.Helper()
	ctx := context.Background()
	tbl, err := delta.OpenTable(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	s, err := delta.LoadSnapshot(ctx, tbl, v)
	if err != nil {
		return logtest.State{}, err
	}
	st := logtest.StateOf(s)
	// A checkpoint drops expired tombstones: they are not content.
	st.Tombstones = nil
	return st, nil
}

func TestAKillNineAtAnyPointOfACheckpointOrCleanupLeavesATableThatLoadsTheSame(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	base := killTable(t)
	const latest = 700
	// Versions whose content is compared: around the old checkpoint, the
	// new one, and random ones.
	probe := []int64{0, 1, 250, 399, 400, 401, latest - 1, latest}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 13))
	for range 3 {
		probe = append(probe, rng.Int64N(latest+1))
	}
	before := map[int64]logtest.State{}
	for _, v := range probe {
		s, err := stateAt(t, base, v)
		if err != nil {
			t.Fatalf("version %d before: %v", v, err)
		}
		before[v] = s
	}
	run := func(dir, command string) error {
		out, err := exec.Command(bin, command, "file://"+dir).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w\n%s", command, err, out)
		}
		return nil
	}
	for _, tc := range []struct {
		command string
		// retained is the oldest version that must still load after the
		// command (older ones may be gone, but if they load they must
		// load the same).
		retained int64
	}{
		{"checkpoint", 0},
		{"cleanup-log", 400},
	} {
		t.Run(tc.command, func(t *testing.T) {
			// An unkilled run measures the duration the kills spread over
			// and shows the command really does its work.
			dir := copyTree(t, base)
			start := time.Now()
			if err := run(dir, tc.command); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			check := func(dir, when string) {
				t.Helper()
				for _, v := range probe {
					s, err := stateAt(t, dir, v)
					if err != nil {
						if v >= tc.retained {
							t.Fatalf("%s: version %d does not load: %v", when, v, err)
						}
						continue
					}
					if !logtest.SameState(s, before[v]) {
						t.Fatalf("%s: version %d loads different content: %d files, want %d", when, v, len(s.Files), len(before[v].Files))
					}
				}
				s, err := stateAt(t, dir, -1)
				if err != nil || !logtest.SameState(s, before[latest]) {
					t.Fatalf("%s: latest: %v", when, err)
				}
			}
			check(dir, "unkilled run")
			switch tc.command {
			case "checkpoint":
				if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(logpath.CheckpointKey(latest)))); err != nil {
					t.Fatalf("unkilled checkpoint wrote no checkpoint: %v", err)
				}
			case "cleanup-log":
				if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(logpath.CommitKey(399)))); !os.IsNotExist(err) {
					t.Fatalf("unkilled cleanup kept commit 399: %v", err)
				}
			}
			t.Logf("unkilled %s took %v", tc.command, took)
			const kills = 8
			for i := range kills {
				delay := time.Duration(float64(took) * (float64(i) + rng.Float64()) / kills)
				dir := copyTree(t, base)
				cmd := exec.Command(bin, tc.command, "file://"+dir)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(delay)
				_ = cmd.Process.Signal(syscall.SIGKILL)
				err := cmd.Wait()
				killed := err != nil
				when := fmt.Sprintf("kill %d after %v (killed: %v)", i, delay, killed)
				check(dir, when)
				if err := run(dir, tc.command); err != nil {
					t.Fatalf("%s: rerun: %v", when, err)
				}
				check(dir, when+", rerun")
			}
		})
	}
}
