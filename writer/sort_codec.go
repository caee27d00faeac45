package writer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
)

// The external sort keeps rows as bytes: a row is its value count, then per
// value a tag (0 null, 1+Kind otherwise), repetition and definition levels,
// the column index and the payload (fixed width for numbers, length-prefixed
// for byte arrays). The format lives only in memory and in unlinked spill
// files of one job, so it needs no versioning.

var errBadRowEncoding = errors.New("sort spill: corrupt row encoding")

// appendRow appends the encoding of row to dst.
func appendRow(dst []byte, row parquet.Row) ([]byte, error) {
	dst = binary.AppendUvarint(dst, uint64(len(row)))
	for _, v := range row {
		rep, def := v.RepetitionLevel(), v.DefinitionLevel()
		if rep < 0 || rep > 255 || def < 0 || def > 255 {
			return dst, fmt.Errorf("sort spill: levels %d/%d out of range", rep, def)
		}
		tag := byte(0)
		if !v.IsNull() {
			tag = 1 + byte(v.Kind())
		}
		dst = append(dst, tag, byte(rep), byte(def))
		dst = binary.AppendUvarint(dst, uint64(v.Column()))
		if tag == 0 {
			continue
		}
		switch v.Kind() {
		case parquet.Boolean:
			b := byte(0)
			if v.Boolean() {
				b = 1
			}
			dst = append(dst, b)
		case parquet.Int32:
			dst = binary.BigEndian.AppendUint32(dst, uint32(v.Int32()))
		case parquet.Int64:
			dst = binary.BigEndian.AppendUint64(dst, uint64(v.Int64()))
		case parquet.Int96:
			i := v.Int96()
			dst = binary.BigEndian.AppendUint32(dst, i[0])
			dst = binary.BigEndian.AppendUint32(dst, i[1])
			dst = binary.BigEndian.AppendUint32(dst, i[2])
		case parquet.Float:
			dst = binary.BigEndian.AppendUint32(dst, math.Float32bits(v.Float()))
		case parquet.Double:
			dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(v.Double()))
		case parquet.ByteArray, parquet.FixedLenByteArray:
			b := v.ByteArray()
			dst = binary.AppendUvarint(dst, uint64(len(b)))
			dst = append(dst, b...)
		default:
			return dst, fmt.Errorf("sort spill: value of unknown kind %v", v.Kind())
		}
	}
	return dst, nil
}

// decodeRow decodes one row from b into dst[:0] (grown as needed). Byte
// array values reference b, which must outlive the row.
func decodeRow(dst parquet.Row, b []byte) (parquet.Row, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return dst, errBadRowEncoding
	}
	b = b[k:]
	dst = dst[:0]
	for i := uint64(0); i < n; i++ {
		if len(b) < 4 {
			return dst, errBadRowEncoding
		}
		tag, rep, def := b[0], int(b[1]), int(b[2])
		col, k := binary.Uvarint(b[3:])
		if k <= 0 {
			return dst, errBadRowEncoding
		}
		b = b[3+k:]
		var v parquet.Value
		if tag != 0 {
			kind := parquet.Kind(tag - 1)
			need := 0
			switch kind {
			case parquet.Boolean:
				need = 1
			case parquet.Int32, parquet.Float:
				need = 4
			case parquet.Int64, parquet.Double:
				need = 8
			case parquet.Int96:
				need = 12
			case parquet.ByteArray, parquet.FixedLenByteArray:
			default:
				return dst, errBadRowEncoding
			}
			if len(b) < need {
				return dst, errBadRowEncoding
			}
			switch kind {
			case parquet.Boolean:
				v = parquet.BooleanValue(b[0] != 0)
			case parquet.Int32:
				v = parquet.Int32Value(int32(binary.BigEndian.Uint32(b)))
			case parquet.Int64:
				v = parquet.Int64Value(int64(binary.BigEndian.Uint64(b)))
			case parquet.Int96:
				v = parquet.Int96Value(deprecated.Int96{binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:]), binary.BigEndian.Uint32(b[8:])})
			case parquet.Float:
				v = parquet.FloatValue(math.Float32frombits(binary.BigEndian.Uint32(b)))
			case parquet.Double:
				v = parquet.DoubleValue(math.Float64frombits(binary.BigEndian.Uint64(b)))
			case parquet.ByteArray, parquet.FixedLenByteArray:
				l, k := binary.Uvarint(b)
				if k <= 0 || l > uint64(len(b)-k) {
					return dst, errBadRowEncoding
				}
				data := b[k : k+int(l) : k+int(l)]
				if kind == parquet.ByteArray {
					v = parquet.ByteArrayValue(data)
				} else {
					v = parquet.FixedLenByteArrayValue(data)
				}
				need = k + int(l)
			}
			b = b[need:]
		}
		dst = append(dst, v.Level(rep, def, int(col)))
	}
	return dst, nil
}
