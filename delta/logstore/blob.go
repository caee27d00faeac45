package logstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/delta/pq"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/objstore"
)

// ErrNoPutIfAbsent is returned (wrapped, with the store's name) when a store
// accepted a second conditional create of the same key: it ignores
// If-None-Match (or its equivalent), so commits on it would silently
// overwrite each other. compactord refuses to commit to such a store.
var ErrNoPutIfAbsent = failure.New(failure.Halt, "store does not honour put-if-absent")

// ErrDynamoDBLogStore wraps the DynamoDB log store's refusals that no retry
// fixes: a missing or misshapen DynamoDB table, an entry whose commit
// cannot be repaired, stale entries of a deleted table.
var ErrDynamoDBLogStore = failure.New(failure.Halt, "dynamodb log store")

// maxLogPutAttempts bounds how often PutIfAbsent sends a commit whose
// earlier sends had unknown outcomes and which, re-read, had not landed.
const maxLogPutAttempts = 5

// Blob writes log entries with the bucket's own conditional create
// (WriterOptions.IfNotExist: S3 If-None-Match: *, GCS DoesNotExist, Azure
// If-None-Match: *, memblob's locked existence check).
type Blob struct {
	bucket *blob.Bucket
	store  string
	scheme string

	// casMu serialises ReplaceIfMatch on memblob, which has no conditional
	// overwrite; it lives in the store, so in the one Table that owns the
	// in-memory bucket.
	casMu sync.Mutex

	// probe, when set, makes the first PutIfAbsent verify with a scratch
	// key that the store really refuses a second conditional create.
	probe    bool
	mu       sync.Mutex
	probed   bool
	probeErr error
}

var _ LogStore = (*Blob)(nil)

func NewBlob(b *blob.Bucket, scheme, store string, probe bool) *Blob {
	return &Blob{bucket: b, scheme: scheme, store: store, probe: probe}
}

// PutIfAbsent implements LogStore. The data must be unique to this writer
// (a commit carries its txnId): when the store refuses the write or its
// answer is unknown, the key is re-read and a byte-identical object counts
// as this writer's own.
func (s *Blob) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := s.checkProbe(ctx); err != nil {
		return err
	}
	return PutIfAbsentBlob(ctx, s.bucket, s.store, key, data, "application/json")
}

// Probe checks, on a scratch key, that the store refuses a second
// conditional create. The result of the first completed probe is kept;
// a probe that failed for an unrelated reason (network) is retried on the
// next call.
func (s *Blob) Probe(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.probed {
		return s.probeErr
	}
	err := ProbePutIfAbsent(ctx, s.bucket, s.store)
	if err == nil || errors.Is(err, ErrNoPutIfAbsent) {
		s.probed, s.probeErr = true, err
	}
	return err
}

func (s *Blob) checkProbe(ctx context.Context) error {
	if !s.probe {
		return nil
	}
	return s.Probe(ctx)
}

// ProbePutIfAbsent writes a scratch object under "_compactord/" twice with
// IfNotExist and deletes it. It returns an error wrapping ErrNoPutIfAbsent
// and naming store when the second write succeeds. The first write settles
// an unknown outcome like a commit does (the scratch name and body are
// ours alone); the second is retried while its failure is transient.
func ProbePutIfAbsent(ctx context.Context, b *blob.Bucket, store string) error {
	var nonce [8]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return fmt.Errorf("put-if-absent probe on %s: %w", store, err)
	}
	key := "_compactord/probe-" + hex.EncodeToString(nonce[:])
	body := []byte("compactord put-if-absent probe " + key + "\n")
	if err := PutIfAbsentBlob(ctx, b, store, key, body, "text/plain"); err != nil {
		return fmt.Errorf("put-if-absent probe on %s: first write of %s: %w", store, key, err)
	}
	// The scratch object is deleted on a best-effort basis: a store that
	// grants PUT but not DELETE must not block commits over a leftover.
	defer func() { _ = b.Delete(context.WithoutCancel(ctx), key) }()
	var err error
	for attempt := 1; attempt <= maxLogPutAttempts; attempt++ {
		err = uploadIfAbsent(ctx, b, key, body, "text/plain")
		if err == nil || !objstore.Transient(err) {
			break
		}
		if werr := objstore.Sleep(ctx, time.Duration(attempt)*100*time.Millisecond); werr != nil {
			break
		}
	}
	switch {
	case err == nil:
		return fmt.Errorf("%w: %s accepted a second conditional create of %s (If-None-Match ignored); refusing to commit there", ErrNoPutIfAbsent, store, key)
	case objstore.Code(err) == gcerrors.FailedPrecondition:
		return nil
	default:
		return fmt.Errorf("put-if-absent probe on %s: second write of %s: %w", store, key, err)
	}
}

