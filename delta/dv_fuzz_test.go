package delta

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/compactord/compactord/delta/dv"
	"github.com/compactord/compactord/internal/testutil"
)

// FuzzZ85Decode checks that decoding never panics and that whatever decodes
// re-encodes (Spark style) to a string that decodes to the same bytes.
func FuzzZ85Decode(f *testing.F) {
	f.Add("HelloWorld", 8)
	f.Add("^Bg9^0rr910000000000iXQKl0rr91000005c8Xg##093", 34)
	f.Add("^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 44)
	f.Add("vBn[lx{q8@P<9BNH/isA", 16)
	f.Add("#####", 0)
	f.Add("%%%%%", 4)
	f.Fuzz(func(t *testing.T, s string, size int) {
		b, err := dv.Z85Decode(s, size)
		if err != nil {
			return
		}
		if len(b) != size {
			t.Fatalf("decoded %d bytes, asked for %d", len(b), size)
		}
		again, err := dv.Z85Decode(dv.Z85Encode(b), size)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encode round trip: %x vs %x (%v)", again, b, err)
		}
	})
}

// FuzzDecodeDV feeds arbitrary bytes to the bitmap decoder and to the DV
// file parser: they must return an error or a value, never panic, and a
// decoded bitmap must survive an encode/decode round trip.
func FuzzDecodeDV(f *testing.F) {
	for _, rows := range [][]uint64{{0, 9}, {3}, {3, 4, 7, 11, 18, 29}, {1, 1<<32 | 5}} {
		b, err := dv.EncodeBitmap(roaring64.BitmapOf(rows...))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// Every DV file of the shared test tables, whole, as seeds.
	files, _ := filepath.Glob(filepath.Join(testutil.DeltaTestdata(f), "*", "delta", "deletion_vector_*.bin"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{1})
	f.Add([]byte{1, 0, 0, 0, 4, 0xd1, 0xd3, 0x39, 0x64, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if bm, err := dv.DecodeBitmap(data); err == nil {
			roundTrip(t, bm)
		}
		frames, err := parseDVFile(data)
		if err != nil {
			return
		}
		for _, fr := range frames {
			if bm, err := dv.DecodeBitmap(fr); err == nil {
				roundTrip(t, bm)
			}
		}
	})
}

func roundTrip(t *testing.T, bm *roaring64.Bitmap) {
	t.Helper()
	enc, err := dv.EncodeBitmap(bm)
	if err != nil {
		return // e.g. keys the portable format cannot hold
	}
	back, err := dv.DecodeBitmap(enc)
	if err != nil {
		t.Fatalf("re-decode of our own encoding: %v", err)
	}
	if !back.Equals(bm) {
		t.Fatal("encode/decode round trip changed the bitmap")
	}
}
