package redact

import (
	"io"
	"net/url"
	"strings"
)

// Mark replaces every secret.
const Mark = "REDACTED"

// credentialWords are the name fragments of a credential parameter.
var credentialWords = [...]string{"secret", "token", "key", "sig", "pass", "pwd", "cred", "auth", "sas"}

// IsCredentialName reports whether a query parameter named name carries a
// credential (see the package comment for the rule).
func IsCredentialName(name string) bool {
	if d, err := url.QueryUnescape(name); err == nil {
		name = d
	}
	name = strings.ToLower(name)
	for _, w := range credentialWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// URL returns raw with its userinfo and the values of its credential
// parameters replaced by Mark. A string without "://" (a local path) is
// returned as it is; a URL that does not parse keeps its scheme and a host
// that is a plain name, and loses the rest.
func URL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || !validScheme(scheme) {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return cut(scheme, rest)
	}
	// Work on the raw text after the authority, so that everything but the
	// secrets keeps its spelling.
	authority, tail := splitAuthority(rest)
	if !strings.Contains(authority, "@") && strings.Contains(authority, ":") && strings.Contains(tail, "@") {
		// "user:12?pa@ss@bucket" parses as host "user:12": a password
		// written without percent-encoding. Cut it.
		return cut(scheme, rest)
	}
	var b strings.Builder
	b.WriteString(scheme)
	b.WriteString("://")
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		b.WriteString(Mark)
		b.WriteByte('@')
		authority = authority[at+1:]
	}
	b.WriteString(authority)
	path, query, hasQuery, fragment, hasFragment := splitTail(tail)
	b.WriteString(path)
	if hasQuery {
		b.WriteByte('?')
		b.WriteString(params(query))
	}
	if hasFragment {
		b.WriteByte('#')
		b.WriteString(params(fragment))
	}
	if out := b.String(); out != raw {
		return out
	}
	return raw // nothing cut: the caller's string, not a copy to keep
}

// cut is the conservative form of an unparseable URL: the scheme, the host
// when it is a plain name (no userinfo, no port), and Mark for the rest.
func cut(scheme, rest string) string {
	host := rest
	if i := strings.IndexAny(host, "/?#"); i >= 0 {
		host = host[:i]
	}
	if host == "" || strings.ContainsAny(host, "@:%") || host != rest && !strings.HasPrefix(rest[len(host):], "/") {
		return scheme + "://" + Mark
	}
	if host == rest {
		return scheme + "://" + host
	}
	return scheme + "://" + host + "/" + Mark
}

// splitAuthority splits what follows "://" into the authority (up to the
// first '/', '?' or '#') and the rest.
func splitAuthority(rest string) (authority, tail string) {
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		return rest[:i], rest[i:]
	}
	return rest, ""
}

// splitTail splits a path-query-fragment into its parts.
func splitTail(tail string) (path, query string, hasQuery bool, fragment string, hasFragment bool) {
	tail, fragment, hasFragment = strings.Cut(tail, "#")
	path, query, hasQuery = strings.Cut(tail, "?")
	return path, query, hasQuery, fragment, hasFragment
}

// params returns a query (or fragment) with the value of every credential
// parameter replaced by Mark; the names and the other values keep their
// spelling and order.
func params(q string) string {
	parts := strings.Split(q, "&")
	for i, p := range parts {
		if name, _, hasValue := strings.Cut(p, "="); hasValue && IsCredentialName(name) {
			parts[i] = name + "=" + Mark
		}
	}
	return strings.Join(parts, "&")
}

// validScheme reports whether s is a URL scheme (RFC 3986: a letter, then
// letters, digits, '+', '-' or '.').
func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// Text returns s with every URL in it redacted as URL does. A URL starts
// at a scheme followed by "://" and ends at white space, a quote or angle
// bracket, or the end of s, less the punctuation that ends it (":", ",",
// ")", ...); so a URL quoted with %q or followed by ": why" is found whole.
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start := i
		for start > 0 && isSchemeByte(s[start-1]) {
			start--
		}
		// A scheme starts with a letter.
		for start < i && !isLetter(s[start]) {
			start++
		}
		end := i + 3
		for end < len(s) && !isURLEnd(s[end]) {
			end++
		}
		// Punctuation after a URL ("open s3://b/x?sig=S: why") is the
		// sentence's, not the URL's.
		for end > i+3 && strings.IndexByte(":;,.)]}", s[end-1]) >= 0 {
			end--
		}
		b.WriteString(s[:start])
		if start == i {
			b.WriteString(s[i:end])
		} else {
			b.WriteString(URL(s[start:end]))
		}
		s = s[end:]
	}
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isSchemeByte(c byte) bool {
	return isLetter(c) || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

// isURLEnd reports whether c ends a URL inside text.
func isURLEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '<', '>', '\\':
		return true
	}
	return false
}

// Error returns err with Text applied to its message; errors.Is, errors.As
// and failure classes still see err through Unwrap. A nil err stays nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	if r, ok := err.(redactedError); ok {
		return r
	}
	return redactedError{err}
}

type redactedError struct{ err error }

func (e redactedError) Error() string { return Text(e.err.Error()) }
func (e redactedError) Unwrap() error { return e.err }

// Writer returns a writer that applies Text to each write before passing
// it to w. It redacts a URL only when a single write holds it whole, as
// hclog's one write per log entry does.
func Writer(w io.Writer) io.Writer { return writer{w} }

type writer struct{ w io.Writer }

func (w writer) Write(p []byte) (int, error) {
	s := string(p)
	r := Text(s)
	if r == s {
		return w.w.Write(p)
	}
	if _, err := io.WriteString(w.w, r); err != nil {
		return 0, err
	}
	return len(p), nil
}
