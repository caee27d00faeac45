package writer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/compactord/compactord/composition"
)

// The commit remaps a sorted job's deletions through the origin map.
var _ composition.Origins = (*OriginMap)(nil)

// originEntrySize is the size of one OriginMap entry: a 4-byte source index
// and an 8-byte physical row index, big-endian.
const originEntrySize = 12

// DefaultOriginMemory is how many bytes of origin entries (12 per output
// row) an OriginMap keeps in memory before it spills them to a temp file.
const DefaultOriginMemory = 16 << 20

// OriginMap maps each output row (output index, row index) of a sorted job
// to its source (index into Job.Sources) and that source's physical row
// index. Entries are kept in write order (output 0's rows, then output 1's,
// ...), 12 bytes per row; beyond a memory bound they are appended to an
// unlinked temp file, so a crash leaves nothing behind. The commit uses
// Locate to remap a concurrent writer's deletions onto permuted outputs;
// Close releases the temp file (Rewrite closes it when the job fails).
type OriginMap struct {
	mu     sync.Mutex
	limit  int
	dir    string
	buf    []byte   // entries not yet spilled
	file   *os.File // spilled entries, nil until the first spill
	w      *bufio.Writer
	spill  int64   // entries in file
	counts []int64 // rows of each finished output
	rows   int64   // entries added so far
	closed bool
}

// NewOriginMap returns an empty map that spills to a temp file in dir once
// it holds more than memBytes of entries (0: DefaultOriginMemory). The
// writer builds one per sorted job; tests build them to simulate one.
func NewOriginMap(dir string, memBytes int) *OriginMap {
	if memBytes <= 0 {
		memBytes = DefaultOriginMemory
	}
	if memBytes < originEntrySize {
		memBytes = originEntrySize
	}
	return &OriginMap{limit: memBytes, dir: dir}
}

// Add appends the origin of the next output row (of the current output).
func (m *OriginMap) Add(source int, phys int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("origin map: closed")
	}
	if source < 0 || int64(source) > int64(^uint32(0)) || phys < 0 {
		return fmt.Errorf("origin map: bad origin (source %d, row %d)", source, phys)
	}
	var e [originEntrySize]byte
	binary.BigEndian.PutUint32(e[:4], uint32(source))
	binary.BigEndian.PutUint64(e[4:], uint64(phys))
	m.buf = append(m.buf, e[:]...)
	m.rows++
	if len(m.buf) >= m.limit {
		return m.spillLocked()
	}
	return nil
}

// addBatch appends the origins of the next len(srcs) output rows (of the
// current output) under one lock: source srcs[i], physical row phys[i].
func (m *OriginMap) addBatch(srcs []uint32, phys []int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("origin map: closed")
	}
	var e [originEntrySize]byte
	for i, s := range srcs {
		if phys[i] < 0 {
			return fmt.Errorf("origin map: bad origin (source %d, row %d)", s, phys[i])
		}
		binary.BigEndian.PutUint32(e[:4], s)
		binary.BigEndian.PutUint64(e[4:], uint64(phys[i]))
		m.buf = append(m.buf, e[:]...)
		m.rows++
		if len(m.buf) >= m.limit {
			if err := m.spillLocked(); err != nil {
				return err
			}
		}
	}
	return nil
}

// spillLocked appends the in-memory entries to the temp file.
func (m *OriginMap) spillLocked() error {
	if m.file == nil {
		f, err := createSpill(m.dir, "compactord-origins-*")
		if err != nil {
			return fmt.Errorf("origin map: %w", err)
		}
		m.file = f
		m.w = bufio.NewWriterSize(f, 256<<10)
	}
	if _, err := m.w.Write(m.buf); err != nil {
		return fmt.Errorf("origin map: spill: %w", err)
	}
	if err := m.w.Flush(); err != nil {
		return fmt.Errorf("origin map: spill: %w", err)
	}
	m.spill += int64(len(m.buf) / originEntrySize)
	m.buf = m.buf[:0]
	return nil
}

