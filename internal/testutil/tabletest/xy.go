package tabletest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/compactord/compactord/delta"
)

// XYRow is a row of an XY table: two long columns a clustering key can be
// chosen from, and a string.
type XYRow struct {
	X int64  `parquet:"x"`
	Y int64  `parquet:"y"`
	V string `parquet:"v"`
}

// XYSchema is the schema of an XY table.
const XYSchema = `{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{}},{"name":"y","type":"long","nullable":true,"metadata":{}},{"name":"v","type":"string","nullable":true,"metadata":{}}]}`

// NewXYTable writes a real file:// table of files files of rowsPerFile
// rows (x and y from value, v "v"), each add with exact min/max stats,
// committed as version 0 with a protocol of the given writer features
// (nil: writer version 2) and the extra lines (JSON actions) after the
// metadata.
func NewXYTable(t testing.TB, files, rowsPerFile int, writerFeatures []string, value func(file, row int) (x, y int64), extra ...string) *delta.Table {
	t.Helper()
	tbl := Open(t, "file://"+t.TempDir())
	proto := `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`
	if writerFeatures != nil {
		wf, err := json.Marshal(writerFeatures)
		if err != nil {
			t.Fatal(err)
		}
		proto = fmt.Sprintf(`{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":%s}}`, wf)
	}
	lines := []string{
		`{"commitInfo":{"timestamp":1767225600000,"operation":"CREATE TABLE"}}`,
		proto,
		fmt.Sprintf(`{"metaData":{"id":"t","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":[],"configuration":{},"createdTime":1}}`, XYSchema),
	}
	lines = append(lines, extra...)
	for f := range files {
		rows := make([]XYRow, rowsPerFile)
		minX, maxX, minY, maxY := int64(1<<62), int64(-1<<62), int64(1<<62), int64(-1<<62)
		for i := range rows {
			x, y := value(f, i)
			rows[i] = XYRow{X: x, Y: y, V: "v"}
			minX, maxX = min(minX, x), max(maxX, x)
			minY, maxY = min(minY, y), max(maxY, y)
		}
		a := WriteParquet(t, tbl, rows)
		a.Stats = fmt.Sprintf(`{"numRecords":%d,"minValues":{"x":%d,"y":%d},"maxValues":{"x":%d,"y":%d},"nullCount":{"x":0,"y":0}}`, rowsPerFile, minX, minY, maxX, maxY)
		lines = append(lines, AddLine(t, a))
	}
	PutCommit(t, tbl, 0, lines)
	return tbl
}
