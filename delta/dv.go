package delta

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/url"
	"strings"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"gocloud.dev/blob"

	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/objstore"
)

// dvFormatVersion is the first byte of every deletion-vector file.
const dvFormatVersion = 1

// ErrCorruptDV is wrapped by errors about deletion-vector files and
// descriptors whose content is inconsistent (bad framing, checksum, size
// or cardinality).
var ErrCorruptDV = failure.New(failure.Quarantine, "corrupt deletion vector")

// ReadDV loads the deleted row indexes of a descriptor (u, i or p). It
// checks the file's framing (version byte when the DV is the file's first),
// the size field against sizeInBytes, the CRC32 of the bitmap and the
// bitmap's cardinality against the descriptor. A nil descriptor yields an
// empty bitmap. Errors name the table and the DV file.
func ReadDV(ctx context.Context, t *Table, dv *DeletionVector) (*roaring64.Bitmap, error) {
	if dv == nil {
		return roaring64.New(), nil
	}
	var (
		data  []byte
		where string
		err   error
	)
	switch dv.StorageType {
	case "i":
		where = "inline deletion vector"
		data, err = Z85Decode(dv.PathOrInlineDv, int(dv.SizeInBytes))
		if err != nil {
			err = fmt.Errorf("%w: %v", ErrCorruptDV, err)
		}
	case "u", "p":
		if t == nil || t.Bucket == nil {
			return nil, fmt.Errorf("read deletion vector %q: no table bucket", dv.PathOrInlineDv)
		}
		data, where, err = readDVFromFile(ctx, t, dv)
	default:
		return nil, fmt.Errorf("table %s: deletion vector storage type %q is not supported", tableName(t), dv.StorageType)
	}
	if err != nil {
		if errors.Is(err, ErrCorruptDV) {
			return nil, corruptDV(dvObjectName(dv), "", fmt.Errorf("table %s: %s: %w", tableName(t), where, err))
		}
		return nil, fmt.Errorf("table %s: %s: %w", tableName(t), where, err)
	}
	bm, err := DecodeBitmap(data)
	if err != nil {
		return nil, corruptDV(dvObjectName(dv), "", fmt.Errorf("table %s: %s: %w", tableName(t), where, err))
	}
	if card := bm.GetCardinality(); int64(card) != dv.Cardinality {
		return nil, corruptDV(dvObjectName(dv), "", fmt.Errorf("table %s: %s: %w: bitmap holds %d rows, descriptor says %d",
			tableName(t), where, ErrCorruptDV, card, dv.Cardinality))
	}
	return bm, nil
}

func tableName(t *Table) string { return t.Name() }

// readDVFromFile returns the framed bitmap bytes of an on-disk descriptor
// and a description of where they came from.
func readDVFromFile(ctx context.Context, t *Table, dv *DeletionVector) ([]byte, string, error) {
	bucket, key, closeFn, err := dvLocation(ctx, t, dv)
	if err != nil {
		return nil, fmt.Sprintf("deletion vector %q", dv.PathOrInlineDv), err
	}
	defer closeFn()
	where := "deletion vector file " + key
	if dv.StorageType == "p" {
		// Absolute paths may point outside the table: name the descriptor.
		where = fmt.Sprintf("deletion vector file %q", dv.PathOrInlineDv)
	}
	offset := int64(1)
	if dv.Offset != nil {
		offset = int64(*dv.Offset)
	}
	if offset < 1 {
		return nil, where, fmt.Errorf("%w: offset %d points before the first deletion vector", ErrCorruptDV, offset)
	}
	if dv.SizeInBytes <= 0 {
		return nil, where, fmt.Errorf("%w: sizeInBytes %d", ErrCorruptDV, dv.SizeInBytes)
	}
	where = fmt.Sprintf("%s (offset %d)", where, offset)
	// The first DV of a file is read together with the version byte.
	start := offset
	if offset == 1 {
		start = 0
	}
	length := offset - start + 4 + int64(dv.SizeInBytes) + 4
	r, err := bucket.NewRangeReader(ctx, key, start, length, nil)
	if err != nil {
		return nil, where, fmt.Errorf("open: %w", err)
	}
	if size := r.Size(); size >= 0 && start+length > size {
		// Checked before allocating: a corrupt sizeInBytes must not make
		// us allocate gigabytes.
		_ = r.Close()
		return nil, where, fmt.Errorf("%w: truncated: need bytes %d..%d, file has %d", ErrCorruptDV, start, start+length, size)
	}
	buf := make([]byte, length)
	n, err := io.ReadFull(r, buf)
	closeErr := r.Close()
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, where, fmt.Errorf("%w: truncated: need %d bytes from %d, file has %d", ErrCorruptDV, length, start, n)
		}
		return nil, where, fmt.Errorf("read: %w", err)
	}
	if closeErr != nil {
		return nil, where, fmt.Errorf("read: %w", closeErr)
	}
	if start == 0 && buf[0] != dvFormatVersion {
		return nil, where, fmt.Errorf("%w: unsupported file format version %d", ErrCorruptDV, buf[0])
	}
	bitmap, _, err := parseDVFrame(buf[offset-start:], int(dv.SizeInBytes))
	if err != nil {
		return nil, where, err
	}
	return bitmap, where, nil
}

