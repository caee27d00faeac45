package delta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/pq"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// Checkpoint parquet files are read generically: each row's values are
// assembled into plain Go values (map[string]any for structs and maps,
// []any for lists, int64/float64/bool/string for primitives; dates,
// timestamps and decimals already rendered the way JSON stats write them),
// then converted to typed actions. This handles any checkpoint schema
// (Spark's, delta-rs's, kernel's; typed stats_parsed and
// partitionValues_parsed of any table schema) without reflection.

// cpActions are the actions of a checkpoint or sidecar file: its file
// actions (add, remove) in file order, and the others. A million file
// actions are two pointers each, not a million Action values.
type cpActions struct {
	files  []fileEntry
	others []deltaactions.Action
}

// take appends a to its list.
func (c *cpActions) take(a deltaactions.Action) {
	switch {
	case a.Add != nil:
		c.files = append(c.files, fileEntry{add: a.Add})
	case a.Remove != nil:
		c.files = append(c.files, fileEntry{rm: a.Remove})
	default:
		c.others = append(c.others, a)
	}
}

// actions returns every action as an Action: the others, then the file
// actions (a checkpoint's actions are a state, in no order).
func (c cpActions) actions() []deltaactions.Action {
	out := make([]deltaactions.Action, 0, len(c.others)+len(c.files))
	out = append(out, c.others...)
	for _, f := range c.files {
		out = append(out, deltaactions.Action{Add: f.add, Remove: f.rm})
	}
	return out
}

// parseCheckpointParquet reads every action row of a checkpoint or sidecar
// parquet file. Large row groups are split into row ranges read
// concurrently (one checkpoint file usually holds a single row group).
func parseCheckpointParquet(data []byte) (cpActions, error) {
	return parseCheckpointChunks(data, 32<<10)
}

// parseCheckpointChunks is parseCheckpointParquet with chunks of at most
// chunkRows rows.
func parseCheckpointChunks(data []byte, chunkRows int64) (cpActions, error) {
	return parseCheckpointChunksBy(data, chunkRows, true)
}

// parseCheckpointChunksBy is parseCheckpointChunks reading chunks of file
// actions column-wise (readColumnRange) when columns is set, else every
// chunk row by row.
func parseCheckpointChunksBy(data []byte, chunkRows int64, columns bool) (_ cpActions, err error) {
	// parquet-go may panic on malformed input; turn it into an error.
	defer pq.RecoverParquet(&err)
	if err := checkParquetFrame(data); err != nil {
		return cpActions{}, err
	}
	if err := checkFooter(data); err != nil {
		return cpActions{}, err
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return cpActions{}, fmt.Errorf("open parquet: %w", err)
	}
	if err := checkPageHeaders(data, f.Metadata()); err != nil {
		return cpActions{}, err
	}
	root, err := compileNode(f.Schema(), nil, f.Schema(), 0)
	if err != nil {
		return cpActions{}, err
	}
	cs := compileCheckpoint(root)
	cs.ncols = len(f.Schema().Columns())
	if columns {
		cs.columns = cs.planColumns(f.Schema())
	}
	// A part of a multi-part checkpoint may hold a single kind of action
	// (delta-kernel-rs writes parts of txn alone); protocol and metaData
	// are checked on the whole checkpoint.
	if cs.add == nil && cs.remove == nil && cs.tops[deltaactions.KindMetadata] == nil && cs.tops[deltaactions.KindProtocol] == nil &&
		cs.tops[deltaactions.KindSidecar] == nil && cs.tops[deltaactions.KindTxn] == nil && cs.tops[deltaactions.KindDomainMetadata] == nil && cs.tops[deltaactions.KindCheckpointMetadata] == nil {
		return cpActions{}, errors.New("not a checkpoint: no add, remove, metaData, protocol, txn, domainMetadata, checkpointMetadata or sidecar column")
	}
	type chunk struct {
		rg         int
		start, end int64
		at         int64 // index of the chunk's first row in the file
	}
	var chunks []chunk
	// Real checkpoints spend several bytes per row; a footer claiming far
	// more rows than the file could hold is corrupt (and would make us
	// plan billions of chunks).
	maxRows := 64*int64(len(data)) + 1024
	var rowsBefore int64
	for gi, rg := range f.RowGroups() {
		n := rg.NumRows()
		if n < 0 || n > maxRows {
			return cpActions{}, fmt.Errorf("corrupt parquet: row group %d claims %d rows in a %d-byte file", gi, n, len(data))
		}
		maxRows -= n
		for lo := int64(0); lo < n; lo += chunkRows {
			chunks = append(chunks, chunk{gi, lo, min(lo+chunkRows, n), rowsBefore + lo})
		}
		rowsBefore += n
	}
	// Chunks decode their file actions into their own rows of one slice,
	// which is then compacted in place (a row may hold no action): no
	// second copy of a million entries.
	all := make([]fileEntry, rowsBefore)
	out := make([]cpActions, len(chunks))
	errs := make([]error, len(chunks))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	for i, c := range chunks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer pq.RecoverParquet(&errs[i])
			rg, sink := f.RowGroups()[c.rg], cpActions{files: all[c.at : c.at : c.at+c.end-c.start]}
			done := false
			if cs.columns != nil {
				out[i], done, errs[i] = readColumnRange(rg, c.start, c.end, cs, sink)
			}
			if errs[i] == nil && !done {
				out[i], errs[i] = readRowRange(rg, c.start, c.end, cs, sink)
			}
			if errs[i] != nil {
				errs[i] = fmt.Errorf("row group %d: %w", c.rg, errs[i])
			}
		}()
	}
	wg.Wait()
	for i := range out {
		if errs[i] != nil {
			return cpActions{}, errs[i]
		}
	}
	var acts cpActions
	n := 0
	for _, o := range out {
		n += copy(all[n:], o.files)
		acts.others = append(acts.others, o.others...)
	}
	clear(all[n:])
	acts.files = all[:n:n]
	return acts, nil
}

