package commit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/delta"
	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logstore"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/objstore"
)

// Options tune a transaction's commit loop. The zero value is usable.
type Options struct {
	// EngineInfo goes into commitInfo.engineInfo (default "compactord").
	EngineInfo string
	// MaxAttempts bounds the put-if-absent attempts (default 10).
	MaxAttempts int
	// BaseBackoff is the first retry delay; it doubles per lost race with
	// jitter, capped at MaxBackoff (defaults 50ms and 5s).
	BaseBackoff, MaxBackoff time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Sleep waits between attempts (default: a timer honouring ctx).
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives commit events (default: null logger).
	Logger hclog.Logger
	// BeforePut, when set, is called right before each put-if-absent with
	// the version about to be written. Tests use it to commit a competing
	// transaction first ("always loses the race").
	BeforePut func(ctx context.Context, version int64) error
	// Log, when set, caches the versions the transaction reads and
	// commits, for the next transactions of the same run (nil: every
	// transaction reads the versions since its read version from the
	// store).
	Log *LogCache
}

// Inherit returns o with its unset clock, logger and engine info taken
// from the operation that commits (each operation's options default their
// commit's to their own).
func (o Options) Inherit(now func() time.Time, log hclog.Logger, engineInfo string) Options {
	if o.Now == nil {
		o.Now = now
	}
	if o.Logger == nil {
		o.Logger = log
	}
	if o.EngineInfo == "" {
		o.EngineInfo = engineInfo
	}
	return o
}

