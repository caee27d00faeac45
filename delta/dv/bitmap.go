package dv

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/compactord/compactord/delta/pq"
	"github.com/compactord/compactord/failure"
)

// Magic numbers of the two RoaringBitmapArray serializations (little-endian
// int32 at the start of every serialized deletion vector).
const (
	// BitmapMagicPortable marks the portable layout every writer must use:
	// uint64 bucket count, then per bucket a uint32 key and a standard
	// 32-bit Roaring bitmap.
	BitmapMagicPortable = 1681511377
	// BitmapMagicNative marks Spark's legacy layout: int32 bucket count,
	// then per bucket (key = index) an int32 length and a 32-bit Roaring
	// bitmap. Readable, never written.
	BitmapMagicNative = 1681511376
)

// ErrCorruptBitmap is wrapped by every DecodeBitmap error.
var ErrCorruptBitmap = failure.New(failure.Quarantine, "corrupt deletion vector bitmap")

// emptyRoaring32 is the standard serialization of an empty 32-bit Roaring
// bitmap (cookie 12346, zero containers), which Spark writes for the empty
// buckets below the highest one.
var emptyRoaring32 = []byte{0x3a, 0x30, 0, 0, 0, 0, 0, 0}

// maxBucketKey bounds the high 32 bits of a row index. Spark's
// RoaringBitmapArray cannot hold keys >= Int.MaxValue, and because the
// portable layout spells out every bucket below the highest one, a huge key
// would make an encoding of millions of empty buckets. No parquet file has
// 2^48 rows, so keys above 2^16 are refused as corrupt.
const maxBucketKey = 1 << 16

// EncodeBitmap serializes row indexes as a portable RoaringBitmapArray,
// byte-identical to what Spark/Databricks write: containers are
// run-optimized (a run container where it is strictly smaller, as
// RoaringBitmap.runOptimize decides) and every bucket from 0 to the highest
// key is present (empty buckets for gaps). bm is not modified.
func EncodeBitmap(bm *roaring64.Bitmap) ([]byte, error) {
	head := make([]byte, 12)
	binary.LittleEndian.PutUint32(head, BitmapMagicPortable)
	if bm == nil || bm.IsEmpty() {
		return head, nil
	}
	if hi := bm.Maximum() >> 32; hi > maxBucketKey {
		return nil, fmt.Errorf("encode deletion vector: row index %d is beyond any data file (limit 2^48)", bm.Maximum())
	}
	c := bm.Clone()
	c.RunOptimize()
	raw, err := c.ToBytes()
	if err != nil {
		return nil, fmt.Errorf("encode deletion vector: %w", err)
	}
	// raw is Go's 64-bit layout: uint64 count, then key + bitmap for each
	// non-empty bucket only. Re-emit it with the gaps filled.
	n := binary.LittleEndian.Uint64(raw)
	pos := 8
	out := bytes.NewBuffer(make([]byte, 0, len(raw)+16))
	out.Write(head)
	next := uint32(0)
	var keyBuf [4]byte
	for i := uint64(0); i < n; i++ {
		key := binary.LittleEndian.Uint32(raw[pos:])
		pos += 4
		var rb roaring.Bitmap
		size, err := rb.FromBuffer(raw[pos:])
		if err != nil {
			return nil, fmt.Errorf("encode deletion vector: re-read bucket %d: %w", key, err)
		}
		for ; next < key; next++ {
			binary.LittleEndian.PutUint32(keyBuf[:], next)
			out.Write(keyBuf[:])
			out.Write(emptyRoaring32)
		}
		binary.LittleEndian.PutUint32(keyBuf[:], key)
		out.Write(keyBuf[:])
		out.Write(raw[pos : pos+int(size)])
		pos += int(size)
		next = key + 1
	}
	b := out.Bytes()
	binary.LittleEndian.PutUint64(b[4:], uint64(next))
	return b, nil
}

// DecodeBitmap parses a serialized RoaringBitmapArray (portable layout, or
// the legacy native one) into a 64-bit bitmap. Malformed input yields an
// error wrapping ErrCorruptBitmap, never a panic. The errors say which part
// of the serialization is wrong (by its position: the i-th bucket), never a
// value read from it, nor the Roaring decoder's own message (which prints
// the counts it read): the bytes may be any file's (see readDVFromFile).
func DecodeBitmap(data []byte) (bm *roaring64.Bitmap, err error) {
	defer func() {
		// The Roaring decoder is fuzzed upstream, but a malformed container
		// must never take the daemon down.
		if r := recover(); r != nil {
			pq.CheckLibraryPanic(r)
			bm, err = nil, fmt.Errorf("%w: the Roaring decoder failed", ErrCorruptBitmap)
		}
	}()
	if len(data) < 4 {
		return nil, fmt.Errorf("%w: too short for the magic number", ErrCorruptBitmap)
	}
	switch binary.LittleEndian.Uint32(data) {
	case BitmapMagicPortable:
		return decodePortable(data[4:])
	case BitmapMagicNative:
		return decodeNative(data[4:])
	default:
		return nil, fmt.Errorf("%w: bad magic number (neither the portable nor the native RoaringBitmapArray layout)", ErrCorruptBitmap)
	}
}

