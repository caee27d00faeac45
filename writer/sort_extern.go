package writer

import (
	"bufio"
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/parquet-go/parquet-go"
)

// The external sort of a sorted rewrite. A record is [source 4][physical
// row 8][uvarint n][sort values, n bytes][row] (encodings of sort_codec.go). Rows arrive before their sort keys
// can be computed (the range boundaries come from a sample of all rows), so
// it works in two phases:
//
//  1. collect: rows are encoded into a chunk buffer ([src][phys][row], see
//     sort_codec.go); a full chunk is spilled as is to an unlinked temp file.
//  2. sorted: each chunk (the one in memory first) is loaded, keyed, sorted
//     by (key, source, physical row) and written as a sorted run; a single
//     chunk that never spilled is served from memory. Runs are merged with a
//     heap, in several passes when there are more runs than the memory bound
//     allows read buffers for.
//
// Memory is the chunk buffer (Options.Sort.MemoryBytes, including a per-row
// allowance for offsets, keys and the sort index) or, while merging, one
// read buffer per run.

// sortRecordOverhead is the memory allowance per buffered row for the
// offsets, key and index of the in-memory sort.
const sortRecordOverhead = 24

// sortRunBufferSize is the largest read (and write) buffer of one run
// file; small memory bounds get smaller buffers (at least 4 KiB, at most a
// 16th of the bound) so that a merge pass reads at least a few runs.
const sortRunBufferSize = 256 << 10

// originPrefix is the size of the (source, physical row) prefix of a
// record: 4 + 8 bytes, big-endian so that byte order is numeric order.
const originPrefix = 12

// extSorter is one job's external sort.
type extSorter struct {
	dir     string
	mem     int
	runBuf  int    // buffer of one run file
	data    []byte // records of the current chunk: uvarint length + record
	n       int    // records in data
	scratch []byte
	cv      []byte

	chunks []spillFile // unsorted spilled chunks
	runs   []spillFile // sorted runs
	open   []*os.File  // every spill file still open (closed by close)

	// Spills counts chunk spills; Runs counts sorted runs written; Passes
	// counts intermediate merge passes.
	Spills, Runs, Passes int
	// Rows is the number of rows added.
	Rows int64
}

type spillFile struct {
	f    *os.File
	size int64
}

func newExtSorter(dir string, mem int) *extSorter {
	return &extSorter{dir: dir, mem: mem, runBuf: min(sortRunBufferSize, max(4<<10, mem/16))}
}

// add appends one row with its origin and its sort values (the values the
// key is computed from, kept apart so that keying does not decode the row).
func (s *extSorter) add(src int, phys int64, sortVals, row parquet.Row) error {
	var err error
	s.cv, err = appendRow(s.cv[:0], sortVals)
	if err != nil {
		return err
	}
	s.scratch = binary.AppendUvarint(s.scratch[:0], uint64(len(s.cv)))
	s.scratch = append(s.scratch, s.cv...)
	s.scratch, err = appendRow(s.scratch, row)
	if err != nil {
		return err
	}
	recLen := originPrefix + len(s.scratch)
	if s.n > 0 && len(s.data)+binary.MaxVarintLen64+recLen+(s.n+1)*sortRecordOverhead > s.mem {
		if err := s.spillChunk(); err != nil {
			return err
		}
	}
	s.grow(binary.MaxVarintLen64 + recLen)
	s.data = binary.AppendUvarint(s.data, uint64(recLen))
	s.data = binary.BigEndian.AppendUint32(s.data, uint32(src))
	s.data = binary.BigEndian.AppendUint64(s.data, uint64(phys))
	s.data = append(s.data, s.scratch...)
	s.n++
	s.Rows++
	return nil
}

// grow makes room for n more bytes in the chunk buffer without letting
// append's doubling overshoot the memory bound.
func (s *extSorter) grow(n int) {
	if len(s.data)+n <= cap(s.data) {
		return
	}
	c := max(len(s.data)+n, min(2*cap(s.data), s.mem), 64<<10)
	d := make([]byte, len(s.data), c)
	copy(d, s.data)
	s.data = d
}

func (s *extSorter) newFile(pattern string) (*os.File, error) {
	f, err := createSpill(s.dir, pattern)
	if err != nil {
		return nil, err
	}
	s.open = append(s.open, f)
	return f, nil
}

func (s *extSorter) release(f *os.File) {
	for i, o := range s.open {
		if o == f {
			s.open = slices.Delete(s.open, i, i+1)
			break
		}
	}
	_ = f.Close()
}

// spillChunk writes the current chunk, unsorted, to a temp file.
func (s *extSorter) spillChunk() error {
	f, err := s.newFile("compactord-sort-chunk-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(s.data); err != nil {
		return fmt.Errorf("sort: spill chunk: %w", err)
	}
	s.chunks = append(s.chunks, spillFile{f: f, size: int64(len(s.data))})
	s.data = s.data[:0]
	s.n = 0
	s.Spills++
	return nil
}

