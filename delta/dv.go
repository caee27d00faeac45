package delta

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/delta/actions"
	deltadv "github.com/compactord/compactord/delta/dv"
	"github.com/compactord/compactord/delta/logstore"
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
func ReadDV(ctx context.Context, t *Table, dv *actions.DeletionVector) (*roaring64.Bitmap, error) {
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
		data, err = deltadv.Z85Decode(dv.PathOrInlineDv, int(dv.SizeInBytes))
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrCorruptDV, err)
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
		if errors.Is(err, ErrCorruptDV) || errors.Is(err, ErrDVOutsideRoot) {
			return nil, corruptDV(dvObjectName(dv), "", fmt.Errorf("table %s: %s: %w", tableName(t), where, err))
		}
		if objstore.Code(err) == gcerrors.NotFound {
			return nil, &failure.MissingFileError{Kind: failure.DeletionVector, Path: dvObjectName(dv), Err: fmt.Errorf("table %s: %s: %w", tableName(t), where, err)}
		}
		return nil, fmt.Errorf("table %s: %s: %w", tableName(t), where, err)
	}
	bm, err := deltadv.DecodeBitmap(data)
	if err != nil {
		return nil, corruptDV(dvObjectName(dv), "", fmt.Errorf("table %s: %s: %w", tableName(t), where, err))
	}
	// The bitmap's own cardinality is not printed: errors about a DV's
	// content say which field is wrong, never what was read.
	if card := bm.GetCardinality(); int64(card) != dv.Cardinality {
		return nil, corruptDV(dvObjectName(dv), "", fmt.Errorf("table %s: %s: %w: the bitmap's cardinality does not match the descriptor's cardinality (%d)",
			tableName(t), where, ErrCorruptDV, dv.Cardinality))
	}
	return bm, nil
}

func tableName(t *Table) string { return t.Name() }

