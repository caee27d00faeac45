package writer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// originCodecMagic starts an encoded origin map (EncodeTo).
const originCodecMagic = "CDORIG1\n"

// EncodeTo writes the map of a finished job to w: a magic line, the number
// of outputs, each output's row count, then every entry in write order (12
// bytes each, as kept in memory). DecodeOriginMap reads it back; a worker
// process hands a sorted job's origins to the committer this way.
func (m *OriginMap) EncodeTo(w io.Writer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("origin map: closed")
	}
	var sum int64
	for _, c := range m.counts {
		sum += c
	}
	if sum != m.rows {
		return fmt.Errorf("origin map: %d rows recorded but outputs hold %d (job not finished)", m.rows, sum)
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	if _, err := bw.WriteString(originCodecMagic); err != nil {
		return fmt.Errorf("origin map: encode: %w", err)
	}
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(m.counts)))
	_, _ = bw.Write(n[:])
	for _, c := range m.counts {
		binary.BigEndian.PutUint64(n[:], uint64(c))
		_, _ = bw.Write(n[:])
	}
	if m.spill > 0 {
		if m.w != nil {
			if err := m.w.Flush(); err != nil {
				return fmt.Errorf("origin map: encode: %w", err)
			}
		}
		if _, err := io.Copy(bw, io.NewSectionReader(m.file, 0, m.spill*originEntrySize)); err != nil {
			return fmt.Errorf("origin map: encode spilled entries: %w", err)
		}
	}
	if _, err := bw.Write(m.buf); err != nil {
		return fmt.Errorf("origin map: encode: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("origin map: encode: %w", err)
	}
	return nil
}

// DecodeOriginMap reads a map EncodeTo wrote into a new map that spills to
// dir beyond memBytes (as NewOriginMap). A short, over-long or malformed
// input is an error; the caller closes the map.
func DecodeOriginMap(r io.Reader, dir string, memBytes int) (*OriginMap, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	magic := make([]byte, len(originCodecMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != originCodecMagic {
		return nil, fmt.Errorf("origin map: decode: not an encoded origin map (err %v)", err)
	}
	var n [8]byte
	if _, err := io.ReadFull(br, n[:]); err != nil {
		return nil, fmt.Errorf("origin map: decode output count: %w", err)
	}
	outputs := binary.BigEndian.Uint64(n[:])
	if outputs > 1<<20 {
		return nil, fmt.Errorf("origin map: decode: %d outputs", outputs)
	}
	counts := make([]int64, outputs)
	for i := range counts {
		if _, err := io.ReadFull(br, n[:]); err != nil {
			return nil, fmt.Errorf("origin map: decode row count of output %d: %w", i, err)
		}
		counts[i] = int64(binary.BigEndian.Uint64(n[:]))
		if counts[i] < 0 {
			return nil, fmt.Errorf("origin map: decode: output %d has %d rows", i, counts[i])
		}
	}
	m := NewOriginMap(dir, memBytes)
	var e [originEntrySize]byte
	for out, c := range counts {
		for k := int64(0); k < c; k++ {
			if _, err := io.ReadFull(br, e[:]); err != nil {
				_ = m.Close()
				return nil, fmt.Errorf("origin map: decode entry %d of output %d: %w", k, out, err)
			}
			if err := m.Add(int(binary.BigEndian.Uint32(e[:4])), int64(binary.BigEndian.Uint64(e[4:]))); err != nil {
				_ = m.Close()
				return nil, err
			}
		}
		if err := m.EndOutput(c); err != nil {
			_ = m.Close()
			return nil, err
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		_ = m.Close()
		return nil, errors.New("origin map: decode: trailing bytes after the last entry")
	}
	return m, nil
}
