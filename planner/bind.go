package planner

import (
	"fmt"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
)

// Bind re-attaches each job's Sources after a plan was read back from JSON
// (`compactord run-plan`): it looks every source path up in snap, which must
// be the snapshot at the plan's ReadVersion.
func (p *CompactionPlan) Bind(snap *delta.Snapshot) error {
	if snap.Version != p.ReadVersion {
		return fmt.Errorf("bind plan of version %d to a snapshot of version %d", p.ReadVersion, snap.Version)
	}
	byPath := make(map[string]*actions.Add, len(snap.Files))
	for _, a := range snap.Files {
		byPath[a.Path] = a
	}
	for _, j := range p.Jobs {
		j.Sources = j.Sources[:0]
		for _, path := range j.SourcePaths {
			a, ok := byPath[path]
			if !ok {
				return fmt.Errorf("bind plan job %s: source %s is not live at version %d", j.ID, path, snap.Version)
			}
			j.Sources = append(j.Sources, a)
		}
	}
	return nil
}
