package policies

import (
	"testing"

	"github.com/compactord/compactord/writer"
)

// A policy's writer settings fill only what the caller left unset: an
// explicit setting of the caller (a CLI flag, a test) wins.
func TestWriterOptionsFillOnlyUnsetSettings(t *testing.T) {
	p := Policy{TargetFileSize: 256 * MiB, Compression: "zstd", Concurrency: 4}
	cases := []struct {
		name string
		base writer.Options
		want writer.Options
	}{
		{"empty base takes the policy", writer.Options{},
			writer.Options{TargetFileSize: 256 * MiB, Compression: "zstd", MaxConcurrentJobs: 4}},
		{"the caller's settings win", writer.Options{TargetFileSize: MiB, Compression: "snappy", MaxConcurrentJobs: 2},
			writer.Options{TargetFileSize: MiB, Compression: "snappy", MaxConcurrentJobs: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := p.WriterOptions(c.base)
			if got.TargetFileSize != c.want.TargetFileSize || got.Compression != c.want.Compression || got.MaxConcurrentJobs != c.want.MaxConcurrentJobs {
				t.Fatalf("WriterOptions(%+v) = size %d, %q, %d jobs; want size %d, %q, %d jobs", c.base,
					got.TargetFileSize, got.Compression, got.MaxConcurrentJobs,
					c.want.TargetFileSize, c.want.Compression, c.want.MaxConcurrentJobs)
			}
		})
	}
	if got := (&Policy{}).WriterOptions(writer.Options{}); got.TargetFileSize != 0 {
		t.Fatalf("a policy without a target size set one: %d", got.TargetFileSize)
	}
}
