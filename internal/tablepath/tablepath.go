package tablepath

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
)

// ErrOutside is wrapped by Key when a path resolves outside the table root
// (an absolute URI elsewhere, or ".." climbing above the root).
var ErrOutside = errors.New("path resolves outside the table root")

// ErrUnrelatable is wrapped by Resolve when an absolute URI uses a scheme
// that cannot be related to the table root (another URI form of a store,
// such as abfss:// for an azblob:// table): such a path might name a file
// inside the table, so callers that delete must not guess.
var ErrUnrelatable = errors.New("absolute path whose scheme cannot be related to the table root")

// Root is a table root: the scheme, host and cleaned path of its URL.
type Root struct {
	scheme string
	host   string
	path   string // cleaned, no slash at either end; "" for a bucket's root
}

// ParseRoot returns the root of the table at tableURL (file:///abs,
// s3://bucket/prefix, gs://..., azblob://..., mem://name). The query is
// ignored.
func ParseRoot(tableURL string) (Root, error) {
	u, err := url.Parse(tableURL)
	if err != nil || u.Scheme == "" {
		return Root{}, errors.New("table root: not a URL with a scheme")
	}
	p, ok := cleanSegments(u.Path)
	if !ok {
		return Root{}, errors.New("table root: its path climbs above the store's root")
	}
	return Root{scheme: foldScheme(u.Scheme), host: u.Host, path: p}, nil
}

// Ref is where one path resolved.
type Ref struct {
	// Key is the object key relative to the table root, in canonical form
	// (see Clean), when the path lies inside the root; "" otherwise.
	Key string
	// Outside is the resolved location of a path outside the root (an
	// absolute URI, or the relative path that climbed above the root).
	Outside string
}

// Inside reports whether the path resolved inside the table root.
func (r Ref) Inside() bool { return r.Outside == "" }

// Resolve resolves a file action's path (URL-encoded, as in the log)
// against the root. Relative paths are decoded once and cleaned; a path
// that begins with "/" is an absolute path in the table's own store (as
// Hadoop reads it); a URI with a scheme is related to the root by scheme
// (s3a, s3n fold to s3), host and path. A path of another scheme than the
// root's is outside for file:// and mem:// roots and local paths on object
// stores; an object-store URI of an unknown scheme wraps ErrUnrelatable.
// A path that does not decode is an error.
func (r Root) Resolve(logPath string) (Ref, error) {
	if !hasScheme(logPath) {
		dec, err := url.PathUnescape(logPath)
		if err != nil {
			return Ref{}, fmt.Errorf("path %q: not a valid URI path: %w", logPath, err)
		}
		if strings.HasPrefix(dec, "/") {
			return r.relate(dec, logPath), nil
		}
		k, ok := cleanSegments(dec)
		if !ok || k == "" {
			return Ref{Outside: logPath}, nil
		}
		return Ref{Key: k}, nil
	}
	u, err := url.Parse(logPath)
	if err != nil {
		return Ref{}, fmt.Errorf("path %q: not a valid URI: %w", logPath, err)
	}
	scheme := foldScheme(u.Scheme)
	switch {
	case scheme == r.scheme:
		if u.Host != r.host && !(scheme == "file" && (u.Host == "" || u.Host == "localhost") && (r.host == "" || r.host == "localhost")) {
			return Ref{Outside: logPath}, nil
		}
		return r.relate(u.Path, logPath), nil
	case scheme == "file" || r.scheme == "file" || r.scheme == "mem" || scheme == "mem":
		return Ref{Outside: logPath}, nil
	default:
		return Ref{}, fmt.Errorf("path %q uses URI scheme %q for a %s:// table: %w", logPath, u.Scheme, r.scheme, ErrUnrelatable)
	}
}

// relate places a decoded absolute path of the root's store.
func (r Root) relate(decodedPath, logPath string) Ref {
	p, ok := cleanSegments(decodedPath)
	if !ok {
		return Ref{Outside: logPath}
	}
	if r.path == "" {
		if p == "" {
			return Ref{Outside: logPath}
		}
		return Ref{Key: p}
	}
	if rel, ok := strings.CutPrefix(p, r.path+"/"); ok && rel != "" {
		return Ref{Key: rel}
	}
	return Ref{Outside: logPath}
}

// ReplayKey returns the key under which log replay and conflict checks
// match a file action's path: its canonical key when it resolves inside the
// root, so that "part-1.parquet", "part%2D1.parquet", "./part-1.parquet"
// and "s3://bucket/table/part-1.parquet" name one file (as Spark's replay
// qualifies every path before it matches them); otherwise the path as
// written behind a NUL byte, which no key holds, so that an outside or
// undecodable path matches only itself. A path already canonical is
// returned as it is, without allocating.
func (r Root) ReplayKey(logPath string) string {
	if isPlainKey(logPath) {
		return logPath
	}
	ref, err := r.Resolve(logPath)
	if err != nil || !ref.Inside() {
		return "\x00" + logPath
	}
	return ref.Key
}

