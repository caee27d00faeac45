package runner

import (
	"context"
	"errors"
	"io/fs"

	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/scheduler"
)

// A table that is not there yet (its directory does not exist, its
// _delta_log lists no commit) or that the store will not let compactord
// read (permission denied) is not a reason to halt: the operator may be
// about to create it, or to fix a grant. Poll and Run mark such errors
// scheduler.Unavailable, and the scheduler polls the table again with
// backoff until it can be read.

// refused reports whether err says the object or directory does not exist
// or access to it is refused.
func refused(err error) bool {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return true
	}
	switch gcerrors.Code(err) {
	case gcerrors.NotFound, gcerrors.PermissionDenied:
		return true
	}
	return false
}

// openUnavailable marks an error of opening a table as Unavailable when
// the table's place does not exist or cannot be read; any other (a bad
// URL, a path that is a file) is returned as it is.
func openUnavailable(err error) error {
	if refused(err) {
		return scheduler.Unavailable(err)
	}
	return err
}

// logUnavailable marks err, an error of reading t's log, as Unavailable
// when t's log lists no commit or cannot be listed: listed again, the log
// still has no version (logpath.ErrVersionNotFound from LatestVersion, which
// also carries a local _delta_log's permission error). An error of a log
// that has versions (a missing commit inside it, a corrupt checkpoint) is
// returned as it is.
func logUnavailable(ctx context.Context, t *delta.Table, err error) error {
	if err == nil || ctx.Err() != nil || !(errors.Is(err, logpath.ErrVersionNotFound) || refused(err)) {
		return err
	}
	if _, lerr := delta.LatestVersion(ctx, t); lerr != nil && (errors.Is(lerr, logpath.ErrVersionNotFound) || refused(lerr)) {
		return scheduler.Unavailable(err)
	}
	return err
}
