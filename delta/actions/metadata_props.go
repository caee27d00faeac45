package actions

import "github.com/compactord/compactord/delta/props"

// Properties parses the metadata's configuration (see ParseProperties).
// Snapshot.Properties is the parsed-once copy; use this where only the
// metadata is at hand.
func (m *Metadata) Properties() *props.Properties {
	if m == nil {
		return props.ParseProperties(nil)
	}
	return props.ParseProperties(m.Configuration)
}
