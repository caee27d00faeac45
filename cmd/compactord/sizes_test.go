package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"testing"

	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// humanSize matches the one size format (units.FormatBytes).
var humanSize = `\d+(\.\d)? (B|KiB|MiB|GiB)`

func TestHumanOutputUsesTheOneSizeFormat(t *testing.T) {
	for _, c := range []struct {
		name    string
		fixture string
		run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
		args    []string
		want    string
	}{
		{"compact", "ckpt-v2-json-sidecars-101-files", runCompact, nil, `101 files removed, 1 added, ` + humanSize + ` read, ` + humanSize + ` written`},
		{"checkpoint", "dv-basic-no-checkpoint", runCheckpoint, nil, `\d+ expired\), ` + humanSize + `, `},
		{"vacuum dry run", "dbr-optimize-dv-cdc-logcompaction", runVacuum, []string{"--dry-run", "--retention", "0s", "--force-retention"}, `\t` + humanSize + `\t.*\n(.*\n)*dry run \(full\): would delete \d+ files, ` + humanSize + ` `},
		{"inspect", "ckpt-v2-json-sidecars-101-files", runInspect, nil, `files +101 \(53\.3 KiB\)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl := tabletest.CopyFixture(t, c.fixture)
			var out, errOut bytes.Buffer
			if err := c.run(context.Background(), append([]string{tbl.URL}, c.args...), &out, &errOut); err != nil {
				t.Fatalf("%v (%s)", err, errOut.String())
			}
			if !regexp.MustCompile(c.want).MatchString(out.String()) {
				t.Errorf("output lacks %q:\n%s", c.want, out.String())
			}
			if regexp.MustCompile(`\d bytes\b`).MatchString(out.String()) || regexp.MustCompile(`\d(B|KiB|MiB|GiB)\b`).MatchString(out.String()) {
				t.Errorf("a size not in the one format:\n%s", out.String())
			}
		})
	}
}
