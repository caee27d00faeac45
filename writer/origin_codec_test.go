package writer

import (
	"bytes"
	"testing"
)

func TestOriginMapEncodesAndDecodesEveryEntry(t *testing.T) {
	counts := []int64{5, 0, 300}
	tests := []struct {
		name string
		mem  int // of the encoded map
	}{
		{name: "in memory", mem: 1 << 20},
		{name: "spilled", mem: 10 * originEntrySize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewOriginMap(t.TempDir(), tt.mem)
			defer m.Close()
			g := int64(0)
			for _, c := range counts {
				for k := int64(0); k < c; k++ {
					if err := m.Add(int(g%3), g*7); err != nil {
						t.Fatal(err)
					}
					g++
				}
				if err := m.EndOutput(c); err != nil {
					t.Fatal(err)
				}
			}
			var buf bytes.Buffer
			if err := m.EncodeTo(&buf); err != nil {
				t.Fatal(err)
			}
			d, err := DecodeOriginMap(bytes.NewReader(buf.Bytes()), t.TempDir(), 4*originEntrySize)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if d.NumOutputs() != len(counts) || d.NumRows() != m.NumRows() || !d.Spilled() {
				t.Fatalf("decoded %d outputs, %d rows, spilled %v; want %d, %d, true", d.NumOutputs(), d.NumRows(), d.Spilled(), len(counts), m.NumRows())
			}
			for out, c := range counts {
				for k := int64(0); k < c; k++ {
					s1, p1, err1 := m.Origin(out, k)
					s2, p2, err2 := d.Origin(out, k)
					if err1 != nil || err2 != nil || s1 != s2 || p1 != p2 {
						t.Fatalf("output %d row %d: (%d,%d,%v) decoded as (%d,%d,%v)", out, k, s1, p1, err1, s2, p2, err2)
					}
				}
			}
			// Cut or padded input is refused.
			for _, bad := range [][]byte{buf.Bytes()[:buf.Len()-1], append(append([]byte{}, buf.Bytes()...), 0), []byte("nonsense")} {
				if x, err := DecodeOriginMap(bytes.NewReader(bad), t.TempDir(), 0); err == nil {
					x.Close()
					t.Fatalf("decoding %d bytes of a %d-byte map succeeded", len(bad), buf.Len())
				}
			}
		})
	}
}

func TestUnfinishedOriginMapIsNotEncoded(t *testing.T) {
	m := NewOriginMap(t.TempDir(), 0)
	defer m.Close()
	if err := m.Add(0, 1); err != nil {
		t.Fatal(err)
	}
	if err := m.EncodeTo(&bytes.Buffer{}); err == nil {
		t.Fatal("encoded a map whose last output is not ended")
	}
}
