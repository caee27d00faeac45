package attemptsweep

import (
	"github.com/compactord/compactord/delta/actions"
	deltadv "github.com/compactord/compactord/delta/dv"
	"github.com/compactord/compactord/objstore"

	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/deletegate"
	"github.com/compactord/compactord/internal/tablepath"
)

// Options configure Sweep.
type Options struct {
	// StaleAfter is how long an intent record may go unmodified before its
	// attempt counts as dead (default attempt.DefaultStaleAfter). A live
	// attempt rewrites its record every attempt.DefaultHeartbeat, so the
	// window must stay well above that and above the clock skew between
	// this host and the store.
	StaleAfter time.Duration
	// Now is the clock (required).
	Now func() time.Time
	// Logger receives what was deleted (required).
	Logger hclog.Logger
	// Snapshots loads the latest snapshot, e.g. delta.LoadSnapshot
	// (required).
	Snapshots func(ctx context.Context, t *delta.Table, version int64) (*delta.Snapshot, error)
}

// Result is what Sweep deleted.
type Result struct {
	// Records counts the dead intent records deleted; Objects the
	// uncommitted objects (and upload temp files) of theirs deleted.
	Records, Objects int64
	// Refused counts the recorded keys the deletion gate refused (outside
	// the root, not canonical, under _delta_log/ or _compactord/, or
	// referenced by the latest snapshot): logged, never deleted.
	Refused int64
}

// Counts (tableop.Result.Counts) of an operation's start-of-run sweep: the
// operations that run AtStart report Records and Objects under these names.
const (
	CountAttempts = "swept_attempts"
	CountObjects  = "swept_attempt_objects"
	CountRefused  = "swept_attempt_refused"
)

// Counts returns r as the counts of an operation's report.
func (r Result) Counts() map[string]int64 {
	m := map[string]int64{CountAttempts: r.Records, CountObjects: r.Objects}
	if r.Refused > 0 {
		m[CountRefused] = r.Refused
	}
	return m
}

// Sweep finishes the cleanup of local attempts that died (were
// killed) before cleaning up after themselves: every intent record under
// attempt.RecordsDir whose store modification time is older than
// StaleAfter is dead; each key it recorded that no live add, tombstone or
// "u" deletion vector of the latest snapshot references is deleted with
// the upload temp files beside it (attempt.IsTempLeftover; a killed run's
// committed batches stay), then the record. A record some delete failed for stays for the next
// sweep. Temp leftovers of the records themselves are deleted too. It
// lists one directory, and loads the snapshot only when a record is dead.
func Sweep(ctx context.Context, t *delta.Table, opts Options) (*Result, error) {
	if opts.Now == nil || opts.Logger == nil || opts.Snapshots == nil {
		return nil, fmt.Errorf("sweep attempts of %s: Options need Now, Logger and Snapshots", t.URL)
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = attempt.DefaultStaleAfter
	}
	res := &Result{}
	cutoff := opts.Now().Add(-opts.StaleAfter)
	var dead, temps []string
	if err := each(ctx, t.Bucket, &blob.ListOptions{Prefix: attempt.RecordsDir, Delimiter: "/"}, func(o *blob.ListObject) {
		switch {
		case o.IsDir || !o.ModTime.Before(cutoff):
		case attempt.IsTempLeftover(o.Key):
			temps = append(temps, o.Key)
		case strings.HasSuffix(o.Key, ".json"):
			dead = append(dead, o.Key)
		}
	}); err != nil {
		return res, fmt.Errorf("sweep attempts of %s: %w", t.URL, err)
	}
	var errs []error
	gopts := deletegate.Options{Table: t.URL, Logger: opts.Logger, LocalRoot: deletegate.LocalRootOf(t.URL)}
	plain := deletegate.New(t.Bucket, gopts)
	for _, k := range temps {
		if err := plain.Delete(ctx, k, deletegate.Temp); err != nil && !skippable(err) {
			errs = append(errs, fmt.Errorf("sweep attempts of %s: delete %s: %w", t.URL, k, err))
		}
	}
	res.Refused += plain.Refused()
	if len(dead) == 0 {
		return res, errors.Join(errs...)
	}
	snap, err := opts.Snapshots(ctx, t, -1)
	if err != nil {
		return res, fmt.Errorf("sweep attempts of %s: load snapshot: %w", t.URL, err)
	}
	refs, err := Referenced(t.URL, snap)
	if err != nil {
		return res, fmt.Errorf("sweep attempts of %s: %w", t.URL, err)
	}
	gopts.Referenced = func(k string) bool { return refs[k] }
	gate := deletegate.New(t.Bucket, gopts)
	for _, k := range dead {
		n, err := sweepRecord(ctx, t, gate, k, opts.Logger)
		res.Objects += int64(n)
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep attempts of %s: %w", t.URL, err))
			continue
		}
		res.Records++
	}
	res.Refused += gate.Refused()
	return res, errors.Join(errs...)
}

// skippable reports a delete error that is no failure: the object was
// already gone, or the gate refused it (logged and counted there).
func skippable(err error) bool {
	return err == nil || gcerrors.Code(err) == gcerrors.NotFound || errors.Is(err, deletegate.ErrRefused)
}

