// Package gen generates Delta tables of many small parquet files for the
// rewrite benchmarks (bench/rewrite.sh, writer.BenchmarkRewrite): 10 mixed
// columns (longs, ints, doubles, strings, timestamps and a nested struct)
// written with the table's data schema, and a version-0 commit holding the
// protocol, the metadata and one add per file (stats with numRecords only).
package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/compactord/compactord/delta/scan"

	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"

	"github.com/compactord/compactord/delta/actions"
	deltaschema "github.com/compactord/compactord/delta/schema"
)

// SchemaString is the Delta schema of generated tables.
const SchemaString = `{"type":"struct","fields":[
{"name":"id","type":"long","nullable":true,"metadata":{}},
{"name":"user_id","type":"integer","nullable":true,"metadata":{}},
{"name":"amount","type":"double","nullable":true,"metadata":{}},
{"name":"score","type":"double","nullable":true,"metadata":{}},
{"name":"name","type":"string","nullable":true,"metadata":{}},
{"name":"category","type":"string","nullable":true,"metadata":{}},
{"name":"event_time","type":"timestamp","nullable":true,"metadata":{}},
{"name":"ingest_time","type":"timestamp","nullable":true,"metadata":{}},
{"name":"quantity","type":"long","nullable":true,"metadata":{}},
{"name":"meta","type":{"type":"struct","fields":[
  {"name":"source","type":"string","nullable":true,"metadata":{}},
  {"name":"version","type":"integer","nullable":true,"metadata":{}},
  {"name":"ratio","type":"double","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}`

// Generate writes the table under dir (which must not exist): files of
// lo..hi bytes (drawn uniformly) until total bytes, compressed with codec
// (nil: snappy, Spark's default), in one version-0 commit.
func Generate(dir string, total, lo, hi int64, seed uint64, codec compress.Codec) error {
	if codec == nil {
		codec = &parquet.Snappy
	}
	if lo <= 0 || lo > hi {
		return fmt.Errorf("bad file size range %d..%d", lo, hi)
	}
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s exists", dir)
	}
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		return err
	}
	st, err := deltaschema.ParseSchema(SchemaString)
	if err != nil {
		return err
	}
	meta := &actions.Metadata{SchemaString: SchemaString, Configuration: map[string]string{}}
	schema, err := scan.DataSchemaOf(st, meta)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	now := time.Now().UnixMilli()
	var log bytes.Buffer
	enc := json.NewEncoder(&log)
	_ = enc.Encode(map[string]any{"commitInfo": map[string]any{"timestamp": now, "operation": "WRITE", "engineInfo": "compactord-bench-gendata"}})
	_ = enc.Encode(map[string]any{"protocol": map[string]any{"minReaderVersion": 1, "minWriterVersion": 2}})
	_ = enc.Encode(map[string]any{"metaData": map[string]any{
		"id": uuid.NewString(), "format": map[string]any{"provider": "parquet", "options": map[string]any{}},
		"schemaString": SchemaString, "partitionColumns": []string{}, "configuration": map[string]any{}, "createdTime": now,
	}})
	var written, nextID int64
	rowsPerFile := int64(20000) // adapted after each file to hit the size draw
	for i := 0; written < total; i++ {
		want := lo + rng.Int64N(hi-lo+1)
		name := fmt.Sprintf("part-%05d-%s.c000.%s.parquet", i, uuid.NewString(), strings.ToLower(codec.String()))
		n, err := writeFile(filepath.Join(dir, name), schema, codec, rng, nextID, rowsPerFile*want/((lo+hi)/2))
		if err != nil {
			return err
		}
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		// Re-estimate rows per average-size file from what this file weighed.
		rowsPerFile = max(1, rowsPerFile*want/((lo+hi)/2)*((lo+hi)/2)/max(1, fi.Size()))
		nextID += n
		written += fi.Size()
		_ = enc.Encode(map[string]any{"add": map[string]any{
			"path": name, "partitionValues": map[string]any{}, "size": fi.Size(), "modificationTime": now,
			"dataChange": true, "stats": fmt.Sprintf(`{"numRecords":%d}`, n),
		}})
	}
	return os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"), log.Bytes(), 0o644)
}

var (
	words      = strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu")
	categories = []string{"books", "games", "garden", "grocery", "health", "home", "music", "sports", "tools", "toys"}
	sources    = []string{"web", "mobile", "api", "batch"}
)

// writeFile writes n rows with ids from firstID. Columns, in DataSchema
// order: id, user_id, amount, score, name, category, event_time,
// ingest_time, quantity, meta.source, meta.version, meta.ratio; all optional
// (definition level 1, 2 inside meta).
func writeFile(path string, schema *parquet.Schema, codec compress.Codec, rng *rand.Rand, firstID, n int64) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := parquet.NewWriter(f, schema, parquet.Compression(codec))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	batch := make([]parquet.Row, 0, 1024)
	opt := func(v parquet.Value, col, def int) parquet.Value { return v.Level(0, def, col) }
	for i := int64(0); i < n; i++ {
		id := firstID + i
		name := words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))] + fmt.Sprintf(" %d", rng.IntN(100000))
		ev := base + rng.Int64N(365*24*3600*1_000_000)
		row := parquet.Row{
			opt(parquet.Int64Value(id), 0, 1),
			opt(parquet.Int32Value(rng.Int32N(1_000_000)), 1, 1),
			opt(parquet.DoubleValue(float64(rng.IntN(10_000_000))/100), 2, 1),
			opt(parquet.DoubleValue(rng.Float64()), 3, 1),
			opt(parquet.ByteArrayValue([]byte(name)), 4, 1),
			opt(parquet.ByteArrayValue([]byte(categories[rng.IntN(len(categories))])), 5, 1),
			opt(parquet.Int64Value(ev), 6, 1),
			opt(parquet.Int64Value(ev+rng.Int64N(3_600_000_000)), 7, 1),
			opt(parquet.Int64Value(rng.Int64N(1000)), 8, 1),
			opt(parquet.ByteArrayValue([]byte(sources[rng.IntN(len(sources))])), 9, 2),
			opt(parquet.Int32Value(rng.Int32N(5)), 10, 2),
			opt(parquet.DoubleValue(rng.Float64()), 11, 2),
		}
		if rng.IntN(50) == 0 { // some nulls
			row[3] = parquet.NullValue().Level(0, 0, 3)
		}
		batch = append(batch, row)
		if len(batch) == cap(batch) {
			if _, err := w.WriteRows(batch); err != nil {
				return 0, err
			}
			batch = batch[:0]
		}
	}
	if _, err := w.WriteRows(batch); err != nil {
		return 0, err
	}
	if err := w.Close(); err != nil {
		return 0, err
	}
	return n, f.Close()
}