// keyFunc appends the sort key of a record ([src][phys][row]) to dst; every
// key has the same length.
type keyFunc func(dst, rec []byte) ([]byte, error)

// memRun is one chunk sorted in memory.
type memRun struct {
	data   []byte
	offs   []int // start of each record (after its length) in data
	lens   []int32
	keys   []byte
	keyLen int
	order  []int32
	pos    int
}

// sortChunk keys and sorts the records of data.
func sortChunk(ctx context.Context, data []byte, n int, keyLen int, key keyFunc) (*memRun, error) {
	r := &memRun{data: data, keyLen: keyLen,
		offs: make([]int, 0, n), lens: make([]int32, 0, n), keys: make([]byte, 0, n*keyLen), order: make([]int32, 0, n)}
	for p := 0; p < len(data); {
		l, k := binary.Uvarint(data[p:])
		if k <= 0 || l < originPrefix || uint64(len(data)-p-k) < l {
			return nil, errBadRowEncoding
		}
		start := p + k
		var err error
		before := len(r.keys)
		if r.keys, err = key(r.keys, data[start:start+int(l)]); err != nil {
			return nil, err
		}
		if len(r.keys)-before != keyLen {
			return nil, fmt.Errorf("sort: key of %d bytes, want %d", len(r.keys)-before, keyLen)
		}
		r.order = append(r.order, int32(len(r.offs)))
		r.offs = append(r.offs, start)
		r.lens = append(r.lens, int32(l))
		p = start + int(l)
		if len(r.offs)%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	slices.SortFunc(r.order, func(a, b int32) int {
		if c := bytes.Compare(r.keys[int(a)*keyLen:int(a+1)*keyLen], r.keys[int(b)*keyLen:int(b+1)*keyLen]); c != 0 {
			return c
		}
		oa, ob := r.offs[a], r.offs[b]
		return bytes.Compare(r.data[oa:oa+originPrefix], r.data[ob:ob+originPrefix])
	})
	return r, nil
}

func (r *memRun) next() (key, rec []byte, err error) {
	if r.pos >= len(r.order) {
		return nil, nil, io.EOF
	}
	i := int(r.order[r.pos])
	r.pos++
	o := r.offs[i]
	return r.keys[i*r.keyLen : (i+1)*r.keyLen], r.data[o : o+int(r.lens[i])], nil
}

// writeRun writes a sorted sequence as a run file: per record, uvarint of
// key+record length, the key, the record.
func (s *extSorter) writeRun(ctx context.Context, next func() (key, rec []byte, err error)) (spillFile, error) {
	f, err := s.newFile("compactord-sort-run-*")
	if err != nil {
		return spillFile{}, err
	}
	w := bufio.NewWriterSize(f, s.runBuf)
	var size int64
	var hdr [binary.MaxVarintLen64]byte
	for i := 0; ; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return spillFile{}, err
			}
		}
		key, rec, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return spillFile{}, err
		}
		h := binary.PutUvarint(hdr[:], uint64(len(key)+len(rec)))
		if _, err := w.Write(hdr[:h]); err != nil {
			return spillFile{}, fmt.Errorf("sort: write run: %w", err)
		}
		if _, err := w.Write(key); err != nil {
			return spillFile{}, fmt.Errorf("sort: write run: %w", err)
		}
		if _, err := w.Write(rec); err != nil {
			return spillFile{}, fmt.Errorf("sort: write run: %w", err)
		}
		size += int64(h + len(key) + len(rec))
	}
	if err := w.Flush(); err != nil {
		return spillFile{}, fmt.Errorf("sort: write run: %w", err)
	}
	s.Runs++
	return spillFile{f: f, size: size}, nil
}

// fileRun reads a run file back.
type fileRun struct {
	r      *bufio.Reader
	keyLen int
	buf    []byte
}

func newFileRun(sf spillFile, keyLen, bufSize int) *fileRun {
	return &fileRun{r: bufio.NewReaderSize(io.NewSectionReader(sf.f, 0, sf.size), bufSize), keyLen: keyLen}
}

func (r *fileRun) next() (key, rec []byte, err error) {
	l, err := binary.ReadUvarint(r.r)
	if err == io.EOF {
		return nil, nil, io.EOF
	}
	if err != nil {
		return nil, nil, fmt.Errorf("sort: read run: %w", err)
	}
	if l < uint64(r.keyLen+originPrefix) || l > 1<<31 {
		return nil, nil, errBadRowEncoding
	}
	if uint64(cap(r.buf)) < l {
		r.buf = make([]byte, l)
	}
	r.buf = r.buf[:l]
	if _, err := io.ReadFull(r.r, r.buf); err != nil {
		return nil, nil, fmt.Errorf("sort: read run: %w", err)
	}
	return r.buf[:r.keyLen], r.buf[r.keyLen:], nil
}