// roaringBucket is one 32-bit bitmap of a RoaringBitmapArray, as raw bytes.
type roaringBucket struct {
	key   uint32
	data  []byte
	empty bool
}

func decodePortable(b []byte) (*roaring64.Bitmap, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%w: truncated bucket count", ErrCorruptBitmap)
	}
	n := binary.LittleEndian.Uint64(b)
	b = b[8:]
	// Each bucket takes at least a key and an empty bitmap (12 bytes).
	if n > uint64(len(b)/12) {
		return nil, fmt.Errorf("%w: the bucket count is more than the bytes can hold", ErrCorruptBitmap)
	}
	buckets := make([]roaringBucket, 0, n)
	var prev int64 = -1
	for i := uint64(0); i < n; i++ {
		if len(b) < 4 {
			return nil, fmt.Errorf("%w: truncated key of bucket %d", ErrCorruptBitmap, i)
		}
		key := binary.LittleEndian.Uint32(b)
		if key > maxBucketKey {
			return nil, fmt.Errorf("%w: key of bucket %d out of range (row indexes beyond 2^48)", ErrCorruptBitmap, i)
		}
		if int64(key) <= prev {
			return nil, fmt.Errorf("%w: key of bucket %d not above the previous one", ErrCorruptBitmap, i)
		}
		prev = int64(key)
		size, empty, ok := Roaring32Size(b[4:])
		if !ok {
			return nil, fmt.Errorf("%w: bucket %d is not a valid 32-bit Roaring bitmap", ErrCorruptBitmap, i)
		}
		buckets = append(buckets, roaringBucket{key: key, data: b[4 : 4+size], empty: empty})
		b = b[4+size:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: trailing bytes after the last bucket", ErrCorruptBitmap)
	}
	return assembleBitmap(buckets)
}

func decodeNative(b []byte) (*roaring64.Bitmap, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("%w: truncated bitmap count", ErrCorruptBitmap)
	}
	n := int32(binary.LittleEndian.Uint32(b))
	b = b[4:]
	if n < 0 || int(n) > len(b)/12 {
		return nil, fmt.Errorf("%w: the bitmap count is negative or more than the bytes can hold", ErrCorruptBitmap)
	}
	buckets := make([]roaringBucket, 0, n)
	for i := int32(0); i < n; i++ {
		if len(b) < 4 {
			return nil, fmt.Errorf("%w: truncated length of bitmap %d", ErrCorruptBitmap, i)
		}
		length := int32(binary.LittleEndian.Uint32(b))
		if length < 0 || int(length) > len(b)-4 {
			return nil, fmt.Errorf("%w: length of bitmap %d out of range", ErrCorruptBitmap, i)
		}
		size, empty, ok := Roaring32Size(b[4 : 4+length])
		if !ok {
			return nil, fmt.Errorf("%w: bitmap %d is not a valid 32-bit Roaring bitmap", ErrCorruptBitmap, i)
		}
		if size != int(length) {
			return nil, fmt.Errorf("%w: length of bitmap %d does not match the bitmap it holds", ErrCorruptBitmap, i)
		}
		buckets = append(buckets, roaringBucket{key: uint32(i), data: b[4 : 4+length], empty: empty})
		b = b[4+length:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: trailing bytes after the last bitmap", ErrCorruptBitmap)
	}
	return assembleBitmap(buckets)
}

// Roaring32Size validates the standard 32-bit Roaring bitmap at the start
// of b and returns its serialized length, whether it is empty, and false
// when it is not valid (the decoder's reason is dropped: DecodeBitmap).
func Roaring32Size(b []byte) (int, bool, bool) {
	var rb roaring.Bitmap
	size, err := rb.FromBuffer(b)
	if err != nil || size <= 0 || int(size) > len(b) || rb.Validate() != nil {
		return 0, false, false
	}
	return int(size), rb.IsEmpty(), true
}

// assembleBitmap builds the 64-bit bitmap from validated buckets, keeping their
// container layout.
func assembleBitmap(buckets []roaringBucket) (*roaring64.Bitmap, error) {
	var buf bytes.Buffer
	var count uint64
	for _, bk := range buckets {
		if !bk.empty {
			count++
		}
	}
	var scratch [8]byte
	binary.LittleEndian.PutUint64(scratch[:], count)
	buf.Write(scratch[:])
	for _, bk := range buckets {
		if bk.empty {
			continue
		}
		binary.LittleEndian.PutUint32(scratch[:4], bk.key)
		buf.Write(scratch[:4])
		buf.Write(bk.data)
	}
	bm := roaring64.New()
	if _, err := bm.ReadFrom(&buf); err != nil {
		return nil, fmt.Errorf("%w: the buckets do not assemble into a 64-bit bitmap", ErrCorruptBitmap)
	}
	return bm, nil
}
