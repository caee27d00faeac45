package deletegate

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"gocloud.dev/blob"

	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/tablepath"
	"github.com/compactord/compactord/objstore"
)

// ErrRefused is wrapped by Delete when the gate refuses a key.
var ErrRefused = errors.New("delete refused")

// Kind is what a caller means to delete; each kind may delete only in its
// own places.
type Kind int

const (
	// Data is a data file, a deletion-vector file or a change-data file:
	// anywhere but under _delta_log/ and _compactord/.
	Data Kind = iota
	// Temp is the temp file of an interrupted write (attempt.IsTempLeftover),
	// anywhere but below _delta_log/'s own subdirectories.
	Temp
	// Log is a log file that log cleanup computed: a commit, checksum,
	// checkpoint or log compaction directly under _delta_log/, or a
	// sidecar under _delta_log/_sidecars/.
	Log
	// Record is one of compactord's own objects under _compactord/: an
	// intent record, a stored plan's objects, a probe's scratch object.
	Record
	// Output is an object an attempt of this process wrote and did not
	// commit (attempt.Objects.Clean): a data, DV or origin file, anywhere
	// but under _delta_log/.
	Output
)

func (k Kind) String() string {
	switch k {
	case Data:
		return "data"
	case Temp:
		return "temp"
	case Log:
		return "log"
	case Record:
		return "record"
	case Output:
		return "output"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Options configure a Gate.
type Options struct {
	// Table names the table in log lines (a redacted URL).
	Table string
	// Logger receives one warning per refusal; nil discards them.
	Logger hclog.Logger
	// LocalRoot is the directory of a local table: keys whose path passes
	// through a symbolic link below it are refused. "" for object stores.
	LocalRoot string
	// Referenced, when set, reports whether the table's latest snapshot
	// references a canonical key (a live file, a tombstone or one of their
	// deletion vectors): such a key is refused.
	Referenced func(key string) bool
}

// Gate deletes objects of one table's bucket (keys relative to the table
// root) after checking them. It is safe for concurrent use.
type Gate struct {
	bucket  *blob.Bucket
	opts    Options
	refused atomic.Int64
}

// New returns a gate over the bucket of a table (rooted at the table).
func New(b *blob.Bucket, opts Options) *Gate {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	return &Gate{bucket: b, opts: opts}
}

// Refused returns how many deletes the gate refused.
func (g *Gate) Refused() int64 { return g.refused.Load() }

// Delete deletes key, meant as an object of kind k, when the gate allows
// it. A refusal is logged, counted and returned wrapping ErrRefused; a
// store error is returned as the store gave it (a missing object keeps its
// gcerrors.NotFound code).
func (g *Gate) Delete(ctx context.Context, key string, k Kind) error {
	if reason := g.refuse(key, k); reason != "" {
		return fmt.Errorf("delete %q of %s: %w: %s", key, g.opts.Table, ErrRefused, reason)
	}
	return g.bucket.Delete(ctx, key)
}

// Allowed reports whether Delete would allow key as kind k; a refusal is
// logged and counted as Delete's are. Callers that list what they will
// delete before deleting it (a vacuum's candidates, a dry run) ask here
// first, so that what they report holds nothing the gate refuses.
func (g *Gate) Allowed(key string, k Kind) bool { return g.refuse(key, k) == "" }

func (g *Gate) refuse(key string, k Kind) string {
	reason := g.Check(key, k)
	if reason != "" {
		g.refused.Add(1)
		g.opts.Logger.Warn("refused to delete an object", "table", g.opts.Table, "object", key, "kind", k.String(), "reason", reason)
	}
	return reason
}

// Deleter returns the gate as an attempt.Deleter for objects of kind k.
func (g *Gate) Deleter(k Kind) attempt.Deleter { return kindDeleter{g: g, k: k} }

type kindDeleter struct {
	g *Gate
	k Kind
}

func (d kindDeleter) Delete(ctx context.Context, key string) error { return d.g.Delete(ctx, key, d.k) }

// logFile matches the names log cleanup deletes directly under _delta_log/:
// commits, checksums, classic, multi-part and UUID-named checkpoints, and
// log compactions, all beginning with a 20-digit version.
var logFile = regexp.MustCompile(`^[0-9]{20}\.(json|crc|checkpoint\.parquet|checkpoint\.[0-9]+\.[0-9]+\.parquet|checkpoint\.[0-9a-fA-F-]{36}\.(json|parquet)|[0-9]{20}\.compacted\.json)$`)

// Check returns why the gate refuses to delete key as kind k, or "" when
// it allows it. It does no I/O but for a local table's symlink check.
func (g *Gate) Check(key string, k Kind) string {
	if !tablepath.IsCanonical(key) {
		return "not a canonical key inside the table root (dot or empty segments, a leading slash, or climbing above the root)"
	}
	first, rest, _ := strings.Cut(key, "/")
	inLog := strings.EqualFold(first, "_delta_log")
	inOwn := strings.EqualFold(first, "_compactord")
	switch k {
	case Data:
		if inLog {
			return "under _delta_log/: only log cleanup deletes log files"
		}
		if inOwn {
			return "under _compactord/: not a data file"
		}
	case Temp:
		if !attempt.IsTempLeftover(key) {
			return "not the temp file of an interrupted write"
		}
		if inLog && (first != "_delta_log" || strings.Contains(rest, "/")) {
			return "a temp file below _delta_log/'s subdirectories (the DynamoDB log store's .tmp/ files repair commits)"
		}
	case Log:
		if first != "_delta_log" {
			return "log cleanup deletes only under _delta_log/"
		}
		if side, ok := strings.CutPrefix(rest, "_sidecars/"); ok {
			if side == "" || strings.Contains(side, "/") || !strings.HasSuffix(side, ".parquet") {
				return "not a sidecar file"
			}
		} else if !logFile.MatchString(rest) {
			return "not a commit, checksum, checkpoint or log compaction file"
		}
	case Record:
		if first != "_compactord" {
			return "compactord's records live only under _compactord/"
		}
	case Output:
		if inLog {
			return "under _delta_log/: an attempt's outputs never are"
		}
	default:
		return "unknown kind of object"
	}
	// The log references data files only: a file action naming a log
	// file or a record is hostile and must not pin it either.
	if (k == Data || k == Temp) && g.opts.Referenced != nil && g.opts.Referenced(key) {
		return "the table's latest snapshot references it"
	}
	if g.opts.LocalRoot != "" {
		if err := objstore.NoSymlinks(g.opts.LocalRoot)(key); err != nil {
			return err.Error()
		}
	}
	return ""
}

// LocalRootOf returns the directory of a file:// table URL, "" for any
// other URL: the Options.LocalRoot of the table's gate.
func LocalRootOf(tableURL string) string {
	u, err := url.Parse(tableURL)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || !strings.HasPrefix(u.Path, "/") {
		return ""
	}
	// u.Path is decoded: a table URL escapes characters such as "^" or
	// " " in its directory's name.
	return filepath.FromSlash(u.Path)
}

// Bucket returns the bucket the gate deletes from, for the listings its
// callers make.
func (g *Gate) Bucket() *blob.Bucket { return g.bucket }

// ForTable returns the gate of the table at tableURL over its bucket, with
// the local symlink check for file:// tables; opts.Table and
// opts.LocalRoot are filled in when empty.
func ForTable(b *blob.Bucket, tableURL string, opts Options) *Gate {
	if opts.Table == "" {
		opts.Table = tableURL
	}
	if opts.LocalRoot == "" {
		opts.LocalRoot = LocalRootOf(tableURL)
	}
	return New(b, opts)
}

// EndAttempt ends an attempt on the table at tableURL on every exit path:
// it deletes the objects the attempt wrote and no commit kept (as Output),
// then, when every one went, the attempt's intent record j (as a Record;
// j may be nil), both through the table's gate. A failed delete keeps the
// record for the sweep of dead records to retry once it is stale. It
// returns how many objects it deleted and the first clean error.
func EndAttempt(ctx context.Context, b *blob.Bucket, tableURL string, objs *attempt.Objects, j *attempt.Journal, log hclog.Logger) (int, error) {
	gate := ForTable(b, tableURL, Options{Logger: log})
	n, err := objs.Clean(ctx, gate.Deleter(Output))
	if j != nil {
		var remove attempt.Deleter
		if err == nil {
			remove = gate.Deleter(Record)
		}
		j.Finish(ctx, remove, log, tableURL)
	}
	return n, err
}
