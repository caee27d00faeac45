package logstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	azblobblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/compactord/compactord/delta/pq"
	"github.com/compactord/compactord/objstore"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// maxControlObject bounds ReadVersioned: control objects are tiny.
const maxControlObject = 1 << 20

var _ objstore.ConditionalStore = (*Blob)(nil)

// ReadVersioned implements objstore.ConditionalStore.
func (s *Blob) ReadVersioned(ctx context.Context, key string) ([]byte, string, error) {
	if s.scheme == "mem" {
		s.casMu.Lock()
		defer s.casMu.Unlock()
	}
	return s.readVersioned(ctx, key)
}

func (s *Blob) readVersioned(ctx context.Context, key string) ([]byte, string, error) {
	r, err := s.bucket.NewReader(ctx, key, nil)
	if objstore.Code(err) == gcerrors.NotFound {
		return nil, "", fmt.Errorf("read %s on %s: %w", key, s.store, objstore.ErrObjectNotFound)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read %s on %s: %w", key, s.store, err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxControlObject))
	if err != nil {
		return nil, "", fmt.Errorf("read %s on %s: %w", key, s.store, err)
	}
	var token string
	switch s.scheme {
	case "s3":
		var out s3.GetObjectOutput
		if r.As(&out) && out.ETag != nil {
			token = *out.ETag
		}
	case "gs":
		var gr *storage.Reader
		if r.As(&gr) && gr != nil {
			token = strconv.FormatInt(gr.Attrs.Generation, 10)
		}
	case "azblob":
		var resp azblobblob.DownloadStreamResponse
		if r.As(&resp) && resp.ETag != nil {
			token = string(*resp.ETag)
		}
	default:
		token = contentToken(data)
	}
	if token == "" {
		return nil, "", fmt.Errorf("read %s on %s: the store returned no version (ETag/generation)", key, s.store)
	}
	return data, token, nil
}

// CreateIfAbsent implements objstore.ConditionalStore.
func (s *Blob) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := s.checkProbe(ctx); err != nil {
		return err
	}
	err := uploadIfAbsent(ctx, s.bucket, key, data, "application/json")
	switch {
	case err == nil:
		return nil
	case objstore.Code(err) == gcerrors.FailedPrecondition:
		return fmt.Errorf("create %s on %s: %w", key, s.store, objstore.ErrPreconditionFailed)
	case isAmbiguousCode(objstore.Code(err)):
		return fmt.Errorf("create %s on %s: %w: %w", key, s.store, objstore.ErrAmbiguous, err)
	default:
		return fmt.Errorf("create %s on %s: %w", key, s.store, err)
	}
}

// ReplaceIfMatch implements objstore.ConditionalStore.
func (s *Blob) ReplaceIfMatch(ctx context.Context, key string, data []byte, token string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			pq.CheckLibraryPanic(r)
			err = fmt.Errorf("replace %s on %s: %w: blob driver panicked: %v", key, s.store, objstore.ErrAmbiguous, r)
		}
	}()
	opts := &blob.WriterOptions{ContentType: "application/json"}
	switch s.scheme {
	case "mem":
		s.casMu.Lock()
		defer s.casMu.Unlock()
		_, cur, err := s.readVersioned(ctx, key)
		if err != nil {
			if errors.Is(err, objstore.ErrObjectNotFound) {
				return fmt.Errorf("replace %s on %s: %w: object is gone", key, s.store, objstore.ErrPreconditionFailed)
			}
			return err
		}
		if cur != token {
			return fmt.Errorf("replace %s on %s: %w: version changed", key, s.store, objstore.ErrPreconditionFailed)
		}
	case "s3":
		opts.BeforeWrite = func(as func(any) bool) error {
			var in *transfermanager.UploadObjectInput
			if !as(&in) {
				return errors.New("s3blob: no UploadObjectInput to set If-Match on")
			}
			in.IfMatch = &token
			return nil
		}
	case "gs":
		gen, perr := strconv.ParseInt(token, 10, 64)
		if perr != nil {
			return fmt.Errorf("replace %s on %s: bad generation token %q", key, s.store, token)
		}
		opts.BeforeWrite = func(as func(any) bool) error {
			var oh **storage.ObjectHandle
			if !as(&oh) {
				return errors.New("gcsblob: no ObjectHandle to set a generation match on")
			}
			*oh = (*oh).If(storage.Conditions{GenerationMatch: gen})
			return nil
		}
	case "azblob":
		opts.BeforeWrite = func(as func(any) bool) error {
			var uo *azblob.UploadStreamOptions
			if !as(&uo) {
				return errors.New("azureblob: no UploadStreamOptions to set If-Match on")
			}
			etag := azcore.ETag(token)
			uo.AccessConditions = &azblob.AccessConditions{
				ModifiedAccessConditions: &azblobblob.ModifiedAccessConditions{IfMatch: &etag},
			}
			return nil
		}
	default:
		return fmt.Errorf("replace %s on %s: no conditional overwrite for scheme %q", key, s.store, s.scheme)
	}
	err = s.bucket.Upload(ctx, key, bytes.NewReader(data), opts)
	switch {
	case err == nil:
		return nil
	case objstore.Code(err) == gcerrors.FailedPrecondition || objstore.Code(err) == gcerrors.NotFound:
		return fmt.Errorf("replace %s on %s: %w", key, s.store, objstore.ErrPreconditionFailed)
	case isAmbiguousCode(objstore.Code(err)):
		return fmt.Errorf("replace %s on %s: %w: %w", key, s.store, objstore.ErrAmbiguous, err)
	default:
		return fmt.Errorf("replace %s on %s: %w", key, s.store, err)
	}
}

// contentToken versions stores without native version tokens: control
// objects carry a fresh nonce per write, so their hash names one write.
func contentToken(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
