package pq

import (
	"bytes"
	"errors"

	"github.com/parquet-go/parquet-go/encoding/thrift"
)

// errThriftEOF is raised (as a panic, recovered by decodeThrift) when the
// thrift decoder reads past the end of its input: parquet-go's decoder
// ignores EOF for some field types and would loop over a corrupt list
// length (up to 2^31 elements) instead of failing.
var errThriftEOF = errors.New("thrift structure runs past the end of its bytes")

type eofPanicReader struct{ r *bytes.Reader }

func (e eofPanicReader) Read(p []byte) (int, error) {
	if e.r.Len() == 0 && len(p) > 0 {
		panic(errThriftEOF)
	}
	return e.r.Read(p)
}

// DecodeThrift decodes one compact-protocol thrift struct from the start
// of b and returns the number of bytes it used.
func DecodeThrift(b []byte, v any) (n int64, err error) {
	r := bytes.NewReader(b)
	defer func() {
		if p := recover(); p != nil {
			if p != errThriftEOF {
				panic(p)
			}
			n, err = 0, errThriftEOF
		}
	}()
	proto := &thrift.CompactProtocol{}
	if err := thrift.NewDecoder(proto.NewReader(eofPanicReader{r})).Decode(v); err != nil {
		return 0, err
	}
	return int64(len(b) - r.Len()), nil
}
