package predicate

import "strings"

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
