package delta

import (
	"bytes"
	"hash/crc32"
	"testing"

	"github.com/compactord/compactord/delta/dv"
)

func crc32IEEE(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

func TestZ85KnownVectors(t *testing.T) {
	// The ZeroMQ RFC 32 test vector.
	hello := []byte{0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B}
	if got := dv.Z85Encode(hello); got != "HelloWorld" {
		t.Fatalf("encode %q", got)
	}
	got, err := dv.Z85Decode("HelloWorld", 8)
	if err != nil || !bytes.Equal(got, hello) {
		t.Fatalf("decode %x %v", got, err)
	}
}

func TestZ85Tails(t *testing.T) {
	tests := []struct {
		name string
		in   string
		size int
		want []byte
		ok   bool
	}{
		{"spark zero-padded tail, 1 byte", dv.Z85Encode([]byte{0xAB}), 1, []byte{0xAB}, true},
		{"spark zero-padded tail, 3 bytes", dv.Z85Encode([]byte{1, 2, 3}), 3, []byte{1, 2, 3}, true},
		{"rust tail, 3 bytes missing", "###" + dv.Z85Encode([]byte{0, 0, 0, 0xAB})[3:], 1, []byte{0xAB}, true},
		{"rust tail, 2 bytes missing", "##" + dv.Z85Encode([]byte{0, 0, 0x12, 0x34})[2:], 2, []byte{0x12, 0x34}, true},
		{"rust tail, 1 byte missing", "#" + dv.Z85Encode([]byte{0, 1, 2, 3})[1:], 3, []byte{1, 2, 3}, true},
		{"rust tail after full chunks", "HelloWorld" + "##" + dv.Z85Encode([]byte{0, 0, 0x12, 0x34})[2:], 10,
			[]byte{0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B, 0x12, 0x34}, true},
		{"'#' in a chunk that is not the last", "#0000HelloWorld", 8, nil, false},
		{"four '#' leave nothing", "####0", 0, nil, false},
		{"length not a multiple of 5", "Hello1", 4, nil, false},
		{"size larger than the data", "HelloWorld", 9, nil, false},
		{"size far smaller than the data", "HelloWorld", 2, nil, false},
		{"chunk overflows 32 bits", "%%%%%", 4, nil, false},
		{"invalid character", "Hell~", 4, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := dv.Z85Decode(tc.in, tc.size)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
			if tc.ok && !bytes.Equal(got, tc.want) {
				t.Fatalf("got %x, want %x", got, tc.want)
			}
		})
	}
}

func TestInlineDVWithRustTailDecodesToRowThree(t *testing.T) {
	// dv-inline-cdf v5: a plain decoder reads row 28168 here.
	b, err := dv.Z85Decode("^Bg9^0rr910000000000iXQKl0rr91000005c8Xg##093", 34)
	if err != nil {
		t.Fatal(err)
	}
	bm, err := dv.DecodeBitmap(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := bm.ToArray(); len(got) != 1 || got[0] != 3 {
		t.Fatalf("rows %v, want [3]", got)
	}
}

func TestDVFileKey(t *testing.T) {
	tests := []struct {
		path, want string
		ok         bool
	}{
		{"vBn[lx{q8@P<9BNH/isA", "deletion_vector_", true},
		{"ab" + "vBn[lx{q8@P<9BNH/isA", "ab/deletion_vector_", true},
		{"short", "", false},
		{"vBn[lx{q8@P<9BNH/is~", "", false},
	}
	for _, tc := range tests {
		got, err := dv.DVFileKey(tc.path)
		if (err == nil) != tc.ok {
			t.Fatalf("%q: err %v", tc.path, err)
		}
		if tc.ok && (len(got) != len(tc.want)+36+4 || got[:len(tc.want)] != tc.want) {
			t.Fatalf("%q: key %q", tc.path, got)
		}
	}
	// A UUID survives the Z85 round trip.
	u := [16]byte{0x61, 0xd1, 0x6c, 0x75, 0x69, 0x94, 0x46, 0xb7, 0xa1, 0x5b, 0x8b, 0x53, 0x88, 0x52, 0xe5, 0x0e}
	key, err := dv.DVFileKey(dv.Z85UUID(u))
	if err != nil || key != "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin" {
		t.Fatalf("key %q %v", key, err)
	}
}
