package gen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/google/uuid"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
)

// Shapes are the source shapes DuckShape writes (see
// tools/duckcheck/shapes.mjs): schema-matched sources, sources predating an
// ADD COLUMN, reordered columns, alphabetical column order, type-widened
// columns, and sources with deletion vectors.
var Shapes = []string{"matched", "drift", "reorder", "alpha", "widen", "dv"}

// DeletedCSV is the file DuckShape writes beside a dv table's sources:
// "filename,pos" lines, one per deleted row, for DuckDB's anti-join.
const DeletedCSV = "deleted.csv"

// shapeSchema is the table schema of a shape (the types of its newest
// files; widen's older files have narrower ones).
func shapeSchema(shape string) string {
	userID, score, day, price := "integer", "float", "date", "decimal(8,2)"
	if shape == "widen" {
		userID, score, day, price = "long", "double", "timestamp_ntz", "decimal(12,2)"
	}
	f := func(name, typ string) string {
		return fmt.Sprintf(`{"name":%q,"type":%q,"nullable":true,"metadata":{}}`, name, typ)
	}
	fields := []string{
		f("id", "long"), f("user_id", userID), f("amount", "double"), f("score", score),
		f("name", "string"), f("category", "string"), f("event_time", "timestamp"), f("day", day),
		f("price", price),
		`{"name":"meta","type":{"type":"struct","fields":[` + f("source", "string") + `,` + f("version", "integer") + `]},"nullable":true,"metadata":{}}`,
		f("note", "string"),
	}
	return `{"type":"struct","fields":[` + strings.Join(fields, ",") + `]}`
}

// DeletedRow reports whether a dv table deletes row pos of file i: one row
// in 20, spread by a hash.
func DeletedRow(i int, pos uint64) bool {
	return (pos*2654435761+uint64(i)*40503)%20 == 0
}

// DuckShape writes a Delta table of one shape under dir (which must not
// exist): files parquet files of rows rows each, written by DuckDB through
// script (tools/duckcheck/shapes.mjs, run with node), and a version-0
// commit adding them (stats with numRecords). The dv shape's files get
// deletion vectors (DeletedRow) and DeletedCSV.
func DuckShape(ctx context.Context, dir, script, shape string, files, rows int) error {
	if !slices.Contains(Shapes, shape) {
		return fmt.Errorf("unknown shape %q (want one of %v)", shape, Shapes)
	}
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s exists", dir)
	}
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		return err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("DuckDB shapes need node: %w", err)
	}
	cmd := exec.CommandContext(ctx, node, script, dir, shape, fmt.Sprint(files), fmt.Sprint(rows))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", script, err, stderr.String())
	}
	type written struct {
		File string `json:"file"`
		Rows int64  `json:"rows"`
	}
	var ws []written
	for _, line := range bytes.Fields(out) {
		var w written
		if err := json.Unmarshal(line, &w); err != nil {
			return fmt.Errorf("%s output %q: %w", script, line, err)
		}
		ws = append(ws, w)
	}
	if len(ws) != files {
		return fmt.Errorf("%s wrote %d files, want %d", script, len(ws), files)
	}
	var dvs []*actions.DeletionVector
	if shape == "dv" {
		names := make([]string, len(ws))
		for i, w := range ws {
			names[i] = w.File
		}
		if dvs, err = writeShapeDVs(ctx, dir, names, rows); err != nil {
			return err
		}
	}
	now := time.Now().UnixMilli()
	protocol := map[string]any{"minReaderVersion": 1, "minWriterVersion": 2}
	conf := map[string]any{}
	switch shape {
	case "dv":
		protocol = map[string]any{"minReaderVersion": 3, "minWriterVersion": 7,
			"readerFeatures": []string{"deletionVectors"}, "writerFeatures": []string{"deletionVectors"}}
		conf["delta.enableDeletionVectors"] = "true"
	case "widen":
		protocol = map[string]any{"minReaderVersion": 3, "minWriterVersion": 7,
			"readerFeatures": []string{"timestampNtz", "typeWidening"}, "writerFeatures": []string{"timestampNtz", "typeWidening"}}
		conf["delta.enableTypeWidening"] = "true"
	}
	var log bytes.Buffer
	enc := json.NewEncoder(&log)
	_ = enc.Encode(map[string]any{"commitInfo": map[string]any{"timestamp": now, "operation": "WRITE", "engineInfo": "compactord-bench-duckshape"}})
	_ = enc.Encode(map[string]any{"protocol": protocol})
	_ = enc.Encode(map[string]any{"metaData": map[string]any{
		"id": uuid.NewString(), "format": map[string]any{"provider": "parquet", "options": map[string]any{}},
		"schemaString": shapeSchema(shape), "partitionColumns": []string{}, "configuration": conf, "createdTime": now,
	}})
	for i, w := range ws {
		fi, err := os.Stat(filepath.Join(dir, w.File))
		if err != nil {
			return err
		}
		add := map[string]any{
			"path": w.File, "partitionValues": map[string]any{}, "size": fi.Size(),
			"modificationTime": now, "dataChange": true, "stats": fmt.Sprintf(`{"numRecords":%d}`, w.Rows),
		}
		if dvs != nil {
			add["deletionVector"] = dvs[i]
		}
		_ = enc.Encode(map[string]any{"add": add})
	}
	return os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"), log.Bytes(), 0o644)
}

// writeShapeDVs writes the deletion vectors of a dv table's files into one
// DV file and DeletedCSV.
func writeShapeDVs(ctx context.Context, dir string, files []string, rows int) ([]*actions.DeletionVector, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	t, err := delta.OpenTable(ctx, "file://"+abs)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	var csv bytes.Buffer
	csv.WriteString("filename,pos\n")
	bms := make([]*roaring64.Bitmap, len(files))
	for i := range bms {
		bms[i] = roaring64.New()
		name := filepath.Join(abs, files[i])
		for p := range uint64(rows) {
			if DeletedRow(i, p) {
				bms[i].Add(p)
				fmt.Fprintf(&csv, "%s,%d\n", name, p)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, DeletedCSV), csv.Bytes(), 0o644); err != nil {
		return nil, err
	}
	return delta.WriteDV(ctx, t, "", bms)
}
