package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/tablepath"
	"github.com/compactord/compactord/objstore"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/scheduler"
)

// QuarantineKey is where a table's quarantine list is stored, under its
// root: a record of compactord's own, which no vacuum deletes (the
// deletion gate refuses every kind but Record under _compactord/).
const QuarantineKey = "_compactord/quarantine.json"

// Bounds of the stored list: an object over maxQuarantineBytes is not read
// (it is treated as no list, and the next save replaces it), and a save
// keeps at most maxQuarantineEntries entries (the oldest). The scheduler
// halts a table long before (scheduler.DefaultMaxQuarantined).
const (
	maxQuarantineBytes   = 1 << 20
	maxQuarantineEntries = 2000
	quarantineSaveTries  = 5
)

// quarantineDoc is the content of QuarantineKey.
type quarantineDoc struct {
	Version int               `json:"version"`
	Files   []quarantineEntry `json:"files"`
}

// quarantineEntry is one stored file: Key is its canonical key
// (internal/tablepath), which merges and prunes compare; Path is its path
// as the log spells it, which runs skip.
type quarantineEntry struct {
	Key string `json:"key"`
	scheduler.Quarantined
}

// canonicalKey is a log path's canonical key, or the path itself when it
// is not inside the table root.
func canonicalKey(path string) string {
	if k, err := tablepath.RelativeKey(path); err == nil {
		return k
	}
	return path
}

// QuarantineStore returns the scheduler's store of quarantine lists over
// b's tables: each table's list is QuarantineKey, read and replaced through
// the table's conditional store (delta.Table.Conditional) with a
// compare-and-swap, so that replicas saving at once merge their lists
// instead of overwriting each other's. A save drops the files the newest
// snapshot b's polls read no longer holds. The lists loaded and saved are
// what b's polls leave apart from the backlog.
func (b *Backend) QuarantineStore() scheduler.QuarantineStore[policies.Policy] {
	return quarantineStore{b: b}
}

type quarantineStore struct{ b *Backend }

var _ scheduler.QuarantineStore[policies.Policy] = quarantineStore{}

// Load implements scheduler.QuarantineStore.
func (s quarantineStore) Load(ctx context.Context, p policies.Policy) ([]scheduler.Quarantined, error) {
	ctx = s.b.withBudget(ctx)
	t, cs, err := s.b.conditional(ctx, p)
	if err != nil {
		return nil, err
	}
	doc, _, err := s.read(ctx, t, cs, p)
	if err != nil {
		return nil, err
	}
	out := make([]scheduler.Quarantined, len(doc.Files))
	for i, e := range doc.Files {
		out[i] = e.Quarantined
	}
	s.b.rememberQuarantine(p, out)
	return out, nil
}

// Save implements scheduler.QuarantineStore.
func (s quarantineStore) Save(ctx context.Context, p policies.Policy, qs []scheduler.Quarantined) ([]scheduler.Quarantined, error) {
	ctx = s.b.withBudget(ctx)
	t, cs, err := s.b.conditional(ctx, p)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range quarantineSaveTries {
		doc, token, err := s.read(ctx, t, cs, p)
		if err != nil {
			return nil, err
		}
		merged := s.merge(p, doc.Files, qs)
		out := make([]scheduler.Quarantined, len(merged))
		for i, e := range merged {
			out[i] = e.Quarantined
		}
		if token == "" && len(merged) == 0 {
			s.b.rememberQuarantine(p, out)
			return out, nil
		}
		data, err := json.Marshal(quarantineDoc{Version: 1, Files: merged})
		if err != nil {
			return nil, fmt.Errorf("table %s: %s: %w", p.Name, QuarantineKey, err)
		}
		if token == "" {
			err = cs.CreateIfAbsent(ctx, QuarantineKey, data)
		} else {
			err = cs.ReplaceIfMatch(ctx, QuarantineKey, data, token)
		}
		switch {
		case err == nil:
			s.b.rememberQuarantine(p, out)
			return out, nil
		case errors.Is(err, objstore.ErrPreconditionFailed), errors.Is(err, objstore.ErrAmbiguous):
			// Another replica wrote, or ours may have landed: read again
			// and merge (a merge of what is stored is idempotent).
			lastErr = err
			continue
		default:
			return nil, fmt.Errorf("table %s: write %s: %w", p.Name, QuarantineKey, err)
		}
	}
	return nil, fmt.Errorf("table %s: write %s: %d tries lost the race: %w", p.Name, QuarantineKey, quarantineSaveTries, lastErr)
}

