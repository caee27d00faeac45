// Command bigstats writes a Delta table of one commit whose one add carries
// statistics with a string min and max of -bytes bytes each (a writer that
// does not truncate them), for bench/bigstats.sh to measure what
// checkpointing it costs. The add's data file is not written: a checkpoint
// reads only the log.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	dir := flag.String("dir", "", "table directory to create")
	n := flag.Int("bytes", 100<<20, "length of the string min and max")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "bigstats: -dir is required")
		os.Exit(2)
	}
	if err := write(*dir, *n); err != nil {
		fmt.Fprintln(os.Stderr, "bigstats:", err)
		os.Exit(1)
	}
}

func write(dir string, n int) error {
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		return err
	}
	schema := `{"type":"struct","fields":[{"name":"s","type":"string","nullable":true,"metadata":{}}]}`
	lo, hi := strings.Repeat("a", n), strings.Repeat("z", n)
	// The stats JSON, then quoted once more as the add's string field.
	stats := fmt.Sprintf(`{\"numRecords\":2,\"minValues\":{\"s\":\"%s\"},\"maxValues\":{\"s\":\"%s\"},\"nullCount\":{\"s\":0}}`, lo, hi)
	var b strings.Builder
	b.WriteString(`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}` + "\n")
	fmt.Fprintf(&b, `{"metaData":{"id":"00000000-0000-0000-0000-0000000b1651","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":[],"configuration":{},"createdTime":0}}`+"\n", schema)
	fmt.Fprintf(&b, `{"add":{"path":"part-0.parquet","partitionValues":{},"size":1000,"modificationTime":0,"dataChange":true,"stats":"%s"}}`+"\n", stats)
	return os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"), []byte(b.String()), 0o644)
}
