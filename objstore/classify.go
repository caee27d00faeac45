package objstore

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
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
	switch gcerrors.Code(err) {
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