// isPlainKey reports whether a log path is its own canonical key: relative,
// nothing to decode, no dot or empty segments, no slash at either end. It
// runs for every file action of a log replay, so it only searches bytes
// (a few names with a "./" inside a segment take the slow path, which
// gives them the same key).
func isPlainKey(p string) bool {
	switch {
	case p == "" || p == "." || p == "..":
		return false
	case p[0] == '/' || p[len(p)-1] == '/' || p[len(p)-1] == '.' && (strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..")):
		return false
	case strings.IndexByte(p, '%') >= 0 || strings.IndexByte(p, ':') >= 0 || strings.IndexByte(p, 0) >= 0:
		return false
	}
	return !strings.Contains(p, "//") && !strings.Contains(p, "./")
}

// Key is Resolve for a path that must lie inside the root: a path outside
// is an error wrapping ErrOutside, naming the path.
func (r Root) Key(logPath string) (string, error) {
	ref, err := r.Resolve(logPath)
	if err != nil {
		return "", err
	}
	if !ref.Inside() {
		return "", fmt.Errorf("path %q: %w", logPath, ErrOutside)
	}
	return ref.Key, nil
}

// RelativeKey resolves a path that carries no scheme and no leading "/"
// against any root: the canonical key of a relative file action path
// (decoded once, cleaned). A URI, an absolute path or a path climbing
// above the root wraps ErrOutside.
func RelativeKey(logPath string) (string, error) {
	if hasScheme(logPath) || strings.HasPrefix(logPath, "/") {
		return "", fmt.Errorf("path %q is absolute: %w", logPath, ErrOutside)
	}
	dec, err := url.PathUnescape(logPath)
	if err != nil {
		return "", fmt.Errorf("path %q: not a valid URI path: %w", logPath, err)
	}
	if strings.HasPrefix(dec, "/") {
		return "", fmt.Errorf("path %q is absolute: %w", logPath, ErrOutside)
	}
	k, ok := cleanSegments(dec)
	if !ok || k == "" {
		return "", fmt.Errorf("path %q: %w", logPath, ErrOutside)
	}
	return k, nil
}

// Clean returns the canonical form of an object key relative to the root
// (already decoded, as a listing or an intent record holds it): "." and
// empty segments dropped, ".." resolved. ok is false when the key climbs
// above the root or is empty. A key is canonical when Clean returns it
// unchanged.
func Clean(key string) (string, bool) {
	if strings.HasPrefix(key, "/") {
		return "", false
	}
	k, ok := cleanSegments(key)
	return k, ok && k != ""
}

// IsCanonical reports whether key is its own canonical form: relative,
// inside the root, without ".", ".." or empty segments.
func IsCanonical(key string) bool {
	k, ok := Clean(key)
	return ok && k == key
}

// cleanSegments resolves the dot segments of p and drops its empty ones,
// returning it without slashes at the ends; ok is false when ".." climbs
// above the start. A NUL byte is never part of a key.
func cleanSegments(p string) (string, bool) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", false
	}
	if !strings.Contains(p, "//") && !strings.Contains(p, "./") && !strings.HasSuffix(p, "/.") && !strings.HasSuffix(p, "/..") && p != "." && p != ".." {
		// The common case: already clean but for slashes at the ends.
		return strings.Trim(p, "/"), true
	}
	var out []string
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
		case "..":
			if len(out) == 0 {
				return "", false
			}
			out = out[:len(out)-1]
		default:
			out = append(out, s)
		}
	}
	return path.Join(out...), true
}

// hasScheme reports whether p is an absolute URI: a scheme (a letter,
// then letters, digits, "+", "-" or ".") followed by "://", or a "file:/"
// path as Hadoop writes it. Anything else is a relative path, including
// names with a ":" ("a:b" is a legal object key; Spark encodes it as
// "a%3Ab").
func hasScheme(p string) bool {
	if strings.HasPrefix(p, "file:/") {
		return true
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		case c == ':' && i > 0:
			return strings.HasPrefix(p[i:], "://")
		default:
			return false
		}
	}
	return false
}

// foldScheme names the store a scheme reaches: s3a and s3n are s3.
func foldScheme(s string) string {
	s = strings.ToLower(s)
	switch s {
	case "s3a", "s3n":
		return "s3"
	}
	return s
}