// runCursor is one run in the merge heap with its current record.
type runCursor struct {
	next     func() (key, rec []byte, err error)
	key, rec []byte
}

type runHeap []*runCursor

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	if c := bytes.Compare(h[i].key, h[j].key); c != 0 {
		return c < 0
	}
	return bytes.Compare(h[i].rec[:originPrefix], h[j].rec[:originPrefix]) < 0
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*runCursor)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// merger yields the records of several sorted runs in order. The slices it
// returns are valid until the next call.
type merger struct {
	h       runHeap
	advance *runCursor // the cursor whose record was returned last
}

func newMerger(nexts []func() (key, rec []byte, err error)) (*merger, error) {
	m := &merger{}
	for _, n := range nexts {
		c := &runCursor{next: n}
		k, r, err := n()
		if err == io.EOF {
			continue
		}
		if err != nil {
			return nil, err
		}
		c.key, c.rec = k, r
		m.h = append(m.h, c)
	}
	heap.Init(&m.h)
	return m, nil
}

func (m *merger) next() (key, rec []byte, err error) {
	if c := m.advance; c != nil {
		m.advance = nil
		k, r, err := c.next()
		switch {
		case err == io.EOF:
			heap.Pop(&m.h)
		case err != nil:
			return nil, nil, err
		default:
			c.key, c.rec = k, r
			heap.Fix(&m.h, 0)
		}
	}
	if len(m.h) == 0 {
		return nil, nil, io.EOF
	}
	c := m.h[0]
	m.advance = c
	return c.key, c.rec, nil
}

// addRun sorts the records in s.data and writes them as one more run; n
// sizes sortChunk's index (the record count when known, 0 for a chunk read
// back from its spill file).
func (s *extSorter) addRun(ctx context.Context, n int, keyLen int, key keyFunc) error {
	r, err := sortChunk(ctx, s.data, n, keyLen, key)
	if err != nil {
		return err
	}
	run, err := s.writeRun(ctx, r.next)
	if err != nil {
		return err
	}
	s.runs = append(s.runs, run)
	return nil
}

// sorted ends the collect phase and returns the records in (key, source,
// physical row) order.
func (s *extSorter) sorted(ctx context.Context, keyLen int, key keyFunc) (func() (key, rec []byte, err error), error) {
	if len(s.chunks) == 0 {
		r, err := sortChunk(ctx, s.data, s.n, keyLen, key)
		if err != nil {
			return nil, err
		}
		return r.next, nil
	}
	if s.n > 0 {
		if err := s.addRun(ctx, s.n, keyLen, key); err != nil {
			return nil, err
		}
	}
	for _, ch := range s.chunks {
		if int64(cap(s.data)) < ch.size {
			s.data = make([]byte, ch.size)
		}
		s.data = s.data[:ch.size]
		if _, err := ch.f.ReadAt(s.data, 0); err != nil {
			return nil, fmt.Errorf("sort: read chunk: %w", err)
		}
		s.release(ch.f)
		if err := s.addRun(ctx, 0, keyLen, key); err != nil {
			return nil, err
		}
	}
	s.chunks = nil
	s.data, s.n = nil, 0
	fanIn := max(2, s.mem/s.runBuf)
	for len(s.runs) > fanIn {
		group := s.runs[:fanIn]
		nexts := make([]func() ([]byte, []byte, error), len(group))
		for i, r := range group {
			nexts[i] = newFileRun(r, keyLen, s.runBuf).next
		}
		m, err := newMerger(nexts)
		if err != nil {
			return nil, err
		}
		merged, err := s.writeRun(ctx, m.next)
		if err != nil {
			return nil, err
		}
		for _, r := range group {
			s.release(r.f)
		}
		s.runs = append(s.runs[fanIn:], merged)
		s.Passes++
	}
	nexts := make([]func() ([]byte, []byte, error), len(s.runs))
	for i, r := range s.runs {
		nexts[i] = newFileRun(r, keyLen, s.runBuf).next
	}
	m, err := newMerger(nexts)
	if err != nil {
		return nil, err
	}
	return m.next, nil
}

// close releases every spill file and the buffers.
func (s *extSorter) close() error {
	var errs []error
	for _, f := range s.open {
		if err := f.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	s.open, s.chunks, s.runs, s.data = nil, nil, nil, nil
	return errors.Join(errs...)
}

// recordOrigin splits a record ([src][phys][uvarint n][n bytes of sort
// values][row]) into its source index, physical row, sort values and row
// encodings.
func recordOrigin(rec []byte) (src int, phys int64, sortVals, row []byte, err error) {
	src, phys = int(binary.BigEndian.Uint32(rec[:4])), int64(binary.BigEndian.Uint64(rec[4:originPrefix]))
	rest := rec[originPrefix:]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)-k) {
		return 0, 0, nil, nil, errBadRowEncoding
	}
	return src, phys, rest[k : k+int(n)], rest[k+int(n):], nil
}
