package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/memblob"

	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/delta/logstore"
	"github.com/compactord/compactord/internal/redact"
	"github.com/compactord/compactord/objstore"
)

// OpenOptions tune how OpenTableWith reaches the table's store.
type OpenOptions struct {
	// Store sets the deadlines and retries of every call to an object
	// store (s3, gs, azblob); zero fields take objstore.DefaultOptions.
	// Local and in-memory tables ignore it.
	Store objstore.Options
	// Logger receives the log store's warnings (a DynamoDB-coordinated
	// commit whose copy failed and is left to the next reader to repair);
	// nil discards them.
	Logger hclog.Logger
	// AfterLogEntry, when set, runs in the DynamoDB log store after a
	// commit's entry is put and before the commit is copied to N.json:
	// the point where a crashed writer leaves a decided but unpublished
	// commit. Tests use it to kill a writer there.
	AfterLogEntry func(ctx context.Context, key string)
	// AllowedExternalPrefixes are absolute URIs (file:///dir, s3://bucket/
	// prefix, gs://..., azblob://...; s3a and s3n mean s3) under which a
	// `p` deletion vector outside the table root may be read, with the
	// store's default credentials. Empty (the default): a `p` deletion
	// vector is read only inside the table root, and any other is refused
	// as corrupt (ErrDVOutsideRoot) without being opened.
	AllowedExternalPrefixes []string
	// Buckets, when set, shares one store client per bucket among the
	// object-store tables opened with it (a daemon's fleet); nil gives
	// each table its own.
	Buckets *BucketPool
	// Limits bound the size of a log line, a commit file and
	// _last_checkpoint (zero fields take the defaults, logstore.DefaultMaxLogLine
	// and the others).
	Limits logstore.ReadLimits
}

// OpenTable opens the Delta table at rawURL and chooses its log store by
// URL scheme:
//
//   - file:///abs/path, or a plain local path (made absolute): a fileblob
//     bucket rooted at the table directory, which must exist (OpenTable
//     never creates anything; CreateTable does), written
//     without ".attrs" sidecars and with temp files beside their targets;
//     commits use a hard-link put-if-absent because fileblob's IfNotExist
//     is not atomic.
//   - mem://name: a fresh, empty in-memory bucket private to the returned
//     Table (share the *Table to share the data).
//   - s3://bucket/prefix?endpoint=...&region=...&use_path_style=true,
//     gs://bucket/prefix, azblob://container/prefix: the gocloud driver for
//     the scheme, configured from the URL's query parameters; credentials
//     come only from each SDK's default chain. The path is the table root
//     inside the bucket.
//   - s3://...&log_store=dynamodb&dynamodb_table=NAME: commits go through
//     Delta's S3DynamoDBLogStore protocol (the DynamoDB table, default
//     "delta_log", provides the mutual exclusion), for tables that Spark
//     writers configured with that log store share. Optional
//     dynamodb_region (default us-east-1, Delta's default, whatever
//     AWS_REGION says), dynamodb_endpoint (else the SDK's chain, including
//     AWS_ENDPOINT_URL_DYNAMODB), and dynamodb_scheme (s3a, the default, s3
//     or s3n) or dynamodb_table_path: the entries' key is the table path
//     with the scheme the Spark writers use, and a different scheme is a
//     different key, so a wrong one silently disables mutual exclusion.
//
// The returned Table's Bucket is rooted at the table directory, so its keys
// are relative ("_delta_log/00000000000000000000.json"). The caller must
// Close the Table. Object-store calls have objstore's default deadlines and
// retries (OpenTableWith sets others).
func OpenTable(ctx context.Context, rawURL string) (*Table, error) {
	return OpenTableWith(ctx, rawURL, OpenOptions{})
}

// OpenTableWith is OpenTable with options.
func OpenTableWith(ctx context.Context, rawURL string, opts OpenOptions) (*Table, error) {
	if err := opts.Store.Validate(); err != nil {
		return nil, fmt.Errorf("open table %q: %w", redact.URL(rawURL), redact.Error(err))
	}
	allowed, err := parseAllowedPrefixes(opts.AllowedExternalPrefixes)
	if err != nil {
		return nil, fmt.Errorf("open table %q: %w", rawURL, err)
	}
	u, err := parseTableURL(rawURL)
	if err != nil {
		return nil, err
	}
	var t *Table
	switch u.Scheme {
	case "file":
		t, err = openFileTable(u, false)
	case "mem":
		t, err = openMemTable(u)
	case "s3", "gs", "azblob":
		t, err = openObjectTable(ctx, u, opts)
	default:
		return nil, fmt.Errorf("open table %q: unsupported URL scheme %q (want file, mem, s3, gs or azblob)", redact.URL(rawURL), u.Scheme)
	}
	if err != nil {
		return nil, err
	}
	t.dvAllowed = allowed
	t.Limits = opts.Limits
	return t, nil
}

