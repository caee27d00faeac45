package logstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/compactord/compactord/objstore"
)

var _ objstore.ConditionalStore = (*Local)(nil)

// ReadVersioned implements objstore.ConditionalStore. The token is the content's
// hash (control objects carry a fresh nonce per write).
func (s *Local) ReadVersioned(ctx context.Context, key string) ([]byte, string, error) {
	path, err := s.path(key)
	if err != nil {
		return nil, "", err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("read %s: %w", key, objstore.ErrObjectNotFound)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", key, err)
	}
	return data, contentToken(data), nil
}

// CreateIfAbsent implements objstore.ConditionalStore with the hard-link publish.
func (s *Local) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	err := s.PutIfAbsent(ctx, key, data)
	if errors.Is(err, ErrCommitExists) {
		return fmt.Errorf("create %s: %w", key, objstore.ErrPreconditionFailed)
	}
	return err
}

// ReplaceIfMatch implements objstore.ConditionalStore: under an exclusive flock(2)
// on "<key>.lock" (released by the kernel if the process dies), compare the
// current content's token and publish the new content with rename(2).
func (s *Local) ReplaceIfMatch(ctx context.Context, key string, data []byte, token string) (err error) {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("replace %s: %w", key, err)
	}
	path, err := s.path(key)
	if err != nil {
		return err
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return fmt.Errorf("replace %s: lock: %w", key, err)
	}
	defer func() {
		if uerr := unlock(); uerr != nil && err == nil {
			err = fmt.Errorf("replace %s: unlock: %w", key, uerr)
		}
	}()
	cur, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("replace %s: %w: object is gone", key, objstore.ErrPreconditionFailed)
	}
	if err != nil {
		return fmt.Errorf("replace %s: %w", key, err)
	}
	if contentToken(cur) != token {
		return fmt.Errorf("replace %s: %w: version changed", key, objstore.ErrPreconditionFailed)
	}
	dir := filepath.Dir(path)
	tmp, err := writeTemp(dir, filepath.Base(path), data)
	if err != nil {
		return fmt.Errorf("replace %s: %w", key, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		// writeTemp's own temp name, not a table object: not the gate.
		_ = os.Remove(tmp)
		return fmt.Errorf("replace %s: %w", key, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("replace %s: fsync %s: %w", key, dir, err)
	}
	return nil
}
