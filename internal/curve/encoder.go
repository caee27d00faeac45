package curve

import (
	"errors"
	"fmt"
	"math/bits"
)

// Curve names a space-filling curve.
type Curve string

// Curves an Encoder implements.
const (
	// Hilbert is the N-dimensional Hilbert curve (Skilling's transpose
	// form): consecutive keys are cells adjacent in exactly one dimension.
	Hilbert Curve = "hilbert"
	// ZOrder is the Morton curve: the bits of the coordinates interleaved,
	// most significant first. For one dimension it is the coordinate itself.
	ZOrder Curve = "zorder"
)

// MaxDims is the largest number of dimensions an Encoder accepts.
const MaxDims = 32

// ErrBadEncoder is wrapped by NewEncoder's errors.
var ErrBadEncoder = errors.New("bad curve encoder parameters")

// Encoder turns per-dimension coordinates of Bits bits each into a key.
// It is immutable and safe for concurrent use.
type Encoder struct {
	curve Curve
	dims  int
	bits  int
	// hilbert2 is the two-dimensional Hilbert transposition as a table
	// (hilbert2Table), nil for other encoders.
	hilbert2 []uint32
}

// NewEncoder returns an encoder for dims coordinates of bits bits each
// (1 <= bits <= 32, 1 <= dims <= MaxDims).
func NewEncoder(c Curve, dims, bits int) (*Encoder, error) {
	if c != Hilbert && c != ZOrder {
		return nil, fmt.Errorf("%w: unknown curve %q", ErrBadEncoder, c)
	}
	if dims < 1 || dims > MaxDims {
		return nil, fmt.Errorf("%w: %d dimensions (want 1..%d)", ErrBadEncoder, dims, MaxDims)
	}
	if bits < 1 || bits > 32 {
		return nil, fmt.Errorf("%w: %d bits per dimension (want 1..32)", ErrBadEncoder, bits)
	}
	e := &Encoder{curve: c, dims: dims, bits: bits}
	if c == Hilbert && dims == 2 {
		e.hilbert2 = hilbert2Table()
	}
	return e, nil
}

// BitsFor returns the bits per dimension needed for bucket ids in
// [0, numBuckets): floor(log2(numBuckets))+1, as Delta sizes its Hilbert
// index for range ids (10 bits for 1000 range ids).
func BitsFor(numBuckets int) int {
	if numBuckets <= 1 {
		return 1
	}
	return bits.Len(uint(numBuckets))
}

// Curve returns the encoder's curve.
func (e *Encoder) Curve() Curve { return e.curve }

// Dims returns the number of coordinates per key.
func (e *Encoder) Dims() int { return e.dims }

// Bits returns the bits per coordinate.
func (e *Encoder) Bits() int { return e.bits }

// KeyLen returns the length in bytes of every key.
func (e *Encoder) KeyLen() int { return (e.dims*e.bits + 7) / 8 }

// AppendKey appends the key of coords to dst. Each coordinate must be below
// 1<<Bits; len(coords) must be Dims.
func (e *Encoder) AppendKey(dst []byte, coords []uint32) ([]byte, error) {
	if len(coords) != e.dims {
		return dst, fmt.Errorf("curve key: %d coordinates for a %d-dimensional encoder", len(coords), e.dims)
	}
	var buf [MaxDims]uint32
	x := buf[:e.dims]
	for i, c := range coords {
		if e.bits < 32 && c>>e.bits != 0 {
			return dst, fmt.Errorf("curve key: coordinate %d = %d does not fit in %d bits", i, c, e.bits)
		}
		x[i] = c
	}
	if e.curve == Hilbert && e.dims > 1 {
		axesToTranspose(x, e.bits)
	}
	return appendInterleaved(dst, x, e.bits, e.KeyLen()), nil
}

// Key64 returns the key of coords (see AppendKey) as the number its bytes
// spell big-endian, for encoders whose keys are at most 8 bytes long: keys
// compare as these numbers do.
func (e *Encoder) Key64(coords []uint32) (uint64, error) {
	if e.KeyLen() > 8 {
		return 0, fmt.Errorf("curve key: %d-byte keys do not fit 64 bits", e.KeyLen())
	}
	if len(coords) != e.dims {
		return 0, fmt.Errorf("curve key: %d coordinates for a %d-dimensional encoder", len(coords), e.dims)
	}
	var buf [MaxDims]uint32
	x := buf[:e.dims]
	for i, c := range coords {
		if e.bits < 32 && c>>e.bits != 0 {
			return 0, fmt.Errorf("curve key: coordinate %d = %d does not fit in %d bits", i, c, e.bits)
		}
		x[i] = c
	}
	return e.key64(x), nil
}

// key64 is the key of the valid coordinates x, which it overwrites.
func (e *Encoder) key64(x []uint32) uint64 {
	if e.curve == Hilbert && e.dims > 1 {
		axesToTranspose(x, e.bits)
	}
	var k uint64
	for b := e.bits - 1; b >= 0; b-- {
		for _, c := range x {
			k = k<<1 | uint64(c>>uint(b)&1)
		}
	}
	return k
}

