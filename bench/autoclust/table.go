package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/clusteradvise/synth"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/scan"
	deltaschema "github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/delta/statscollect"
)

// schemaString is the Delta schema of the synthetic table: synth.Columns
// as longs.
func schemaString() string {
	fields := make([]string, len(synth.Columns))
	for i, c := range synth.Columns {
		fields[i] = fmt.Sprintf(`{"name":%q,"type":"long","nullable":true,"metadata":{}}`, c)
	}
	return `{"type":"struct","fields":[` + strings.Join(fields, ",") + `]}`
}

// writeBase writes the synthetic table under dir (which must not exist) as
// an ingest stream leaves it: files of perFile rows in ingest (random)
// order, snappy parquet with the table's data schema, each add carrying
// the statistics compactord's own collector computes (numRecords,
// minValues, maxValues, nullCount), all in one version-0 commit on a
// table-features protocol (writer version 7), as a Spark 3.5 table with
// `delta.enableDeletionVectors` off is created.
func writeBase(dir string, tbl *synth.Table, perFile int) (files int, err error) {
	if _, err := os.Stat(dir); err == nil {
		return 0, fmt.Errorf("%s exists", dir)
	}
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		return 0, err
	}
	ss := schemaString()
	st, err := deltaschema.ParseSchema(ss)
	if err != nil {
		return 0, err
	}
	meta := &actions.Metadata{SchemaString: ss, Configuration: map[string]string{}}
	pqSchema, err := scan.DataSchemaOf(st, meta)
	if err != nil {
		return 0, err
	}
	// The parquet columns in the data schema's order.
	order := make([]string, 0, len(synth.Columns))
	for _, leaf := range pqSchema.Columns() {
		order = append(order, leaf[0])
	}
	sc, err := statscollect.NewStatsCollector(meta, st, pqSchema)
	if err != nil {
		return 0, err
	}
	now := time.Now().UnixMilli()
	var log bytes.Buffer
	enc := json.NewEncoder(&log)
	_ = enc.Encode(map[string]any{"commitInfo": map[string]any{"timestamp": now, "operation": "WRITE", "engineInfo": "compactord-bench-autoclust"}})
	_ = enc.Encode(map[string]any{"protocol": map[string]any{"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": []string{}}})
	_ = enc.Encode(map[string]any{"metaData": map[string]any{
		"id": uuid.NewString(), "format": map[string]any{"provider": "parquet", "options": map[string]any{}},
		"schemaString": ss, "partitionColumns": []string{}, "configuration": map[string]any{}, "createdTime": now,
	}})
	rows := make([]parquet.Row, 0, perFile)
	for lo := 0; lo < tbl.Rows; lo += perFile {
		hi := min(tbl.Rows, lo+perFile)
		rows = rows[:0]
		for i := lo; i < hi; i++ {
			row := make(parquet.Row, len(order))
			for c, name := range order {
				row[c] = parquet.Int64Value(tbl.Data[name][i]).Level(0, 1, c)
			}
			rows = append(rows, row)
		}
		name := fmt.Sprintf("part-%05d-%s.c000.snappy.parquet", files, uuid.NewString())
		size, err := writeParquet(filepath.Join(dir, name), pqSchema, rows)
		if err != nil {
			return 0, err
		}
		sc.Reset()
		sc.ObserveRows(rows)
		stats, err := sc.Finish()
		if err != nil {
			return 0, err
		}
		_ = enc.Encode(map[string]any{"add": map[string]any{
			"path": name, "partitionValues": map[string]any{}, "size": size, "modificationTime": now,
			"dataChange": true, "stats": stats,
		}})
		files++
	}
	return files, os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"), log.Bytes(), 0o644)
}

func writeParquet(path string, schema *parquet.Schema, rows []parquet.Row) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := parquet.NewWriter(f, schema, parquet.Compression(&parquet.Snappy))
	if _, err := w.WriteRows(rows); err != nil {
		f.Close()
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		f.Close()
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, err
	}
	return fi.Size(), f.Close()
}

// copyTable copies the table at src to dst (which must not exist): the
// data files as hard links (no operation of the benchmark changes a data
// file in place; compaction writes new ones), the log copied, compactord's
// own records (_compactord/) left behind.
func copyTable(src, dst string) error {
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("%s exists", dst)
	}
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if rel == "_compactord" {
			return filepath.SkipDir
		}
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		if !strings.HasPrefix(rel, "_delta_log") && strings.HasSuffix(rel, ".parquet") {
			return os.Link(path, out)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		o, err := os.Create(out)
		if err != nil {
			return err
		}
		if _, err := io.Copy(o, in); err != nil {
			o.Close()
			return err
		}
		return o.Close()
	})
}
