package delta

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
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty column name")
	}
	var path []string
	var cur strings.Builder
	quoted, inQuotes := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuotes && c == '`' && i+1 < len(s) && s[i+1] == '`':
			cur.WriteByte('`')
			i++
		case c == '`' && inQuotes:
			inQuotes = false
		case c == '`' && cur.Len() == 0 && !quoted:
			inQuotes, quoted = true, true
		case c == '.' && !inQuotes:
			if cur.Len() == 0 && !quoted {
				return nil, fmt.Errorf("column %q has an empty element", s)
			}
			path = append(path, cur.String())
			cur.Reset()
			quoted = false
		case quoted && !inQuotes:
			return nil, fmt.Errorf("column %q: unexpected %q after a quoted name", s, c)
		default:
			cur.WriteByte(c)
		}
	}
	if inQuotes {
		return nil, fmt.Errorf("column %q has an unclosed backtick", s)
	}
	if cur.Len() == 0 && !quoted {
		return nil, fmt.Errorf("column %q has an empty element", s)
	}
	return append(path, cur.String()), nil
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
