package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/inspect"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/policies"
)

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
			err := runCat(context.Background(), []string{"file://" + dir}, &out, &errOut)
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
		err := runInspect(context.Background(), []string{"file://" + dir}, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), "corrupt commit _delta_log/00000000000000000002.json") || !strings.Contains(err.Error(), "bad.parquet: negative size") {
			t.Fatalf("inspect: %v, want the corrupt commit and the file named", err)
		}
	})
	t.Run("sizes summing to 2^63", func(t *testing.T) {
		dir := testutil.CopyDeltaTable(t, "dv-small")
		commit(t, dir, add("huge-0.parquet", 1<<62, ""), add("huge-1.parquet", 1<<62-635, ""))
		var out, errOut bytes.Buffer
		if err := runInspect(context.Background(), []string{"file://" + dir}, &out, &errOut); err != nil {
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
	dir := t.TempDir()
	writePolicy(t, dir, "t.hcl", "table \"t\" {\n  url = \"mem://t\"\n}\n")
	fb := &fakeBackend{runs: map[string]int{}}
	be := fb.backend()
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
	err := runCat(context.Background(), []string{"file://" + dir, "--allow-external-prefix", "file://" + filepath.Dir(dir)}, &out, &errOut)
	if err == nil || strings.Contains(err.Error(), "outside the table root") || !strings.Contains(err.Error(), "size field does not match") {
		t.Fatalf("cat: %v, want the sentinel read and refused for its size field", err)
	}
	if found := secretIn(strings.ReplaceAll(err.Error()+out.String()+errOut.String(), dir, "")); len(found) > 0 {
		t.Errorf("output carries the secret as %q: %v", found, err)
	}
	err = runCat(context.Background(), []string{"file://" + dir, "--allow-external-prefix", "srv/dv"}, &out, &errOut)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--allow-external-prefix") {
		t.Fatalf("cat with a relative prefix: %v, want a usage error naming the flag", err)
	}
}
