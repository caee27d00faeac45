package policies

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// parseTables parses src as the one file t.hcl and returns the set and its
// tables by name.
func parseTables(t *testing.T, src string) (*Set, map[string]Policy) {
	t.Helper()
	set, err := Parse(map[string][]byte{"t.hcl": []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Policy{}
	for _, p := range set.Tables {
		byName[p.Name] = p
	}
	return set, byName
}

// loadFile writes src as the file t.hcl of dir and loads dir.
func loadFile(t *testing.T, dir, src string) (*Set, error) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "t.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return LoadDir(dir)
}

// roundTrip writes set as HCL and parses it back; the written text comes
// with it for failure messages.
func roundTrip(t *testing.T, set *Set) (*Set, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHCL(&buf, set); err != nil {
		t.Fatal(err)
	}
	again, err := Parse(map[string][]byte{"effective.hcl": buf.Bytes()})
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	return again, buf.String()
}

// wantParseError fails unless parsing src as t.hcl fails with an error that
// contains want.
func wantParseError(t *testing.T, src, want string) {
	t.Helper()
	_, err := Parse(map[string][]byte{"t.hcl": []byte(src)})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
}