// parseDVFrame parses one framed DV (big-endian int32 size | bitmap |
// big-endian int32 CRC32 of the bitmap) at the start of b. want >= 0
// requires the size field to equal it. It returns the bitmap bytes and the
// frame's total length.
func parseDVFrame(b []byte, want int) ([]byte, int, error) {
	if len(b) < 4 {
		return nil, 0, fmt.Errorf("%w: truncated size field", ErrCorruptDV)
	}
	size := int32(binary.BigEndian.Uint32(b))
	if size < 0 {
		return nil, 0, fmt.Errorf("%w: negative size %d", ErrCorruptDV, size)
	}
	if want >= 0 && int(size) != want {
		return nil, 0, fmt.Errorf("%w: size field %d does not match sizeInBytes %d", ErrCorruptDV, size, want)
	}
	if len(b)-8 < int(size) {
		return nil, 0, fmt.Errorf("%w: truncated: %d-byte bitmap and checksum, %d bytes left", ErrCorruptDV, size, len(b)-4)
	}
	bitmap := b[4 : 4+size]
	stored := binary.BigEndian.Uint32(b[4+size:])
	if got := crc32.ChecksumIEEE(bitmap); got != stored {
		return nil, 0, fmt.Errorf("%w: checksum mismatch: stored %08x, computed %08x", ErrCorruptDV, stored, got)
	}
	return bitmap, int(size) + 8, nil
}

// parseDVFile splits a whole DV file into its bitmaps (each checked for
// size and CRC, not decoded).
func parseDVFile(b []byte) ([][]byte, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty file", ErrCorruptDV)
	}
	if b[0] != dvFormatVersion {
		return nil, fmt.Errorf("%w: unsupported file format version %d", ErrCorruptDV, b[0])
	}
	var out [][]byte
	for pos := 1; pos < len(b); {
		bm, n, err := parseDVFrame(b[pos:], -1)
		if err != nil {
			return nil, fmt.Errorf("at offset %d: %w", pos, err)
		}
		out = append(out, bm)
		pos += n
	}
	return out, nil
}

// dvLocation resolves an on-disk descriptor to a bucket and key. For `p`
// descriptors outside the table a bucket is opened; closeFn releases it.
func dvLocation(ctx context.Context, t *Table, dv *DeletionVector) (*blob.Bucket, string, func(), error) {
	noop := func() {}
	if dv.StorageType == "u" {
		key, err := DVFileKey(dv.PathOrInlineDv)
		if err != nil {
			return nil, "", noop, fmt.Errorf("%w: %v", ErrCorruptDV, err)
		}
		return t.Bucket, key, noop, nil
	}
	// "p": an absolute, URL-encoded URI.
	u, err := url.Parse(dv.PathOrInlineDv)
	if err != nil || u.Scheme == "" {
		return nil, "", noop, fmt.Errorf("%w: deletion vector path %q is not an absolute URI", ErrCorruptDV, dv.PathOrInlineDv)
	}
	if tu, err := url.Parse(t.URL); err == nil && tu.Scheme == u.Scheme && tu.Host == u.Host {
		root := strings.TrimSuffix(tu.Path, "/") + "/"
		if strings.HasPrefix(u.Path, root) {
			return t.Bucket, strings.TrimPrefix(u.Path, root), noop, nil
		}
	}
	b, err := blob.OpenBucket(ctx, u.Scheme+"://"+u.Host+"/")
	if err != nil {
		return nil, "", noop, fmt.Errorf("open bucket of deletion vector %q: %w", dv.PathOrInlineDv, err)
	}
	return b, strings.TrimPrefix(u.Path, "/"), func() { _ = b.Close() }, nil
}

// WriteDV writes the bitmaps into one new DV file,
// <prefix>/deletion_vector_<uuid>.bin under the table root (no prefix: the
// root itself), and returns one `u` descriptor per bitmap, in order. The
// file name is a fresh random UUID and is created only if absent, so a
// concurrent writer can never be overwritten. prefix may contain letters,
// digits, '-' and '_' only. Empty bitmaps are rejected: a file without
// deleted rows carries no DV.
func WriteDV(ctx context.Context, t *Table, prefix string, bitmaps []*roaring64.Bitmap) ([]*DeletionVector, error) {
	return WriteTrackedDV(ctx, t, prefix, bitmaps, nil)
}

