package logstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Local is put-if-absent on a local (or NFS-with-link) file system:
// the entry is written in full to a hidden temp file in the target
// directory, fsynced, then published with link(2), which fails with EEXIST
// when the name is taken. Readers therefore never see a partial commit and
// exactly one of many concurrent writers wins. gocloud's fileblob is not
// used for commits because its IfNotExist check-then-rename is not atomic.
type Local struct {
	root string
}

var _ LogStore = (*Local)(nil)

func NewLocal(root string) *Local {
	return &Local{root: root}
}

// Dir is the table directory the store writes under.
func (s *Local) Dir() string { return s.root }

// PutIfAbsent implements LogStore.
func (s *Local) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	path, err := s.path(key)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	tmp, err := writeTemp(dir, filepath.Base(path), data)
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	linkErr := os.Link(tmp, path)
	// The temp name writeTemp just made, not a table object: not the gate.
	rmErr := os.Remove(tmp)
	if linkErr != nil {
		if errors.Is(linkErr, fs.ErrExist) {
			return fmt.Errorf("put %s: %w", key, ErrCommitExists)
		}
		return fmt.Errorf("put %s: publish with hard link (the file system must support link(2)): %w", key, linkErr)
	}
	if rmErr != nil {
		return fmt.Errorf("put %s: committed, but removing temp file: %w", key, rmErr)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("put %s: committed, but fsync of %s: %w", key, dir, err)
	}
	return nil
}

// path maps a slash-separated key under the table root to a file path,
// refusing keys that would escape the root.
func (s *Local) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") {
		return "", fmt.Errorf("put %q: key must be relative to the table root", key)
	}
	for _, part := range strings.Split(key, "/") {
		if part == "" || part == "." || part == ".." {
			return "", fmt.Errorf("put %q: invalid key", key)
		}
	}
	return filepath.Join(s.root, filepath.FromSlash(key)), nil
}

// writeTemp writes data to a new hidden file in dir (a leading dot keeps
// Spark and delta-rs listings from seeing it) and returns its name. The
// log store removes that file itself once it is linked or renamed into
// place (or failed to be): a name this call made, never one from a log or
// a listing, so not through the deletion gate (a killed write's leftover
// is the sweep's, which goes through it).
func writeTemp(dir, base string, data []byte) (name string, err error) {
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return "", err
	}
	name = f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(name)
		}
	}()
	if err := f.Chmod(0o644); err != nil {
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return name, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil && !errors.Is(serr, os.ErrInvalid) {
		return serr
	}
	return cerr
}