// CreateTable is OpenTable for a table that is about to be written for the
// first time: a local table's directory (and its parents) is created if
// missing. Object-store and in-memory URLs behave exactly as in OpenTable,
// since their prefixes need no creating.
func CreateTable(ctx context.Context, rawURL string) (*Table, error) {
	u, err := parseTableURL(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "file" {
		return openFileTable(u, true)
	}
	return OpenTable(ctx, rawURL)
}

// Close releases the table's bucket and any other resources OpenTable
// acquired. It is safe to call more than once.
func (t *Table) Close() error {
	if t == nil {
		return nil
	}
	var errs []error
	for i := len(t.closers) - 1; i >= 0; i-- {
		if err := t.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	t.closers = nil
	if t.closeBucket {
		t.closeBucket = false
		if err := t.Bucket.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close table %s: %w", t.Name(), err)
	}
	return nil
}

// Name is the table's URL as messages, pages and logs show it: URL with its
// userinfo and credential parameters redacted (package redact).
func (t *Table) Name() string {
	if t == nil {
		return "<nil>"
	}
	return redact.URL(t.URL)
}

// CheckPutIfAbsent verifies that the table's store honours put-if-absent.
// On object stores it writes a scratch object under "_compactord/" twice
// with a conditional create and returns an error wrapping logstore.ErrNoPutIfAbsent,
// naming the store, when the second write succeeds; the first commit runs
// the same check, so the daemon calls this only to fail fast at startup.
// Local and in-memory tables pass by construction (link(2), a locked map).
func (t *Table) CheckPutIfAbsent(ctx context.Context) error {
	if p, ok := t.Log.(interface{ Probe(context.Context) error }); ok {
		return p.Probe(ctx)
	}
	return nil
}

// parseTableURL turns rawURL into a URL, treating anything without a scheme
// as a local path.
func parseTableURL(rawURL string) (*url.URL, error) {
	if rawURL == "" {
		return nil, errors.New("open table: empty table URL")
	}
	if !strings.Contains(rawURL, "://") {
		abs, err := filepath.Abs(rawURL)
		if err != nil {
			return nil, fmt.Errorf("open table %q: %w", redact.URL(rawURL), redact.Error(err))
		}
		return &url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open table %q: %w", redact.URL(rawURL), redact.Error(err))
	}
	return u, nil
}

func openFileTable(u *url.URL, create bool) (*Table, error) {
	if u.Host != "" && u.Host != "localhost" {
		return nil, fmt.Errorf("open table %s: file URLs must be file:///absolute/path (host %q not supported)", redact.URL(u.String()), u.Host)
	}
	if u.RawQuery != "" {
		return nil, fmt.Errorf("open table %s: file URLs take no query parameters", redact.URL(u.String()))
	}
	dir := filepath.Clean(filepath.FromSlash(u.Path))
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("open table %s: path %q is not absolute", redact.URL(u.String()), u.Path)
	}
	if create {
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return nil, fmt.Errorf("create table %s: %w", dir, err)
		}
	}
	// Read-only commands must not leave a directory behind for a mistyped
	// path, so a missing table directory is an error naming it.
	fi, err := os.Stat(dir)
	if err != nil {
		// The URL names the path already: keep the system's reason, not
		// the path a second time (errors.Is still sees fs.ErrNotExist).
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Path == dir {
			err = pe.Err
		}
		return nil, fmt.Errorf("open table %s: %w", redact.URL(u.String()), err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("open table %s: %s is not a directory", redact.URL(u.String()), dir)
	}
	b, err := fileblob.OpenBucket(dir, &fileblob.Options{
		NoTempDir: true,
		Metadata:  fileblob.MetadataDontWrite,
	})
	if err != nil {
		return nil, fmt.Errorf("open table %s: %w", redact.URL(u.String()), err)
	}
	canon := (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
	// No call follows a symbolic link below the table directory: a link
	// planted in the table could lead reads, writes and deletes out of it.
	b = objstore.Guard(b, objstore.NoSymlinks(dir))
	return &Table{
		URL:         canon,
		Bucket:      b,
		Log:         logstore.NewLocal(dir),
		closeBucket: true,
	}, nil
}

func openMemTable(u *url.URL) (*Table, error) {
	for p := range u.Query() {
		if p != "nomd5" {
			return nil, fmt.Errorf("open table %s: unsupported query parameter %q", redact.URL(u.String()), p)
		}
	}
	t, _ := bucketTable(u, memblob.OpenBucket(&memblob.Options{NoMD5: u.Query().Has("nomd5")}), false)
	return t, nil
}

func openObjectTable(ctx context.Context, u *url.URL, opts OpenOptions) (*Table, error) {
	if u.Host == "" {
		return nil, fmt.Errorf("open table %s: missing bucket name", redact.URL(u.String()))
	}
	bucketURL := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawQuery: u.RawQuery}
	ddb, err := logstore.SplitParams(&bucketURL)
	if err != nil {
		return nil, err
	}
	bucketURL.Path = ""
	open := func() (*blob.Bucket, error) {
		if u.Scheme == "gs" {
			return openGCSBucket(ctx, &bucketURL)
		}
		return blob.OpenBucket(ctx, bucketURL.String())
	}
	var b *blob.Bucket
	var release func() error
	if opts.Buckets != nil {
		b, release, err = opts.Buckets.acquire(bucketURL.String(), open)
	} else {
		b, err = open()
	}
	if err != nil {
		return nil, fmt.Errorf("open table %s: %w", redact.URL(u.String()), redact.Error(err))
	}
	// Every call below gets deadlines and retries of transient failures.
	t, s3 := bucketTable(u, objstore.Wrap(b, opts.Store), true)
	if release != nil {
		// The table's wrappers hold nothing of their own: closing it
		// releases its share of the client.
		t.closeBucket, t.closers = false, []func() error{release}
	}
	if ddb != nil {
		if t.Log, err = logstore.NewDynamo(ctx, s3, ddb, logstore.DynamoOptions{Store: opts.Store, Logger: opts.Logger, AfterLogEntry: opts.AfterLogEntry, Limits: opts.Limits}); err != nil {
			_ = t.Close()
			return nil, fmt.Errorf("open table %s: %w", redact.URL(u.String()), redact.Error(err))
		}
	}
	return t, nil
}

// bucketTable is the table at u's path inside bucket b, its log kept in the
// same bucket by the returned store; probe says whether that store checks
// on first write that the bucket honours conditional puts (see
// logstore.NewBlob).
func bucketTable(u *url.URL, b *blob.Bucket, probe bool) (*Table, *logstore.Blob) {
	if prefix := strings.Trim(u.Path, "/"); prefix != "" {
		b = blob.PrefixedBucket(b, prefix+"/")
	}
	log := logstore.NewBlob(b, u.Scheme, logstore.StoreName(u), probe)
	return &Table{
		URL:         u.String(),
		Bucket:      b,
		Log:         log,
		closeBucket: true,
	}, log
}

// NoCommitsError looks into at most maxSubdirsChecked subdirectories for
// a _delta_log and names at most maxTableHints tables.
const (
	maxSubdirsChecked = 20
	maxTableHints     = 3
)

// NoCommitsError is the error of a table whose log lists no commit and no
// checkpoint. It says why where it can: a local _delta_log that cannot be
// read fails with the system's reason (a local listing skips what it
// cannot read, so an unreadable log lists empty), which wraps the
// os.PathError; otherwise the error wraps logpath.ErrVersionNotFound and, when the
// URL is a table's _delta_log itself or a directory whose subdirectories
// hold tables, asks "did you mean" with the table URLs.
func NoCommitsError(ctx context.Context, t *Table) error {
	if l, ok := t.Log.(*logstore.Local); ok {
		dir := filepath.Join(l.Dir(), filepath.FromSlash(logpath.LogDir))
		if _, err := os.ReadDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("table %s: cannot read %s: %w", t.Name(), logpath.LogDir, err)
		}
	}
	msg := fmt.Sprintf("table %s: no commits or checkpoints in %s", t.Name(), logpath.LogDir)
	if hint := tableHint(ctx, t); hint != "" {
		return fmt.Errorf("%s (not a Delta table: %s): %w", msg, hint, logpath.ErrVersionNotFound)
	}
	return fmt.Errorf("%s (not a Delta table?): %w", msg, logpath.ErrVersionNotFound)
}