// AtStart is the sweep every operation that writes data files runs at its
// start, so that the next run cleans up after a killed one: Sweep with the
// staleness window staleAfter (0: attempt.DefaultStaleAfter), log and
// snapshots (nil: delta.LoadSnapshot). Liveness compares the store's
// modification times with the real clock, never the run's (a test's frozen
// clock would count live attempts dead). A failed sweep is logged as a
// warning and is not the run's failure (the next run retries it); the
// result counts what was deleted before it failed.
func AtStart(ctx context.Context, t *delta.Table, staleAfter time.Duration, log hclog.Logger,
	snapshots func(ctx context.Context, t *delta.Table, version int64) (*delta.Snapshot, error)) Result {
	if snapshots == nil {
		snapshots = delta.LoadSnapshot
	}
	swept, err := Sweep(ctx, t, Options{StaleAfter: staleAfter, Now: time.Now, Logger: log, Snapshots: snapshots})
	if err != nil {
		log.Warn("sweep the uncommitted objects of dead attempts", "table", t.URL, "error", err)
	}
	if swept == nil {
		return Result{}
	}
	return *swept
}

// sweepRecord deletes what the dead record at key names and the gate
// allows (no commit references it; nothing of the log, of _compactord/ or
// outside the root), then the record; it returns how many objects
// existed.
func sweepRecord(ctx context.Context, t *delta.Table, gate *deletegate.Gate, key string, log hclog.Logger) (int, error) {
	data, err := objstore.ReadAllLimit(ctx, t.Bucket, key, attempt.MaxRecordBytes)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return 0, nil // swept by a concurrent run
	}
	if err != nil {
		return 0, fmt.Errorf("read intent record %s: %w", key, err)
	}
	rec, err := attempt.ParseRecord(key, data)
	if err != nil {
		return 0, err
	}
	n := 0
	var deleted []string
	var errs []error
	for _, k := range rec.Keys {
		m, err := DeleteWithLeftovers(ctx, gate, k)
		n += m
		if m > 0 {
			deleted = append(deleted, k)
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("intent record %s: %w", key, err)
	}
	if err := gate.Delete(ctx, key, deletegate.Record); !skippable(err) {
		return n, fmt.Errorf("delete intent record %s: %w", key, err)
	}
	log.Info("swept a dead attempt's uncommitted objects", "table", t.URL, "attempt", rec.Attempt,
		"operation", rec.Operation, "owner", rec.Owner, "heartbeat", rec.Heartbeat,
		"recorded", len(rec.Keys), "deleted", n, "keys", deleted)
	return n, nil
}

// Referenced is the set of canonical object keys (tablepath) that snap of
// the table at tableURL references: every live add's and tombstone's
// file inside the root, and their "u" deletion vector files. A path whose
// place cannot be related to the root is an error: a deleter must not
// guess.
func Referenced(tableURL string, snap *delta.Snapshot) (map[string]bool, error) {
	root, err := tablepath.ParseRoot(tableURL)
	if err != nil {
		return nil, err
	}
	refs := make(map[string]bool, 2*len(snap.Files)+len(snap.Tombstones))
	keep := func(p string, dv *actions.DeletionVector) error {
		ref, err := root.Resolve(p)
		if err != nil {
			return fmt.Errorf("version %d: %w", snap.Version, err)
		}
		if ref.Inside() {
			refs[ref.Key] = true
		}
		if dv != nil && dv.StorageType == "u" {
			dk, err := deltadv.DVFileKey(dv.PathOrInlineDv)
			if err != nil {
				return fmt.Errorf("version %d: deletion vector of %s: %w", snap.Version, p, err)
			}
			refs[dk] = true
		}
		return nil
	}
	for _, a := range snap.Files {
		if err := keep(a.Path, a.DeletionVector); err != nil {
			return nil, err
		}
	}
	for _, r := range snap.Tombstones {
		if err := keep(r.Path, r.DeletionVector); err != nil {
			return nil, err
		}
	}
	return refs, nil
}

// DeleteWithLeftovers deletes the data file key and the upload temp files
// of killed writes beside it (IsTempLeftover: key.<random>.tmp, as
// gocloud's fileblob leaves them) through the gate, returning how many
// objects existed. A missing key is fine; a key the gate refuses is
// skipped (the gate logs and counts it), and so are its leftovers.
func DeleteWithLeftovers(ctx context.Context, gate *deletegate.Gate, key string) (int, error) {
	n := 0
	err := gate.Delete(ctx, key, deletegate.Data)
	switch {
	case errors.Is(err, deletegate.ErrRefused):
		return 0, nil
	case err == nil:
		n++
	case gcerrors.Code(err) != gcerrors.NotFound:
		return n, fmt.Errorf("delete abandoned output %s: %w", key, err)
	}
	var errs []error
	if err := each(ctx, gate.Bucket(), &blob.ListOptions{Prefix: key + "."}, func(o *blob.ListObject) {
		if o.IsDir || !attempt.IsTempLeftover(o.Key) {
			return
		}
		if err := gate.Delete(ctx, o.Key, deletegate.Temp); !skippable(err) {
			errs = append(errs, fmt.Errorf("delete temp leftover %s: %w", o.Key, err))
			return
		}
		n++
	}); err != nil {
		return n, err
	}
	return n, errors.Join(errs...)
}

// each calls f with every object the listing returns.
func each(ctx context.Context, b *blob.Bucket, opts *blob.ListOptions, f func(*blob.ListObject)) error {
	for it := b.List(opts); ; {
		switch o, err := it.Next(ctx); {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("list %s: %w", opts.Prefix, err)
		default:
			f(o)
		}
	}
}