// checkParquetFrame validates the magic bytes and footer length before
// parquet-go trusts them (a corrupt length would make it allocate up to
// 4 GiB).
func checkParquetFrame(data []byte) error {
	n := len(data)
	if n < 12 || string(data[:4]) != "PAR1" || string(data[n-4:]) != "PAR1" {
		return errors.New("not a parquet file (magic bytes missing)")
	}
	footer := int64(binary.LittleEndian.Uint32(data[n-8 : n-4]))
	if footer <= 0 || footer > int64(n-12) {
		return fmt.Errorf("corrupt parquet: footer length %d in a %d-byte file", footer, n)
	}
	return nil
}

// checkFooter decodes the file metadata with decodeThrift before
// parquet-go does, so that a corrupt footer fails fast.
func checkFooter(data []byte) error {
	n := len(data)
	footer := int(binary.LittleEndian.Uint32(data[n-8 : n-4]))
	var md format.FileMetaData
	if _, err := pq.DecodeThrift(data[n-8-footer:n-8], &md); err != nil {
		return fmt.Errorf("corrupt parquet footer: %w", err)
	}
	return nil
}

// Limits on a page's uncompressed size: real checkpoint pages are about
// 1 MiB; corrupt headers must not make parquet-go allocate gigabytes.
const (
	maxPageBytes = 256 << 20
	maxPageRatio = 1024
)

// checkPageHeaders walks the page headers of every column chunk and checks
// that each page lies inside its chunk and inside the file, and that its
// uncompressed size is plausible.
func checkPageHeaders(data []byte, md *format.FileMetaData) error {
	for gi, rg := range md.RowGroups {
		for ci, cc := range rg.Columns {
			cm := cc.MetaData
			start := cm.DataPageOffset
			if cm.DictionaryPageOffset > 0 && cm.DictionaryPageOffset < start {
				start = cm.DictionaryPageOffset
			}
			end := start + cm.TotalCompressedSize
			if start < 4 || cm.TotalCompressedSize < 0 || end > int64(len(data)) || end < start {
				return fmt.Errorf("corrupt parquet: row group %d column %d spans bytes %d..%d of a %d-byte file", gi, ci, start, end, len(data))
			}
			for pos := start; pos < end; {
				var h format.PageHeader
				hdr, err := pq.DecodeThrift(data[pos:end], &h)
				if err != nil {
					return fmt.Errorf("corrupt parquet: row group %d column %d: page header at byte %d: %v", gi, ci, pos, err)
				}
				body := int64(h.CompressedPageSize)
				if body < 0 || h.UncompressedPageSize < 0 || pos+hdr+body > end ||
					h.UncompressedPageSize > maxPageBytes || int64(h.UncompressedPageSize) > maxPageRatio*body+(1<<20) {
					return fmt.Errorf("corrupt parquet: row group %d column %d: page at byte %d claims %d compressed / %d uncompressed bytes",
						gi, ci, pos, h.CompressedPageSize, h.UncompressedPageSize)
				}
				pos += hdr + body
			}
		}
	}
	return nil
}

// readRowRange appends the actions of rows [start, end) of rg to acts
// (whose files must have room for them all, so that it never
// reallocates).
func readRowRange(rg parquet.RowGroup, start, end int64, cs *checkpointSchema, acts cpActions) (cpActions, error) {
	rows := rg.Rows()
	defer rows.Close()
	if start > 0 {
		if err := rows.SeekToRow(start); err != nil {
			return cpActions{}, err
		}
	}
	var rv rowView
	buf := make([]parquet.Row, 256)
	for pos := start; pos < end; {
		want := min(int64(len(buf)), end-pos)
		n, rerr := rows.ReadRows(buf[:want])
		for i := 0; i < n; i++ {
			if err := rv.index(buf[i], cs.ncols); err != nil {
				return cpActions{}, err
			}
			a, ok, err := cs.rowAction(&rv)
			if err != nil {
				return cpActions{}, fmt.Errorf("row %d: %w", pos+int64(i), err)
			}
			if ok {
				acts.take(a)
			}
		}
		pos += int64(n)
		if rerr == io.EOF {
			if pos < end {
				return cpActions{}, fmt.Errorf("row group ends at row %d, metadata says %d", pos, end)
			}
			break
		}
		if rerr != nil {
			return cpActions{}, rerr
		}
		if n == 0 {
			return cpActions{}, errors.New("no progress reading rows")
		}
	}
	return acts, nil
}

// Typed leaf readers: ok is false when the node is absent or null.
