package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// progressCase is a long-work command on a copy of a table.
type progressCase struct {
	name  string
	table func(t *testing.T) string // the table URL
	args  []string                  // after the URL
	op    string                    // the progress lines' op
	files int64                     // their files_total (0: any above 0)
	out   string                    // in the command's report
}

func progressCases() []progressCase {
	fixture := func(name string) func(t *testing.T) string {
		return func(t *testing.T) string { return tabletest.CopyFixture(t, name).URL }
	}
	return []progressCase{
		{"compact", fixture("ckpt-v2-json-sidecars-101-files"), nil, "compaction", 101, "committed version 7"},
		{"expire", func(t *testing.T) string {
			tbl, _ := tabletest.NewDayTable(t, []int{0, 1, 2, 3})
			return tbl.URL
		}, []string{"--column", "day", "--before", "2026-01-03"}, "retention", 4, "deleted 20 rows"},
		{"vacuum", fixture("dbr-optimize-dv-cdc-logcompaction"), []string{"--retention", "0s", "--force-retention"}, "vacuum", 0, "deleted "},
		{"checkpoint", fixture("dv-basic-no-checkpoint"), nil, "checkpoint", 2, "checkpoint of "},
	}
}

// bytesDrawn is the bar's bytes part: done of total and the rate, in the
// one human size format.
var bytesDrawn = regexp.MustCompile(`files, [0-9.]+ (B|KiB|MiB) of [0-9.]+ (B|KiB|MiB), [0-9.]+ (B|KiB|MiB)/s`)

func TestLongCommandsDrawAProgressBarOnATerminal(t *testing.T) {
	for _, c := range progressCases() {
		t.Run(c.name, func(t *testing.T) {
			url := c.table(t)
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Skipf("no pseudo-terminal: %v", err)
			}
			defer ptmx.Close()
			if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 200}); err != nil {
				t.Fatal(err)
			}
			drawn := make(chan string)
			go func() {
				b, _ := io.ReadAll(ptmx) // ends with EIO once tty is closed
				drawn <- string(b)
			}()
			code := mainExit(context.Background(), append([]string{c.name, url}, c.args...), tty, tty)
			tty.Close()
			out := <-drawn
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			for _, want := range []string{c.op + " ", "100%", "files", c.out} {
				if !strings.Contains(out, want) {
					t.Errorf("terminal lacks %q:\n%q", want, out)
				}
			}
			if c.name == "compact" && !bytesDrawn.MatchString(out) {
				t.Errorf("terminal does not show bytes done of total and the rate in the one size format (units.FormatBytes):\n%q", out)
			}
			if c.files > 0 {
				if want := "/" + strconv.FormatInt(c.files, 10) + " files"; !strings.Contains(out, want) {
					t.Errorf("terminal lacks %q:\n%q", want, out)
				}
			}
			if !strings.Contains(out, "\r") {
				t.Errorf("no bar redrawn in place:\n%q", out)
			}
		})
	}
}

func TestOffATerminalProgressIsLogLinesOnStderrAndStdoutOnlyTheReport(t *testing.T) {
	for _, c := range progressCases() {
		t.Run(c.name, func(t *testing.T) {
			url := c.table(t)
			var out, errOut bytes.Buffer
			args := append([]string{c.name, url, "--log-level", "info", "--log-format", "json"}, c.args...)
			if code := mainExit(context.Background(), args, &out, &errOut); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			if !strings.Contains(out.String(), c.out) || strings.Contains(out.String(), "%") || strings.Contains(out.String(), "\r") {
				t.Errorf("stdout is not only the report:\n%s", out.String())
			}
			var lines []map[string]any
			sc := bufio.NewScanner(&errOut)
			for sc.Scan() {
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Fatalf("stderr line not JSON: %q", sc.Text())
				}
				if m["@message"] == "progress" {
					lines = append(lines, m)
				}
			}
			if len(lines) < 2 {
				t.Fatalf("want a start and an end progress line, got %v", lines)
			}
			first, last := lines[0], lines[len(lines)-1]
			if first["op"] != c.op || first["files"] != 0.0 || last["files"] != last["files_total"] || last["bytes"] != last["bytes_total"] {
				t.Errorf("first %v, last %v", first, last)
			}
			if total, _ := last["files_total"].(float64); total <= 0 || c.files > 0 && total != float64(c.files) {
				t.Errorf("files_total %v, want %d", last["files_total"], c.files)
			}
			if _, ok := last["elapsed"].(string); !ok {
				t.Errorf("elapsed %#v is not a duration string", last["elapsed"])
			}
			// At the default level (warn) there are no progress lines.
			url = c.table(t)
			out.Reset()
			errOut.Reset()
			if code := mainExit(context.Background(), append([]string{c.name, url}, c.args...), &out, &errOut); code != 0 || strings.Contains(errOut.String(), "progress") {
				// (vacuum warns about the forced retention; never of progress)
				t.Errorf("exit %d, stderr at the default level:\n%s", code, errOut.String())
			}
		})
	}
}
