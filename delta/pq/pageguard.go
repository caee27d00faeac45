package pq

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/units"
)

// Default page limits (PageLimits).
const (
	// DefaultMaxPageBytes is the largest uncompressed size a page header may
	// claim: parquet-go allocates that much before it decompresses the
	// page. Engines cut pages at 1 MiB (parquet-mr, arrow-rs, parquet-go)
	// or 20,000 rows; only a single value larger than that makes a larger
	// page, and 256 MiB leaves room for blobs of that size.
	DefaultMaxPageBytes int64 = 256 << 20
	// DefaultMaxChunkRatio is the largest ratio of uncompressed to
	// compressed bytes of one column chunk, and of a whole file, checked on
	// the footer's totals and on the page headers as they are read, once
	// more than RatioFloor bytes are claimed. Real column chunks compress 2
	// to 20 times (the highest among the shared test tables of Spark,
	// delta-rs and Databricks and parquet-go's own test files is 18.5);
	// constant columns go higher only when written PLAIN, as parquet-go
	// does: 1M rows of one 100-byte string reach 850 in 100 MiB, 1M equal
	// longs 2,600 in 8 MiB, and zstd's RLE blocks 32,768 on zeros, which
	// is also what a decompression bomb is made of. No ratio tells the two
	// apart below the floor; above it, a chunk or file of several hundred
	// MiB that is a thousand times its size is a bomb or worth refusing.
	DefaultMaxChunkRatio int64 = 1000
	// RatioFloor is how many uncompressed bytes a column chunk, or a whole
	// file, may claim whatever its ratio: decoding that much costs about a
	// second, and smaller chunks of constant data legitimately compress
	// beyond any ratio (a writer's row group of 1M rows holds 256 MiB of a
	// column only for values of 256 bytes, which no writer compresses a
	// thousand times).
	RatioFloor int64 = 256 << 20
)

// ErrPageLimit is wrapped by the errors of a parquet file refused for a
// page or a column chunk that claims more than PageLimits allow.
var ErrPageLimit = errors.New("parquet page over the read limits")

// PageLimits bound what the pages of a parquet data file may claim before
// they are read: a page whose header claims more than MaxPageBytes
// uncompressed, or a column chunk whose uncompressed bytes (footer totals or
// page headers so far) exceed MaxRatio times its compressed bytes and
// RatioFloor, makes the file corrupt (a *failure.CorruptFileError naming the
// file, the row group, the column and the page, wrapping ErrPageLimit).
// Zero fields take the defaults.
type PageLimits struct {
	// MaxPageBytes is the largest claimed uncompressed page size
	// (default DefaultMaxPageBytes).
	MaxPageBytes int64
	// MaxRatio is the largest uncompressed/compressed ratio of a column
	// chunk above RatioFloor (default DefaultMaxChunkRatio).
	MaxRatio int64
}

// WithDefaults returns l with every zero field set to its default.
func (l PageLimits) WithDefaults() PageLimits {
	if l.MaxPageBytes <= 0 {
		l.MaxPageBytes = DefaultMaxPageBytes
	}
	if l.MaxRatio <= 0 {
		l.MaxRatio = DefaultMaxChunkRatio
	}
	return l
}

// PageGuard is an io.ReaderAt over a parquet file that checks every page
// header of the column chunks it watches as the bytes pass, before
// parquet-go, which reads its pages through the guard, allocates for
// them: a read that reaches a header over the limits fails with the
// *failure.CorruptFileError, and so does every later read of that chunk.
// Headers are decoded from the bytes being read; one cut by the end of a
// read, or skipped over by it, is read on its own. Safe for concurrent use.
type PageGuard struct {
	ra   io.ReaderAt
	path string
	lim  PageLimits

	mu     sync.Mutex
	chunks []*guardedChunk // sorted by start, not overlapping
	// The pages checked so far, of every chunk.
	uncompressed, compressed int64
}

