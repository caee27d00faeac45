package logpath

import "testing"

func TestParseLogName(t *testing.T) {
	tests := []struct {
		name    string
		ok      bool
		kind    Kind
		version int64
		part    int
		parts   int
		start   int64
	}{
		{"00000000000000000007.json", true, Commit, 7, 0, 0, 0},
		{"00000000000000000010.checkpoint.parquet", true, Checkpoint, 10, 0, 0, 0},
		{"00000000000000000005.checkpoint.0000000002.0000000003.parquet", true, MultiPart, 5, 2, 3, 0},
		{"00000000000000000002.checkpoint.6374b053-df23-479b-b2cf-c9c550132b49.json", true, V2Checkpoint, 2, 0, 0, 0},
		{"00000000000000000002.checkpoint.e8fa2696-9728-4e9c-b285-634743fdd4fb.parquet", true, V2Checkpoint, 2, 0, 0, 0},
		{"00000000000000000006.00000000000000000015.compacted.json", true, Compaction, 15, 0, 0, 6},
		{"00000000000000000005.checkpoint.0000000004.0000000003.parquet", false, 0, 0, 0, 0, 0},
		{"00000000000000000016.00000000000000000015.compacted.json", false, 0, 0, 0, 0, 0},
		{"00000000000000000007.crc", false, 0, 0, 0, 0, 0},
		{"_last_checkpoint", false, 0, 0, 0, 0, 0},
		{"0000000000000000007.json", false, 0, 0, 0, 0, 0},
		{".00000000000000000007.json.tmp", false, 0, 0, 0, 0, 0},
		{"00000000000000000007.json.tmp", false, 0, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		f, ok := Parse(tt.name)
		if ok != tt.ok {
			t.Errorf("%s: ok = %v, want %v", tt.name, ok, tt.ok)
			continue
		}
		if ok && (f.Kind != tt.kind || f.Version != tt.version || f.Part != tt.part || f.Parts != tt.parts || f.Start != tt.start) {
			t.Errorf("%s: got %+v", tt.name, f)
		}
	}
	if got := CommitKey(42); got != "_delta_log/00000000000000000042.json" {
		t.Errorf("CommitKey(42) = %q", got)
	}
}