// Key returns the key of coords (see AppendKey).
func (e *Encoder) Key(coords []uint32) ([]byte, error) {
	return e.AppendKey(make([]byte, 0, e.KeyLen()), coords)
}

// Decode returns the coordinates of a key made by this encoder.
func (e *Encoder) Decode(key []byte) ([]uint32, error) {
	if len(key) != e.KeyLen() {
		return nil, fmt.Errorf("curve decode: key of %d bytes, want %d", len(key), e.KeyLen())
	}
	x := make([]uint32, e.dims)
	total := e.dims * e.bits
	// Bit k of the interleaved string (0 = most significant) is bit
	// (bits-1 - k/dims) of coordinate k%dims.
	pad := len(key)*8 - total
	for k := 0; k < total; k++ {
		pos := pad + k
		if key[pos/8]>>(7-uint(pos%8))&1 == 1 {
			x[k%e.dims] |= 1 << uint(e.bits-1-k/e.dims)
		}
	}
	if e.curve == Hilbert && e.dims > 1 {
		transposeToAxes(x, e.bits)
	}
	return x, nil
}

// appendInterleaved writes the bits of x interleaved, most significant bit
// of every dimension first, right-aligned in keyLen bytes.
func appendInterleaved(dst []byte, x []uint32, nbits, keyLen int) []byte {
	start := len(dst)
	for i := 0; i < keyLen; i++ {
		dst = append(dst, 0)
	}
	key := dst[start:]
	dims := len(x)
	total := dims * nbits
	pad := keyLen*8 - total
	for k := 0; k < total; k++ {
		if x[k%dims]>>uint(nbits-1-k/dims)&1 == 1 {
			pos := pad + k
			key[pos/8] |= 1 << (7 - uint(pos%8))
		}
	}
	return dst
}

// axesToTranspose converts coordinates in place to the transposed Hilbert
// index (J. Skilling, "Programming the Hilbert curve", 2004).
func axesToTranspose(x []uint32, nbits int) {
	n := len(x)
	m := uint32(1) << uint(nbits-1)
	// Inverse undo.
	for q := m; q > 1; q >>= 1 {
		p := q - 1
		for i := 0; i < n; i++ {
			if x[i]&q != 0 {
				x[0] ^= p
			} else {
				t := (x[0] ^ x[i]) & p
				x[0] ^= t
				x[i] ^= t
			}
		}
	}
	// Gray encode.
	for i := 1; i < n; i++ {
		x[i] ^= x[i-1]
	}
	var t uint32
	for q := m; q > 1; q >>= 1 {
		if x[n-1]&q != 0 {
			t ^= q - 1
		}
	}
	for i := 0; i < n; i++ {
		x[i] ^= t
	}
}

// transposeToAxes is the inverse of axesToTranspose.
func transposeToAxes(x []uint32, nbits int) {
	n := len(x)
	// Gray decode.
	t := x[n-1] >> 1
	for i := n - 1; i > 0; i-- {
		x[i] ^= x[i-1]
	}
	x[0] ^= t
	// Undo excess work.
	top := uint64(1) << uint(nbits)
	for q := uint64(2); q != top; q <<= 1 {
		qq := uint32(q)
		p := qq - 1
		for i := n - 1; i >= 0; i-- {
			if x[i]&qq != 0 {
				x[0] ^= p
			} else {
				t := (x[0] ^ x[i]) & p
				x[0] ^= t
				x[i] ^= t
			}
		}
	}
}

// ForColumns returns the encoder Delta's liquid clustering uses for n
// clustering columns with bucket ids below numBuckets: Hilbert for two or
// more columns, Z-order (the bucket id itself) for one.
func ForColumns(n, numBuckets int) (*Encoder, error) {
	c := Hilbert
	if n == 1 {
		c = ZOrder
	}
	return NewEncoder(c, n, BitsFor(numBuckets-1))
}

