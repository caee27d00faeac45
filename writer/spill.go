package writer

import (
	"fmt"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"
)

// spillPool keeps the compressed pages of a row group being built in temp
// files. Each file is unlinked as soon as it is created, so an output that
// is abandoned mid row group (error, cancellation, crash) leaves no file
// behind: the space is freed when the descriptor closes.
type spillPool struct{ dir string }

var _ parquet.BufferPool = spillPool{}

func (p spillPool) GetBuffer() io.ReadWriteSeeker {
	f, err := os.CreateTemp(p.dir, "compactord-pages-*")
	if err != nil {
		return errBuffer{fmt.Errorf("page spill file in %s: %w", p.dir, err)}
	}
	if err := os.Remove(f.Name()); err != nil {
		_ = f.Close()
		return errBuffer{fmt.Errorf("unlink page spill file: %w", err)}
	}
	return f
}

func (p spillPool) PutBuffer(b io.ReadWriteSeeker) {
	if f, ok := b.(*os.File); ok {
		_ = f.Close()
	}
}

// errBuffer fails every operation with the error that prevented creating
// the spill file, so the parquet writer reports it.
type errBuffer struct{ err error }

func (b errBuffer) Read([]byte) (int, error)       { return 0, b.err }
func (b errBuffer) Write([]byte) (int, error)      { return 0, b.err }
func (b errBuffer) Seek(int64, int) (int64, error) { return 0, b.err }
