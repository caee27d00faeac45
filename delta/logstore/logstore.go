package logstore

import (
	"context"
	"errors"
)

// ErrCommitExists is returned by LogStore.PutIfAbsent when the key already exists.
var ErrCommitExists = errors.New("log entry already exists")

// LogStore writes log entries atomically. Implementations exist per URL
// scheme (local files use temp file + hard link; object stores use their
// conditional-put primitive).
type LogStore interface {
	// PutIfAbsent writes data at key (relative to the table root) only if
	// no object exists there. It returns an error wrapping ErrCommitExists
	// when another writer got there first, and one wrapping objstore.ErrAmbiguous
	// when the outcome is unknown.
	PutIfAbsent(ctx context.Context, key string, data []byte) error
}
