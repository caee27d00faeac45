package checkpointwrite

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/statscollect"
	"github.com/compactord/compactord/internal/testutil/logtest"
	"github.com/parquet-go/parquet-go"
)

// A writer that did not truncate its statistics: one add whose stats hold
// a 10 MB string min and max. The checkpoint carries the stats string
// verbatim, as the protocol says, but neither the footer's nor the page
// headers' statistics copy it, and stats_parsed holds cut bounds.
func TestLongStatsStringsAreNotCopiedIntoTheCheckpointStatistics(t *testing.T) {
	const n = 10 << 20
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	lo, hi := strings.Repeat("a", n), strings.Repeat("z", n)
	stats := fmt.Sprintf(`{"numRecords":2,"minValues":{"s":%q},"maxValues":{"s":%q},"nullCount":{"s":0}}`, lo, hi)
	quoted := strings.ReplaceAll(stats, `"`, `\"`)
	commit := `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}` + "\n" +
		`{"metaData":{"id":"00000000-0000-0000-0000-00000000b165","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"s\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{"delta.checkpoint.writeStatsAsStruct":"true"},"createdTime":0}}` + "\n" +
		`{"add":{"path":"part-0.parquet","partitionValues":{},"size":1000,"modificationTime":0,"dataChange":true,"stats":"` + quoted + `"}}` + "\n"
	if err := os.WriteFile(filepath.Join(root, "_delta_log", logName(0)), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tbl := logtest.Open(t, root)
	snap, err := delta.LoadSnapshot(ctx, tbl, -1)
	if err != nil {
		t.Fatal(err)
	}
	info, err := WriteCheckpoint(ctx, tbl, snap, CheckpointOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(info.Key)))
	if err != nil {
		t.Fatal(err)
	}
	footer := binary.LittleEndian.Uint32(data[len(data)-8:])
	t.Logf("checkpoint %d bytes, footer %d bytes", len(data), footer)
	if footer > 64<<10 {
		t.Errorf("footer of %d bytes, want under 64 KiB", footer)
	}
	// The page headers hold no copy either: the file is the stats string
	// (compressed) plus little.
	if len(data) > n/2 {
		t.Errorf("checkpoint of %d bytes for %d bytes of stats that compress a thousand times", len(data), 2*n)
	}

	// stats_parsed holds a cut min and max that still bound the column.
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var gotMin, gotMax string
	for i, col := range f.Schema().Columns() {
		path := strings.Join(col, ".")
		if path != "add.stats_parsed.minValues.s" && path != "add.stats_parsed.maxValues.s" {
			continue
		}
		if err := statscollect.ReadPages(f.RowGroups()[0].ColumnChunks()[i], func(p parquet.Page) error {
			vals := make([]parquet.Value, p.NumValues())
			if _, err := p.Values().ReadValues(vals); err != nil && err.Error() != "EOF" {
				return err
			}
			for _, v := range vals {
				if !v.IsNull() && path == "add.stats_parsed.minValues.s" {
					gotMin = v.String()
				} else if !v.IsNull() {
					gotMax = v.String()
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if len(gotMin) != parsedStringPrefix || !strings.HasPrefix(lo, gotMin) {
		t.Errorf("stats_parsed min of %d bytes, want the %d-character prefix of the min", len(gotMin), parsedStringPrefix)
	}
	if gotMax != hi[:parsedStringPrefix]+"\u007f" {
		t.Errorf("stats_parsed max of %d bytes, want the prefix of the max and a tie-breaker", len(gotMax))
	}

	// The stats string itself is kept whole.
	back, err := delta.LoadSnapshot(ctx, logtest.Open(t, root), -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Files) != 1 || back.Files[0].Stats != stats {
		t.Errorf("the checkpoint does not carry the stats string verbatim")
	}
}