func (o Options) withDefaults() Options {
	if o.EngineInfo == "" {
		o.EngineInfo = "compactord"
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 10
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = 50 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = objstore.Sleep
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return o
}

// Txn is an optimistic transaction over a read snapshot: what it read
// (version and files) and what it will write. Commit writes the next
// version put-if-absent; when another writer got there first it checks the
// winners against what it read, reconciles or gives up, and tries again.
type Txn struct {
	// Table is the table to commit to; Table.Log must put-if-absent.
	Table *delta.Table
	// Snapshot is the read snapshot; its Version is the read version.
	Snapshot *delta.Snapshot
	// Operation and OperationParameters go into commitInfo.
	Operation           string
	OperationParameters map[string]any
	// OperationMetrics go into commitInfo (values are strings, like Spark).
	OperationMetrics map[string]string
	// IsolationLevel goes into commitInfo.
	IsolationLevel string
	// IsBlindAppend goes into commitInfo.
	IsBlindAppend bool
	// CommitTags go into commitInfo.tags.
	CommitTags map[string]string
	// ReadFiles are the paths the transaction read: a winner that removes
	// one of them is a conflict (delete-read). Used by plain transactions;
	// compaction resolves its own conflicts.
	ReadFiles map[string]bool
	// Domains are the metadata domains the transaction writes: a winner
	// that writes one of them too is a conflict (Delta's rule for
	// concurrent domainMetadata of one domain). Used by plain transactions.
	Domains map[string]bool
	// Actions are the actions to commit (no commitInfo: Commit writes it).
	Actions []deltaactions.Action
	// Objects is the attempt's object set, owned by the operation that
	// started the attempt: objects the transaction writes (deletion
	// vectors) are tracked in it, and those its committed version
	// references, or may reference after an ambiguous put, are marked kept
	// there. The transaction itself deletes nothing. nil: a transaction
	// that writes no objects.
	Objects *attempt.Objects
	// Options tune retries.
	Options Options

	txnID string
}

// participant is what the commit loop needs from a transaction kind.
type participant interface {
	// observe checks one winning commit; an error abandons the transaction.
	observe(ctx context.Context, version int64, actions []deltaactions.Action) error
	// build returns the actions (after commitInfo) for the next attempt;
	// nil means there is nothing left to commit.
	build(ctx context.Context) (actions []deltaactions.Action, metrics map[string]string, err error)
}

// TxnID returns the transaction's id (commitInfo.txnId), fixed for its life.
func (tx *Txn) TxnID() string {
	if tx.txnID == "" {
		tx.txnID = uuid.NewString()
	}
	return tx.txnID
}

// Commit commits tx.Actions. A winner that changed protocol or metadata, or
// removed a file the transaction read, fails the commit with ErrConflict /
// ErrMetadataChanged (class Retry). It returns the committed version.
func (tx *Txn) Commit(ctx context.Context) (int64, error) {
	return tx.run(ctx, &plainTxn{tx: tx})
}

type plainTxn struct {
	tx *Txn
	// read is tx.ReadFiles by replay key (delta.FileKeys), built at the
	// first winner: a winner may spell a read file otherwise.
	read map[string]bool
}

func (p *plainTxn) observe(ctx context.Context, version int64, actions []deltaactions.Action) error {
	keys := delta.FileKeys{}
	if p.tx.Table != nil {
		keys = p.tx.Table.FileKeys()
	}
	if p.read == nil {
		p.read = make(map[string]bool, len(p.tx.ReadFiles))
		for f, ok := range p.tx.ReadFiles {
			if ok {
				p.read[keys.Of(f)] = true
			}
		}
	}
	for _, a := range actions {
		switch {
		case a.Protocol != nil, a.Metadata != nil:
			return fmt.Errorf("winning commit %d: %w", version, ErrMetadataChanged)
		case a.Remove != nil && p.read[keys.Of(a.Remove.Path)]:
			return fmt.Errorf("winning commit %d removed %s which this transaction read: %w", version, a.Remove.Path, ErrConflict)
		case a.DomainMetadata != nil && p.tx.Domains[a.DomainMetadata.Domain]:
			return fmt.Errorf("winning commit %d wrote domain %s which this transaction writes: %w", version, a.DomainMetadata.Domain, ErrConflict)
		}
	}
	return nil
}

func (p *plainTxn) build(ctx context.Context) ([]deltaactions.Action, map[string]string, error) {
	return p.tx.Actions, p.tx.OperationMetrics, nil
}

// ictEnabled reports whether the table writes in-commit timestamps.
func ictEnabled(snap *delta.Snapshot) bool {
	return snap.Properties().InCommitTimestamps
}

// run is the commit loop shared by all transaction kinds. It returns the
// committed version, or -1 with a nil error when nothing was left to commit.
func (tx *Txn) run(ctx context.Context, p participant) (int64, error) {
	if tx.Table == nil || tx.Snapshot == nil {
		return -1, fmt.Errorf("commit: transaction needs a table and a read snapshot")
	}
	if tx.Table.Log == nil {
		return -1, failure.With(failure.Halt, fmt.Errorf("commit to %s: %w", tx.Table.URL, logstore.ErrNoPutIfAbsent))
	}
	o := tx.Options.withDefaults()
	rt, err := delta.RowTrackingOf(tx.Snapshot)
	if err != nil {
		return -1, fmt.Errorf("commit to %s: %w", tx.Table.URL, err)
	}
	// hwm is the row id high-water mark as of the newest commit seen: the
	// read snapshot's, raised by every winner that set one.
	hwm := rt.HighWaterMark
	readVersion := tx.Snapshot.Version
	lastICT := tx.Snapshot.Timestamp
	next := readVersion + 1
	backoff := o.BaseBackoff
	for attempt := 1; ; attempt++ {
		// Catch up with every commit that landed since the last check.
		for {
			acts, found, err := o.Log.readCached(ctx, tx.Table, next)
			if err != nil {
				return -1, err
			}
			if !found {
				break
			}
			if ours(acts, tx.TxnID()) {
				// An earlier ambiguous put did land.
				return next, nil
			}
			if ict := commitICT(acts); ict > lastICT {
				lastICT = ict
			}
			if err := p.observe(ctx, next, acts); err != nil {
				return -1, err
			}
			if w, ok, err := delta.RowTrackingHighWaterMark(acts); err != nil {
				return -1, fmt.Errorf("winning commit %d of %s: %w", next, tx.Table.URL, err)
			} else if ok {
				hwm = max(hwm, w)
			}
			next++
		}
		actions, metrics, err := p.build(ctx)
		if err != nil {
			return -1, err
		}
		if actions == nil {
			return -1, nil
		}
		// Fresh row ids above the newest high-water mark and this attempt's
		// version as the new files' commit version: after a lost race this
		// re-bases them past the winners' (Spark's ConflictChecker
		// reassignOverlappingRowIds and reassignRowCommitVersions).
		if actions, err = delta.AssignRowIDs(rt, actions, next, hwm); err != nil {
			return -1, fmt.Errorf("commit version %d of %s: %w", next, tx.Table.URL, err)
		}
		refs, err := referencedKeys(actions)
		if err != nil {
			return -1, fmt.Errorf("commit to %s: %w", tx.Table.URL, err)
		}
		now := o.Now().UnixMilli()
		var ict *int64
		if ictEnabled(tx.Snapshot) {
			v := max(now, lastICT+1)
			ict = &v
		}
		data, err := tx.encode(now, ict, metrics, actions, o.EngineInfo)
		if err != nil {
			return -1, err
		}
		if o.BeforePut != nil {
			if err := o.BeforePut(ctx, next); err != nil {
				return -1, fmt.Errorf("before-put hook: %w", err)
			}
		}
		err = tx.Table.Log.PutIfAbsent(ctx, commitKey(next), data)
		if err == nil || errors.Is(err, objstore.ErrAmbiguous) {
			// Published, or perhaps: a commit that lands late may
			// reference this attempt's objects, so they are never
			// cleaned (at worst orphans for a later vacuum).
			tx.keep(refs)
		}
		if err == nil {
			o.Logger.Debug("committed", "table", tx.Table.URL, "version", next, "attempt", attempt)
			if o.Log != nil {
				// What was written is what a later reader would parse.
				if acts, perr := delta.ParseCommit(data); perr == nil {
					o.Log.put(next, acts)
				}
			}
			return next, nil
		}
		switch {
		case errors.Is(err, logstore.ErrCommitExists):
			o.Logger.Debug("lost commit race", "table", tx.Table.URL, "version", next, "attempt", attempt)
		case errors.Is(err, objstore.ErrAmbiguous):
			// Who won? Re-read the version (the catch-up loop compares txnIds).
			acts, found, rerr := readCommit(ctx, tx.Table, next)
			if rerr != nil {
				return -1, fmt.Errorf("resolve ambiguous commit of version %d: %v (after %w)", next, rerr, err)
			}
			if found && ours(acts, tx.TxnID()) {
				return next, nil
			}
			if !found {
				// Nobody holds the version yet: our write did not land (or
				// lands later, and the retry's catch-up will recognise it).
				o.Logger.Warn("ambiguous commit not visible", "table", tx.Table.URL, "version", next, "error", err)
			}
		default:
			return -1, fmt.Errorf("commit version %d of %s: %w", next, tx.Table.URL, err)
		}
		if attempt >= o.MaxAttempts {
			return -1, fmt.Errorf("commit to %s after %d attempts: %w", tx.Table.URL, attempt, ErrTooManyAttempts)
		}
		d := backoff/2 + time.Duration(rand.Int64N(int64(backoff/2)+1))
		if err := o.Sleep(ctx, d); err != nil {
			return -1, err
		}
		backoff = min(backoff*2, o.MaxBackoff)
	}
}

// keep marks an attempt's referenced objects as published.
func (tx *Txn) keep(refs []string) {
	if tx.Objects != nil && len(refs) > 0 {
		tx.Objects.Keep(refs...)
	}
}

// referencedKeys returns the object keys an attempt's add actions
// reference: each data file and its deletion-vector file (`u` DVs). They
// are what a committed version makes live, so they must never be cleaned;
// a path that does not decode fails the attempt before the put.
func referencedKeys(actions []deltaactions.Action) ([]string, error) {
	var keys []string
	for _, a := range actions {
		if a.Add == nil {
			continue
		}
		k, err := a.Add.Key()
		if err != nil {
			return nil, fmt.Errorf("add %s: %w", a.Add.Path, err)
		}
		keys = append(keys, k)
		if dv := a.Add.DeletionVector; dv != nil && dv.StorageType == "u" {
			k, err := dvObjectKey(dv)
			if err != nil {
				return nil, fmt.Errorf("add %s: %w", a.Add.Path, err)
			}
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// commitInfoJSON is commitInfo in Spark's field order.
type commitInfoJSON struct {
	InCommitTimestamp   *int64            `json:"inCommitTimestamp,omitempty"`
	Timestamp           int64             `json:"timestamp"`
	Operation           string            `json:"operation"`
	OperationParameters map[string]any    `json:"operationParameters"`
	ReadVersion         int64             `json:"readVersion"`
	IsolationLevel      string            `json:"isolationLevel"`
	IsBlindAppend       bool              `json:"isBlindAppend"`
	OperationMetrics    map[string]string `json:"operationMetrics,omitempty"`
	Tags                map[string]string `json:"tags,omitempty"`
	EngineInfo          string            `json:"engineInfo"`
	TxnID               string            `json:"txnId"`
}

func (tx *Txn) encode(now int64, ict *int64, metrics map[string]string, actions []deltaactions.Action, engine string) ([]byte, error) {
	ts := now
	if ict != nil {
		ts = *ict
	}
	ci := commitInfoJSON{
		InCommitTimestamp:   ict,
		Timestamp:           ts,
		Operation:           tx.Operation,
		OperationParameters: tx.OperationParameters,
		ReadVersion:         tx.Snapshot.Version,
		IsolationLevel:      tx.IsolationLevel,
		IsBlindAppend:       tx.IsBlindAppend,
		OperationMetrics:    metrics,
		Tags:                tx.CommitTags,
		EngineInfo:          engine,
		TxnID:               tx.TxnID(),
	}
	if ci.OperationParameters == nil {
		ci.OperationParameters = map[string]any{}
	}
	var buf bytes.Buffer
	line, err := json.Marshal(map[string]any{"commitInfo": ci})
	if err != nil {
		return nil, fmt.Errorf("encode commitInfo: %w", err)
	}
	buf.Write(line)
	buf.WriteByte('\n')
	for i, a := range actions {
		line, err := encodeAction(a)
		if err != nil {
			return nil, fmt.Errorf("encode action %d: %w", i, err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// ours reports whether a commit's commitInfo carries txnID.
func ours(actions []deltaactions.Action, txnID string) bool {
	for _, a := range actions {
		if a.CommitInfo == nil {
			continue
		}
		var id string
		if raw, ok := a.CommitInfo["txnId"]; ok && json.Unmarshal(raw, &id) == nil && id == txnID {
			return true
		}
	}
	return false
}

// commitICT returns a commit's in-commit timestamp, or 0.
func commitICT(actions []deltaactions.Action) int64 {
	for _, a := range actions {
		if a.CommitInfo == nil {
			continue
		}
		var v int64
		if raw, ok := a.CommitInfo["inCommitTimestamp"]; ok && json.Unmarshal(raw, &v) == nil {
			return v
		}
	}
	return 0
}
