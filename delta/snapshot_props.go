package delta

import "github.com/compactord/compactord/delta/props"

// Properties returns the snapshot's typed table properties: those
// LoadSnapshot parsed, or, for a snapshot built by hand, Metadata's parsed
// now.
func (s *Snapshot) Properties() *props.Properties {
	if s.props != nil {
		return s.props
	}
	return props.ParseProperties(s.Metadata.Configuration)
}
