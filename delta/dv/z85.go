package dv

import (
	"github.com/compactord/compactord/internal/tablepath"

	"encoding/hex"
	"fmt"
	"strings"
)

// z85Alphabet is the ZeroMQ Z85 alphabet (RFC 32/Z85) used by Delta for
// inline deletion vectors and the UUID part of `u` descriptors.
const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

// z85Decoding maps a byte to its Z85 digit value plus one (0 = not a digit).
var z85Decoding = func() [256]byte {
	var t [256]byte
	for i := 0; i < len(z85Alphabet); i++ {
		t[z85Alphabet[i]] = byte(i + 1)
	}
	return t
}()

// Z85Encode encodes data the way Spark does: an unaligned tail is padded
// with zero bytes to a multiple of four, so the result always has
// ceil(len/4)*5 characters and the reader truncates to the real size
// (sizeInBytes).
func Z85Encode(data []byte) string {
	n := (len(data) + 3) / 4
	var sb strings.Builder
	sb.Grow(n * 5)
	var chunk [5]byte
	for i := 0; i < n; i++ {
		var v uint32
		for j := 0; j < 4; j++ {
			v <<= 8
			if k := i*4 + j; k < len(data) {
				v |= uint32(data[k])
			}
		}
		for j := 4; j >= 0; j-- {
			chunk[j] = z85Alphabet[v%85]
			v /= 85
		}
		sb.Write(chunk[:])
	}
	return sb.String()
}

// Z85Decode decodes s and returns exactly size bytes. Two tail conventions
// are accepted: Spark's (the last chunk encodes zero padding, which is
// truncated to size) and the one of the Rust z85 crate (>= 3), where a final
// chunk starting with k '#' characters encodes only 4-k bytes,
// right-aligned. A '#' can never start a regular chunk (its value would
// exceed 32 bits), so the two cannot be confused.
func Z85Decode(s string, size int) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("z85: length %d is not a multiple of 5", len(s))
	}
	if size < 0 {
		return nil, fmt.Errorf("z85: negative size %d", size)
	}
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		chunk := s[i : i+5]
		missing := 0
		for missing < 5 && chunk[missing] == '#' {
			missing++
		}
		if missing > 0 {
			if i+5 != len(s) {
				return nil, fmt.Errorf("z85: padding marker '#' in chunk at %d, which is not the last", i)
			}
			if missing > 3 {
				return nil, fmt.Errorf("z85: invalid padded tail at %d", i)
			}
		}
		var v uint64
		for j := 0; j < 5; j++ {
			var d byte
			if j < missing {
				d = 0
			} else {
				d = z85Decoding[chunk[j]]
				if d == 0 {
					return nil, fmt.Errorf("z85: invalid character at %d", i+j)
				}
				d--
			}
			v = v*85 + uint64(d)
		}
		if v > 0xFFFFFFFF {
			return nil, fmt.Errorf("z85: chunk at %d overflows 32 bits", i)
		}
		b := [4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
		out = append(out, b[missing:]...)
	}
	if size > len(out) || len(out)-size > 3 {
		return nil, fmt.Errorf("z85: %d characters decode to %d bytes, which does not fit size %d", len(s), len(out), size)
	}
	return out[:size], nil
}

// Z85UUID encodes the 16 bytes of a UUID (big-endian most then least
// significant half, as Spark does) into its 20-character Z85 form.
func Z85UUID(u [16]byte) string { return Z85Encode(u[:]) }

// parseZ85UUID decodes the 20-character Z85 form of a UUID.
func parseZ85UUID(s string) ([16]byte, error) {
	var u [16]byte
	if len(s) != 20 {
		return u, fmt.Errorf("z85 uuid %q: want 20 characters, have %d", s, len(s))
	}
	b, err := Z85Decode(s, 16)
	if err != nil {
		return u, fmt.Errorf("z85 uuid %q: %w", s, err)
	}
	copy(u[:], b)
	return u, nil
}

// formatUUID renders a UUID in the canonical lower-case 8-4-4-4-12 form.
func formatUUID(u [16]byte) string {
	var buf [36]byte
	hex.Encode(buf[0:8], u[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], u[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], u[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], u[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:36], u[10:16])
	return string(buf[:])
}

// DVFileKey returns the object key, relative to the table root, of the DV
// file named by a `u` descriptor's pathOrInlineDv: everything before the
// last 20 characters is a directory prefix, the last 20 are the Z85 UUID.
// The file is <prefix>/deletion_vector_<uuid>.bin (no prefix: table root).
func DVFileKey(pathOrInlineDv string) (string, error) {
	if len(pathOrInlineDv) < 20 {
		return "", fmt.Errorf("deletion vector path %q: shorter than the 20-character z85 uuid", pathOrInlineDv)
	}
	cut := len(pathOrInlineDv) - 20
	prefix, enc := pathOrInlineDv[:cut], pathOrInlineDv[cut:]
	u, err := parseZ85UUID(enc)
	if err != nil {
		return "", fmt.Errorf("deletion vector path %q: %w", pathOrInlineDv, err)
	}
	name := "deletion_vector_" + formatUUID(u) + ".bin"
	if prefix == "" {
		return name, nil
	}
	// The prefix is a directory relative to the table root, resolved as a
	// path is (tablepath.Clean): it must stay inside the root.
	key, ok := tablepath.Clean(prefix + "/" + name)
	if !ok {
		return "", fmt.Errorf("deletion vector path %q: its directory prefix %w", pathOrInlineDv, tablepath.ErrOutside)
	}
	return key, nil
}