// read returns the stored list and the token of its version ("" when there
// is none). An unreadable or oversized object counts as no list, with its
// token, so that the next save replaces it.
func (s quarantineStore) read(ctx context.Context, t *delta.Table, cs objstore.ConditionalStore, p policies.Policy) (quarantineDoc, string, error) {
	data, token, err := cs.ReadVersioned(ctx, QuarantineKey)
	if errors.Is(err, objstore.ErrObjectNotFound) {
		return quarantineDoc{}, "", nil
	}
	if err != nil {
		return quarantineDoc{}, "", fmt.Errorf("table %s: read %s: %w", p.Name, QuarantineKey, err)
	}
	var doc quarantineDoc
	switch {
	case len(data) > maxQuarantineBytes:
		s.b.logger().Warn("stored quarantine list too large; ignored (the next save replaces it)", "table", t.Name(), "object", QuarantineKey, "bytes", len(data), "limit", maxQuarantineBytes)
		return quarantineDoc{}, token, nil
	case json.Unmarshal(data, &doc) != nil:
		// The bytes are not echoed: the object is the table's, not ours to trust.
		s.b.logger().Warn("stored quarantine list unreadable; ignored (the next save replaces it)", "table", t.Name(), "object", QuarantineKey)
		return quarantineDoc{}, token, nil
	}
	kept := doc.Files[:0]
	for _, e := range doc.Files {
		if e.Path == "" {
			continue
		}
		e.Key = canonicalKey(e.Path)
		kept = append(kept, e)
	}
	doc.Files = kept
	return doc, token, nil
}

// merge joins the stored entries and the scheduler's list by canonical key
// (a stored entry keeps its reason and time), drops the files the newest
// polled snapshot of p's table no longer holds (taking the snapshot's
// spelling of the others' paths), and keeps at most maxQuarantineEntries,
// the oldest, sorted by path.
func (s quarantineStore) merge(p policies.Policy, stored []quarantineEntry, qs []scheduler.Quarantined) []quarantineEntry {
	byKey := map[string]quarantineEntry{}
	for _, e := range stored {
		if _, ok := byKey[e.Key]; !ok {
			byKey[e.Key] = e
		}
	}
	for _, q := range qs {
		k := canonicalKey(q.Path)
		if _, ok := byKey[k]; !ok && q.Path != "" {
			byKey[k] = quarantineEntry{Key: k, Quarantined: q}
		}
	}
	s.b.mu.Lock()
	snap := s.b.polled[pollKey(p)].snap
	s.b.mu.Unlock()
	var live map[string]string
	if snap != nil {
		live = make(map[string]string, len(snap.Files))
		for _, a := range snap.Files {
			live[canonicalKey(a.Path)] = a.Path
		}
	}
	out := make([]quarantineEntry, 0, len(byKey))
	for k, e := range byKey {
		if live != nil {
			path, ok := live[k]
			if !ok {
				continue
			}
			e.Path = path
		}
		out = append(out, e)
	}
	if len(out) > maxQuarantineEntries {
		sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
		out = out[:maxQuarantineEntries]
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// conditional returns p's table and its conditional store.
func (b *Backend) conditional(ctx context.Context, p policies.Policy) (*delta.Table, objstore.ConditionalStore, error) {
	t, err := b.Tables.Get(ctx, p.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("table %s: %w", p.Name, openUnavailable(err))
	}
	cs, err := t.Conditional()
	if err != nil {
		return nil, nil, fmt.Errorf("table %s: quarantine list: %w", p.Name, err)
	}
	return t, cs, nil
}

// rememberQuarantine keeps the list last loaded or saved for p's table:
// what its polls leave apart from the backlog.
func (b *Backend) rememberQuarantine(p policies.Policy, qs []scheduler.Quarantined) {
	if len(qs) == 0 {
		// No list is an empty one: most tables keep nothing here.
		b.mu.Lock()
		delete(b.quarantined, pollKey(p))
		b.mu.Unlock()
		return
	}
	set := make(map[string]bool, len(qs))
	for _, q := range qs {
		set[q.Path] = true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.quarantined == nil {
		b.quarantined = map[string]map[string]bool{}
	}
	b.quarantined[pollKey(p)] = set
}

// quarantinedOf returns the list last loaded or saved for p's table.
func (b *Backend) quarantinedOf(p policies.Policy) map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.quarantined[pollKey(p)]
}

// stillNamed returns the files of missing (data files a failed operation
// found missing from the store) that the newest snapshot of t still names,
// spelled as it spells them. A file a newer commit removed is not missing
// data: the operation read an old snapshot (another engine rewrote and
// vacuumed it), and the next run plans on the new one. When the snapshot
// cannot be read, none counts.
func (b *Backend) stillNamed(ctx context.Context, t *delta.Table, name string, missing []string) []string {
	snap, err := delta.LoadSnapshot(ctx, t, -1)
	if err != nil {
		b.logger().Warn("data files missing; reading the newest snapshot to check them failed", "table", name, "files", missing, "error", err)
		return nil
	}
	live := make(map[string]string, len(snap.Files))
	for _, a := range snap.Files {
		live[canonicalKey(a.Path)] = a.Path
	}
	var out []string
	for _, m := range missing {
		if path, ok := live[canonicalKey(m)]; ok {
			out = append(out, path)
			continue
		}
		b.logger().Info("missing data file no longer in the newest snapshot (a newer commit removed it); the next run plans on that snapshot",
			"table", name, "file", m, "version", snap.Version)
	}
	return out
}

// missingOf lists the data files err names as missing (failure.MissingFileError).
func missingOf(err error) []string { return failure.MissingDataFiles(err) }