// tableHint names the table(s) the user probably meant: the parent of a
// URL that ends in _delta_log, or subdirectories of the root that hold a
// _delta_log. "" when it finds none.
func tableHint(ctx context.Context, t *Table) string {
	u, err := url.Parse(t.URL)
	if err != nil {
		return ""
	}
	clean := strings.TrimSuffix(u.Path, "/")
	if path.Base(clean) == strings.TrimSuffix(logpath.LogDir, "/") {
		p := *u
		p.Path = path.Dir(clean)
		return fmt.Sprintf("this is a table's log; did you mean %s?", redact.URL(p.String()))
	}
	var subs []string
	err = List(ctx, t.Bucket, &blob.ListOptions{Delimiter: "/"}, func() { subs = nil }, func(obj *blob.ListObject) {
		if obj.IsDir && len(subs) < maxSubdirsChecked && obj.Key != logpath.LogDir {
			subs = append(subs, obj.Key)
		}
	})
	if err != nil {
		return ""
	}
	var tables []string
	for _, sub := range subs {
		if len(tables) == maxTableHints || ctx.Err() != nil {
			break
		}
		if hasLog(ctx, t.Bucket, sub+logpath.LogDir) {
			p := *u
			p.Path = path.Join(clean, sub)
			tables = append(tables, redact.URL(p.String()))
		}
	}
	switch len(tables) {
	case 0:
		return ""
	case 1:
		return "a table is under it; did you mean " + tables[0] + "?"
	}
	return "tables are under it; did you mean one of " + strings.Join(tables, ", ") + "?"
}

// hasLog reports whether anything is stored under prefix.
func hasLog(ctx context.Context, b *blob.Bucket, prefix string) bool {
	it := b.List(&blob.ListOptions{Prefix: prefix})
	_, err := it.Next(ctx)
	return err == nil
}
