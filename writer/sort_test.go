package writer

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
)

func TestRowCodecRoundTripsEveryKind(t *testing.T) {
	row := parquet.Row{
		parquet.BooleanValue(true).Level(0, 1, 0),
		parquet.Int32Value(-7).Level(0, 1, 1),
		parquet.Int64Value(1<<40).Level(0, 1, 2),
		parquet.Int96Value(deprecated.Int96{1, 2, 3}).Level(0, 1, 3),
		parquet.FloatValue(1.5).Level(0, 1, 4),
		parquet.DoubleValue(-2.25).Level(0, 1, 5),
		parquet.ByteArrayValue([]byte("héllo")).Level(0, 1, 6),
		parquet.ByteArrayValue([]byte{}).Level(0, 1, 7),
		parquet.NullValue().Level(0, 0, 8),
		parquet.FixedLenByteArrayValue([]byte{0xff, 0, 1}).Level(0, 1, 9),
		parquet.Int64Value(5).Level(0, 3, 300),
		parquet.Int64Value(6).Level(1, 3, 300),
	}
	enc, err := appendRow(nil, row)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRow(nil, enc)
	if err != nil {
		t.Fatal(err)
	}
	if !row.Equal(got) {
		t.Fatalf("decoded %v, want %v", got, row)
	}
	for i, v := range got {
		if v.RepetitionLevel() != row[i].RepetitionLevel() || v.DefinitionLevel() != row[i].DefinitionLevel() || v.Column() != row[i].Column() {
			t.Errorf("value %d: levels/column %d/%d/%d, want %d/%d/%d", i, v.RepetitionLevel(), v.DefinitionLevel(), v.Column(),
				row[i].RepetitionLevel(), row[i].DefinitionLevel(), row[i].Column())
		}
	}
	if got[7].IsNull() || !got[8].IsNull() {
		t.Error("empty byte array and null were confused")
	}
	for cut := 0; cut < len(enc); cut++ {
		if _, err := decodeRow(nil, enc[:cut]); err == nil {
			t.Fatalf("truncated encoding (%d of %d bytes) decoded without error", cut, len(enc))
		}
	}
}

// sortTestRows makes n rows of (k int64 with duplicates, s string) spread
// over sources, with their physical indexes.
func sortTestRows(n, sources int, seed uint64) (rows []parquet.Row, src []int, phys []int64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	next := make([]int64, sources)
	for i := 0; i < n; i++ {
		k := rng.Int64N(500) - 250 // many ties: (source, phys) decides
		s := fmt.Sprintf("row-%d-%s", i, bytes.Repeat([]byte("x"), rng.IntN(40)))
		rows = append(rows, parquet.Row{parquet.Int64Value(k).Level(0, 1, 0), parquet.ByteArrayValue([]byte(s)).Level(0, 1, 1)})
		si := rng.IntN(sources)
		src = append(src, si)
		phys = append(phys, next[si])
		next[si] += 1 + int64(rng.IntN(3)) // gaps, as a DV leaves
	}
	return rows, src, phys
}

// int64Key orders records by their first column as a signed int64.
func int64Key(dst, rec []byte) ([]byte, error) {
	_, _, sv, _, err := recordOrigin(rec)
	if err != nil {
		return dst, err
	}
	row, err := decodeRow(nil, sv)
	if err != nil {
		return dst, err
	}
	return binary.BigEndian.AppendUint64(dst, uint64(row[0].Int64())^(1<<63)), nil
}

func TestExternalSortOrdersEveryRowUnderAMemoryBound(t *testing.T) {
	rows, src, phys := sortTestRows(6000, 4, 1)
	tests := []struct {
		name       string
		mem        int
		wantSpills bool
		wantPasses bool
	}{
		{name: "everything in memory", mem: 64 << 20},
		{name: "a few spills merged in one pass", mem: 100 << 10, wantSpills: true},
		{name: "tiny bound: many runs, several merge passes", mem: 8 << 10, wantSpills: true, wantPasses: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s := newExtSorter(dir, tt.mem)
			defer s.close()
			for i, r := range rows {
				if err := s.add(src[i], phys[i], r[:1], r); err != nil {
					t.Fatal(err)
				}
			}
			next, err := s.sorted(ctx, 8, int64Key)
			if err != nil {
				t.Fatal(err)
			}
			var prev []byte
			var got [][]byte
			for {
				key, rec, err := next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				cur := append(slices.Clone(key), rec[:originPrefix]...)
				if prev != nil && bytes.Compare(prev, cur) >= 0 {
					t.Fatalf("record %d out of order: %x after %x", len(got), cur, prev)
				}
				prev = cur
				got = append(got, slices.Clone(rec))
			}
			if (s.Spills > 0) != tt.wantSpills || (s.Passes > 0) != tt.wantPasses {
				t.Errorf("spills %d, runs %d, passes %d: want spills %v, passes %v", s.Spills, s.Runs, s.Passes, tt.wantSpills, tt.wantPasses)
			}
			// The multiset of (origin, row) is unchanged.
			var want [][]byte
			for i, r := range rows {
				rec := binary.BigEndian.AppendUint32(nil, uint32(src[i]))
				rec = binary.BigEndian.AppendUint64(rec, uint64(phys[i]))
				sv, _ := appendRow(nil, r[:1])
				rec = binary.AppendUvarint(rec, uint64(len(sv)))
				rec = append(rec, sv...)
				rec, _ = appendRow(rec, r)
				want = append(want, rec)
			}
			slices.SortFunc(want, bytes.Compare)
			slices.SortFunc(got, bytes.Compare)
			if len(got) != len(want) {
				t.Fatalf("%d rows out, %d in", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("row multiset changed at %d", i)
				}
			}
			if tt.wantSpills {
				entries, _ := filepathGlob(dir)
				if len(entries) != 0 {
					t.Errorf("spill files visible in %s: %v (want unlinked)", dir, entries)
				}
			}
		})
	}
}

func TestExternalSortOfNothing(t *testing.T) {
	s := newExtSorter(t.TempDir(), 1<<20)
	next, err := s.sorted(context.Background(), 8, int64Key)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := next(); err != io.EOF {
		t.Fatalf("err %v, want EOF", err)
	}
}
