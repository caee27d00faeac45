package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/compactord/compactord/internal/demo"
)

// runDemo builds a table of many small files, starts the daemon loop on it
// in-process, races a deletion-vector DELETE against the compaction (the
// DELETE commits right before the compaction's put-if-absent, so the
// compaction always loses that race and must reconcile), and prints
// before/after.
func runDemo(ctx context.Context, fs *commandFlags, args []string, stdout, stderr io.Writer) error {
	var o demo.Options
	fs.StringVar(&o.Dir, "dir", "", "directory for the demo table and policy (default: a temp dir, removed afterwards unless --keep)")
	fs.IntVar(&o.Commits, "commits", 12, "append commits to write")
	fs.IntVar(&o.FilesPerCommit, "files-per-commit", 4, "files per append commit")
	fs.Int64Var(&o.RowsPerFile, "rows", 250, "rows per file")
	fs.Int64Var(&o.DeleteEvery, "delete-every", 10, "the racing DELETE removes rows whose id % N == 3")
	fs.BoolVar(&o.Keep, "keep", false, "keep the temp dir")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || o.Commits < 1 || o.FilesPerCommit < 1 || o.RowsPerFile < 1 || o.DeleteEvery < 4 {
		return fmt.Errorf("%w: demo takes only flags; counts must be positive and --delete-every at least 4", errUsage)
	}
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "compactord-demo-")
		if err != nil {
			return err
		}
		o.Dir = d
		if !o.Keep {
			// The demo's own scratch directory, made above: no table of
			// the user's, so not the deletion gate.
			defer os.RemoveAll(d)
		}
	}
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return err
	}
	o.Dir = abs
	o.Version = version
	return demo.Run(ctx, o, stdout, fs.logger(stderr))
}
