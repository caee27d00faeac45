package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta"
	deltaactions "github.com/compactord/compactord/delta/actions"
	deltadv "github.com/compactord/compactord/delta/dv"
	"github.com/compactord/compactord/internal/testutil"
)

// The hostile-input suite runs the real binary against copies of a test
// table into which a hostile writer (or a buggy one) put crafted log
// entries, intent records and links, with sentinel files inside and outside
// the table. After every command: the sentinels, every live file and every
// log file that existed are intact, the table still loads, and no secret
// (the outside sentinel's bytes, credentials) appears in what the command
// printed.

// hostileBase has a checkpoint, _last_checkpoint, deletion vectors and
// commits from version 0 (so lite vacuum may run without a recorded window).
const hostileBase = "dv-basic-with-checkpoint"

// secretBytes is the content of the outside sentinel: a valid DV version
// byte, a size field whose decimal and hex forms are distinctive, then text.
var secretBytes = append([]byte{0x01, 0x7a, 0x3b, 0x9c, 0x4d}, []byte("SECRETSECRETSECRETSECRETSECRETSECRET")...)

// secretForms are the spellings of the secret an error could echo: its
// text, the credentials of the URL case, and every 4-byte word of the
// outside sentinel's first bytes as a decimal and a hex number.
func secretForms() []string {
	forms := []string{"SECRET", "AKIAHOSTILEKEY", "hunter2pass"}
	for i := 1; i+4 <= 13; i++ {
		w := binary.BigEndian.Uint32(secretBytes[i:])
		forms = append(forms, fmt.Sprint(w), fmt.Sprint(int32(w)), fmt.Sprintf("%08x", w), fmt.Sprintf("%08X", w))
	}
	return forms
}

type hostileEnv struct {
	t       *testing.T
	bin     string
	tbl     string // table directory
	outside string // a directory beside the table
	next    int64  // next version to write
	corrupt bool   // the crafted log does not load (refused as corrupt)
	old     time.Time
}

func newHostileEnv(t *testing.T, bin string) *hostileEnv {
	t.Helper()
	dir := t.TempDir()
	tbl := filepath.Join(dir, "table")
	if err := os.CopyFS(tbl, os.DirFS(testutil.DeltaTable(t, hostileBase))); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside")
	must(t, os.MkdirAll(outside, 0o755))
	must(t, os.WriteFile(filepath.Join(outside, "sentinel.bin"), secretBytes, 0o644))
	must(t, os.MkdirAll(filepath.Join(tbl, "_sentinel"), 0o755))
	must(t, os.WriteFile(filepath.Join(tbl, "_sentinel", "inside.bin"), []byte("inside sentinel"), 0o644))
	snap, err := loadLocal(tbl)
	if err != nil {
		t.Fatal(err)
	}
	return &hostileEnv{t: t, bin: bin, tbl: tbl, outside: outside, next: snap.Version + 1, old: time.Now().Add(-30 * 24 * time.Hour)}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func loadLocal(dir string) (*delta.Snapshot, error) {
	ctx := context.Background()
	tbl, err := delta.OpenTable(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer tbl.Close()
	return delta.LoadSnapshot(ctx, tbl, -1)
}

// commit appends a commit of the given actions (as JSON objects).
func (e *hostileEnv) commit(actions ...map[string]any) {
	e.t.Helper()
	var buf bytes.Buffer
	ci := map[string]any{"commitInfo": map[string]any{"timestamp": e.old.UnixMilli(), "operation": "WRITE", "engineInfo": "hostile-writer"}}
	for _, a := range append([]map[string]any{ci}, actions...) {
		b, err := json.Marshal(a)
		must(e.t, err)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	p := filepath.Join(e.tbl, "_delta_log", fmt.Sprintf("%020d.json", e.next))
	must(e.t, os.WriteFile(p, buf.Bytes(), 0o644))
	e.next++
}

// remove is a remove action of path, deleted long ago.
func remove(path string) map[string]any {
	return map[string]any{"remove": map[string]any{"path": path, "deletionTimestamp": 1, "dataChange": true}}
}

// liveFile returns one live add of the table (path as logged) and its size.
func (e *hostileEnv) liveFile() *deltaactions.Add {
	e.t.Helper()
	snap, err := loadLocal(e.tbl)
	must(e.t, err)
	for _, a := range snap.Files {
		return a
	}
	e.t.Fatal("no live file")
	return nil
}

// age sets every file of the table (and the outside directory) 30 days
// back, so that every commit lies outside the default retention window.
func (e *hostileEnv) age() {
	e.t.Helper()
	for _, root := range []string{e.tbl, e.outside} {
		must(e.t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.Type()&fs.ModeSymlink != 0 {
				return err
			}
			return os.Chtimes(p, e.old, e.old)
		}))
	}
}

// state is what must survive: the hash of every log file, live file and
// sentinel.
func (e *hostileEnv) state() map[string][32]byte {
	e.t.Helper()
	st := map[string][32]byte{}
	snap, err := loadLocal(e.tbl)
	if err != nil {
		// A log compactord refuses as corrupt: nothing of the table may
		// change at all.
		e.corrupt = true
		must(e.t, filepath.WalkDir(e.tbl, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Type()&fs.ModeSymlink != 0 {
				return err
			}
			b, err := os.ReadFile(p)
			st[p] = sha256.Sum256(b)
			return err
		}))
		return st
	}
	hash := func(p string) {
		b, err := os.ReadFile(p)
		if err != nil {
			e.t.Fatalf("read %s: %v", p, err)
		}
		st[p] = sha256.Sum256(b)
	}
	ents, err := os.ReadDir(filepath.Join(e.tbl, "_delta_log"))
	must(e.t, err)
	for _, d := range ents {
		switch {
		case d.IsDir():
		case d.Name() == "_last_checkpoint" || d.Name() == "_last_vacuum_info":
			// Pointers a checkpoint or a vacuum rewrites: they must stay.
			st[filepath.Join(e.tbl, "_delta_log", d.Name())] = [32]byte{}
		default:
			hash(filepath.Join(e.tbl, "_delta_log", d.Name()))
		}
	}
	for _, a := range snap.Files {
		k, err := a.Key()
		if err != nil {
			continue // a file outside the table: nothing of ours
		}
		if _, err := os.Stat(filepath.Join(e.tbl, filepath.FromSlash(k))); err != nil {
			continue // a crafted add of a file that never existed
		}
		hash(filepath.Join(e.tbl, filepath.FromSlash(k)))
		if dv := a.DeletionVector; dv != nil && dv.StorageType == "u" {
			dk, err := deltadv.DVFileKey(dv.PathOrInlineDv)
			must(e.t, err)
			hash(filepath.Join(e.tbl, filepath.FromSlash(dk)))
		}
	}
	hash(filepath.Join(e.outside, "sentinel.bin"))
	hash(filepath.Join(e.tbl, "_sentinel", "inside.bin"))
	return st
}

