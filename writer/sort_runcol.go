package writer

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync/atomic"

	"github.com/parquet-go/parquet-go"
)

// A sorted run's columns on disk, as the colBuf holds them (no parquet
// encoding: the run is written once and read once, in sequence): column c
// of a run is one section of the run's file, its rows in sorted order,
//
//	[a definition level per row, when the column has nulls]
//	[8 bytes of bits per row (8-byte kinds, booleans) | 4 bytes per row (int32, float) |
//	 a 4-byte length per row (byte arrays)]
//	[the byte arrays' bytes, in row order]
//
// little-endian. Sections are placed in the order the columns are written
// (each reserves its size when it starts), written in parallel.

// runSection is where one column of a run lies in the run's file.
type runSection struct {
	off     int64
	rows    int64
	defs    bool  // a definition level per row first
	dataLen int64 // byte arrays: the bytes after the lengths
}

// runColWriteBytes is the buffer a column's section is written through.
const runColWriteBytes = 64 << 10

// writeRunColumn writes column b in the order of entries (their refs index
// b's rows) as a new section of f, reserved at next.
func writeRunColumn(f *os.File, next *atomic.Int64, b *colBuf, entries []sortEntry) (runSection, error) {
	n := int64(len(entries))
	sec := runSection{rows: n, defs: b.defs != nil, dataLen: int64(len(b.data))}
	size := sec.dataLen
	if sec.defs {
		size += n
	}
	size += int64(b.rowBytes()) * n
	sec.off = next.Add(size) - size
	w := bufio.NewWriterSize(io.NewOffsetWriter(f, sec.off), runColWriteBytes)
	buf := make([]byte, 0, runColWriteBytes)
	flush := func(force bool) error {
		if len(buf) < runColWriteBytes-16 && !force {
			return nil
		}
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	var err error
	if sec.defs {
		for _, e := range entries {
			buf = append(buf, b.defs[e.Ref])
			if err = flush(false); err != nil {
				break
			}
		}
	}
	if err == nil && b.byteArrays() {
		for _, e := range entries {
			buf = binary.LittleEndian.AppendUint32(buf, b.offs[e.Ref+1]-b.offs[e.Ref])
			if err = flush(false); err != nil {
				break
			}
		}
		if err == nil {
			if err = flush(true); err == nil {
				for _, e := range entries {
					if _, err = w.Write(b.data[b.offs[e.Ref]:b.offs[e.Ref+1]]); err != nil {
						break
					}
				}
			}
		}
	} else if err == nil && b.narrow() {
		for _, e := range entries {
			buf = binary.LittleEndian.AppendUint32(buf, b.words[e.Ref])
			if err = flush(false); err != nil {
				break
			}
		}
	} else if err == nil {
		for _, e := range entries {
			buf = binary.LittleEndian.AppendUint64(buf, b.bits[e.Ref])
			if err = flush(false); err != nil {
				break
			}
		}
	}
	if err == nil {
		err = flush(true)
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return runSection{}, fmt.Errorf("sort: write column %d of a run: %w", b.col, err)
	}
	return sec, nil
}

// runColReadBytes is the read buffer of each part of a run column in the
// merge (every run column has two or three).
const runColReadBytes = 8 << 10

// runColumn reads one column of a run in sequence: take reads the next
// rows into a small colBuf and builds their parquet values (by the
// colBuf's gather, one loop per kind), next hands them out, valid until
// the next take.
type runColumn struct {
	defs, vals, data *bufio.Reader // defs nil when the column has no levels
	left             int64
	buf              colBuf
	scratch          []byte
	values           []parquet.Value
	i                int
}

// identityEntries are entries referring to rows 0..n-1 in order: the
// gather of a take's rows as they are.
func identityEntries(n int) []sortEntry {
	es := make([]sortEntry, n)
	for i := range es {
		es[i].Ref = uint32(i)
	}
	return es
}

func newRunColumn(f *os.File, sec runSection, col int, kind parquet.Kind, maxDef int) *runColumn {
	rc := &runColumn{left: sec.rows, buf: colBuf{col: col, kind: kind, maxDef: maxDef}}
	off := sec.off
	if sec.defs {
		rc.defs = bufio.NewReaderSize(io.NewSectionReader(f, off, sec.rows), runColReadBytes)
		off += sec.rows
	}
	per := int64(rc.buf.rowBytes())
	rc.vals = bufio.NewReaderSize(io.NewSectionReader(f, off, per*sec.rows), runColReadBytes)
	if rc.buf.byteArrays() {
		rc.data = bufio.NewReaderSize(io.NewSectionReader(f, off+per*sec.rows, sec.dataLen), runColReadBytes)
	}
	return rc
}

// take reads the column's next n rows (at most len(ident), identity
// entries), replacing those taken before.
func (rc *runColumn) take(n int, ident []sortEntry) error {
	if err := rc.read(n); err != nil {
		return err
	}
	rc.values = slices.Grow(rc.values[:0], n)[:n]
	rc.buf.gather(rc.values, ident[:n])
	rc.i = 0
	return nil
}

// read reads the column's next n rows into rc.buf.
func (rc *runColumn) read(n int) error {
	if int64(n) > rc.left {
		return fmt.Errorf("run ended early: %d rows left, %d taken", rc.left, n)
	}
	rc.left -= int64(n)
	b := &rc.buf
	if rc.defs != nil { // else b.defs stays nil: no row is null
		b.defs = slices.Grow(b.defs[:0], n)[:n]
		if _, err := io.ReadFull(rc.defs, b.defs); err != nil {
			return err
		}
	}
	if b.byteArrays() {
		rc.scratch = slices.Grow(rc.scratch[:0], 4*n)[:4*n]
		if _, err := io.ReadFull(rc.vals, rc.scratch); err != nil {
			return err
		}
		b.offs = slices.Grow(b.offs[:0], n+1)[:n+1]
		b.offs[0] = 0
		var total uint64
		for k := range n {
			total += uint64(binary.LittleEndian.Uint32(rc.scratch[4*k:]))
			if total > math.MaxUint32 {
				return fmt.Errorf("column %d: more than 4 GiB in one take", b.col)
			}
			b.offs[k+1] = uint32(total)
		}
		// A new slice each take: the values handed out before may still be
		// referenced by a batch not yet written.
		b.data = make([]byte, total)
		_, err := io.ReadFull(rc.data, b.data)
		return err
	}
	w := b.rowBytes()
	rc.scratch = slices.Grow(rc.scratch[:0], w*n)[:w*n]
	if _, err := io.ReadFull(rc.vals, rc.scratch); err != nil {
		return err
	}
	if b.narrow() {
		b.words = slices.Grow(b.words[:0], n)[:n]
		for k := range n {
			b.words[k] = binary.LittleEndian.Uint32(rc.scratch[4*k:])
		}
		return nil
	}
	b.bits = slices.Grow(b.bits[:0], n)[:n]
	for k := range n {
		b.bits[k] = binary.LittleEndian.Uint64(rc.scratch[8*k:])
	}
	return nil
}

// next is the next row taken, as a parquet value of the column.
func (rc *runColumn) next() parquet.Value {
	v := rc.values[rc.i]
	rc.i++
	return v
}

// rowBytes is what a row of the column takes in a run's values part: its
// value (4 or 8 bytes) or, for byte arrays, its 4-byte length.
func (b *colBuf) rowBytes() int {
	if b.byteArrays() || b.narrow() {
		return 4
	}
	return 8
}
