package pq

import (
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// OpenParquet opens the footer; parquet-go can panic on malformed input,
// which becomes an error here.
func OpenParquet(r io.ReaderAt, size int64, bufSize int) (f *parquet.File, err error) {
	defer RecoverParquet(&err)
	f, err = parquet.OpenFile(r, size,
		parquet.ReadBufferSize(bufSize),
		parquet.SkipPageIndex(true),
		parquet.SkipBloomFilters(true),
		parquet.OptimisticRead(true),
		// The leading magic costs a GET of 4 bytes; the footer's
		// trailing magic is still checked.
		parquet.SkipMagicBytes(true),
	)
	if err != nil {
		return nil, fmt.Errorf("open parquet: %w", err)
	}
	return f, nil
}
