package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/compactord/compactord/objstore"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/scheduler"
)

// HaltKey is where a table's halt is stored, under its root, beside the
// quarantine list (QuarantineKey): a record of compactord's own, which no
// vacuum deletes. A table that never halted has none; a resumed one keeps
// the object with halted=false (nothing is deleted).
const HaltKey = "_compactord/halt.json"

// Bounds of the stored halt: an object over maxHaltBytes is not read (it
// counts as no halt, and the next save replaces it).
const (
	maxHaltBytes  = 64 << 10
	haltSaveTries = 5
)

// haltDoc is the content of HaltKey.
type haltDoc struct {
	Version int  `json:"version"`
	Halted  bool `json:"halted"`
	// Reason and Since are the halt's (scheduler.Halt); empty when cleared.
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since,omitzero"`
	// Policy is the digest of the policy the table halted under (policyDigest):
	// a halt recorded under another policy no longer applies, as a changed
	// policy clears a halt in a running daemon.
	Policy string `json:"policy,omitempty"`
	// Replica is the replica (daemon { replica }) that wrote the record,
	// empty for a single daemon; Cleared is when a resume cleared the halt.
	Replica string    `json:"replica,omitempty"`
	Cleared time.Time `json:"cleared,omitzero"`
}

// policyDigest identifies p's values (wherever it was declared), as
// SamePolicy compares them.
func policyDigest(p policies.Policy) string {
	p.Source = ""
	b, err := json.Marshal(p)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// HaltStore returns the scheduler's store of halts over b's tables: each
// table's halt is HaltKey, read and replaced through the table's
// conditional store (delta.Table.Conditional) with a compare-and-swap, so
// that a halt and a resume on two replicas at once are ordered, not lost.
// It is not under the table's lease (a poll, which holds none, may halt a
// table): every replica reads the record before each run of the table and,
// while halted, once per poll interval, so a halt on one stops the table
// on all, and a resume on one (POST /tables/{name}/resume, a reload)
// clears it for all.
func (b *Backend) HaltStore() scheduler.HaltStore[policies.Policy] {
	return haltStore{b: b}
}

type haltStore struct{ b *Backend }

var _ scheduler.HaltStore[policies.Policy] = haltStore{}

// Load implements scheduler.HaltStore.
func (s haltStore) Load(ctx context.Context, p policies.Policy) (*scheduler.Halt, error) {
	ctx = s.b.withBudget(ctx)
	_, cs, err := s.b.conditional(ctx, p)
	if err != nil {
		return nil, err
	}
	doc, _, err := s.read(ctx, cs, p)
	if err != nil || !doc.Halted {
		return nil, err
	}
	if doc.Policy != "" && doc.Policy != policyDigest(p) {
		s.b.logger().Info("stored halt recorded under another policy; the table is checked again", "table", p.Name, "object", HaltKey, "since", doc.Since)
		return nil, nil
	}
	return &scheduler.Halt{Reason: doc.Reason, Since: doc.Since}, nil
}

// Save implements scheduler.HaltStore.
func (s haltStore) Save(ctx context.Context, p policies.Policy, h *scheduler.Halt) error {
	ctx = s.b.withBudget(ctx)
	_, cs, err := s.b.conditional(ctx, p)
	if err != nil {
		return err
	}
	var lastErr error
	for range haltSaveTries {
		doc, token, err := s.read(ctx, cs, p)
		if err != nil {
			return err
		}
		next := haltDoc{Version: 1, Replica: s.b.LeaseHolder}
		if h == nil {
			if !doc.Halted {
				return nil // nothing in force: nothing to write
			}
			next.Cleared = s.b.now().UTC()
		} else {
			next.Halted, next.Reason, next.Since, next.Policy = true, h.Reason, h.Since.UTC(), policyDigest(p)
			if len(next.Reason) > scheduler.MaxHaltReason {
				next.Reason = next.Reason[:scheduler.MaxHaltReason]
			}
		}
		data, err := json.Marshal(next)
		if err != nil {
			return fmt.Errorf("table %s: %s: %w", p.Name, HaltKey, err)
		}
		if token == "" {
			err = cs.CreateIfAbsent(ctx, HaltKey, data)
		} else {
			err = cs.ReplaceIfMatch(ctx, HaltKey, data, token)
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, objstore.ErrPreconditionFailed), errors.Is(err, objstore.ErrAmbiguous):
			// Another replica wrote, or ours may have landed: read again.
			lastErr = err
			continue
		default:
			return fmt.Errorf("table %s: write %s: %w", p.Name, HaltKey, err)
		}
	}
	return fmt.Errorf("table %s: write %s: %d tries lost the race: %w", p.Name, HaltKey, haltSaveTries, lastErr)
}

// read returns the stored record and the token of its version ("" when
// there is none). An unreadable or oversized object counts as no halt,
// with its token, so that the next save replaces it.
func (s haltStore) read(ctx context.Context, cs objstore.ConditionalStore, p policies.Policy) (haltDoc, string, error) {
	data, token, err := cs.ReadVersioned(ctx, HaltKey)
	if errors.Is(err, objstore.ErrObjectNotFound) {
		return haltDoc{}, "", nil
	}
	if err != nil {
		return haltDoc{}, "", fmt.Errorf("table %s: read %s: %w", p.Name, HaltKey, err)
	}
	var doc haltDoc
	switch {
	case len(data) > maxHaltBytes:
		s.b.logger().Warn("stored halt too large; ignored (the next save replaces it)", "table", p.Name, "object", HaltKey, "bytes", len(data), "limit", maxHaltBytes)
		return haltDoc{}, token, nil
	case json.Unmarshal(data, &doc) != nil:
		// The bytes are not echoed: the object is the table's, not ours to trust.
		s.b.logger().Warn("stored halt unreadable; ignored (the next save replaces it)", "table", p.Name, "object", HaltKey)
		return haltDoc{}, token, nil
	}
	if len(doc.Reason) > scheduler.MaxHaltReason {
		doc.Reason = doc.Reason[:scheduler.MaxHaltReason]
	}
	return doc, token, nil
}
