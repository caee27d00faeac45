package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/delta"
	deltaactions "github.com/compactord/compactord/delta/actions"
	deltadv "github.com/compactord/compactord/delta/dv"
	"github.com/compactord/compactord/inspect"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/policies"
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

// copyLive copies the bytes of a live data file to name in the table
// directory, uncommitted; it returns the live file's add and the copy's
// size.
func (e *hostileEnv) copyLive(name string) (*deltaactions.Add, int) {
	live := e.liveFile()
	data, err := os.ReadFile(filepath.Join(e.tbl, live.Path))
	must(e.t, err)
	must(e.t, os.WriteFile(filepath.Join(e.tbl, name), data, 0o644))
	return live, len(data)
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
				live, size := e.copyLive("dup.parquet")
				e.commit(map[string]any{"add": map[string]any{"path": "./dup.parquet", "partitionValues": map[string]any{},
					"size": size, "modificationTime": e.old.UnixMilli(), "dataChange": true}})
				e.commit(remove("./"+live.Path), remove("x/../"+live.Path), remove("%2E/"+live.Path))
			},
			cmds: vacuumAll, mustSucceed: true,
		},
		{
			name: "4 a p deletion vector pointing outside the table",
			craft: func(e *hostileEnv) {
				_, size := e.copyLive("pdv.parquet")
				e.commit(map[string]any{"add": map[string]any{"path": "pdv.parquet", "partitionValues": map[string]any{},
					"size": size, "modificationTime": e.old.UnixMilli(), "dataChange": true,
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

// dvSmallFile is the one data file of the dv-small test table (10 rows, a
// DV of 2).
const dvSmallFile = "part-00000-fae5310a-a37d-4e51-827b-c3d5516560ca-c000.snappy.parquet"

// hostileSecret is what a sentinel file outside (or a stray file inside)
// a table holds; no output may carry any part of it.
var hostileSecret = bytes.Repeat([]byte("SECRET42"), 8)

// secretIn returns the forms of hostileSecret found in s: each 4-byte run
// as text, and as a big- or little-endian word in decimal or hex.
func secretIn(s string) []string {
	var found []string
	for i := 0; i+4 <= len(hostileSecret); i++ {
		w := hostileSecret[i : i+4]
		forms := []string{string(w)}
		for _, v := range []uint32{binary.BigEndian.Uint32(w), binary.LittleEndian.Uint32(w)} {
			forms = append(forms, fmt.Sprint(v), fmt.Sprint(int32(v)), fmt.Sprintf("%08x", v), fmt.Sprintf("%08X", v))
		}
		for _, f := range forms {
			if strings.Contains(s, f) {
				found = append(found, f)
			}
		}
	}
	return found
}

// hostileDVTable copies dv-small beside a sentinel file holding the
// secret, writes the secret into the table as secret.bin too, and commits
// by hand a version 2 that gives the data file a `p` deletion vector at
// pathOrInline (from the table root dir). It returns the table's root.
func hostileDVTable(t *testing.T, pathOrInline func(dir string) string) string {
	t.Helper()
	dir := testutil.CopyDeltaTable(t, "dv-small")
	for _, p := range []string{filepath.Join(filepath.Dir(dir), "sentinel"), filepath.Join(dir, "secret.bin")} {
		if err := os.WriteFile(p, hostileSecret, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	commit := fmt.Sprintf(`{"commitInfo":{"timestamp":1700000000000,"operation":"DELETE"}}
{"remove":{"path":%q,"deletionTimestamp":1700000000000,"dataChange":true,"size":635,"deletionVector":{"storageType":"u","pathOrInlineDv":"vBn[lx{q8@P<9BNH/isA","offset":1,"sizeInBytes":36,"cardinality":2}}}
{"add":{"path":%q,"partitionValues":{},"size":635,"modificationTime":1677811178336,"dataChange":true,"stats":"{\"numRecords\":10,\"tightBounds\":false}","deletionVector":{"storageType":"p","pathOrInlineDv":%q,"offset":2,"sizeInBytes":36,"cardinality":2}}}
`, dvSmallFile, dvSmallFile, pathOrInline(dir))
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000002.json"), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCatNeverReadsOutsideTheRootNorEchoesTheBytesItRead points the data
// file's deletion vector at a sentinel beside the table (by several
// spellings) and at a file inside it: cat fails naming the file, and
// neither its error nor its output carries the secret.
func TestCatNeverReadsOutsideTheRootNorEchoesTheBytesItRead(t *testing.T) {
	for _, c := range []struct {
		name string
		path func(dir string) string
		want string
	}{
		{"outside", func(dir string) string { return "file://" + filepath.Dir(dir) + "/sentinel" }, "deletion vector path outside the table root; not read"},
		{"outside by dot segments", func(dir string) string { return "file://" + dir + "/%2e%2e/sentinel" }, "deletion vector path outside the table root; not read"},
		{"another bucket", func(string) string { return "s3a://some-other-bucket/sentinel" }, "deletion vector path outside the table root; not read"},
		{"inside, at a chosen offset", func(dir string) string { return "file://" + dir + "/secret.bin" }, "size field does not match the descriptor's sizeInBytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := hostileDVTable(t, c.path)
			var out, errOut bytes.Buffer
			err := commandNamed("cat").exec(context.Background(), []string{"file://" + dir}, &out, &errOut)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dvSmallFile) {
				t.Fatalf("cat: %v, want %q naming %s", err, c.want, dvSmallFile)
			}
			all := err.Error() + out.String() + errOut.String()
			if found := secretIn(strings.ReplaceAll(all, dir, "")); len(found) > 0 {
				t.Errorf("output carries the secret as %q:\n%s", found, all)
			}
		})
	}
}

// TestTheDaemonLogNeverEchoesTheBytesOfADV runs the daemon over a table
// whose DV points into a stray file at a chosen offset: the compaction
// that reads it quarantines the file, and no log line carries the bytes.
func TestTheDaemonLogNeverEchoesTheBytesOfADV(t *testing.T) {
	dir := hostileDVTable(t, func(dir string) string { return "file://" + dir + "/secret.bin" })
	pdir := t.TempDir()
	writePolicy(t, pdir, "t.hcl", fmt.Sprintf("table \"t\" {\n  url = %q\n  settle_window = \"0s\"\n}\n", "file://"+dir))
	ld := startLoggedDaemon(t, pdir)
	if code := post(t, ld.base+"/tables/t/run"); code != http.StatusAccepted {
		t.Fatalf("POST run: %d", code)
	}
	waitFor(t, "the file's quarantine", func() bool {
		_, m := ld.logs.find(0, "data file quarantined; retrying without it", nil)
		return m != nil
	})
	logs := ld.logs.dump()
	if !strings.Contains(logs, "size field does not match the descriptor's sizeInBytes") {
		t.Errorf("the log does not say what is wrong:\n%s", logs)
	}
	if found := secretIn(strings.ReplaceAll(logs, dir, "")); len(found) > 0 {
		t.Errorf("the log carries the secret as %q:\n%s", found, logs)
	}
}

// TestInspectSurvivesImpossibleSizesAndCounts appends commits by hand to
// copies of dv-small: a size of -2^63 is a corrupt commit named by
// inspect, sizes summing to 2^63 print as a size, and a DV deleting more
// rows than its file's footer holds leaves the file's rows unknown
// instead of counting negative live rows.
func TestInspectSurvivesImpossibleSizesAndCounts(t *testing.T) {
	add := func(path string, size int64, rest string) string {
		return fmt.Sprintf(`{"add":{"path":%q,"partitionValues":{},"size":%d,"modificationTime":1700000000000,"dataChange":true%s}}`, path, size, rest)
	}
	commit := func(t *testing.T, dir string, lines ...string) {
		t.Helper()
		body := `{"commitInfo":{"timestamp":1700000000000,"operation":"WRITE"}}` + "\n" + strings.Join(lines, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000002.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("size -2^63", func(t *testing.T) {
		dir := testutil.CopyDeltaTable(t, "dv-small")
		commit(t, dir, add("bad.parquet", -1<<63, ""))
		var out, errOut bytes.Buffer
		err := commandNamed("inspect").exec(context.Background(), []string{"file://" + dir}, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), "corrupt commit _delta_log/00000000000000000002.json") || !strings.Contains(err.Error(), "bad.parquet: negative size") {
			t.Fatalf("inspect: %v, want the corrupt commit and the file named", err)
		}
	})
	t.Run("sizes summing to 2^63", func(t *testing.T) {
		dir := testutil.CopyDeltaTable(t, "dv-small")
		commit(t, dir, add("huge-0.parquet", 1<<62, ""), add("huge-1.parquet", 1<<62-635, ""))
		var out, errOut bytes.Buffer
		if err := commandNamed("inspect").exec(context.Background(), []string{"file://" + dir}, &out, &errOut); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "3 (-8192 PiB)") {
			t.Errorf("the overflowed total is not printed as it is:\n%s", out.String())
		}
	})
	t.Run("DV past the footer's rows", func(t *testing.T) {
		dir := testutil.CopyDeltaTable(t, "dv-small")
		data, err := os.ReadFile(filepath.Join(dir, dvSmallFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "copy.parquet"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		// No stats: only the footer (10 rows) says the DV cannot fit.
		commit(t, dir, add("copy.parquet", int64(len(data)), `,"deletionVector":{"storageType":"u","pathOrInlineDv":"vBn[lx{q8@P<9BNH/isA","offset":1,"sizeInBytes":36,"cardinality":102}`))
		rep, _ := inspectJSON(t, "file://"+dir)
		if rep.NumRecords != 8 || rep.FilesWithUnknownRows != 1 || rep.NumDeletedRows != 2 {
			t.Errorf("%d live rows, %d deleted, %d files with unknown rows; want 8, 2 and 1", rep.NumRecords, rep.NumDeletedRows, rep.FilesWithUnknownRows)
		}
	})
}

// TestTheTablePageSurvivesImpossibleSizes serves the page of a real table
// to which commits with impossible sizes are then appended by hand: the
// page answers (naming the corrupt commit, or printing the overflowed
// total), and the daemon keeps serving.
func TestTheTablePageSurvivesImpossibleSizes(t *testing.T) {
	for _, c := range []struct {
		name, lines, want string
	}{
		{"size -2^63", `{"add":{"path":"bad.parquet","partitionValues":{},"size":-9223372036854775808,"modificationTime":1700000000000,"dataChange":true}}`, "bad.parquet: negative size"},
		{"sizes summing to 2^63", `{"add":{"path":"huge-0.parquet","partitionValues":{},"size":4611686018427387904,"modificationTime":1700000000000,"dataChange":true}}
{"add":{"path":"huge-1.parquet","partitionValues":{},"size":4611686018427387269,"modificationTime":1700000000000,"dataChange":true}}`, "-8192 PiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := testutil.CopyDeltaTable(t, "dv-small")
			pdir := t.TempDir()
			writePolicy(t, pdir, "t.hcl", fmt.Sprintf("table \"t\" {\n  url = %q\n}\n", "file://"+dir))
			ld := startLoggedDaemon(t, pdir)
			body := `{"commitInfo":{"timestamp":1700000000000,"operation":"WRITE"}}` + "\n" + c.lines + "\n"
			if err := os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000002.json"), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			code, page := get(t, ld.base+"/tables/t")
			if code != http.StatusOK || !strings.Contains(page, c.want) {
				t.Fatalf("GET /tables/t: %d, want 200 showing %q:\n%s", code, c.want, page)
			}
			if code, _ := get(t, ld.base+"/healthz"); code != http.StatusOK {
				t.Fatalf("GET /healthz after the page: %d", code)
			}
		})
	}
}

// TestAPanickingHandlerAnswers500AndTheDaemonServesOn makes the table
// page's inspection panic: the request gets a 500, the panic is logged
// with the path, and the next request is served.
func TestAPanickingHandlerAnswers500AndTheDaemonServesOn(t *testing.T) {
	dir, fb, be := memTableDaemon(t, "t")
	be.Inspect = func(ctx context.Context, p policies.Policy) (*inspect.Report, error) {
		var rows []int64
		_ = rows[len(p.Name)] // index out of range
		return nil, nil
	}
	var logs testutil.SyncBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, JSONFormat: true})
	td := startTestDaemonLogged(t, dir, fb, be, log)
	if code, body := get(t, td.base+"/tables/t"); code != http.StatusInternalServerError || !strings.Contains(body, "internal error") {
		t.Fatalf("GET /tables/t: %d %q, want 500", code, body)
	}
	if code, _ := get(t, td.base+"/healthz"); code != http.StatusOK {
		t.Fatalf("GET /healthz after the panic: %d", code)
	}
	if s := logs.String(); !strings.Contains(s, "http handler panicked") || !strings.Contains(s, `"path":"/tables/t"`) || !strings.Contains(s, "index out of range") {
		t.Errorf("the panic is not logged with its path and reason:\n%s", s)
	}
}

// TestAllowExternalPrefixLetsCatReadThere allows the sentinel's directory
// with --allow-external-prefix: the deletion vector is opened there (and
// refused for its content, without echoing it); a prefix that is not an
// absolute URI is a usage error.
func TestAllowExternalPrefixLetsCatReadThere(t *testing.T) {
	dir := hostileDVTable(t, func(dir string) string { return "file://" + filepath.Dir(dir) + "/sentinel" })
	var out, errOut bytes.Buffer
	err := commandNamed("cat").exec(context.Background(), []string{"file://" + dir, "--allow-external-prefix", "file://" + filepath.Dir(dir)}, &out, &errOut)
	if err == nil || strings.Contains(err.Error(), "outside the table root") || !strings.Contains(err.Error(), "size field does not match") {
		t.Fatalf("cat: %v, want the sentinel read and refused for its size field", err)
	}
	if found := secretIn(strings.ReplaceAll(err.Error()+out.String()+errOut.String(), dir, "")); len(found) > 0 {
		t.Errorf("output carries the secret as %q: %v", found, err)
	}
	err = commandNamed("cat").exec(context.Background(), []string{"file://" + dir, "--allow-external-prefix", "srv/dv"}, &out, &errOut)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--allow-external-prefix") {
		t.Fatalf("cat with a relative prefix: %v, want a usage error naming the flag", err)
	}
}
