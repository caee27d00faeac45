package main

import (
	"bytes"
	"context"
	"os"
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

// TestCheckPrintsNoCredentialsUnlessAsked: `check` prints the effective
// policies to terminals and CI logs, so a URL's credentials are redacted
// unless --show-secrets asks for them.
func TestCheckPrintsNoCredentialsUnlessAsked(t *testing.T) {
	dir := t.TempDir()
	policy := `table "t" {
  url = "s3://AKIACHECKKEY:CHECKPASS@bucket/t?region=us-east-1&secret_key=CHECKSECRET"
}
`
	if err := os.WriteFile(filepath.Join(dir, "t.hcl"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{dir}, {dir, "--json"}} {
		var out, errOut bytes.Buffer
		if err := commandNamed("check").exec(context.Background(), args, &out, &errOut); err != nil {
			t.Fatalf("check %v: %v", args, err)
		}
		for _, s := range []string{"AKIACHECKKEY", "CHECKPASS", "CHECKSECRET"} {
			if strings.Contains(out.String()+errOut.String(), s) {
				t.Errorf("check %v printed %q:\n%s", args, s, out.String())
			}
		}
		if !strings.Contains(out.String(), "REDACTED") {
			t.Errorf("check %v shows no redacted URL:\n%s", args, out.String())
		}
	}
	var out bytes.Buffer
	if err := commandNamed("check").exec(context.Background(), []string{dir, "--show-secrets"}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "CHECKSECRET") {
		t.Errorf("check --show-secrets hid the URL:\n%s", out.String())
	}
}
