package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/fanout"
)

// exitCodeError makes mainExit end the process with code (a run-unit
// worker's fanout exit codes).
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string { return e.err.Error() }
func (e *exitCodeError) Unwrap() error { return e.err }

func runRunUnit(ctx context.Context, fs *commandFlags, args []string, stdout, stderr io.Writer) error {
	planURL := fs.String("plan", "", "URL of the stored plan (<table>/_compactord/plans/<id>/plan.json)")
	spill := fs.String("spill-dir", "", "local directory for the writer's spill files (default: the system temp directory)")
	store := fs.addStoreFlags(stderr)
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || *planURL == "" {
		return fmt.Errorf("%w: run-unit takes --plan URL and no arguments", errUsage)
	}
	raw, ok := os.LookupEnv(fanout.IndexEnv)
	if !ok {
		return fmt.Errorf("%w: %s is not set", errUsage, fanout.IndexEnv)
	}
	// The range is checked against the plan once it is read.
	index, err := fanout.ParseIndex(raw, int(^uint(0)>>1))
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	log := fs.logger(stderr)
	opts := fanout.WorkerOptions{Logger: log, SpillDir: *spill, Open: store.open}
	if hook := os.Getenv(testPauseEnv); hook != "" {
		opts.BeforeManifest = testPause(hook, index)
	}
	m, err := fanout.RunUnit(store.run(ctx), *planURL, index, opts)
	if err != nil {
		code := fanout.ExitCode(err)
		for _, f := range failure.CorruptDataFiles(err) {
			fmt.Fprintln(stderr, fanout.QuarantineLine(f))
		}
		return &exitCodeError{code: code, err: err}
	}
	fmt.Fprintf(stdout, "unit %d of plan %s done: %s (attempt %s)\n", index, m.Plan, plural(len(m.Jobs), "job"), m.Attempt)
	return nil
}
