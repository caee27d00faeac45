package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommandsOnAMissingPathFailNamingItAndCreateNothing(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "x1", "y", "z")
	cases := [][]string{
		{"inspect", missing},
		{"cat", missing},
		{"plan", missing},
		{"compact", missing},
		{"expire", missing, "--column", "d", "--before", "2020-01-01"},
	}
	for _, args := range cases {
		t.Run(args[0], func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := mainExit(context.Background(), args, &stdout, &stderr)
			if code != 1 {
				t.Errorf("exit code %d, want 1 (stderr %q)", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), missing) {
				t.Errorf("stderr %q does not name %s", stderr.String(), missing)
			}
			if _, err := os.Stat(filepath.Join(root, "x1")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s created %s (stat err=%v)", args[0], filepath.Join(root, "x1"), err)
			}
		})
	}
}
