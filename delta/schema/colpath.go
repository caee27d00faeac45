package schema

import (
	"errors"
	"fmt"
	"strings"
)

// ParseColumnPath splits a column reference into its path elements: dots
// separate nested fields, and an element in backticks may contain dots (a
// doubled backtick inside stands for one), as in Spark SQL:
// "a.b" is field b of struct a, "`a.b`" a top-level column named "a.b".
func ParseColumnPath(s string) ([]string, error) {
	paths, err := SplitColumnList(s)
	switch {
	case err != nil:
		return nil, err
	case len(paths) == 0:
		return nil, errors.New("empty column name")
	case len(paths) > 1:
		return nil, fmt.Errorf("%q names %d columns, want one", s, len(paths))
	}
	return paths[0], nil
}

// SplitColumnList parses a comma-separated list of column paths whose
// elements are separated by '.', optionally quoted with backticks (a
// doubled backtick inside is a literal one); spaces around an unquoted
// element or a quoted one are dropped. A blank list is empty.
func SplitColumnList(s string) ([][]string, error) {
	var out [][]string
	var path []string
	var part strings.Builder
	quoted, partQuoted := false, false
	flush := func() error {
		p := part.String()
		if !partQuoted {
			p = strings.TrimSpace(p)
		}
		if p == "" && !partQuoted {
			return fmt.Errorf("empty column name in %q", s)
		}
		path = append(path, p)
		part.Reset()
		partQuoted = false
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '`' && i+1 < len(s) && s[i+1] == '`':
			part.WriteByte('`')
			i++
		case c == '`':
			if !quoted && strings.TrimSpace(part.String()) != "" {
				return nil, fmt.Errorf("misplaced backtick in %q", s)
			}
			if !quoted {
				part.Reset()
			}
			quoted = !quoted
			partQuoted = true
		case quoted:
			part.WriteByte(c)
		case c == '.':
			if err := flush(); err != nil {
				return nil, err
			}
		case c == ',':
			if err := flush(); err != nil {
				return nil, err
			}
			out = append(out, path)
			path = nil
		default:
			if partQuoted && c != ' ' {
				return nil, fmt.Errorf("text after a closing backtick in %q", s)
			}
			if !partQuoted {
				part.WriteByte(c)
			}
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated backtick in %q", s)
	}
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return append(out, path), nil
}

// FormatColumnPath is the inverse of ParseColumnPath: elements joined by
// dots, those containing a dot or a backtick quoted in backticks.
func FormatColumnPath(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		if strings.ContainsAny(p, ".`") || p == "" {
			p = "`" + strings.ReplaceAll(p, "`", "``") + "`"
		}
		parts[i] = p
	}
	return strings.Join(parts, ".")
}
