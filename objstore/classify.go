package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"gocloud.dev/gcerrors"
	"google.golang.org/api/googleapi"
)

// Transient reports whether err is a failure worth retrying: the store
// answered 5xx, 429 or 408, throttled, or the connection failed, timed out,
// was reset or ended before the response (or its body) was complete.
// Errors that say something about the request or the object — not found,
// permission denied, a failed precondition, an invalid argument — are not
// transient, nor is the cancellation of the caller's own context.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	switch Code(err) {
	case gcerrors.NotFound, gcerrors.PermissionDenied, gcerrors.FailedPrecondition,
		gcerrors.InvalidArgument, gcerrors.AlreadyExists, gcerrors.Unimplemented:
		return false
	}
	// A 2xx with an error is a response whose body failed to arrive.
	if status, ok := httpStatus(err); ok && status >= 300 {
		return status >= 500 || status == 429 || status == 408
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	// SDKs flatten some transport failures into text.
	msg := strings.ToLower(err.Error())
	for _, s := range []string{
		"connection reset", "broken pipe", "unexpected eof", "use of closed network connection",
		"server closed idle connection", "connection refused", "timeout", "retry quota exceeded",
		"slowdown", "internalerror", "serviceunavailable", "http2: ",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Code is err's gcerrors code, read from the store's answer when the SDK
// could not name it: an error answer whose body was cut (or never parsed)
// leaves the S3 and Azure SDKs without the error code the body carries, and
// gocloud then says Unknown. The status line and headers arrived all the
// same, and they are enough: 412 is a failed precondition, 404 a missing
// object, 401 and 403 a refused permission, and Azure's x-ms-error-code
// header names a conflict (409 BlobAlreadyExists: the blob a conditional
// create found) and a missing blob. Any other status (an S3 409
// ConditionalRequestConflict among them) stays Unknown: the caller treats
// it as an outcome it does not know.
func Code(err error) gcerrors.ErrorCode {
	c := gcerrors.Code(err)
	if c != gcerrors.Unknown {
		return c
	}
	switch azureCode(err) {
	case "BlobAlreadyExists", "ConditionNotMet", "TargetConditionNotMet", "SourceConditionNotMet":
		return gcerrors.FailedPrecondition
	case "BlobNotFound":
		return gcerrors.NotFound
	}
	status, _ := httpStatus(err)
	switch status {
	case http.StatusPreconditionFailed:
		return gcerrors.FailedPrecondition
	case http.StatusNotFound:
		return gcerrors.NotFound
	case http.StatusUnauthorized, http.StatusForbidden:
		return gcerrors.PermissionDenied
	}
	return c
}

// azureCode is the x-ms-error-code of an Azure answer err carries, if any.
func azureCode(err error) string {
	var ae *azcore.ResponseError
	if errors.As(err, &ae) && ae.ErrorCode != "" {
		return ae.ErrorCode
	}
	var se *answerError
	if errors.As(err, &se) {
		return se.azureCode
	}
	return ""
}

// answerError is a store error that came back without the answer it
// stands for, with that answer's status and Azure error code added. Azure's
// pipeline reads an error answer's body before it builds its ResponseError;
// when that read fails it retries, and then returns the bare read error
// (unexpected EOF): the 412 or 404 before it is gone unless captured
// (policy.WithCaptureResponse), which every call through Wrap does.
type answerError struct {
	err       error
	status    int
	azureCode string
}

func (e *answerError) Error() string {
	if e.azureCode != "" {
		return fmt.Sprintf("%v (the store answered %d %s)", e.err, e.status, e.azureCode)
	}
	return fmt.Sprintf("%v (the store answered %d)", e.err, e.status)
}

func (e *answerError) Unwrap() error { return e.err }

// HTTPStatusCode is the status of the answer (the method smithy-go's
// errors have, so httpStatus finds it).
func (e *answerError) HTTPStatusCode() int { return e.status }

// captureAnswer returns ctx set to capture the last HTTP answer of the
// Azure SDK calls made with it, and a func that adds that answer to an
// error the SDK returned without it. Other stores ignore the capture.
func captureAnswer(ctx context.Context) (context.Context, func(error) error) {
	var resp *http.Response
	ctx = policy.WithCaptureResponse(ctx, &resp)
	return ctx, func(err error) error {
		if err == nil || resp == nil || resp.StatusCode < 300 {
			return err
		}
		if _, ok := httpStatus(err); ok || azureCode(err) != "" {
			return err
		}
		return &answerError{err: err, status: resp.StatusCode, azureCode: resp.Header.Get("x-ms-error-code")}
	}
}

// httpStatus finds the HTTP status of a store's error response, if any.
func httpStatus(err error) (int, bool) {
	var hs interface{ HTTPStatusCode() int } // smithy-go (S3)
	if errors.As(err, &hs) && hs.HTTPStatusCode() != 0 {
		return hs.HTTPStatusCode(), true
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) && ge.Code != 0 {
		return ge.Code, true
	}
	var ae *azcore.ResponseError
	if errors.As(err, &ae) && ae.StatusCode != 0 {
		return ae.StatusCode, true
	}
	return 0, false
}
