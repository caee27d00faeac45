// Package props owns the typed table properties: Properties parsed from a
// metaData configuration map (ParseProperties), the delta.* property names
// and their defaults, and the PropertyError a bad value gives.
//
// It must not know about actions, snapshots or the log; it imports
// delta/schema (column mapping modes, column lists) and internal/units.
package props
