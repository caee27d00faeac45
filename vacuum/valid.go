package vacuum

import (
	"fmt"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
)

// references is what the snapshot says about the files of the table.
type references struct {
	// valid are the keys a vacuum must keep: live adds, tombstones deleted
	// at or after the cutoff, and the "u" deletion-vector files of both.
	valid map[string]struct{}
	// expired are the keys of tombstones deleted before the cutoff and of
	// their "u" deletion vectors (not valid): deleting one is an expiry,
	// deleting anything else an orphan sweep.
	expired map[string]struct{}
	// protected maps the data files of tombstones deleted at or after the
	// cutoff (and not live again) to their deletion time in ms: what the
	// retention keeps and a later vacuum deletes.
	protected map[string]int64
}

// collectReferences builds the valid and expired key sets of snap for a
// cutoff in ms. A tombstone without deletionTimestamp counts as deleted at
// 0, as in Spark.
func collectReferences(snap *delta.Snapshot, res *resolver, cutoffMs int64) (*references, error) {
	refs := &references{valid: make(map[string]struct{}, len(snap.Files)*2), expired: map[string]struct{}{}, protected: map[string]int64{}}
	live := make(map[string]struct{}, len(snap.Files))
	keep := func(set map[string]struct{}, path string, dv *actions.DeletionVector) error {
		k, inside, err := res.key(path)
		if err != nil {
			return fmt.Errorf("version %d: %w", snap.Version, err)
		}
		if inside {
			set[k] = struct{}{}
		}
		dk, ok, err := dvKey(dv)
		if err != nil {
			return fmt.Errorf("version %d: deletion vector of %s: %w", snap.Version, path, err)
		}
		if ok {
			set[dk] = struct{}{}
		}
		return nil
	}
	for _, a := range snap.Files {
		if err := keep(refs.valid, a.Path, a.DeletionVector); err != nil {
			return nil, err
		}
		if k, inside, _ := res.key(a.Path); inside {
			live[k] = struct{}{}
		}
	}
	for _, r := range snap.Tombstones {
		set := refs.valid
		if deletionTime(r) < cutoffMs {
			set = refs.expired
		} else if k, inside, _ := res.key(r.Path); inside {
			if t, ok := refs.protected[k]; !ok || deletionTime(r) < t {
				refs.protected[k] = deletionTime(r)
			}
		}
		if err := keep(set, r.Path, r.DeletionVector); err != nil {
			return nil, err
		}
	}
	for k := range refs.valid {
		delete(refs.expired, k)
	}
	for k := range live {
		delete(refs.protected, k)
	}
	return refs, nil
}

func (r *references) isValid(key string) bool {
	_, ok := r.valid[key]
	return ok
}

// kind classifies an eligible key.
func (r *references) kind(key string) string {
	if IsTempLeftover(key) {
		return KindTemp
	}
	if _, ok := r.expired[key]; ok {
		return KindExpired
	}
	return KindOrphan
}

func deletionTime(r *actions.Remove) int64 {
	if r.DeletionTimestamp == nil {
		return 0
	}
	return *r.DeletionTimestamp
}
