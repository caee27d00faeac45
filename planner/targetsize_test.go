package planner

import (
	"strings"
	"testing"

	deltaprops "github.com/compactord/compactord/delta/props"
)

// The one target-size rule the planner, CLUSTER BY AUTO and `clustering
// advise` share: a given size wins, else the table's property, else the
// default; a malformed property is an error naming it, not the default.
func TestTargetFileSizeIsTheGivenSizeThenTheTablesPropertyThenTheDefault(t *testing.T) {
	tests := []struct {
		size int64
		conf map[string]string
		want int64
		err  string
	}{
		{size: 64 << 20, conf: map[string]string{"delta.targetFileSize": "1g"}, want: 64 << 20},
		{conf: map[string]string{"delta.targetFileSize": "256mb"}, want: 256 << 20},
		{conf: nil, want: DefaultTargetFileSize},
		{conf: map[string]string{"delta.targetFileSize": "lots"}, err: "delta.targetFileSize"},
	}
	for _, tt := range tests {
		got, err := TargetFileSize(tt.size, deltaprops.ParseProperties(tt.conf))
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("TargetFileSize(%d, %v) = %d, %v; want an error naming %s", tt.size, tt.conf, got, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("TargetFileSize(%d, %v) = %d, %v; want %d", tt.size, tt.conf, got, err, tt.want)
		}
	}
}