// run runs the binary with args ({T} is the table) and checks that nothing
// in before was damaged, the table loads, and no secret was printed. It
// returns the exit code and the output.
func (e *hostileEnv) run(before map[string][32]byte, args ...string) (int, string) {
	e.t.Helper()
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "{T}", e.tbl)
	}
	cmd := exec.Command(e.bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("%v: %v", args, err)
	}
	text := out.String()
	e.t.Logf("compactord %s: exit %d\n%s", strings.Join(args, " "), code, firstLines(text, 12))
	if code > 1 || strings.Contains(text, "goroutine ") || strings.Contains(text, "panic:") {
		e.t.Errorf("compactord %s crashed (exit %d):\n%s", strings.Join(args, " "), code, firstLines(text, 20))
	}
	for _, s := range secretForms() {
		if strings.Contains(text, s) {
			e.t.Errorf("compactord %s printed a secret (%q):\n%s", strings.Join(args, " "), s, firstLines(text, 20))
		}
	}
	for p, h := range before {
		b, err := os.ReadFile(p)
		switch {
		case err != nil:
			e.t.Errorf("compactord %s: %s is gone: %v", strings.Join(args, " "), p, err)
		case h != [32]byte{} && sha256.Sum256(b) != h:
			e.t.Errorf("compactord %s: %s changed", strings.Join(args, " "), p)
		}
	}
	if _, err := loadLocal(e.tbl); err != nil && !e.corrupt {
		e.t.Errorf("compactord %s: the table no longer loads: %v", strings.Join(args, " "), err)
	}
	return code, text
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

func TestHostileInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	vacuumLite := [][]string{
		{"vacuum", "{T}", "--mode", "lite", "--dry-run"},
		{"vacuum", "{T}", "--mode", "lite"},
		{"vacuum", "{T}", "--mode", "lite", "--retention", "0h", "--force-retention"},
	}
	vacuumAll := append(append([][]string{}, vacuumLite...),
		[]string{"vacuum", "{T}", "--mode", "full"},
		[]string{"vacuum", "{T}", "--mode", "full", "--retention", "0h", "--force-retention"})
	cases := []struct {
		name  string
		craft func(e *hostileEnv)
		cmds  [][]string
		// mustSucceed: the command must exit 0 (a refused delete is never
		// fatal to the run).
		mustSucceed bool
		// wantOut are lines some command of the case must print.
		wantOut []string
	}{
		{
			name: "1 removes and cdc naming log files",
			craft: func(e *hostileEnv) {
				e.commit(remove("_delta_log/00000000000000000000.json"),
					remove("./_delta_log/00000000000000000001.json"),
					remove("%5Fdelta_log/00000000000000000002.json"),
					remove("%5fdelta_log/00000000000000000003.json"),
					remove("a/../_delta_log/00000000000000000004.json"),
					remove("_delta_log/_last_checkpoint"),
					remove("_delta_log//00000000000000000005.json"),
					remove(fmt.Sprintf("_delta_log/%020d.checkpoint.parquet", lastCheckpoint(e))),
					remove("file://"+filepath.ToSlash(e.tbl)+"/_delta_log/00000000000000000006.json"),
					map[string]any{"cdc": map[string]any{"path": "_delta_log/00000000000000000007.json", "size": 1, "dataChange": false, "partitionValues": map[string]any{}}},
					map[string]any{"cdc": map[string]any{"path": "./_delta_log/00000000000000000008.json", "size": 1, "dataChange": false, "partitionValues": map[string]any{}}},
				)
			},
			cmds: vacuumAll, mustSucceed: true, wantOut: []string{"would refuse to delete 11 files", "refused to delete 11 files"},
		},
		{
			name: "2 intent record naming live files and the log",
			craft: func(e *hostileEnv) {
				live := e.liveFile()
				rec := map[string]any{"format": 1, "attempt": "hostile", "operation": "compaction", "owner": "hostile/pid 1",
					"started": e.old, "heartbeat": e.old, "keys": []string{
						"./" + live.Path, live.Path, "/_delta_log/00000000000000000000.json", "_delta_log/00000000000000000001.json",
						"./_delta_log/00000000000000000002.json", "_delta_log/_last_checkpoint", "../outside/sentinel.bin",
						"a/../../outside/sentinel.bin", "_sentinel/../" + live.Path, "_compactord/attempts/other.json", "",
					}}
				b, err := json.Marshal(rec)
				must(e.t, err)
				must(e.t, os.MkdirAll(filepath.Join(e.tbl, "_compactord", "attempts"), 0o755))
				must(e.t, os.WriteFile(filepath.Join(e.tbl, "_compactord", "attempts", "hostile.json"), b, 0o644))
			},
			cmds: [][]string{{"compact", "{T}"}, {"vacuum", "{T}", "--mode", "full", "--retention", "0h", "--force-retention"}},
		},
		{
			name: "3 a live add spelled ./ and a remove of ./live",
			craft: func(e *hostileEnv) {
				live := e.liveFile()
				data, err := os.ReadFile(filepath.Join(e.tbl, live.Path))
				must(e.t, err)
				must(e.t, os.WriteFile(filepath.Join(e.tbl, "dup.parquet"), data, 0o644))
				e.commit(map[string]any{"add": map[string]any{"path": "./dup.parquet", "partitionValues": map[string]any{},
					"size": len(data), "modificationTime": e.old.UnixMilli(), "dataChange": true}})
				e.commit(remove("./"+live.Path), remove("x/../"+live.Path), remove("%2E/"+live.Path))
			},
			cmds: vacuumAll, mustSucceed: true,
		},
		{
			name: "4 a p deletion vector pointing outside the table",
			craft: func(e *hostileEnv) {
				live := e.liveFile()
				data, err := os.ReadFile(filepath.Join(e.tbl, live.Path))
				must(e.t, err)
				must(e.t, os.WriteFile(filepath.Join(e.tbl, "pdv.parquet"), data, 0o644))
				e.commit(map[string]any{"add": map[string]any{"path": "pdv.parquet", "partitionValues": map[string]any{},
					"size": len(data), "modificationTime": e.old.UnixMilli(), "dataChange": true,
					"deletionVector": map[string]any{"storageType": "p", "pathOrInlineDv": "file://" + filepath.ToSlash(e.outside) + "/sentinel.bin",
						"offset": 1, "sizeInBytes": 12, "cardinality": 1}}})
			},
			cmds: [][]string{{"cat", "{T}"}, {"inspect", "{T}"}, {"compact", "{T}"}, {"vacuum", "{T}", "--mode", "full"}},
		},
		{
			name: "5 an add of size -2^63",
			craft: func(e *hostileEnv) {
				// The only live file, so that every total is -2^63 too.
				snap, err := loadLocal(e.tbl)
				must(e.t, err)
				acts := []map[string]any{{"add": map[string]any{"path": "huge.parquet", "partitionValues": map[string]any{},
					"size": int64(-1 << 63), "modificationTime": e.old.UnixMilli(), "dataChange": true}}}
				for _, a := range snap.Files {
					rm := remove(a.Path)
					rm["remove"].(map[string]any)["deletionVector"] = a.DeletionVector
					acts = append(acts, rm)
				}
				e.commit(acts...)
			},
			cmds: [][]string{{"inspect", "{T}"}, {"inspect", "{T}", "--json"}, {"plan", "{T}"}},
		},
		{
			name: "6 a remove under a symlinked directory",
			craft: func(e *hostileEnv) {
				must(e.t, os.Symlink(e.outside, filepath.Join(e.tbl, "linked")))
				must(e.t, os.Symlink(filepath.Join(e.outside, "sentinel.bin"), filepath.Join(e.tbl, "link.parquet")))
				e.commit(remove("linked/sentinel.bin"), remove("link.parquet"), remove("./linked/sentinel.bin"))
			},
			cmds: vacuumAll, mustSucceed: true,
		},
		{
			name: "holds: removes climbing out of the table",
			craft: func(e *hostileEnv) {
				out := filepath.ToSlash(e.outside)
				e.commit(remove("../outside/sentinel.bin"), remove("%2e%2e%2foutside/sentinel.bin"), remove("%2E%2E/outside/sentinel.bin"),
					remove("a/../../outside/sentinel.bin"), remove("file://"+out+"/sentinel.bin"), remove(out+"/sentinel.bin"),
					remove("file:"+out+"/sentinel.bin"))
			},
			cmds: vacuumAll, mustSucceed: true,
		},
		{
			name: "holds: adds climbing out of the table",
			craft: func(e *hostileEnv) {
				out := filepath.ToSlash(e.outside)
				var acts []map[string]any
				for _, p := range []string{"../outside/sentinel.bin", "%2e%2e%2foutside/sentinel.bin", "a/../../outside/sentinel.bin",
					"file://" + out + "/sentinel.bin", out + "/sentinel.bin"} {
					acts = append(acts, map[string]any{"add": map[string]any{"path": p, "partitionValues": map[string]any{},
						"size": len(secretBytes), "modificationTime": e.old.UnixMilli(), "dataChange": true}})
				}
				e.commit(acts...)
			},
			cmds: [][]string{{"cat", "{T}"}, {"compact", "{T}"}, {"backfill-stats", "{T}"},
				{"vacuum", "{T}", "--mode", "full", "--retention", "0h", "--force-retention"}},
		},
		{
			name:  "credentials in an object-store URL",
			craft: func(e *hostileEnv) {},
			cmds: [][]string{
				{"inspect", "s3://AKIAHOSTILEKEY:hunter2pass@bucket/t?endpoint=http://127.0.0.1:9&region=us-east-1&secret_key=SECRET", "--store-attempts", "1"},
				{"vacuum", "s3://bucket/t?endpoint=http://127.0.0.1:9&region=us-east-1&access_key=AKIAHOSTILEKEY&secret_key=SECRET", "--store-attempts", "1"},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newHostileEnv(t, bin)
			c.craft(e)
			e.age()
			var all strings.Builder
			defer func() {
				for _, w := range c.wantOut {
					if !strings.Contains(all.String(), w) {
						t.Errorf("no command printed %q", w)
					}
				}
			}()
			for _, args := range c.cmds {
				// What must survive is taken before each command: a
				// compaction's commit legitimately turns live files into
				// tombstones that a later vacuum may delete.
				code, out := e.run(e.state(), append([]string(nil), args...)...)
				all.WriteString(out)
				if c.mustSucceed && code != 0 {
					t.Errorf("compactord %s: exit %d, want 0 (a refused delete is not fatal):\n%s", strings.Join(args, " "), code, firstLines(out, 20))
				}
			}
		})
	}
}

// lastCheckpoint is the version of the table's newest checkpoint.
func lastCheckpoint(e *hostileEnv) int64 {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.tbl, "_delta_log", "_last_checkpoint"))
	must(e.t, err)
	var lc struct {
		Version int64 `json:"version"`
	}
	must(e.t, json.Unmarshal(b, &lc))
	return lc.Version
}
