package delta

import (
	"encoding/binary"
	"maps"
	"runtime"
	"slices"
	"sync"
	"unique"
	"weak"

	"github.com/compactord/compactord/delta/props"
	"github.com/compactord/compactord/delta/schema"
)

// Shared lets the snapshots a poller keeps of many tables hold one parsed
// schema and one parsed set of table properties for each schema string and
// each configuration they have in common (a fleet of tables written by one
// pipeline has a handful of schemas; most tables have default
// properties). It holds its values weakly: a value no snapshot holds any
// more goes, and so does its entry. The zero value is not usable: make one
// with NewShared. Safe for concurrent use.
type Shared struct {
	mu      sync.Mutex
	schemas map[unique.Handle[string]]weak.Pointer[schema.StructType]
	props   map[unique.Handle[string]]weak.Pointer[props.Properties]
}

// NewShared returns an empty Shared.
func NewShared() *Shared {
	return &Shared{
		schemas: map[unique.Handle[string]]weak.Pointer[schema.StructType]{},
		props:   map[unique.Handle[string]]weak.Pointer[props.Properties]{},
	}
}

// Share replaces s's parsed schema and table properties by equal ones an
// earlier snapshot given to Share holds, or makes s's the ones to hand
// out, and its schema string the one copy of that string. Nothing
// changes what s reads: the values are parsed from equal strings, and no
// code changes a snapshot's schema or properties after its load. A
// snapshot built by hand (no parsed properties) keeps its own.
func (c *Shared) Share(s *Snapshot) {
	if s == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.Schema != nil {
		h := unique.Make(s.Metadata.SchemaString)
		s.Metadata.SchemaString = h.Value()
		s.Schema = share(c, c.schemas, h, s.Schema)
	}
	if s.props != nil {
		s.props = share(c, c.props, unique.Make(configurationKey(s.Metadata.Configuration)), s.props)
	}
}

// share returns the value of m under key when it is still held, else
// makes v that value; c.mu is held. The entry goes when its value does,
// unless a newer value took its place by then.
func share[T any](c *Shared, m map[unique.Handle[string]]weak.Pointer[T], key unique.Handle[string], v *T) *T {
	if held := m[key].Value(); held != nil {
		return held
	}
	wp := weak.Make(v)
	m[key] = wp
	runtime.AddCleanup(v, func(key unique.Handle[string]) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if m[key] == wp {
			delete(m, key)
		}
	}, key)
	return v
}

// configurationKey is the configuration's entries, sorted, as one string:
// each key and value behind its length, so that no two configurations
// have one key (a table's log is anyone's to write: a key or value holding
// a separator must not make its table share another table's properties).
func configurationKey(conf map[string]string) string {
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(conf[k])))
		b = append(b, conf[k]...)
	}
	return string(b)
}