// EndOutput closes the current output, which must hold rows entries; the
// next Add starts the next output.
func (m *OriginMap) EndOutput(rows int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var sum int64
	for _, c := range m.counts {
		sum += c
	}
	if m.rows-sum != rows {
		return fmt.Errorf("origin map: output %d has %d rows but %d origins were recorded", len(m.counts), rows, m.rows-sum)
	}
	m.counts = append(m.counts, rows)
	return nil
}

// NumOutputs is the number of outputs the map covers.
func (m *OriginMap) NumOutputs() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.counts)
}

// NumRows is the number of output rows recorded (over all outputs).
func (m *OriginMap) NumRows() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rows
}

// Spilled reports whether entries were written to a temp file.
func (m *OriginMap) Spilled() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.file != nil
}

// Origin returns the source index and physical row of output row row of
// output out.
func (m *OriginMap) Origin(out int, row int64) (source int, phys int64, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, 0, errors.New("origin map: closed")
	}
	if out < 0 || out >= len(m.counts) || row < 0 || row >= m.counts[out] {
		return 0, 0, fmt.Errorf("origin map: no row %d in output %d", row, out)
	}
	g := row
	for _, c := range m.counts[:out] {
		g += c
	}
	var e [originEntrySize]byte
	if g < m.spill {
		if _, err := m.file.ReadAt(e[:], g*originEntrySize); err != nil {
			return 0, 0, fmt.Errorf("origin map: read spill: %w", err)
		}
	} else {
		copy(e[:], m.buf[(g-m.spill)*originEntrySize:])
	}
	return int(binary.BigEndian.Uint32(e[:4])), int64(binary.BigEndian.Uint64(e[4:])), nil
}

// Locate finds, in one pass over the map, where the given physical rows of
// source (an index into Job.Sources) landed: output index -> row indexes in
// that output. Rows of physRows that the map does not hold (they were not
// live when the job read the source) are simply absent from the answer;
// callers that need every row compare cardinalities.
func (m *OriginMap) Locate(source int, physRows *roaring64.Bitmap) (map[int]*roaring64.Bitmap, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errors.New("origin map: closed")
	}
	out := map[int]*roaring64.Bitmap{}
	if physRows == nil || physRows.IsEmpty() || m.rows == 0 {
		return out, nil
	}
	want := uint32(source)
	if source < 0 || int64(source) > int64(^uint32(0)) {
		return nil, fmt.Errorf("origin map: bad source index %d", source)
	}
	// Outputs in order: o is the output of global entry g, rowIn its row.
	o, rowIn := 0, int64(0)
	advance := func() {
		rowIn++
		for o < len(m.counts) && rowIn >= m.counts[o] {
			o++
			rowIn = 0
		}
	}
	for o < len(m.counts) && m.counts[o] == 0 {
		o++
	}
	visit := func(e []byte) {
		if binary.BigEndian.Uint32(e[:4]) == want && physRows.Contains(binary.BigEndian.Uint64(e[4:])) {
			bm := out[o]
			if bm == nil {
				bm = roaring64.New()
				out[o] = bm
			}
			bm.Add(uint64(rowIn))
		}
		advance()
	}
	var sum int64
	for _, c := range m.counts {
		sum += c
	}
	if sum != m.rows {
		return nil, fmt.Errorf("origin map: %d rows recorded but outputs hold %d (job not finished)", m.rows, sum)
	}
	if m.spill > 0 {
		r := bufio.NewReaderSize(io.NewSectionReader(m.file, 0, m.spill*originEntrySize), 256<<10)
		var e [originEntrySize]byte
		for i := int64(0); i < m.spill; i++ {
			if _, err := io.ReadFull(r, e[:]); err != nil {
				return nil, fmt.Errorf("origin map: read spill entry %d: %w", i, err)
			}
			visit(e[:])
		}
	}
	for p := 0; p+originEntrySize <= len(m.buf); p += originEntrySize {
		visit(m.buf[p : p+originEntrySize])
	}
	return out, nil
}

// Close releases the map's memory and temp file. It is safe to call more
// than once and on a nil map; the map is unusable afterwards.
func (m *OriginMap) Close() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	m.buf = nil
	if m.file != nil {
		err := m.file.Close()
		m.file, m.w = nil, nil
		if err != nil {
			return fmt.Errorf("origin map: close spill: %w", err)
		}
	}
	return nil
}
