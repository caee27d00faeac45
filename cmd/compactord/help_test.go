package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/testutil"
)

// tablelessCommands open no table of the user's: they alone may lack the
// --store-* flags (demo opens only the local table it creates).
var tablelessCommands = map[string]bool{"check": true, "demo": true, "version": true}

// Every command in the command table, those added later included, prints
// its usage with every flag on -h, --help and `help CMD`, and exits 0; every
// command that opens a table takes the --store-* flags.
func TestEveryCommandsHelpExitsZeroAndListsEveryFlag(t *testing.T) {
	var storeFlagNames []string
	storeSet := flag.NewFlagSet("store", flag.ContinueOnError)
	addStoreFlags(storeSet)
	storeSet.VisitAll(func(f *flag.Flag) { storeFlagNames = append(storeFlagNames, f.Name) })
	if len(storeFlagNames) == 0 {
		t.Fatal("addStoreFlags registers no flag")
	}
	for _, c := range commands() {
		for _, args := range [][]string{{c.name, "-h"}, {c.name, "--help"}, {"help", c.name}} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var sets []*flag.FlagSet
				ctx := context.WithValue(context.Background(), flagSetsKey{}, &sets)
				var stdout, stderr bytes.Buffer
				if code := mainExit(ctx, args, &stdout, &stderr); code != 0 {
					t.Fatalf("exit code %d, want 0; stderr:\n%s", code, stderr.String())
				}
				if len(sets) == 0 {
					t.Fatalf("command %s does not build its flags with newCommandFlags (cmd/compactord/flags.go), so -h, --log-level and --log-format are not known to be there", c.name)
				}
				help := stdout.String()
				if want := "usage: compactord " + c.name + " " + commandSynopsis(c.name); !strings.Contains(help, want) {
					t.Errorf("help does not start with %q:\n%s", want, help)
				}
				for _, fs := range sets {
					fs.VisitAll(func(f *flag.Flag) {
						if !listsFlag(help, f.Name) {
							t.Errorf("help does not list -%s:\n%s", f.Name, help)
						}
						// The flag package shows a back-quoted word of the
						// usage as the value's name: a phrase there reads as
						// "-executor compactord run-unit".
						if name, _ := flag.UnquoteUsage(f); strings.ContainsAny(name, " \t") {
							t.Errorf("-%s shows %q as its value's name: its usage has a back-quoted phrase", f.Name, name)
						}
					})
					for _, common := range []string{"log-level", "log-format", "v"} {
						if fs.Lookup(common) == nil {
							t.Errorf("command %s has no --%s", c.name, common)
						}
					}
					if !tablelessCommands[c.name] {
						for _, name := range storeFlagNames {
							if fs.Lookup(name) == nil {
								t.Errorf("command %s opens a table but has no --%s", c.name, name)
							}
						}
					}
				}
				if stderr.Len() != 0 {
					t.Errorf("asked-for help wrote to stderr: %q", stderr.String())
				}
			})
		}
	}
}

func TestTopLevelHelpAndVersion(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		var stdout, stderr bytes.Buffer
		if code := mainExit(ctx, args, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "commands:") {
			t.Errorf("%v: exit %d, stdout %q", args, code, stdout.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := mainExit(ctx, nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "commands:") {
		t.Errorf("no arguments: exit %d, stderr %q; want the usage on stderr and exit 2", code, stderr.String())
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		stdout.Reset()
		if code := mainExit(ctx, args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		// This test binary records no commit (go test stamps none).
		if want := "compactord " + version + " (commit unknown, " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"; stdout.String() != want {
			t.Errorf("%v printed %q, want %q", args, stdout.String(), want)
		}
	}
	stdout.Reset()
	if code := mainExit(ctx, []string{"version", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("version --json: exit %d", code)
	}
	var v versionInfo
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil || v.Version != version || v.Go != runtime.Version() || v.Revision != "unknown" {
		t.Fatalf("version --json: %q (%v)", stdout.String(), err)
	}
}

// The commit comes from the build's vcs settings when it has them.
func TestVersionNamesTheCommitTheBinaryWasBuiltFrom(t *testing.T) {
	goOS := " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	for _, c := range []struct {
		name     string
		settings []debug.BuildSetting
		want     string
	}{
		{"a clean checkout", []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "fc9267d730dc8a1c547407238372b035ebc1c593"}, {Key: "vcs.modified", Value: "false"}},
			"compactord " + version + " (commit fc9267d730dc8a1c547407238372b035ebc1c593," + goOS},
		{"a checkout with changes", []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}},
			"compactord " + version + " (commit abc123 with local changes," + goOS},
		{"no vcs settings", []debug.BuildSetting{{Key: "-trimpath", Value: "true"}}, "compactord " + version + " (commit unknown," + goOS},
		{"modified without a revision", []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}, "compactord " + version + " (commit unknown," + goOS},
	} {
		if got := versionOf(&debug.BuildInfo{Settings: c.settings}, true).String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := versionOf(nil, false); got.Revision != "unknown" || got.Modified {
		t.Errorf("no build info: %+v", got)
	}
}

func TestBadLoggingFlagsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"inspect", "--log-level", "loud", "x"},
		{"cat", "--log-format", "xml", "x"},
		{"run", "--policies", "x", "--log-level", "chatty"},
	} {
		var stdout, stderr bytes.Buffer
		if code := mainExit(context.Background(), args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, stderr.String())
		}
	}
}

func TestDaemonDurationsTakeThePolicySyntax(t *testing.T) {
	o, err := parseDaemonFlags(commandNamed("run").flags(context.Background(), &bytes.Buffer{}), []string{"--policies", "p", "--poll", "1d", "--shutdown-timeout", "90s"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Poll != 24*time.Hour || o.ShutdownTimeout != 90*time.Second {
		t.Fatalf("poll %v, shutdown timeout %v", o.Poll, o.ShutdownTimeout)
	}
	if _, err := parseDaemonFlags(commandNamed("run").flags(context.Background(), &bytes.Buffer{}), []string{"--policies", "p", "--poll", "soon"}); err == nil || !strings.Contains(err.Error(), "7d") {
		t.Fatalf("bad --poll: %v, want the accepted syntax", err)
	}
}

// A policy directory without *.hcl files is an error, not a daemon with
// no table: check exits non-zero and says what to put there.
func TestCheckFailsOnAnEmptyPolicyDirectory(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := mainExit(context.Background(), []string{"check", dir}, &stdout, &stderr); code != 1 || stdout.Len() != 0 {
		t.Fatalf("exit %d, stdout %q: want exit 1 and no policies printed", code, stdout.String())
	}
	if !strings.Contains(stderr.String(), dir+" has no *.hcl files (it is empty); put a table block in a file ending in .hcl there") {
		t.Fatalf("stderr %q: want the empty directory named with what to do", stderr.String())
	}
	// A plain absolute path is a table URL in a policy, as on the command line.
	if err := os.WriteFile(filepath.Join(dir, "t.hcl"), []byte("table \"t\" {\n  url = \""+filepath.Join(dir, "table")+"\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := mainExit(context.Background(), []string{"check", dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("a policy with a plain absolute path: exit %d: %s", code, stderr.String())
	}
}

// A policy file given where the directory is wanted fails check, run and
// plan, naming the directory to give instead; so does an unreadable
// directory, with the system's reason.
func TestAPolicyFileOrAnUnreadableDirectoryFailsEveryCommandThatLoadsPolicies(t *testing.T) {
	if testutil.RunUnprivileged(t) {
		return
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "events.hcl")
	if err := os.WriteFile(file, []byte("table \"t\" {\n  url = \""+filepath.Join(dir, "table")+"\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(dir, "locked")
	testutil.UnreadableDir(t, unreadable, map[string]string{"t.hcl": "table \"t\" {\n  url = \"mem://t\"\n}\n"})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check", file}, "compactord check: check wants a directory of .hcl files; " + file + " is a file (its directory is " + dir + ")"},
		{[]string{"run", "--http", "off", "--policies", file}, "--policies wants a directory of .hcl files; " + file + " is a file (its directory is " + dir + ")"},
		{[]string{"plan", "--policies", file}, "--policies wants a directory of .hcl files; " + file + " is a file (its directory is " + dir + ")"},
		{[]string{"check", unreadable}, "read policy directory " + unreadable + ": open " + unreadable + ": permission denied"},
		{[]string{"run", "--http", "off", "--policies", unreadable}, "read policy directory " + unreadable + ": open " + unreadable + ": permission denied"},
	} {
		var stdout, stderr bytes.Buffer
		// A daemon that starts stops when ctx ends, and the case fails.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		code := mainExit(ctx, c.args, &stdout, &stderr)
		cancel()
		if code != 1 || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q: want exit 1 and nothing printed", c.args, code, stdout.String())
		}
		if !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: stderr %q, want %q", c.args, stderr.String(), c.want)
		}
	}
}

// listsFlag reports whether help has flag.PrintDefaults' line for name.
func listsFlag(help, name string) bool {
	for _, line := range strings.Split(help, "\n") {
		if rest, ok := strings.CutPrefix(line, "  -"+name); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			return true
		}
	}
	return false
}

// Every subcommand's -h prints its flags and exits 0; a bad flag exits 2.
func TestEveryCommandsHelpExitsZero(t *testing.T) {
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := mainExit(context.Background(), []string{c.name, "-h"}, &out, &errOut); code != 0 {
				t.Fatalf("%s -h exited %d: %s", c.name, code, errOut.String())
			}
			if !strings.Contains(errOut.String()+out.String(), "-") {
				t.Errorf("%s -h printed no flags", c.name)
			}
			if code := mainExit(context.Background(), []string{c.name, "--no-such-flag"}, &out, &errOut); code != 2 {
				t.Errorf("%s --no-such-flag exited %d, want 2", c.name, code)
			}
		})
	}
}
