package events

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/compactord/compactord/internal/tablepath"
)

// Table is one watched table: its name in the policy set and its URL.
type Table struct {
	Name string
	URL  string
}

// Match is where an object landed in the watched tables.
type Match struct {
	// Table is the name of the table whose root is the object's longest
	// prefix ("" when the object is outside every watched table).
	Table string
	// Key is the object's key relative to that table's root, canonical
	// (internal/tablepath).
	Key string
	// Commit is set when Key is a commit of the table's log
	// (_delta_log/NNNNNNNNNNNNNNNNNNNN.json).
	Commit bool
}

// commitKey is a Delta commit file's key relative to the table root.
var commitKey = regexp.MustCompile(`^_delta_log/[0-9]{20}\.json$`)

// Index maps objects onto the watched tables of the stores events come
// from (s3, gs and azblob URLs; other tables are never matched). It is
// immutable: a reload builds a new one.
type Index struct {
	// roots maps scheme, then bucket, then the canonical root path ("" for
	// a bucket's root) onto the table there.
	roots map[string]map[string]map[string]indexed
	size  int
}

type indexed struct {
	name string
	root tablepath.Root
}

// NewIndex indexes tables. Tables of other schemes are left out; two
// tables at one root keep the first (the policy set refuses that anyway).
func NewIndex(tables []Table) (*Index, error) {
	ix := &Index{roots: map[string]map[string]map[string]indexed{}}
	for _, t := range tables {
		u, err := url.Parse(t.URL)
		if err != nil {
			return nil, fmt.Errorf("table %s: url: %w", t.Name, err)
		}
		scheme := strings.ToLower(u.Scheme)
		if scheme == "s3a" || scheme == "s3n" {
			scheme = "s3"
		}
		switch Store(scheme) {
		case StoreS3, StoreGCS, StoreAzure:
		default:
			continue
		}
		root, err := tablepath.ParseRoot(t.URL)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", t.Name, err)
		}
		p, err := canonical(scheme, u.Host, u.EscapedPath())
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", t.Name, err)
		}
		byBucket := ix.roots[scheme]
		if byBucket == nil {
			byBucket = map[string]map[string]indexed{}
			ix.roots[scheme] = byBucket
		}
		byPath := byBucket[u.Host]
		if byPath == nil {
			byPath = map[string]indexed{}
			byBucket[u.Host] = byPath
		}
		if _, dup := byPath[p]; !dup {
			byPath[p] = indexed{name: t.Name, root: root}
			ix.size++
		}
	}
	return ix, nil
}

// Len is the number of tables indexed.
func (ix *Index) Len() int { return ix.size }

// canonical is the canonical form of an escaped path in a bucket, relative
// to the bucket's root ("" for the root itself), through tablepath.
func canonical(scheme, bucket, escapedPath string) (string, error) {
	br, err := tablepath.ParseRoot(scheme + "://" + bucket)
	if err != nil {
		return "", err
	}
	if strings.Trim(escapedPath, "/") == "" {
		return "", nil
	}
	ref, err := br.Resolve("/" + strings.TrimLeft(escapedPath, "/"))
	if err != nil {
		return "", err
	}
	if !ref.Inside() {
		return "", fmt.Errorf("path %q: %w", escapedPath, tablepath.ErrOutside)
	}
	return ref.Key, nil
}

// Lookup finds the watched table whose root is the longest prefix of the
// object's key. The key is canonicalised first (a key that climbs out of
// its bucket matches nothing), and the match is checked again against the
// table's root by tablepath, which also gives the relative key.
func (ix *Index) Lookup(o Object) Match {
	byPath := ix.roots[string(o.Store)][o.Bucket]
	if byPath == nil || o.Key == "" {
		return Match{}
	}
	escaped := (&url.URL{Path: "/" + o.Key}).EscapedPath()
	key, err := canonical(string(o.Store), o.Bucket, escaped)
	if err != nil || key == "" {
		return Match{}
	}
	prefix := key
	for {
		i := strings.LastIndexByte(prefix, '/')
		if i < 0 {
			prefix = ""
		} else {
			prefix = prefix[:i]
		}
		if t, ok := byPath[prefix]; ok {
			rel, err := t.root.Key((&url.URL{Scheme: string(o.Store), Host: o.Bucket, Path: "/" + key}).String())
			if err != nil {
				return Match{}
			}
			return Match{Table: t.name, Key: rel, Commit: commitKey.MatchString(rel)}
		}
		if prefix == "" {
			return Match{}
		}
	}
}
