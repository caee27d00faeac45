package policies

import (
	"net/url"
	"path"
	"path/filepath"
	"strings"
)

// storeParams are the query parameters that choose which store a table URL
// reaches (an S3 endpoint, an Azure account or domain); they are part of a
// table's identity. The others (region, path style, credentials, log store
// settings) say how to reach it and are not.
var storeParams = [...]string{"endpoint", "storage_account", "domain"}

// TableIdentity is the canonical form of a table URL, equal for two URLs
// that name the same table: a plain local path is made absolute and written
// file:///abs; the scheme is lower case and s3a and s3n are s3 (Hadoop's
// names for the same buckets); userinfo is dropped and the host is lower
// case; the path is percent-decoded with empty and "." segments dropped,
// ".." resolved and no trailing slash; of the query only the parameters
// that choose a store (storeParams) are kept, sorted. Merging too much is
// the safe side: its only use is refusing two policies on one table, where
// two spellings that slip through would give one table two schedulers. A
// URL that does not parse is its own identity.
func TableIdentity(raw string) string {
	if !strings.Contains(raw, "://") {
		abs, err := filepath.Abs(raw)
		if err != nil {
			return raw
		}
		return "file://" + filepath.ToSlash(abs)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	scheme := strings.ToLower(u.Scheme)
	switch scheme {
	case "s3a", "s3n":
		scheme = "s3"
	}
	host := strings.ToLower(u.Hostname())
	if scheme == "file" && host == "localhost" {
		host = ""
	}
	p := path.Clean("/" + u.Path)
	if p == "/" && scheme != "file" {
		p = ""
	}
	out := scheme + "://" + host + p
	q := u.Query()
	kept := url.Values{}
	for _, k := range storeParams {
		if v := q.Get(k); v != "" {
			kept.Set(k, strings.TrimSuffix(strings.ToLower(v), "/"))
		}
	}
	if len(kept) > 0 {
		out += "?" + kept.Encode() // Encode sorts by key
	}
	return out
}