// WriteTrackedDV is WriteDV calling track (when not nil) with the file's
// object key before the file is created, so that an intent record can name
// it before it exists: a writer killed during the put leaves nothing its
// record does not name.
func WriteTrackedDV(ctx context.Context, t *Table, prefix string, bitmaps []*roaring64.Bitmap, track func(key string)) ([]*DeletionVector, error) {
	prefix = strings.TrimSuffix(prefix, "/")
	for _, r := range prefix {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return nil, fmt.Errorf("table %s: write deletion vectors: invalid prefix %q", tableName(t), prefix)
		}
	}
	if len(bitmaps) == 0 {
		return nil, fmt.Errorf("table %s: write deletion vectors: no bitmaps", tableName(t))
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("table %s: write deletion vectors: random uuid: %w", tableName(t), err)
	}
	id[6] = id[6]&0x0f | 0x40 // version 4
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	pathOrInline := prefix + z85UUID(id)
	key, err := DVFileKey(pathOrInline)
	if err != nil {
		return nil, err
	}

	body := []byte{dvFormatVersion}
	dvs := make([]*DeletionVector, 0, len(bitmaps))
	var word [4]byte
	for i, bm := range bitmaps {
		if bm == nil || bm.IsEmpty() {
			return nil, fmt.Errorf("table %s: write deletion vectors: bitmap %d is empty", tableName(t), i)
		}
		data, err := EncodeBitmap(bm)
		if err != nil {
			return nil, fmt.Errorf("table %s: write deletion vectors: bitmap %d: %w", tableName(t), i, err)
		}
		offset := len(body)
		if offset+len(data)+8 > 1<<31-1 {
			return nil, fmt.Errorf("table %s: write deletion vectors: file would exceed 2 GiB", tableName(t))
		}
		binary.BigEndian.PutUint32(word[:], uint32(len(data)))
		body = append(body, word[:]...)
		body = append(body, data...)
		binary.BigEndian.PutUint32(word[:], crc32.ChecksumIEEE(data))
		body = append(body, word[:]...)
		off := int32(offset)
		dvs = append(dvs, &DeletionVector{
			StorageType:    "u",
			PathOrInlineDv: pathOrInline,
			Offset:         &off,
			SizeInBytes:    int32(len(data)),
			Cardinality:    int64(bm.GetCardinality()),
		})
	}

	if track != nil {
		track(key)
	}
	// The name is fresh and ours: an unknown outcome (a lost response, a
	// 412 answering the SDK's retry of our own write) is settled by reading
	// the object back, as commits are.
	if err := putIfAbsentBlob(ctx, t.Bucket, tableName(t), key, body, "application/octet-stream"); err != nil {
		if errors.Is(err, objstore.ErrAmbiguous) {
			// It may have landed; nothing will reference it.
			_ = t.Bucket.Delete(context.WithoutCancel(ctx), key)
		}
		return nil, fmt.Errorf("table %s: write deletion vector file %s: %w", tableName(t), key, err)
	}
	return dvs, nil
}

// InlineDV returns an inline (`i`) descriptor holding bm: the Z85 text of
// the serialized bitmap (Spark's zero-padded tail), its unpadded size and
// cardinality. Inline DVs live in the log, so use them for tiny bitmaps only.
func InlineDV(bm *roaring64.Bitmap) (*DeletionVector, error) {
	if bm == nil || bm.IsEmpty() {
		return nil, errors.New("inline deletion vector: empty bitmap")
	}
	data, err := EncodeBitmap(bm)
	if err != nil {
		return nil, fmt.Errorf("inline deletion vector: %w", err)
	}
	return &DeletionVector{
		StorageType:    "i",
		PathOrInlineDv: Z85Encode(data),
		SizeInBytes:    int32(len(data)),
		Cardinality:    int64(bm.GetCardinality()),
	}, nil
}

// DVRowIndexCheck returns an error when a deletion vector names a row at or
// past the data file's physical row count (a DV that does not belong to the
// file, or a corrupt one).
func DVRowIndexCheck(bm *roaring64.Bitmap, numPhysicalRows int64) error {
	if bm == nil || bm.IsEmpty() {
		return nil
	}
	if maxRow := bm.Maximum(); numPhysicalRows < 0 || maxRow >= uint64(numPhysicalRows) {
		return fmt.Errorf("%w: deletion vector deletes row %d but the file has %d rows", ErrCorruptDV, maxRow, numPhysicalRows)
	}
	return nil
}
