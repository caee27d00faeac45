package writer

import (
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// pipelineDepth is the number of row batches in flight between the reading
// goroutine of a source and the writing one.
const pipelineDepth = 3

// rowBatch is one batch handed from the reader to the writer.
type rowBatch struct {
	rows []parquet.Row
	phys []int64
	n    int
	err  error
}

func newBatches(size int) []*rowBatch {
	bs := make([]*rowBatch, pipelineDepth)
	for i := range bs {
		bs[i] = &rowBatch{rows: make([]parquet.Row, size), phys: make([]int64, size)}
	}
	return bs
}

// pumpRows reads scan to the end on its own goroutine (decoding, DV
// filtering, conversion) while the caller's goroutine runs consume on each
// batch in order (statistics, encoding, compression, upload), so one job
// keeps two cores busy. A batch is reused only after consume returned, so
// row buffers that the scan recycles are never overwritten while in use.
// pumpRows returns after the reading goroutine has stopped, so the caller
// may close scan.
func pumpRows(scan rowSource, batches []*rowBatch, consume func([]parquet.Row) error) error {
	free := make(chan *rowBatch, len(batches))
	full := make(chan *rowBatch, len(batches))
	stop := make(chan struct{})
	for _, b := range batches {
		free <- b
	}
	go func() {
		defer close(full)
		for {
			var b *rowBatch
			select {
			case b = <-free:
			case <-stop:
				return
			}
			b.n, b.err = scan.ReadRows(b.rows, b.phys)
			if b.err == nil && b.n == 0 {
				b.err = errors.New("scan returned no rows and no error")
			}
			full <- b // never blocks: full holds every batch
			if b.err != nil {
				return
			}
		}
	}()
	var err error
	for b := range full {
		if err != nil {
			continue // draining after a failure
		}
		if b.n > 0 {
			if cerr := consume(b.rows[:b.n]); cerr != nil {
				err = cerr
				close(stop)
				continue
			}
		}
		switch {
		case errors.Is(b.err, io.EOF):
			// The reader has stopped; full is closed next.
		case b.err != nil:
			err = fmt.Errorf("read rows: %w", b.err)
		default:
			free <- b
		}
	}
	return err
}