// Keys64 sets dst[i] to Key64 of the coordinates (coords[0][i], ...,
// coords[Dims-1][i]): the keys of a batch of rows given column by column,
// one slice of len(dst) coordinates per dimension. It is Key64 row by row
// without the per-row call (two-dimensional Hilbert keys, the common
// clustering on two columns, interleave by spreading bits).
func (e *Encoder) Keys64(coords [][]uint32, dst []uint64) error {
	if e.KeyLen() > 8 {
		return fmt.Errorf("curve key: %d-byte keys do not fit 64 bits", e.KeyLen())
	}
	if len(coords) != e.dims {
		return fmt.Errorf("curve key: %d coordinates for a %d-dimensional encoder", len(coords), e.dims)
	}
	n := len(dst)
	for d, cs := range coords {
		if len(cs) < n {
			return fmt.Errorf("curve key: %d coordinates of dimension %d for %d keys", len(cs), d, n)
		}
		if e.bits < 32 {
			var or uint32
			for _, c := range cs[:n] {
				or |= c
			}
			if or>>e.bits != 0 {
				for i, c := range cs[:n] {
					if c>>e.bits != 0 {
						return fmt.Errorf("curve key: coordinate %d = %d of row %d does not fit in %d bits", d, c, i, e.bits)
					}
				}
			}
		}
	}
	if e.dims == 2 {
		xs, ys := coords[0][:n], coords[1][:n]
		hilbert := e.curve == Hilbert
		for i := range dst {
			x, y := xs[i], ys[i]
			if hilbert {
				x, y = e.transpose2(x, y)
			}
			dst[i] = spreadBits(x)<<1 | spreadBits(y)
		}
		return nil
	}
	var buf [MaxDims]uint32
	x := buf[:e.dims]
	for i := range dst {
		for d := range x {
			x[d] = coords[d][i]
		}
		dst[i] = e.key64(x)
	}
	return nil
}

// axesToTranspose for two coordinates is a walk down their bits, a level
// at a time from the top, with a state: the swap and inversions the levels
// above have applied to the bits below (at a level, x[0]'s bit set flips
// x[0]'s lower bits; x[1]'s bit set flips them again, else x[0]'s and
// x[1]'s lower bits swap). The transposed bits of a level are the level's
// bits under the state. hilbert2Table walks hilbert2Levels levels at once:
// entry state<<(2L) | a<<L | b, for the L bits a of x[0] and b of x[1]
// (top first), holds their transposed bits (x[0]'s, then x[1]'s, L each)
// and the state after, in bits 2L and up. A state is swap | inv0<<1 |
// inv1<<2: the bits (p, q) of a level read as swap ? (q, p) : (p, q), then
// p ^= inv0, q ^= inv1.
const hilbert2Levels = 4

// hilbert2Table builds the walk's table (8 states, 2^(2L) bit pairs).
func hilbert2Table() []uint32 {
	const l = hilbert2Levels
	t := make([]uint32, 8<<(2*l))
	for state := range uint32(8) {
		for ab := range uint32(1 << (2 * l)) {
			a, b := ab>>l, ab&(1<<l-1)
			swap, inv0, inv1 := state&1, state>>1&1, state>>2&1
			var oa, ob uint32
			for j := l - 1; j >= 0; j-- {
				p, q := a>>j&1, b>>j&1
				if swap == 1 {
					p, q = q, p
				}
				p ^= inv0
				q ^= inv1
				oa |= p << j
				ob |= q << j
				if p == 1 { // x[0]'s lower bits flip
					inv0 ^= 1
				}
				if q == 1 { // flip again
					inv0 ^= 1
				} else { // swap
					swap ^= 1
					inv0, inv1 = inv1, inv0
				}
			}
			t[state<<(2*l)|ab] = oa<<l | ob | (swap|inv0<<1|inv1<<2)<<(2*l)
		}
	}
	return t
}

// transpose2 is axesToTranspose for two coordinates of nbits bits, by the
// table (levels padded at the bottom to whole steps; the padding's bits
// are dropped).
func (e *Encoder) transpose2(x0, x1 uint32) (uint32, uint32) {
	const l = hilbert2Levels
	nbits := e.bits
	steps := (nbits + l - 1) / l
	pad := uint(steps*l - nbits)
	a, b := uint64(x0)<<pad, uint64(x1)<<pad
	var oa, ob uint64
	state := uint32(0)
	for s := steps - 1; s >= 0; s-- {
		lo := uint(s * l)
		v := e.hilbert2[state<<(2*l)|uint32(a>>lo&(1<<l-1))<<l|uint32(b>>lo&(1<<l-1))]
		oa |= uint64(v>>l&(1<<l-1)) << lo
		ob |= uint64(v&(1<<l-1)) << lo
		state = v >> (2 * l)
	}
	t0, t1 := uint32(oa>>pad), uint32(ob>>pad)
	// Gray encode: x[1] ^= x[0], then both flipped below each set bit of
	// x[1] (bit j of t is the parity of x[1]'s bits above j).
	t1 ^= t0
	t := t1 >> 1
	t ^= t >> 1
	t ^= t >> 2
	t ^= t >> 4
	t ^= t >> 8
	t ^= t >> 16
	return t0 ^ t, t1 ^ t
}

// spreadBits puts bit i of x at bit 2i.
func spreadBits(x uint32) uint64 {
	v := uint64(x)
	v = (v | v<<16) & 0x0000ffff0000ffff
	v = (v | v<<8) & 0x00ff00ff00ff00ff
	v = (v | v<<4) & 0x0f0f0f0f0f0f0f0f
	v = (v | v<<2) & 0x3333333333333333
	v = (v | v<<1) & 0x5555555555555555
	return v
}
