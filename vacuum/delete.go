package vacuum

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"gocloud.dev/gcerrors"
	"golang.org/x/sync/errgroup"

	"github.com/compactord/compactord/internal/deletegate"
	"github.com/compactord/compactord/internal/progress"
)

// candidates holds the files a run will delete, either in memory (lite:
// bounded by the commits it read) or spilled to a local file (full: the
// listing may hold millions of objects).
type candidates struct {
	mem   []File
	f     *os.File
	w     *bufio.Writer
	kinds []string
	n     int64
	bytes int64
	byKnd map[string]int64
}

func newMemCandidates() *candidates { return &candidates{byKnd: map[string]int64{}} }

func newSpillCandidates(dir string) (*candidates, error) {
	f, err := os.CreateTemp(dir, "compactord-vacuum-*.list")
	if err != nil {
		return nil, fmt.Errorf("vacuum spill file: %w", err)
	}
	return &candidates{f: f, w: bufio.NewWriterSize(f, 64<<10), kinds: []string{KindExpired, KindOrphan, KindTemp, KindDir}, byKnd: map[string]int64{}}, nil
}

func (c *candidates) add(f File) error {
	c.n++
	c.bytes += f.Size
	c.byKnd[f.Kind]++
	if c.f == nil {
		c.mem = append(c.mem, f)
		return nil
	}
	var hdr [2*binary.MaxVarintLen64 + 1]byte
	n := binary.PutUvarint(hdr[:], uint64(len(f.Key)))
	n += binary.PutVarint(hdr[n:], f.Size)
	k := 0
	for i, kind := range c.kinds {
		if kind == f.Kind {
			k = i
		}
	}
	hdr[n] = byte(k)
	n++
	if _, err := c.w.Write(hdr[:n]); err != nil {
		return fmt.Errorf("vacuum spill file: %w", err)
	}
	if _, err := c.w.WriteString(f.Key); err != nil {
		return fmt.Errorf("vacuum spill file: %w", err)
	}
	return nil
}

// each calls fn for every candidate, in the order they were added.
func (c *candidates) each(fn func(File) error) error {
	if c.f == nil {
		for _, f := range c.mem {
			if err := fn(f); err != nil {
				return err
			}
		}
		return nil
	}
	if err := c.w.Flush(); err != nil {
		return fmt.Errorf("vacuum spill file: %w", err)
	}
	if _, err := c.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("vacuum spill file: %w", err)
	}
	r := bufio.NewReaderSize(c.f, 64<<10)
	var key []byte
	for {
		l, err := binary.ReadUvarint(r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("vacuum spill file: %w", err)
		}
		size, err := binary.ReadVarint(r)
		if err != nil {
			return fmt.Errorf("vacuum spill file: %w", err)
		}
		k, err := r.ReadByte()
		if err != nil {
			return fmt.Errorf("vacuum spill file: %w", err)
		}
		if cap(key) < int(l) {
			key = make([]byte, l)
		}
		key = key[:l]
		if _, err := io.ReadFull(r, key); err != nil {
			return fmt.Errorf("vacuum spill file: %w", err)
		}
		if err := fn(File{Key: string(key), Size: size, Kind: c.kinds[k]}); err != nil {
			return err
		}
	}
	return nil
}

// close closes and removes the candidates' spill file: the process's own
// scratch file, not an object of the table, so not the deletion gate.
func (c *candidates) close() {
	if c.f != nil {
		name := c.f.Name()
		_ = c.f.Close()
		_ = os.Remove(name)
	}
}

// deleteStats counts what deleteAll did.
type deleteStats struct {
	files, bytes, errs, refused atomic.Int64
}

// maxReportedErrors bounds the delete errors joined into the run's error.
const maxReportedErrors = 5

// deleteAll deletes every candidate with at most concurrency deletes in
// flight. An object that is already gone is not counted; failures are
// counted, the rest still runs, and the first few are returned joined.
// Every delete that returned counts in tr.
// Every delete goes through the gate (temp leftovers as deletegate.Temp,
// the rest as deletegate.Data); a refused one is counted in refused and
// is no failure.
func deleteAll(ctx context.Context, gate *deletegate.Gate, c *candidates, concurrency int, onFile func(File), tr *progress.Tracker) (*deleteStats, error) {
	st := &deleteStats{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	var mu sync.Mutex
	var errs []error
	iterErr := c.each(func(f File) error {
		if onFile != nil {
			onFile(f)
		}
		if gctx.Err() != nil {
			return gctx.Err()
		}
		g.Go(func() error {
			kind := deletegate.Data
			if f.Kind == KindTemp {
				kind = deletegate.Temp
			}
			err := gate.Delete(gctx, f.Key, kind)
			tr.Add(1, f.Size)
			switch {
			case errors.Is(err, deletegate.ErrRefused):
				st.refused.Add(1)
			case err == nil:
				st.files.Add(1)
				st.bytes.Add(f.Size)
			case gcerrors.Code(err) == gcerrors.NotFound:
			default:
				st.errs.Add(1)
				if gctx.Err() != nil {
					return gctx.Err()
				}
				mu.Lock()
				if len(errs) < maxReportedErrors {
					errs = append(errs, fmt.Errorf("delete %s: %w", f.Key, err))
				}
				mu.Unlock()
			}
			return nil
		})
		return nil
	})
	werr := g.Wait()
	if iterErr != nil {
		return st, iterErr
	}
	if werr != nil {
		return st, werr
	}
	if n := st.errs.Load(); n > 0 {
		return st, fmt.Errorf("%d deletes failed: %w", n, errors.Join(errs...))
	}
	return st, nil
}

// removeEmptyDirs removes, deepest first, the directories of a local table
// that are empty after the deletes (rmdir fails on a non-empty one, so a
// directory a writer just put a file in stays). It returns how many it
// removed. The root itself is never removed. A bucket has no directories
// to delete, so this is os.Remove, not the gate's Delete: the gate checks
// each directory first as a data key (canonical, outside _delta_log/ and
// _compactord/, no symbolic link on its way below the root).
func removeEmptyDirs(root string, gate *deletegate.Gate, dirs []string, onFile func(File)) int64 {
	sorted := append([]string(nil), dirs...)
	sort.Slice(sorted, func(i, j int) bool {
		di, dj := strings.Count(sorted[i], "/"), strings.Count(sorted[j], "/")
		if di != dj {
			return di > dj
		}
		return sorted[i] > sorted[j]
	})
	var n int64
	for _, d := range sorted {
		rel := strings.TrimSuffix(d, "/")
		if rel == "" || gate.Check(rel, deletegate.Data) != "" {
			continue
		}
		if err := os.Remove(filepath.Join(root, filepath.FromSlash(rel))); err == nil {
			n++
			if onFile != nil {
				onFile(File{Key: d, Kind: KindDir})
			}
		}
	}
	return n
}
