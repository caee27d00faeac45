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
	f, err := createSpill(p.dir, "compactord-pages-*")
	if err != nil {
		return errBuffer{fmt.Errorf("page spill file in %s: %w", p.dir, err)}
	}
	return f
}

// createSpill creates a temp file in dir and unlinks it at once: it lives
// until closed (or the process exits), so no path can leak. These are
// the process's own scratch files, never a table's objects: they are not
// deleted through the deletion gate.
func createSpill(dir, pattern string) (*os.File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, fmt.Errorf("create spill file: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("unlink spill file %s: %w", f.Name(), err)
	}
	return f, nil
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
