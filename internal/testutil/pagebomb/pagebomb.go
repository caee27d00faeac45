// Package pagebomb writes parquet decompression bombs for the tests and
// benchmarks of the page limits: small files whose pages claim, and hold,
// far more uncompressed bytes than their size. It must not be imported by
// production code.
package pagebomb

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// Column is the one column of a bomb: required int64, PLAIN, zstd.
const Column = "x"

// SchemaString is the Delta schema of a table of bombs.
const SchemaString = `{"type":"struct","fields":[{"name":"x","type":"long","nullable":false,"metadata":{}}]}`

// maxRLEBlock is the largest zstd block (128 KiB).
const maxRLEBlock = 128 << 10

// zeroFrame is a zstd frame that decompresses to n zero bytes: a frame
// header with a 1 MiB window (a single-segment frame's window is its whole
// content, which decoders refuse above 512 MiB) and its content size, then
// RLE blocks of at most 128 KiB (4 bytes each).
func zeroFrame(n int64) []byte {
	var b bytes.Buffer
	b.Write([]byte{0x28, 0xb5, 0x2f, 0xfd}) // magic
	b.WriteByte(0xc0)                       // 8-byte content size, a window descriptor
	b.WriteByte(10 << 3)                    // window 2^(10+10) bytes
	binary.Write(&b, binary.LittleEndian, uint64(n))
	for left := n; left > 0; {
		size := min(left, maxRLEBlock)
		left -= size
		h := uint32(size)<<3 | 1<<1 // block type RLE
		if left == 0 {
			h |= 1 // last block
		}
		b.Write([]byte{byte(h), byte(h >> 8), byte(h >> 16), 0})
	}
	return b.Bytes()
}

// File is one bomb: its name in a table and its shape.
type File struct {
	// Name is the file's path in the table.
	Name string
	// RowGroups is the number of row groups (0: 1), each of one column
	// chunk of Pages pages of PageBytes (a multiple of 8) of zero int64
	// values compressed with zstd.
	RowGroups int
	Pages     int
	PageBytes int64
	// HideTotals makes the footer claim as many uncompressed bytes as
	// compressed ones; else it states the true totals.
	HideTotals bool
}

// Write writes the parquet file of f to w and returns its size and number
// of rows.
func Write(w io.Writer, f File) (size, rows int64, err error) {
	groups := max(f.RowGroups, 1)
	if f.PageBytes <= 0 || f.PageBytes%8 != 0 || f.PageBytes > 1<<31-1 || f.Pages < 1 {
		return 0, 0, fmt.Errorf("pagebomb: %d pages of %d bytes", f.Pages, f.PageBytes)
	}
	var out bytes.Buffer
	out.WriteString("PAR1")
	frame := zeroFrame(f.PageBytes)
	proto := &thrift.CompactProtocol{}
	values := f.PageBytes / 8
	header, err := thrift.Marshal(proto, &format.PageHeader{
		Type:                 format.DataPage,
		UncompressedPageSize: int32(f.PageBytes),
		CompressedPageSize:   int32(len(frame)),
		DataPageHeader: thrift.New(format.DataPageHeader{
			NumValues: int32(values), Encoding: format.Plain,
			DefinitionLevelEncoding: format.RLE, RepetitionLevelEncoding: format.RLE,
		}),
	})
	if err != nil {
		return 0, 0, err
	}
	groupRows := values * int64(f.Pages)
	var rgs []format.RowGroup
	for range groups {
		start := int64(out.Len())
		for range f.Pages {
			out.Write(header)
			out.Write(frame)
		}
		chunkBytes := int64(out.Len()) - start
		uncompressed := int64(f.Pages) * (int64(len(header)) + f.PageBytes)
		if f.HideTotals {
			uncompressed = chunkBytes
		}
		rgs = append(rgs, format.RowGroup{
			Columns: []format.ColumnChunk{{
				FileOffset: start,
				MetaData: format.ColumnMetaData{
					Type: format.Int64, Encoding: []format.Encoding{format.Plain, format.RLE},
					PathInSchema: []string{Column}, Codec: format.Zstd, NumValues: groupRows,
					TotalUncompressedSize: uncompressed, TotalCompressedSize: chunkBytes,
					DataPageOffset: start,
				},
			}},
			TotalByteSize: uncompressed, NumRows: groupRows, FileOffset: start, TotalCompressedSize: chunkBytes,
		})
	}
	rows = groupRows * int64(groups)
	footer, err := thrift.Marshal(proto, &format.FileMetaData{
		Version: 1,
		Schema: []format.SchemaElement{
			{Name: "spark_schema", NumChildren: thrift.New[int32](1)},
			{Name: Column, Type: thrift.New(format.Int64), RepetitionType: thrift.New(format.Required)},
		},
		NumRows:   rows,
		RowGroups: rgs,
		CreatedBy: "compactord pagebomb",
	})
	if err != nil {
		return 0, 0, err
	}
	out.Write(footer)
	binary.Write(&out, binary.LittleEndian, uint32(len(footer)))
	out.WriteString("PAR1")
	n, err := w.Write(out.Bytes())
	return int64(n), rows, err
}

// WriteTable writes, in the existing directory dir, a Delta table whose
// version 0 adds the given bombs (and a small honest neighbour of each, so
// that a compaction has something to merge them with: the same shape with
// one page of 8 KiB, named "honest-<name>").
func WriteTable(dir string, files ...File) error {
	var log bytes.Buffer
	log.WriteString(`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}` + "\n")
	fmt.Fprintf(&log, `{"metaData":{"id":"00000000-0000-0000-0000-00000000b0b0","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":[],"configuration":{},"createdTime":0}}`+"\n", SchemaString)
	add := func(f File) error {
		var buf bytes.Buffer
		size, rows, err := Write(&buf, f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name), buf.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(&log, `{"add":{"path":%q,"partitionValues":{},"size":%d,"modificationTime":0,"dataChange":true,"stats":"{\"numRecords\":%d}"}}`+"\n",
			f.Name, size, rows)
		return nil
	}
	for _, f := range files {
		if err := add(f); err != nil {
			return err
		}
		if err := add(File{Name: "honest-" + f.Name, Pages: 1, PageBytes: 8 << 10}); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"), log.Bytes(), 0o644)
}
