package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestJSONLogsWriteDurationsAsStrings(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf, "json", "info")
	d := 90 * time.Second
	log.With("poll", 30*time.Second).Named("table").Info("run done", "took", time.Minute, "settle", &d, "label", ">=1 GiB", "files", 3)
	line := buf.String()
	var got map[string]any
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	for k, want := range map[string]any{"took": "1m0s", "poll": "30s", "settle": "1m30s", "label": ">=1 GiB", "files": 3.0} {
		if got[k] != want {
			t.Errorf("%s = %#v, want %#v (line %s)", k, got[k], want, line)
		}
	}
	if !strings.Contains(line, `">=1 GiB"`) {
		t.Errorf("> escaped: %s", line)
	}
}

func TestTextLogsWriteDurationsAsStrings(t *testing.T) {
	var buf bytes.Buffer
	New(&buf, "text", "info").Info("run done", "took", time.Minute)
	if !strings.Contains(buf.String(), "took=1m0s") {
		t.Errorf("got %s", buf.String())
	}
}

// A map argument (an operation's counts) is written in text as one sorted
// key/value pair per entry, not as Go's map[...].
func TestTextLogsWriteCountsAsKeyValuePairs(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf, "text", "info")
	log.Info("run done", "counts", map[string]int64{"vacuum_files_deleted": 3, "checkpoints_written": 1}, "none", map[string]int64{}, "files", 2)
	line := buf.String()
	if strings.Contains(line, "map[") || !strings.Contains(line, "counts.checkpoints_written=1 counts.vacuum_files_deleted=3 files=2") {
		t.Errorf("got %s", line)
	}
	buf.Reset()
	New(&buf, "json", "info").Info("run done", "counts", map[string]int64{"a": 1})
	if !strings.Contains(buf.String(), `"counts":{"a":1}`) {
		t.Errorf("JSON keeps counts as an object: %s", buf.String())
	}
}