// readDVFromFile returns the framed bitmap bytes of an on-disk descriptor
// and a description of where they came from. Its errors name the file,
// the descriptor's fields and the field of the file that is wrong, never a
// value read from the file: a `p` descriptor names a file and an offset of
// the writer's choosing, and an error echoing its bytes would let a writer
// of the table read them.
func readDVFromFile(ctx context.Context, t *Table, dv *actions.DeletionVector) ([]byte, string, error) {
	where := fmt.Sprintf("deletion vector %q", dvObjectName(dv))
	bucket, key, closeFn, err := dvLocation(ctx, t, dv)
	if err != nil {
		return nil, where, err
	}
	defer closeFn()
	if dv.StorageType == "u" {
		where = "deletion vector file " + key
	} else {
		// Absolute paths may point outside the table: name the descriptor.
		where = fmt.Sprintf("deletion vector file %q", dvObjectName(dv))
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
	// The file's size is not printed either: it is a fact about a file
	// the descriptor may name only to learn it.
	truncated := fmt.Errorf("%w: truncated: the file ends before the %d bytes the descriptor's offset and sizeInBytes name", ErrCorruptDV, start+length)
	if size := r.Size(); size >= 0 && start+length > size {
		// Checked before allocating: a corrupt sizeInBytes must not make
		// us allocate gigabytes.
		_ = r.Close()
		return nil, where, truncated
	}
	buf := make([]byte, length)
	_, err = io.ReadFull(r, buf)
	closeErr := r.Close()
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, where, truncated
		}
		return nil, where, fmt.Errorf("read: %w", err)
	}
	if closeErr != nil {
		return nil, where, fmt.Errorf("read: %w", closeErr)
	}
	if start == 0 && buf[0] != dvFormatVersion {
		return nil, where, fmt.Errorf("%w: bad format version byte (this build reads version %d)", ErrCorruptDV, dvFormatVersion)
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
// frame's total length. Its errors name the field at fault, never its
// value (readDVFromFile).
func parseDVFrame(b []byte, want int) ([]byte, int, error) {
	if len(b) < 4 {
		return nil, 0, fmt.Errorf("%w: truncated size field", ErrCorruptDV)
	}
	size := int32(binary.BigEndian.Uint32(b))
	if want >= 0 && int(size) != want {
		// A negative size is reported the same way: which of the two
		// it was would tell a bit of the file.
		return nil, 0, fmt.Errorf("%w: size field does not match the descriptor's sizeInBytes (%d)", ErrCorruptDV, want)
	}
	if size < 0 {
		return nil, 0, fmt.Errorf("%w: size field is out of range", ErrCorruptDV)
	}
	if len(b)-8 < int(size) {
		return nil, 0, fmt.Errorf("%w: truncated: the size field runs past the end of the file", ErrCorruptDV)
	}
	bitmap := b[4 : 4+size]
	stored := binary.BigEndian.Uint32(b[4+size:])
	if got := crc32.ChecksumIEEE(bitmap); got != stored {
		return nil, 0, fmt.Errorf("%w: checksum mismatch", ErrCorruptDV)
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
		return nil, fmt.Errorf("%w: bad format version byte (this build reads version %d)", ErrCorruptDV, dvFormatVersion)
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

// WriteDV writes the bitmaps into one new DV file,
// <prefix>/deletion_vector_<uuid>.bin under the table root (no prefix: the
// root itself), and returns one `u` descriptor per bitmap, in order. The
// file name is a fresh random UUID and is created only if absent, so a
// concurrent writer can never be overwritten. prefix may contain letters,
// digits, '-' and '_' only. Empty bitmaps are rejected: a file without
// deleted rows carries no DV.
func WriteDV(ctx context.Context, t *Table, prefix string, bitmaps []*roaring64.Bitmap) ([]*actions.DeletionVector, error) {
	return WriteTrackedDV(ctx, t, prefix, bitmaps, nil)
}

// WriteTrackedDV is WriteDV calling track (when not nil) with the file's
// object key before the file is created, so that an intent record can name
// it before it exists: a writer killed during the put leaves nothing its
// record does not name.
func WriteTrackedDV(ctx context.Context, t *Table, prefix string, bitmaps []*roaring64.Bitmap, track func(key string)) ([]*actions.DeletionVector, error) {
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
	pathOrInline := prefix + deltadv.Z85UUID(id)
	key, err := deltadv.DVFileKey(pathOrInline)
	if err != nil {
		return nil, err
	}

	body := []byte{dvFormatVersion}
	dvs := make([]*actions.DeletionVector, 0, len(bitmaps))
	var word [4]byte
	for i, bm := range bitmaps {
		if bm == nil || bm.IsEmpty() {
			return nil, fmt.Errorf("table %s: write deletion vectors: bitmap %d is empty", tableName(t), i)
		}
		data, err := deltadv.EncodeBitmap(bm)
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
		dvs = append(dvs, &actions.DeletionVector{
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
	if err := logstore.PutIfAbsentBlob(ctx, t.Bucket, tableName(t), key, body, "application/octet-stream"); err != nil {
		if track == nil && errors.Is(err, objstore.ErrAmbiguous) {
			// It may have landed and nothing will reference it. A tracked
			// key is the attempt's: its Clean deletes it through the
			// deletion gate.
			_ = t.Bucket.Delete(context.WithoutCancel(ctx), key)
		}
		return nil, fmt.Errorf("table %s: write deletion vector file %s: %w", tableName(t), key, err)
	}
	return dvs, nil
}

// InlineDV returns an inline (`i`) descriptor holding bm: the Z85 text of
// the serialized bitmap (Spark's zero-padded tail), its unpadded size and
// cardinality. Inline DVs live in the log, so use them for tiny bitmaps only.
func InlineDV(bm *roaring64.Bitmap) (*actions.DeletionVector, error) {
	if bm == nil || bm.IsEmpty() {
		return nil, errors.New("inline deletion vector: empty bitmap")
	}
	data, err := deltadv.EncodeBitmap(bm)
	if err != nil {
		return nil, fmt.Errorf("inline deletion vector: %w", err)
	}
	return &actions.DeletionVector{
		StorageType:    "i",
		PathOrInlineDv: deltadv.Z85Encode(data),
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
		return fmt.Errorf("%w: deletion vector deletes a row past the end of the file (%d rows)", ErrCorruptDV, numPhysicalRows)
	}
	return nil
}
