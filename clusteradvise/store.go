package clusteradvise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/compactord/compactord/objstore"
)

// Key is where a table's clustering evidence and decisions are stored,
// under its root, beside the quarantine and halt records: compactord's own,
// which moves with the table and which no vacuum deletes.
const Key = "_compactord/clustering.json"

// Bounds of the stored record: an object over maxRecordBytes is not read
// (it counts as none, and the next save replaces it). MaxEntries entries
// of MaxPredicateLen would not fit; real predicates are a few hundred bytes,
// and save drops the lightest entries until the record fits.
const (
	maxRecordBytes = 2 << 20
	saveTries      = 5
)

// ErrUnreadableRecord is wrapped by Load's error when the stored record is
// oversized or does not parse; Update replaces such a record.
var ErrUnreadableRecord = errors.New("stored clustering record unreadable")

// Load reads the stored record; a table without one gets an empty record
// (NewRecord(0)). The token names the version read ("" when there is none).
func Load(ctx context.Context, cs objstore.ConditionalStore) (*Record, string, error) {
	data, token, err := cs.ReadVersioned(ctx, Key)
	if errors.Is(err, objstore.ErrObjectNotFound) {
		return NewRecord(0), "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", Key, err)
	}
	if len(data) > maxRecordBytes {
		return NewRecord(0), token, fmt.Errorf("%s: %d bytes, over %d: %w", Key, len(data), maxRecordBytes, ErrUnreadableRecord)
	}
	rec := NewRecord(0)
	if err := json.Unmarshal(data, rec); err != nil || rec.Version != recordVersion {
		// The bytes are not echoed: the object is the table's, not ours to trust.
		return NewRecord(0), token, fmt.Errorf("%s: not a version %d record: %w", Key, recordVersion, ErrUnreadableRecord)
	}
	if len(rec.Entries) > MaxEntries {
		rec.bound()
	}
	if len(rec.Decisions) > MaxDecisions {
		rec.Decisions = rec.Decisions[len(rec.Decisions)-MaxDecisions:]
	}
	return rec, token, nil
}

// Update reads the stored record, applies fn and writes the result whole
// with a compare-and-swap (create-if-absent for the first), reading again
// when another writer got there first; an unreadable stored record is
// replaced. fn may be called more than once and must only change rec.
func Update(ctx context.Context, cs objstore.ConditionalStore, fn func(rec *Record) error) (*Record, error) {
	var lastErr error
	for range saveTries {
		rec, token, err := Load(ctx, cs)
		if err != nil && !errors.Is(err, ErrUnreadableRecord) {
			return nil, err
		}
		if err := fn(rec); err != nil {
			return nil, err
		}
		data, err := encode(rec)
		if err != nil {
			return nil, err
		}
		if token == "" {
			err = cs.CreateIfAbsent(ctx, Key, data)
		} else {
			err = cs.ReplaceIfMatch(ctx, Key, data, token)
		}
		switch {
		case err == nil:
			return rec, nil
		case errors.Is(err, objstore.ErrPreconditionFailed), errors.Is(err, objstore.ErrAmbiguous):
			lastErr = err
			continue
		default:
			return nil, fmt.Errorf("write %s: %w", Key, err)
		}
	}
	return nil, fmt.Errorf("write %s: %d tries lost the race: %w", Key, saveTries, lastErr)
}

// encode renders rec, dropping its lightest entries until it fits
// maxRecordBytes.
func encode(rec *Record) ([]byte, error) {
	rec.sortEntries()
	for {
		data, err := json.Marshal(rec)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", Key, err)
		}
		if len(data) <= maxRecordBytes || len(rec.Entries) == 0 {
			return data, nil
		}
		rec.Entries = rec.Entries[:len(rec.Entries)*9/10]
	}
}