// guardedChunk is the state of one column chunk's page headers.
type guardedChunk struct {
	start, end   int64 // the chunk's bytes
	rowGroup     int
	column       string
	next         int64 // offset of the first header not yet checked
	page         int   // index in the chunk of the page at next
	uncompressed int64 // claimed by the pages checked so far
	compressed   int64
	carry        []byte // the start of the header at next, cut by the end of a read
	err          error
}

// NewPageGuard guards reads of the parquet data file path (as named in
// errors) through ra. It checks nothing until Watch is given the file.
func NewPageGuard(ra io.ReaderAt, path string, lim PageLimits) *PageGuard {
	return &PageGuard{ra: ra, path: path, lim: lim.WithDefaults()}
}

// Watch checks the footer totals of every column chunk of f, opened
// through g, and starts checking the page headers of those chunks.
func (g *PageGuard) Watch(f *parquet.File) error {
	md := f.Metadata()
	var chunks []*guardedChunk
	var fileU, fileC int64
	for i, rg := range md.RowGroups {
		for _, cc := range rg.Columns {
			m := &cc.MetaData
			c := &guardedChunk{rowGroup: i, column: strings.Join(m.PathInSchema, ".")}
			c.start = m.DataPageOffset
			if d := m.DictionaryPageOffset; d > 0 && d < c.start {
				c.start = d
			}
			c.end = c.start + m.TotalCompressedSize
			c.next = c.start
			if c.start < 0 || m.TotalCompressedSize < 0 || c.end > g.fileEnd() {
				continue // parquet-go refuses it, or finds no pages there
			}
			if err := g.checkRatio(c, -1, m.TotalUncompressedSize, m.TotalCompressedSize, "the footer claims"); err != nil {
				return err
			}
			fileU, fileC = fileU+max(m.TotalUncompressedSize, 0), fileC+m.TotalCompressedSize
			if err := g.checkRatio(nil, -1, fileU, fileC, "the footer's column chunks up to here claim"); err != nil {
				return err
			}
			chunks = append(chunks, c)
		}
	}
	sort.Slice(chunks, func(i, j int) bool { return chunks[i].start < chunks[j].start })
	// A footer whose chunks overlap is parquet-go's to refuse; the guard
	// follows the first of them.
	kept := chunks[:0]
	for _, c := range chunks {
		if len(kept) == 0 || c.start >= kept[len(kept)-1].end {
			kept = append(kept, c)
		}
	}
	g.mu.Lock()
	g.chunks = kept
	g.mu.Unlock()
	return nil
}

// fileEnd is the size of the guarded object when the reader knows it.
func (g *PageGuard) fileEnd() int64 {
	if s, ok := g.ra.(interface{ Size() int64 }); ok {
		return s.Size()
	}
	return 1<<63 - 1
}

// ReadAt implements io.ReaderAt.
func (g *PageGuard) ReadAt(p []byte, off int64) (int, error) {
	n, err := g.ra.ReadAt(p, off)
	if n > 0 {
		if cerr := g.check(p[:n], off); cerr != nil {
			return 0, cerr
		}
	}
	return n, err
}

// check checks the headers of every watched chunk that begin before the
// end of buf, the bytes of the file at off.
func (g *PageGuard) check(buf []byte, off int64) error {
	end := off + int64(len(buf))
	g.mu.Lock()
	defer g.mu.Unlock()
	i := sort.Search(len(g.chunks), func(i int) bool { return g.chunks[i].end > off })
	for ; i < len(g.chunks) && g.chunks[i].start < end; i++ {
		c := g.chunks[i]
		for c.err == nil && c.next < min(end, c.end) {
			done, err := g.nextHeader(c, buf, off)
			c.err = err
			if !done {
				break
			}
		}
		if c.err != nil {
			return c.err
		}
	}
	return nil
}

// maxHeader bounds a page header read on its own: headers carry statistics
// (min and max values) but never more than a value of the page.
const maxHeader = 16 << 20