// PutIfAbsentBlob creates key with data unless it exists. A refusal is
// not taken at face value: SDKs retry failed PUTs on their own, so a
// precondition failure may answer a retry of our own write that landed.
// Refusals and unknown outcomes are therefore resolved by re-reading the
// key (data must be unique to the writer: a commit carries its txnId, a
// deletion-vector file has a fresh random name); only when that is
// impossible does the error wrap objstore.ErrAmbiguous. An object of other bytes
// at key wraps ErrCommitExists.
func PutIfAbsentBlob(ctx context.Context, b *blob.Bucket, store, key string, data []byte, contentType string) error {
	var lastErr error
	for attempt := 0; attempt < maxLogPutAttempts; attempt++ {
		err := uploadIfAbsent(ctx, b, key, data, contentType)
		if err == nil {
			return nil
		}
		code := objstore.Code(err)
		if code != gcerrors.FailedPrecondition && !isAmbiguousCode(code) {
			return fmt.Errorf("put %s on %s: %w", key, store, err)
		}
		lastErr = err
		landed, mine, rerr := sameObject(ctx, b, key, data)
		switch {
		case rerr != nil:
			return fmt.Errorf("put %s on %s: %w: %w (re-read failed: %w)", key, store, objstore.ErrAmbiguous, err, rerr)
		case landed && mine:
			return nil
		case landed:
			return fmt.Errorf("put %s on %s: %w", key, store, ErrCommitExists)
		}
		// Not there: re-sending is safe, the create stays conditional.
		if werr := objstore.Sleep(ctx, time.Duration(attempt+1)*50*time.Millisecond); werr != nil {
			return fmt.Errorf("put %s on %s: %w: %w", key, store, objstore.ErrAmbiguous, err)
		}
	}
	return fmt.Errorf("put %s on %s: %w after %d attempts: %w", key, store, objstore.ErrAmbiguous, maxLogPutAttempts, lastErr)
}

// isAmbiguousCode reports whether an error with this code may hide a write
// that reached the store.
func isAmbiguousCode(c gcerrors.ErrorCode) bool {
	switch c {
	case gcerrors.NotFound, gcerrors.PermissionDenied, gcerrors.InvalidArgument,
		gcerrors.Unimplemented, gcerrors.AlreadyExists:
		return false
	}
	return true
}

// sameObject reads key and reports whether it exists and equals data; an
// object longer than data is not read past that length.
func sameObject(ctx context.Context, b *blob.Bucket, key string, data []byte) (landed, mine bool, err error) {
	got, _, err := ReadBounded(ctx, b, key, int64(len(data)), "LogFile")
	var tl *TooLargeError
	if errors.As(err, &tl) {
		return true, false, nil
	}
	if objstore.Code(err) == gcerrors.NotFound {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	return true, bytes.Equal(got, data), nil
}

// uploadIfAbsent performs one conditional create through Bucket.Upload
// (never Writer.Write + Close: gocloud's azureblob v0.47.0 dereferences a
// nil pipe in Writer.Close when the upload fails). A driver panic is turned
// into an error whose outcome is unknown.
func uploadIfAbsent(ctx context.Context, b *blob.Bucket, key string, data []byte, contentType string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			pq.CheckLibraryPanic(r)
			err = fmt.Errorf("blob driver panicked writing %s: %v", key, r)
		}
	}()
	return b.Upload(ctx, key, bytes.NewReader(data), &blob.WriterOptions{
		ContentType: contentType,
		IfNotExist:  true,
	})
}
