package vacuum

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"gocloud.dev/blob"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/deletegate"
)

// object is one listed file.
type object struct {
	key     string // relative to the table root
	size    int64
	modTime time.Time
}

// lister walks the visible files of a table (see hiddenRule) one at a time,
// holding no more than one directory page in memory.
type lister interface {
	// walk calls fn for every visible file and returns the visible
	// directories it passed through (relative keys ending in "/", deepest
	// last in each branch).
	walk(ctx context.Context, rule hiddenRule, fn func(object) error) (dirs []string, err error)
	// shallow lists the files directly inside dir (a key prefix ending in
	// "/"), hidden names included.
	shallow(ctx context.Context, dir string, fn func(object) error) error
}

// newLister returns the local walker for file:// tables (gocloud's fileblob
// re-walks the whole tree for every page of a listing, quadratic on large
// tables) and a bucket listing otherwise.
func newLister(t *delta.Table) (lister, error) {
	u, err := url.Parse(t.URL)
	if err != nil {
		return nil, fmt.Errorf("vacuum %s: %w", t.URL, err)
	}
	if u.Scheme == "file" {
		return &localLister{root: filepath.FromSlash(u.Path)}, nil
	}
	return &bucketLister{b: t.Bucket}, nil
}

// localRoot returns the directory of a file:// table, "" otherwise.
func localRoot(t *delta.Table) string { return deletegate.LocalRootOf(t.URL) }

type localLister struct{ root string }

// readDirBatch is how many directory entries the local walker reads at once.
const readDirBatch = 512

func (l *localLister) walk(ctx context.Context, rule hiddenRule, fn func(object) error) ([]string, error) {
	var dirs []string
	var visit func(rel string) error
	visit = func(rel string) error {
		f, err := os.Open(filepath.Join(l.root, filepath.FromSlash(rel)))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && rel != "" {
				return nil // removed while we walked
			}
			return fmt.Errorf("list %s: %w", l.display(rel), err)
		}
		defer f.Close()
		var sub []string
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			ents, err := f.ReadDir(readDirBatch)
			for _, e := range ents {
				name := e.Name()
				if rule.hidden(name) {
					continue
				}
				key := rel + name
				switch {
				case e.IsDir():
					// Entered after this directory's files, so that only
					// the open directories of one branch stay open.
					sub = append(sub, key+"/")
				case e.Type().IsRegular():
					info, ierr := e.Info()
					if ierr != nil {
						if errors.Is(ierr, fs.ErrNotExist) {
							continue
						}
						return fmt.Errorf("stat %s: %w", l.display(key), ierr)
					}
					if ferr := fn(object{key: key, size: info.Size(), modTime: info.ModTime()}); ferr != nil {
						return ferr
					}
				}
			}
			if errors.Is(err, io.EOF) || (err == nil && len(ents) == 0) {
				break
			}
			if err != nil {
				return fmt.Errorf("list %s: %w", l.display(rel), err)
			}
		}
		f.Close()
		for _, d := range sub {
			dirs = append(dirs, d)
			if err := visit(d); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(""); err != nil {
		return nil, err
	}
	return dirs, nil
}

func (l *localLister) shallow(ctx context.Context, dir string, fn func(object) error) error {
	ents, err := os.ReadDir(filepath.Join(l.root, filepath.FromSlash(dir)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("list %s: %w", l.display(dir), err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if err := fn(object{key: dir + e.Name(), size: info.Size(), modTime: info.ModTime()}); err != nil {
			return err
		}
	}
	return nil
}

func (l *localLister) display(rel string) string {
	return filepath.Join(l.root, filepath.FromSlash(rel))
}

type bucketLister struct{ b *blob.Bucket }

func (l *bucketLister) walk(ctx context.Context, rule hiddenRule, fn func(object) error) ([]string, error) {
	dirSeen := map[string]struct{}{}
	var dirs []string
	noteDirs := func(key string) {
		for i := strings.IndexByte(key, '/'); i >= 0; {
			d := key[:i+1]
			if _, ok := dirSeen[d]; !ok {
				dirSeen[d] = struct{}{}
				dirs = append(dirs, d)
			}
			j := strings.IndexByte(key[i+1:], '/')
			if j < 0 {
				break
			}
			i += j + 1
		}
	}
	// The root level is listed with a delimiter so that _delta_log/ and
	// the other hidden trees are never listed; below it, flat listings.
	top := l.b.List(&blob.ListOptions{Delimiter: "/"})
	var subdirs []string
	for {
		obj, err := top.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("list table root: %w", err)
		}
		name := strings.TrimSuffix(obj.Key, "/")
		if name == "" || rule.hidden(name) {
			continue
		}
		if obj.IsDir {
			subdirs = append(subdirs, obj.Key)
			continue
		}
		if err := fn(object{key: obj.Key, size: obj.Size, modTime: obj.ModTime}); err != nil {
			return nil, err
		}
	}
	for _, d := range subdirs {
		it := l.b.List(&blob.ListOptions{Prefix: d})
		for {
			obj, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("list %s: %w", d, err)
			}
			if obj.IsDir || strings.HasSuffix(obj.Key, "/") || rule.hiddenKey(obj.Key) {
				continue // directory markers, hidden subtrees
			}
			noteDirs(obj.Key)
			if err := fn(object{key: obj.Key, size: obj.Size, modTime: obj.ModTime}); err != nil {
				return nil, err
			}
		}
	}
	return dirs, nil
}

func (l *bucketLister) shallow(ctx context.Context, dir string, fn func(object) error) error {
	it := l.b.List(&blob.ListOptions{Prefix: dir, Delimiter: "/"})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", dir, err)
		}
		if obj.IsDir || path.Base(obj.Key) == "" {
			continue
		}
		if err := fn(object{key: obj.Key, size: obj.Size, modTime: obj.ModTime}); err != nil {
			return err
		}
	}
}
