package delta

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"

	"github.com/compactord/compactord/delta/actions"
	deltadv "github.com/compactord/compactord/delta/dv"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/tablepath"
)

// ErrDVOutsideRoot is wrapped by the error of a deletion vector whose `p`
// (absolute) path resolves outside the table root and outside every prefix
// the operator allowed (OpenOptions.AllowedExternalPrefixes): it is never
// opened, so a writer of one table cannot make compactord read another
// table's, bucket's or the host's files with its credentials.
var ErrDVOutsideRoot = failure.New(failure.Quarantine, "deletion vector path outside the table root; not read")

// location is an absolute storage location in canonical form: the scheme
// (lower case; s3a and s3n are s3), the host (bucket or container; empty
// for local files) and a clean absolute path, percent escapes decoded and
// `.`/`..` segments resolved, with no trailing slash but for the root "/".
type location struct {
	scheme, host, path string
}

// parseLocation canonicalizes the absolute URI raw (a table URL, an allowed
// prefix or a `p` deletion vector path): its escapes are decoded exactly
// once and its dot segments resolved before anything compares it, so that
// `file:///t/../etc` or `%2e%2e` cannot pass for a path under /t.
func parseLocation(raw string) (location, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return location{}, errors.New("not a URI")
	}
	if u.Scheme == "" || u.Opaque != "" {
		return location{}, errors.New("not an absolute URI")
	}
	l := location{scheme: strings.ToLower(u.Scheme), host: u.Host}
	switch l.scheme {
	case "s3a", "s3n":
		l.scheme = "s3"
	case "file":
		if l.host == "localhost" {
			l.host = ""
		}
		if l.host != "" {
			return location{}, errors.New("a file URI with a host")
		}
	}
	p := u.Path
	if p == "" {
		p = "/"
	}
	if !strings.HasPrefix(p, "/") {
		return location{}, errors.New("not an absolute path")
	}
	l.path = path.Clean(p)
	return l, nil
}

// within returns the key of l relative to the location root (a directory)
// and whether l lies strictly under it.
func (root location) within(l location) (string, bool) {
	if l.scheme != root.scheme || l.host != root.host {
		return "", false
	}
	dir := root.path
	if dir != "/" {
		dir += "/"
	}
	rel, ok := strings.CutPrefix(l.path, dir)
	return rel, ok && rel != ""
}

// String renders l as a URI, for errors.
func (l location) String() string {
	return (&url.URL{Scheme: l.scheme, Host: l.host, Path: l.path}).String()
}

// CheckAllowedPrefixes returns the error OpenTableWith would return for
// OpenOptions.AllowedExternalPrefixes, so that a command line can refuse a
// bad prefix before it opens anything.
func CheckAllowedPrefixes(prefixes []string) error {
	_, err := parseAllowedPrefixes(prefixes)
	return err
}

// parseAllowedPrefixes canonicalizes the operator's allowed prefixes for
// `p` deletion vectors.
func parseAllowedPrefixes(prefixes []string) ([]location, error) {
	out := make([]location, 0, len(prefixes))
	for _, p := range prefixes {
		l, err := parseLocation(p)
		if err != nil {
			return nil, fmt.Errorf("allowed external prefix %q: %v", p, err)
		}
		switch l.scheme {
		case "file", "s3", "gs", "azblob":
		default:
			return nil, fmt.Errorf("allowed external prefix %q: scheme %q is not supported (want file, s3, gs or azblob)", p, l.scheme)
		}
		out = append(out, l)
	}
	return out, nil
}

// dvLocation resolves an on-disk descriptor to a bucket and key: a `u`
// descriptor, and a `p` one inside the table root, are read from the
// table's bucket; a `p` one under an allowed prefix from a bucket rooted
// at that prefix (closeFn releases it); any other `p` one is refused with
// ErrDVOutsideRoot, before anything is opened.
func dvLocation(ctx context.Context, t *Table, dv *actions.DeletionVector) (*blob.Bucket, string, func(), error) {
	noop := func() {}
	if dv.StorageType == "u" {
		// DVFileKey resolves the random prefix as a relative directory
		// (tablepath): one that climbs out of the root is no prefix Spark
		// writes.
		key, err := deltadv.DVFileKey(dv.PathOrInlineDv)
		if errors.Is(err, tablepath.ErrOutside) {
			return nil, "", noop, fmt.Errorf("%w (the prefix of its relative path climbs out)", ErrDVOutsideRoot)
		}
		if err != nil {
			return nil, "", noop, fmt.Errorf("%w: %v", ErrCorruptDV, err)
		}
		return t.Bucket, key, noop, nil
	}
	// "p": an absolute, URL-encoded URI, related to the table root in the
	// one canonical form every path of the table takes (tablepath).
	l, err := parseLocation(dv.PathOrInlineDv)
	if err != nil {
		return nil, "", noop, fmt.Errorf("%w: the path of a `p` deletion vector is %v", ErrCorruptDV, err)
	}
	if root, err := tablepath.ParseRoot(t.URL); err == nil {
		if ref, err := root.Resolve(dv.PathOrInlineDv); err == nil && ref.Inside() {
			return t.Bucket, ref.Key, noop, nil
		}
	}
	for _, allowed := range t.dvAllowed {
		key, ok := allowed.within(l)
		if !ok {
			continue
		}
		b, err := openPrefix(ctx, allowed)
		if err != nil {
			return nil, "", noop, fmt.Errorf("open allowed external prefix %s: %w", allowed, err)
		}
		return b, key, func() { _ = b.Close() }, nil
	}
	return nil, "", noop, ErrDVOutsideRoot
}

// openPrefix opens a bucket rooted at the allowed location l, with the
// store's default credentials.
func openPrefix(ctx context.Context, l location) (*blob.Bucket, error) {
	if l.scheme == "file" {
		return fileblob.OpenBucket(l.path, &fileblob.Options{NoTempDir: true, Metadata: fileblob.MetadataDontWrite})
	}
	bu := &url.URL{Scheme: l.scheme, Host: l.host}
	var (
		b   *blob.Bucket
		err error
	)
	if l.scheme == "gs" {
		b, err = openGCSBucket(ctx, bu)
	} else {
		b, err = blob.OpenBucket(ctx, bu.String())
	}
	if err != nil {
		return nil, err
	}
	if prefix := strings.Trim(l.path, "/"); prefix != "" {
		b = blob.PrefixedBucket(b, prefix+"/")
	}
	return b, nil
}
