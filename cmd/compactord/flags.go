package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/compactord/compactord/internal/logging"
	"github.com/compactord/compactord/internal/units"
	"github.com/hashicorp/go-hclog"
)

// flagSetsKey is the context key under which a test collects the flag set of
// the command it runs (a *[]*flag.FlagSet), to check that -h lists it all.
type flagSetsKey struct{}

// commandFlags is a subcommand's flag set with the flags every subcommand
// has: --log-level, --log-format and -v. Every subcommand builds its flags
// with newCommandFlags so that -h, the usage line and logging are the same
// everywhere.
type commandFlags struct {
	*flag.FlagSet
	name      string
	logLevel  string
	logFormat string
	verbose   bool
	// checks run after the flags are parsed; an error is a usage error.
	checks []func() error
}

// newCommandFlags returns the flag set of subcommand name; its usage is the
// command's synopsis and summary from the command table, then every flag.
// defaultLevel is the log level without flags ("warn" for commands whose
// stdout is their report, "info" for the daemon).
func newCommandFlags(ctx context.Context, name, defaultLevel string, stderr io.Writer) *commandFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := &commandFlags{FlagSet: fs, name: name}
	fs.StringVar(&cf.logLevel, "log-level", defaultLevel, "log level on stderr: trace, debug, info, warn, error or off")
	fs.StringVar(&cf.logFormat, "log-format", "text", "log format on stderr: text or json")
	fs.BoolVar(&cf.verbose, "v", false, "verbose: --log-level debug")
	fs.Usage = cf.usage
	if rec, ok := ctx.Value(flagSetsKey{}).(*[]*flag.FlagSet); ok {
		*rec = append(*rec, fs)
	}
	return cf
}

func (cf *commandFlags) usage() {
	w := cf.Output()
	synopsis, summary := commandSynopsis(cf.name), ""
	if c := commandNamed(cf.name); c != nil {
		summary = c.summary
	}
	fmt.Fprintf(w, "usage: compactord %s %s\n", cf.name, synopsis)
	if summary != "" {
		fmt.Fprintf(w, "\n%s.\n", summary)
	}
	fmt.Fprintln(w, "\nflags (before or after the arguments):")
	cf.PrintDefaults()
}

// parse parses args, flags before or after positional arguments (Go's flag
// package stops at the first positional one), and checks the logging
// flags. -h and --help return an error wrapping flag.ErrHelp after printing
// the usage.
func (cf *commandFlags) parse(args []string) ([]string, error) {
	var pos []string
	for {
		if err := cf.Parse(args); err != nil {
			if !errors.Is(err, flag.ErrHelp) {
				// The usage printed above ends with the flags; the
				// error line main prints comes after a blank line.
				fmt.Fprintln(cf.Output())
			}
			return nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		args = cf.Args()
		if len(args) == 0 {
			break
		}
		if args[0] == "--" {
			pos = append(pos, args[1:]...)
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if cf.verbose {
		cf.logLevel = "debug"
	}
	if cf.logFormat != "text" && cf.logFormat != "json" {
		return nil, fmt.Errorf("%w: --log-format %q: want text or json", errUsage, cf.logFormat)
	}
	if lvl := strings.ToLower(cf.logLevel); lvl != "off" && hclog.LevelFromString(lvl) == hclog.NoLevel {
		return nil, fmt.Errorf("%w: --log-level %q: want trace, debug, info, warn, error or off", errUsage, cf.logLevel)
	}
	for _, check := range cf.checks {
		if err := check(); err != nil {
			return nil, fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	return pos, nil
}

// logger is the logger the flags ask for, writing to w.
func (cf *commandFlags) logger(w io.Writer) hclog.Logger {
	return logging.New(w, cf.logFormat, cf.logLevel)
}

// stringsFlag is a repeatable string flag: each use appends its value.
type stringsFlag []string

func (f *stringsFlag) String() string { return strings.Join(*f, ",") }

func (f *stringsFlag) Set(s string) error {
	*f = append(*f, s)
	return nil
}

// versionFlag is a flag.Value holding a table version: an integer, 0 or
// more. Unset, it holds -1, the latest version; "-5" is refused rather than
// read as the latest.
type versionFlag struct{ v *int64 }

func (f versionFlag) String() string {
	if f.v == nil || *f.v < 0 {
		return ""
	}
	return strconv.FormatInt(*f.v, 10)
}

func (f versionFlag) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return errors.New("not a table version (an integer, 0 or more)")
	}
	if v < 0 {
		return errors.New("a table version is 0 or more (leave --version out for the latest)")
	}
	*f.v = v
	return nil
}

// countVar defines an int flag that must not be negative (a concurrency, a
// number of files); a negative value is a usage error naming the flag, not
// silently a default.
func (cf *commandFlags) countVar(name string, value int, usage string) *int {
	p := cf.Int(name, value, usage)
	cf.checks = append(cf.checks, func() error {
		if *p < 0 {
			return fmt.Errorf("--%s %d: must be 0 or more", name, *p)
		}
		return nil
	})
	return p
}

// versionVar defines --version, a table version (-1, the latest, unless
// given).
func (cf *commandFlags) versionVar(usage string) *int64 {
	v := int64(-1)
	cf.Var(versionFlag{&v}, "version", usage)
	return &v
}

// durationVar defines a duration flag in the policy syntax.
func (cf *commandFlags) durationVar(p *time.Duration, name string, value time.Duration, usage string) {
	durationFlagVar(cf.FlagSet, p, name, value, usage)
}

// durationFlagVar defines a duration flag in the policy syntax on fs.
func durationFlagVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(units.DurationFlag{D: p}, name, usage)
}

// parseSubcommand parses args that must be the subcommand sub and n more
// positional arguments; takes says what they are in the usage error.
func (cf *commandFlags) parseSubcommand(args []string, sub string, n int, takes string) ([]string, error) {
	pos, err := cf.parse(args)
	if err != nil {
		return nil, err
	}
	if len(pos) != n+1 || pos[0] != sub {
		return nil, fmt.Errorf("%w: %s takes %s (usage: compactord %s %s)", errUsage, cf.name, takes, cf.name, commandSynopsis(cf.name))
	}
	return pos, nil
}

// parseOne parses args that must hold exactly one positional argument
// (what, e.g. "table URL").
func (cf *commandFlags) parseOne(args []string, what string) (string, error) {
	pos, err := cf.parse(args)
	if err != nil {
		return "", err
	}
	switch len(pos) {
	case 1:
		return pos[0], nil
	case 0:
		return "", fmt.Errorf("%w: missing %s (usage: compactord %s %s)", errUsage, what, cf.name, commandSynopsis(cf.name))
	}
	return "", fmt.Errorf("%w: unexpected arguments %v (usage: compactord %s %s)", errUsage, pos[1:], cf.name, commandSynopsis(cf.name))
}
