package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/compactord/compactord/internal/redact"
)

// version is the build's version, reported in engineInfo and /status.
const version = "0.1.0"

// command is one subcommand: it declares its flags on fs (its flag set,
// with the logging flags every command has), parses them from args and
// writes its report to stdout.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, fs *commandFlags, args []string, stdout, stderr io.Writer) error
}

// logLevels are the default log levels of the commands whose default is
// not "warn" (the level of a command whose stdout is its report: the
// daemon's info lines would interleave with it on a terminal).
var logLevels = map[string]string{"run": "info"}

// commandNamed is the command called name; nil when there is none.
func commandNamed(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return &c
		}
	}
	return nil
}

// flags is the command's flag set (newCommandFlags with its default log
// level).
func (c *command) flags(ctx context.Context, stderr io.Writer) *commandFlags {
	level, ok := logLevels[c.name]
	if !ok {
		level = "warn"
	}
	return newCommandFlags(ctx, c.name, level, stderr)
}

// exec runs the command with args on its flag set.
func (c *command) exec(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return c.run(ctx, c.flags(ctx, stderr), args, stdout, stderr)
}

func commands() []command {
	return []command{
		{"inspect", "describe a table: files, sizes, deletion vectors, features", runInspect},
		{"cat", "print a table's live rows as JSON lines", runCat},
		{"plan", "plan a compaction and write it as JSON", runPlan},
		{"run-plan", "execute a plan file against its read version", runRunPlan},
		{"run-unit", "rewrite one unit of a stored plan (a fanned-out run's worker)", runRunUnit},
		{"compact", "plan, rewrite and commit one compaction", runCompact},
		{"expire", "run one retention delete", runExpire},
		{"vacuum", "delete files no version inside the retention window needs", runVacuum},
		{"checkpoint", "write a checkpoint of a table version", runCheckpoint},
		{"cleanup-log", "delete log files older than the log retention that a checkpoint covers", runCleanupLog},
		{"backfill-stats", "compute missing file statistics and re-add the files with them", runBackfillStats},
		{"predicates", "record predicates engines ran (JSON lines) as a table's clustering evidence", runPredicates},
		{"clustering", "advise on a table's clustering keys from its evidence; changes nothing", runClustering},
		{"check", "validate a policy directory", runCheck},
		{"run", "run the daemon", runDaemon},
		{"demo", "build a local table and race a DELETE against compaction", runDemo},
		{"version", "print the build's version, commit and Go version", runVersion},
	}
}

// synopses are the arguments of the commands that take other than one
// table URL; commandSynopsis falls back to "URL [flags]".
var synopses = map[string]string{
	"run-plan":   "PLAN.json [flags]",
	"run-unit":   "--plan URL [flags] (unit index in JOB_COMPLETION_INDEX)",
	"plan":       "URL [flags] | --policies DIR [--table NAME] [URL] [flags]",
	"compact":    "URL [flags] | --policies DIR [--table NAME] [URL] [flags]",
	"check":      "DIR [flags]",
	"predicates": "add URL FILE [flags] (FILE: JSON lines {\"predicate\": ..., \"weight\": n, \"time\": ...}; - for stdin)",
	"clustering": "advise URL [flags]",
	"run":        "--policies DIR [flags]",
	"demo":       "[flags]",
	"version":    "[flags]",
}

// commandSynopsis is the usage line of a command after its name.
func commandSynopsis(name string) string {
	if s, ok := synopses[name]; ok {
		return s
	}
	return "URL [flags]"
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
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 {
			// `compactord help CMD` is `compactord CMD -h`.
			return mainExit(ctx, []string{args[1], "-h"}, stdout, stderr)
		}
		usage(stdout)
		return 0
	case "--version", "-version":
		args = []string{"version"}
	}
	c := commandNamed(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "compactord: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	cmdErr := stderr
	if wantsHelp(args[1:]) {
		// Asked-for help is the command's output.
		cmdErr = stdout
	}
	if err := c.exec(ctx, args[1:], stdout, cmdErr); err != nil {
		if errors.Is(err, flag.ErrHelp) || errors.Is(err, errHelp) {
			return 0
		}
		// An error may name a table URL with its credentials.
		fmt.Fprintf(stderr, "compactord %s: %v\n", c.name, redact.Error(err))
		if errors.Is(err, errUsage) {
			return 2
		}
		if ec := (*exitCodeError)(nil); errors.As(err, &ec) {
			return ec.code
		}
		return 1
	}
	return 0
}

// wantsHelp reports whether args ask for help (before any "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: compactord <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\n`compactord <command> -h` lists the command's flags; `compactord --version` prints the version.")
}

// runVersion prints the build's version, commit ("unknown" when the build
// recorded none) and Go version.
func runVersion(ctx context.Context, cf *commandFlags, args []string, stdout, stderr io.Writer) error {
	asJSON := cf.Bool("json", false, "print the version as JSON")
	pos, err := cf.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("%w: version takes no arguments", errUsage)
	}
	bi, ok := debug.ReadBuildInfo()
	v := versionOf(bi, ok)
	if *asJSON {
		return writeJSONTo(stdout, v)
	}
	fmt.Fprintln(stdout, v)
	return nil
}

// versionInfo is what `compactord version --json` prints.
type versionInfo struct {
	Version string `json:"version"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	// Revision is the commit the binary was built from, "unknown" when the
	// build recorded none (go build outside a git checkout, -buildvcs=false).
	Revision string `json:"revision"`
	// Modified is true when the checkout had uncommitted changes.
	Modified bool `json:"modified"`
}

// String is the one line of `compactord version`.
func (v versionInfo) String() string {
	commit := v.Revision
	if v.Modified {
		commit += " with local changes"
	}
	return fmt.Sprintf("compactord %s (commit %s, %s %s/%s)", v.Version, commit, v.Go, v.OS, v.Arch)
}

// versionOf is the version of a binary with build info bi (ok false: the
// binary has none); the commit comes from bi's vcs.revision and
// vcs.modified settings.
func versionOf(bi *debug.BuildInfo, ok bool) versionInfo {
	v := versionInfo{Version: version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, Revision: "unknown"}
	if !ok || bi == nil {
		return v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if s.Value != "" {
				v.Revision = s.Value
			}
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	if v.Revision == "unknown" {
		// Local changes to an unknown commit say nothing.
		v.Modified = false
	}
	return v
}

// writeJSONTo writes v as indented JSON without HTML escaping.
func writeJSONTo(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
