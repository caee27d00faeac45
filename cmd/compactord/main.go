package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is the build's version, reported in engineInfo and /status.
const version = "0.1.0"

// command is one subcommand: it parses its own flags from args and writes
// its report to stdout.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"inspect", "describe a table: files, sizes, deletion vectors, features", runInspect},
		{"cat", "print a table's live rows as JSON lines", runCat},
		{"plan", "plan a compaction and write it as JSON", runPlan},
		{"run-plan", "execute a plan file against its read version", runRunPlan},
		{"compact", "plan, rewrite and commit one compaction", runCompact},
		{"expire", "run one retention delete", runExpire},
		{"vacuum", "delete files no version inside the retention window needs", runVacuum},
		{"checkpoint", "write a checkpoint of a table version", runCheckpoint},
		{"cleanup-log", "delete log files older than the log retention that a checkpoint covers", runCleanupLog},
		{"backfill-stats", "compute missing file statistics and re-add the files with them", runBackfillStats},
		{"check", "validate a policy directory", runCheck},
		{"run", "run the daemon", runDaemon},
		{"demo", "build a local table and race a DELETE against compaction", runDemo},
	}
}

// errUsage marks a command-line error (exit code 2).
var errUsage = errors.New("usage")

// errHelp marks a request for a command's help (-h): its usage was
// printed, and the exit code is 0.
var errHelp = errors.New("help requested")

// usageError classes a flag parse error: -h is errHelp, the rest errUsage.
func usageError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return errHelp
	}
	return fmt.Errorf("%w: %v", errUsage, err)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(mainExit(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func mainExit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		return 2
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		if err := c.run(ctx, args[1:], stdout, stderr); err != nil {
			if errors.Is(err, errHelp) {
				return 0
			}
			fmt.Fprintf(stderr, "compactord %s: %v\n", c.name, err)
			if errors.Is(err, errUsage) {
				return 2
			}
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "compactord: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: compactord <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
}
