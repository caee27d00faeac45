// Command testsummary reads `go test -json` events on stdin and prints what a
// person wants from a test run: one line per package as `go test` prints it,
// the output of every failed test, and at the end how many tests ran, passed,
// failed and skipped, per package and in all. It exits 1 when any test or
// package failed, so a pipeline under `set -o pipefail` fails too.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// counts are one package's test results.
type counts struct {
	passed, failed, skipped int
	result                  string
}

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

func run(in io.Reader, out io.Writer) int {
	pkgs := map[string]*counts{}
	outputs := map[string][]string{} // package + test -> output lines, until the test ends
	pkg := func(name string) *counts {
		c := pkgs[name]
		if c == nil {
			c = &counts{}
			pkgs[name] = c
		}
		return c
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Not an event (a build error printed by go itself): pass it on.
			fmt.Fprintln(out, sc.Text())
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "output":
			if e.Test == "" {
				// Package-level output: the ok/FAIL line, build errors, panics.
				if !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "PASS\n") {
					fmt.Fprint(out, e.Output)
				}
				continue
			}
			outputs[key] = append(outputs[key], e.Output)
		case "pass", "fail", "skip":
			c := pkg(e.Package)
			if e.Test == "" {
				c.result = e.Action
				continue
			}
			switch e.Action {
			case "pass":
				c.passed++
			case "fail":
				c.failed++
				fmt.Fprintf(out, "--- output of failed %s (%s)\n%s", e.Test, e.Package, strings.Join(outputs[key], ""))
			case "skip":
				c.skipped++
			}
			delete(outputs, key)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(out, "testsummary: reading events:", err)
		return 1
	}
	return summarize(pkgs, out)
}

func summarize(pkgs map[string]*counts, out io.Writer) int {
	names := make([]string, 0, len(pkgs))
	for n := range pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	var total counts
	failedPkgs := 0
	fmt.Fprintf(out, "\n== test summary\n%-60s %6s %6s %6s %7s\n", "package", "ran", "passed", "failed", "skipped")
	for _, n := range names {
		c := pkgs[n]
		ran := c.passed + c.failed + c.skipped
		if ran == 0 && c.result != "fail" {
			continue // no test files
		}
		if c.result == "fail" {
			failedPkgs++
		}
		fmt.Fprintf(out, "%-60s %6d %6d %6d %7d\n", n, ran, c.passed, c.failed, c.skipped)
		total.passed += c.passed
		total.failed += c.failed
		total.skipped += c.skipped
	}
	ran := total.passed + total.failed + total.skipped
	fmt.Fprintf(out, "%-60s %6d %6d %6d %7d\n", "all", ran, total.passed, total.failed, total.skipped)
	fmt.Fprintf(out, "tests ran: %d, passed: %d, failed: %d, skipped: %d; packages failed: %d\n",
		ran, total.passed, total.failed, total.skipped, failedPkgs)
	if total.failed > 0 || failedPkgs > 0 {
		return 1
	}
	return 0
}
