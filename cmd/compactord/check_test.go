package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckRefusesTwoSpellingsOfOneTable(t *testing.T) {
	dir := t.TempDir()
	writePolicy(t, dir, "a.hcl", "table \"a\" {\n  url = \"file:///data/events\"\n}\n")
	writePolicy(t, dir, "b.hcl", "table \"b\" {\n  url = \"/data/events/\"\n}\n")
	var out, errb strings.Builder
	if code := mainExit(context.Background(), []string{"check", dir}, &out, &errb); code != 1 {
		t.Fatalf("check exit %d, want 1: %s%s", code, out.String(), errb.String())
	}
	want := filepath.Join(dir, "b.hcl") + `:2:3: Duplicate table url; Table "b" has the same url as table "a" (at ` + filepath.Join(dir, "a.hcl") + `:2:3)`
	if !strings.Contains(errb.String(), want) {
		t.Fatalf("stderr does not say %q:\n%s", want, errb.String())
	}
}
