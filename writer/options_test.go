package writer

import (
	"errors"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
)

func TestTargetFileSizeResolution(t *testing.T) {
	tests := []struct {
		name    string
		policy  int64
		prop    string
		want    int64
		wantErr bool
	}{
		{name: "policy wins", policy: 1000, prop: "33554432", want: 1000},
		{name: "table property in bytes", prop: "33554432", want: 33554432},
		{name: "table property with unit", prop: "64mb", want: 64 << 20},
		{name: "default 128 MiB", want: 128 << 20},
		{name: "garbage property is an error", prop: "big", wantErr: true},
		{name: "negative property is an error", prop: "-5", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta := &actions.Metadata{Configuration: map[string]string{}}
			if tt.prop != "" {
				meta.Configuration["delta.targetFileSize"] = tt.prop
			}
			got, err := targetFileSize(Options{TargetFileSize: tt.policy}, &delta.Snapshot{Metadata: *meta})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		ok   bool
	}{
		{"zero value takes defaults", Options{}, true},
		{"defaults", DefaultOptions(), true},
		{"snappy", Options{Compression: "snappy"}, true},
		{"gzip", Options{Compression: "GZIP"}, true},
		{"none", Options{Compression: "none"}, true},
		{"unknown codec", Options{Compression: "lzo"}, false},
		{"tiny row group", Options{RowGroupBytes: 10}, false},
		{"negative target", Options{TargetFileSize: -1}, false},
		{"negative concurrency", Options{MaxConcurrentJobs: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("error %v does not wrap ErrInvalidOptions", err)
			}
		})
	}
}

func TestCodecFileInfix(t *testing.T) {
	for name, want := range map[string]string{"zstd": ".zstd", "snappy": ".snappy", "gzip": ".gz", "none": ""} {
		_, ext, err := codecFor(name)
		if err != nil || ext != want {
			t.Errorf("codecFor(%q) ext = %q, %v; want %q", name, ext, err, want)
		}
	}
}
