package writer

import "github.com/compactord/compactord/internal/keysort"

// sortEntry is one live row of a sorted job in the column path's sort
// (internal/keysort owns the entries and their parallel sort).
type sortEntry = keysort.Entry
