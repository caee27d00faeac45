package delta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/failure"
)

// LogDir is the key prefix of the Delta log inside a table.
const LogDir = "_delta_log/"

// sidecarDir is the key prefix of V2 checkpoint sidecar files.
const sidecarDir = LogDir + "_sidecars/"

// ErrVersionNotFound is wrapped by errors about a table version that does
// not exist (no commit file, or a version beyond the latest).
var ErrVersionNotFound = errors.New("table version not found")

// CommitKey returns the object key of the commit file of version v,
// "_delta_log/%020d.json".
func CommitKey(v int64) string { return fmt.Sprintf("%s%020d.json", LogDir, v) }

// logFileKind classifies a file in _delta_log/.
type logFileKind int

const (
	fileCommit       logFileKind = iota + 1 // NNN.json
	fileCheckpoint                          // NNN.checkpoint.parquet (classic, V1 or V2 content)
	fileMultiPart                           // NNN.checkpoint.PPP.TTT.parquet
	fileV2Checkpoint                        // NNN.checkpoint.<uuid>.json|parquet
	fileCompaction                          // XXX.YYY.compacted.json
)

// logFile is one listed file of the log.
type logFile struct {
	key     string
	kind    logFileKind
	version int64 // commit/checkpoint version; for compaction files the end version
	start   int64 // compaction: first version covered
	part    int   // multi-part: 1-based part number
	parts   int   // multi-part: number of parts
	size    int64
	modTime time.Time
}

// parseLogName classifies a file name (without the _delta_log/ prefix).
// ok is false for files that are not commits, checkpoints or compaction
// files (_last_checkpoint, .crc, temp files...).
func parseLogName(name string) (f logFile, ok bool) {
	if len(name) < 21 || name[20] != '.' {
		return f, false
	}
	v, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil || v < 0 {
		return f, false
	}
	f.version = v
	rest := name[21:]
	switch {
	case rest == "json":
		f.kind = fileCommit
		return f, true
	case rest == "checkpoint.parquet":
		f.kind = fileCheckpoint
		return f, true
	case strings.HasPrefix(rest, "checkpoint."):
		mid := strings.TrimPrefix(rest, "checkpoint.")
		if p, ok := strings.CutSuffix(mid, ".parquet"); ok && len(p) == 21 && p[10] == '.' {
			part, err1 := strconv.Atoi(p[:10])
			parts, err2 := strconv.Atoi(p[11:])
			if err1 == nil && err2 == nil && part >= 1 && part <= parts {
				f.kind, f.part, f.parts = fileMultiPart, part, parts
				return f, true
			}
			return f, false
		}
		for _, ext := range []string{".json", ".parquet"} {
			if id, ok := strings.CutSuffix(mid, ext); ok && id != "" && !strings.Contains(id, ".") {
				f.kind = fileV2Checkpoint
				return f, true
			}
		}
	case strings.HasSuffix(rest, ".compacted.json") && len(rest) == 20+len(".compacted.json"):
		end, err := strconv.ParseInt(rest[:20], 10, 64)
		if err == nil && end >= v {
			f.kind, f.start, f.version = fileCompaction, v, end
			return f, true
		}
	}
	return f, false
}

// listLog lists the commit, checkpoint and compaction files of the log in
// one LIST (the _sidecars/, _staged_commits/ and .tmp/ subdirectories are
// not descended into), after syncLog.
func listLog(ctx context.Context, t *Table) ([]logFile, error) {
	if _, err := syncLog(ctx, t); err != nil {
		return nil, err
	}
	var files []logFile
	err := listFlat(ctx, t.Bucket, LogDir, func() { files = nil }, func(obj *blob.ListObject) {
		if f, ok := parseLogName(strings.TrimPrefix(obj.Key, LogDir)); ok {
			f.key, f.size, f.modTime = obj.Key, obj.Size, obj.ModTime
			files = append(files, f)
		}
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool {
		if files[i].version != files[j].version {
			return files[i].version < files[j].version
		}
		return files[i].key < files[j].key
	})
	return files, nil
}

// LatestVersion returns the newest version of the table (the highest
// commit or checkpoint version in the log). It wraps ErrVersionNotFound
// when the log is empty.
func LatestVersion(ctx context.Context, t *Table) (int64, error) {
	files, err := listLog(ctx, t)
	if err != nil {
		return 0, fmt.Errorf("table %s: %w", t.URL, err)
	}
	latest := int64(-1)
	for _, f := range files {
		if f.kind != fileCompaction && f.version > latest {
			latest = f.version
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
// log store, the newest entry is asked first (one query). When neither v+1 nor
// v exists (log cleanup removed them since the caller saw v), it falls back
// to listing the log.
func HasNewer(ctx context.Context, t *Table, v int64) (bool, error) {
	if latest, err := syncLog(ctx, t); err != nil {
		return false, fmt.Errorf("table %s: %w", t.URL, err)
	} else if latest > v {
		return true, nil
	}
	ok, err := t.Bucket.Exists(ctx, CommitKey(v+1))
	if err != nil {
		return false, fmt.Errorf("table %s: check %s: %w", t.URL, CommitKey(v+1), err)
	}
	if ok || v < 0 {
		return ok, nil
	}
	ok, err = t.Bucket.Exists(ctx, CommitKey(v))
	if err != nil {
		return false, fmt.Errorf("table %s: check %s: %w", t.URL, CommitKey(v), err)
	}
	if ok {
		return false, nil
	}
	latest, err := LatestVersion(ctx, t)
	if err != nil {
		return false, err
	}
	return latest > v, nil
}

// ReadCommit reads and parses the commit file of version v. When the file
// does not exist the error wraps ErrVersionNotFound. Parse errors name the
// file and line.
func ReadCommit(ctx context.Context, t *Table, version int64) ([]deltaactions.Action, error) {
	actions, _, err := readCommit(ctx, t, version)
	return actions, err
}

// readCommit is ReadCommit that also returns the commit file's modification
// time (from the same read).
func readCommit(ctx context.Context, t *Table, version int64) ([]deltaactions.Action, time.Time, error) {
	key := CommitKey(version)
	notFound := func() error {
		return fmt.Errorf("table %s: version %d: %s: %w", t.URL, version, key, ErrVersionNotFound)
	}
	lim := t.limits()
	data, modTime, err := readBounded(ctx, t.Bucket, key, lim.LogFile, "LogFile")
	var tl *TooLargeError
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
	return parseActionLines(data, DefaultMaxLogLine)
}

// parseActionLines parses newline-delimited JSON actions (lines end in \n
// or \r\n); blank lines are skipped. Errors carry the 1-based line number;
// a line longer than maxLine bytes is a *TooLargeError.
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
			return nil, &TooLargeError{Line: n, Size: int64(len(line)), Field: "LogLine", Limit: maxLine}
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