// nextHeader decodes and checks the header at c.next, from buf (the bytes
// at off) when it holds it whole. A header cut by the end of buf waits for
// the next read of the chunk (parquet-go cannot act on it before it has
// read the rest either) when that read follows on; one read otherwise is
// read on its own. done is false when the header waits.
func (g *PageGuard) nextHeader(c *guardedChunk, buf []byte, off int64) (done bool, err error) {
	end := off + int64(len(buf))
	var src []byte
	switch {
	case c.carry != nil && off == c.next+int64(len(c.carry)):
		src = append(c.carry, buf[:min(int64(len(buf)), c.end-off, maxHeader)]...)
	case c.next >= off:
		src = buf[c.next-off : min(int64(len(buf)), c.end-off)]
	}
	c.carry = nil
	var h format.PageHeader
	n, derr := int64(0), errThriftEOF
	if src != nil {
		n, derr = DecodeThrift(src, &h)
	}
	if errors.Is(derr, errThriftEOF) && src != nil && c.next+int64(len(src)) == end && end < c.end && len(src) < maxHeader {
		c.carry = slices.Clone(src)
		return false, nil
	}
	for size := int64(4 << 10); errors.Is(derr, errThriftEOF); size *= 4 {
		size = min(size, c.end-c.next, maxHeader)
		own := make([]byte, size)
		m, rerr := g.ra.ReadAt(own, c.next)
		if m < len(own) && rerr != nil && rerr != io.EOF {
			return false, rerr
		}
		h = format.PageHeader{}
		n, derr = DecodeThrift(own[:m], &h)
		if m < len(own) || size == c.end-c.next || size == maxHeader {
			break
		}
	}
	if derr != nil || h.CompressedPageSize < 0 || h.UncompressedPageSize < 0 {
		// Malformed headers are parquet-go's to refuse; the guard stops
		// following this chunk.
		c.next = c.end
		return true, nil
	}
	if int64(h.UncompressedPageSize) > g.lim.MaxPageBytes {
		return true, g.refuse(c, c.page, fmt.Errorf("%w: its header claims %s uncompressed, over the limit of %s (PageLimits.MaxPageBytes)",
			ErrPageLimit, units.FormatBytes(int64(h.UncompressedPageSize)), units.FormatBytes(g.lim.MaxPageBytes)))
	}
	u, pc := int64(h.UncompressedPageSize), n+int64(h.CompressedPageSize)
	c.uncompressed, c.compressed = c.uncompressed+u, c.compressed+pc
	g.uncompressed, g.compressed = g.uncompressed+u, g.compressed+pc
	if err := g.checkRatio(c, c.page, c.uncompressed, c.compressed, "the chunk's page headers up to here claim"); err != nil {
		return true, err
	}
	if err := g.checkRatio(c, c.page, g.uncompressed, g.compressed, "the file's page headers read up to here claim"); err != nil {
		return true, err
	}
	c.next += n + int64(h.CompressedPageSize)
	c.page++
	return true, nil
}

// checkRatio refuses uncompressed bytes that are more than RatioFloor and
// more than MaxRatio times compressed; c (nil: the file) and page (-1: none)
// say where.
func (g *PageGuard) checkRatio(c *guardedChunk, page int, uncompressed, compressed int64, what string) error {
	if uncompressed <= RatioFloor || uncompressed/max(compressed, 1) < g.lim.MaxRatio {
		return nil
	}
	return g.refuse(c, page, fmt.Errorf("%w: %s %s uncompressed in %s, more than %d times over (PageLimits.MaxRatio)",
		ErrPageLimit, what, units.FormatBytes(uncompressed), units.FormatBytes(compressed), g.lim.MaxRatio))
}

// refuse makes the corrupt-file error of a chunk's page (c nil: of the
// file; page -1: of the chunk).
func (g *PageGuard) refuse(c *guardedChunk, page int, err error) error {
	switch {
	case c != nil && page >= 0:
		err = fmt.Errorf("row group %d, column %s, page %d: %w", c.rowGroup, c.column, page, err)
	case c != nil:
		err = fmt.Errorf("row group %d, column %s: %w", c.rowGroup, c.column, err)
	}
	return &failure.CorruptFileError{Kind: failure.DataFile, Path: g.path, DataFile: g.path, Err: err}
}
