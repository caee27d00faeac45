package objstore

import (
	"context"
	"errors"
)

// ErrPreconditionFailed is wrapped by ConditionalStore writes whose
// condition (absent, or unchanged since read) did not hold.
var ErrPreconditionFailed = errors.New("precondition failed")

// ErrObjectNotFound is wrapped by ConditionalStore.ReadVersioned when the
// object does not exist.
var ErrObjectNotFound = errors.New("object not found")

// ErrAmbiguous wraps a write error whose outcome is unknown (for example a
// timeout after the body was sent): the caller must re-read the key to learn
// whether its write landed.
var ErrAmbiguous = errors.New("outcome of log write unknown")

// ConditionalStore reads and compare-and-swaps small control objects under
// a table root (the scheduler's lease). Every log store implements it with
// its store's native primitive: S3 If-Match on the ETag, GCS generation
// match, Azure If-Match, a lock file plus rename locally, a lock in memory.
// The contract lives here, beside the store's other failure rules, so that a
// user of control objects (the lease) needs no table-format package.
type ConditionalStore interface {
	// ReadVersioned returns the object's bytes and an opaque token naming
	// exactly that version, or an error wrapping ErrObjectNotFound.
	ReadVersioned(ctx context.Context, key string) (data []byte, token string, err error)
	// CreateIfAbsent writes data only if key does not exist, else returns
	// an error wrapping ErrPreconditionFailed.
	CreateIfAbsent(ctx context.Context, key string, data []byte) error
	// ReplaceIfMatch overwrites key only if its current version is token,
	// else returns an error wrapping ErrPreconditionFailed. An unknown
	// outcome wraps ErrAmbiguous.
	ReplaceIfMatch(ctx context.Context, key string, data []byte, token string) error
}
