package writer

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/format"
)

// zstdCodec is parquet's ZSTD codec at a given level with a window no
// larger than one page: parquet compresses each page on its own, so
// parquet-go's default 8 MiB window only costs memory (tens of MiB of
// history buffers across open outputs).
type zstdCodec struct {
	window   int
	level    zstd.EncoderLevel
	encoders sync.Pool
	decoders sync.Pool
}

// newZstdCodec returns a codec for pages of up to pageSize bytes at zstd
// level (as the zstd CLI counts: 1 fastest, 3 zstd's default, up to 22;
// the Go encoder maps them onto its four speeds).
func newZstdCodec(pageSize, level int) *zstdCodec {
	w := zstd.MinWindowSize
	for w < pageSize && w < zstd.MaxWindowSize {
		w <<= 1
	}
	return &zstdCodec{window: w, level: zstd.EncoderLevelFromZstd(level)}
}

func (c *zstdCodec) String() string { return "ZSTD" }

func (c *zstdCodec) CompressionCodec() format.CompressionCodec { return format.Zstd }

func (c *zstdCodec) Encode(dst, src []byte) ([]byte, error) {
	e, _ := c.encoders.Get().(*zstd.Encoder)
	if e == nil {
		var err error
		e, err = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(c.level),
			zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(c.window),
			zstd.WithZeroFrames(true),
			zstd.WithEncoderCRC(false),
		)
		if err != nil {
			return dst, fmt.Errorf("zstd encoder: %w", err)
		}
	}
	defer c.encoders.Put(e)
	return e.EncodeAll(src, dst[:0]), nil
}

func (c *zstdCodec) Decode(dst, src []byte) ([]byte, error) {
	d, _ := c.decoders.Get().(*zstd.Decoder)
	if d == nil {
		var err error
		d, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return dst, fmt.Errorf("zstd decoder: %w", err)
		}
	}
	defer c.decoders.Put(d)
	return d.DecodeAll(src, dst[:0])
}
