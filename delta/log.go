package delta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/delta/logstore"
	"github.com/compactord/compactord/failure"
)

// listLog lists the commit, checkpoint and compaction files of the log in
// one LIST (the _sidecars/, _staged_commits/ and .tmp/ subdirectories are
// not descended into), after syncLog.
func listLog(ctx context.Context, t *Table) ([]logpath.File, error) {
	if _, err := syncLog(ctx, t); err != nil {
		return nil, err
	}
	var files []logpath.File
	err := listFlat(ctx, t.Bucket, logpath.LogDir, func() { files = nil }, func(obj *blob.ListObject) {
		if f, ok := logpath.Parse(strings.TrimPrefix(obj.Key, logpath.LogDir)); ok {
			f.Key, f.Size, f.ModTime = obj.Key, obj.Size, obj.ModTime
			files = append(files, f)
		}
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool {
		if files[i].Version != files[j].Version {
			return files[i].Version < files[j].Version
		}
		return files[i].Key < files[j].Key
	})
	return files, nil
}

// LatestVersion returns the newest version of the table (the highest
// commit or checkpoint version in the log). It wraps logpath.ErrVersionNotFound
// when the log is empty.
func LatestVersion(ctx context.Context, t *Table) (int64, error) {
	files, err := listLog(ctx, t)
	if err != nil {
		return 0, fmt.Errorf("table %s: %w", t.URL, err)
	}
	latest := int64(-1)
	for _, f := range files {
		if f.Kind != logpath.Compaction && f.Version > latest {
			latest = f.Version
		}
	}
	if latest < 0 {
		return 0, NoCommitsError(ctx, t)
	}
	return latest, nil
}

// HasNewer reports whether the table has a version newer than v. Versions
// are contiguous, so this is an existence check of commit v+1 (one HEAD
// request on object stores), cheap enough for pollers; with the DynamoDB
// log store, the newest entry is asked first (one query).
//
// A missing v+1 alone does not prove v is the newest: log cleanup may have
// removed v+1 (and v) since the caller saw v. So HasNewer also checks that v
// still exists, and when neither does it falls back to listing the log.
// That second check is skipped while the table handle's own last finding
// that v was the newest (by HasNewer, by a LoadSnapshot of the latest
// version, or by Advance reading up to v) is recent (newestSeen.window:
// half the log retention, at most an hour): a commit written after
// that finding and already removed would have to be older than the
// table's log retention, which is how old a commit must be before any
// Delta log cleanup deletes it. A poller calling every few minutes thus
// pays one request per call for a table that does not change.
func HasNewer(ctx context.Context, t *Table, v int64) (bool, error) {
	asked := t.clock()
	ok, err := nextCommitExists(ctx, t, v)
	if err != nil {
		return false, err
	}
	if ok || v < 0 {
		return ok, nil
	}
	if t.newest.trusted(v, asked) {
		t.newest.found(v, asked)
		return false, nil
	}
	ok, err = t.Bucket.Exists(ctx, logpath.CommitKey(v))
	if err != nil {
		return false, fmt.Errorf("table %s: check %s: %w", t.URL, logpath.CommitKey(v), err)
	}
	if ok {
		t.newest.found(v, asked)
		return false, nil
	}
	latest, err := LatestVersion(ctx, t)
	if err != nil {
		return false, err
	}
	return latest > v, nil
}

// nextCommitExists reports whether commit v+1 exists: one existence check
// (one HEAD request on object stores; with the DynamoDB log store, one
// query of its newest entry first).
func nextCommitExists(ctx context.Context, t *Table, v int64) (bool, error) {
	if latest, err := syncLog(ctx, t); err != nil {
		return false, fmt.Errorf("table %s: %w", t.URL, err)
	} else if latest > v {
		return true, nil
	}
	ok, err := t.Bucket.Exists(ctx, logpath.CommitKey(v+1))
	if err != nil {
		return false, fmt.Errorf("table %s: check %s: %w", t.URL, logpath.CommitKey(v+1), err)
	}
	return ok, nil
}

// ReadCommit reads and parses the commit file of version v. When the file
// does not exist the error wraps logpath.ErrVersionNotFound. Parse errors name the
// file and line.
func ReadCommit(ctx context.Context, t *Table, version int64) ([]deltaactions.Action, error) {
	actions, _, err := readCommit(ctx, t, version)
	return actions, err
}

// readCommit is ReadCommit that also returns the commit file's modification
// time (from the same read).
func readCommit(ctx context.Context, t *Table, version int64) ([]deltaactions.Action, time.Time, error) {
	key := logpath.CommitKey(version)
	notFound := func() error {
		return fmt.Errorf("table %s: version %d: %s: %w", t.URL, version, key, logpath.ErrVersionNotFound)
	}
	lim := t.limits()
	data, modTime, err := logstore.ReadBounded(ctx, t.Bucket, key, lim.LogFile, "LogFile")
	var tl *logstore.TooLargeError
	switch {
	case errors.As(err, &tl):
		return nil, time.Time{}, fmt.Errorf("table %s: %w", t.URL, corruptLog(failure.Commit, key, err))
	case gcerrors.Code(err) == gcerrors.NotFound:
		return nil, time.Time{}, notFound()
	case err != nil:
		return nil, time.Time{}, fmt.Errorf("table %s: read %s: %w", t.URL, key, err)
	}
	actions, err := parseActionLines(data, lim.LogLine)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("table %s: %w", t.URL, corruptLog(failure.Commit, key, err))
	}
	return actions, modTime, nil
}

// ParseCommit parses the content of a commit file (N.json) as ReadCommit
// does with the default limits: newline-delimited JSON actions, blank lines
// skipped.
func ParseCommit(data []byte) ([]deltaactions.Action, error) {
	return parseActionLines(data, logstore.DefaultMaxLogLine)
}

// parseActionLines parses newline-delimited JSON actions (lines end in \n
// or \r\n); blank lines are skipped. Errors carry the 1-based line number;
// a line longer than maxLine bytes is a *logstore.TooLargeError.
func parseActionLines(data []byte, maxLine int64) ([]deltaactions.Action, error) {
	actions := make([]deltaactions.Action, 0, bytes.Count(data, []byte{'\n'})+1)
	for n := 1; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if int64(len(line)) > maxLine {
			return nil, &logstore.TooLargeError{Line: n, Size: int64(len(line)), Field: "LogLine", Limit: maxLine}
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		a, err := deltaactions.ParseAction(line)
		if err == nil {
			err = checkFileAction(&a)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		actions = append(actions, a)
	}
	return actions, nil
}
