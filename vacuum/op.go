package vacuum

import (
	"github.com/compactord/compactord/objstore"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/tableop"
)

// Name is the vacuum operation's name in policies, reports and metrics.
const Name = "vacuum"

// Counts (tableop.Result.Counts) a vacuum run reports.
const (
	// CountFilesDeleted and CountBytesDeleted are the files (directories
	// included) and bytes a vacuum or sweep deleted.
	CountFilesDeleted = "vacuum_files_deleted"
	CountBytesDeleted = "vacuum_bytes_deleted"
	// CountOrphans counts deleted files that no action of the snapshot
	// named (abandoned writes, temp leftovers).
	CountOrphans = "vacuum_orphans"
	// CountTempFiles counts deleted temp leftovers of killed writes.
	CountTempFiles = "vacuum_temp_files"
	// CountRefused counts the deletes the deletion gate refused (package
	// deletegate: log files, records, referenced or non-canonical keys,
	// symlinked paths a hostile action named).
	CountRefused = "vacuum_deletes_refused"
)

// maxStateBytes bounds the read of the small state files vacuum keeps
// (_compactord/vacuum.json, _delta_log/_last_vacuum_info): a few hundred
// bytes each; a bigger one is refused unread.
const maxStateBytes = 1 << 20

// stateKey is where the daemon remembers when it last vacuumed a table,
// so that intervals survive restarts and move with the lease.
const stateKey = "_compactord/vacuum.json"

// state is the content of stateKey (ms since the epoch).
type state struct {
	LastVacuum int64 `json:"lastVacuum"`
	LastFull   int64 `json:"lastFull"`
}

// Factory returns the vacuum operation's factory, run after the table's
// other operations: a policy with a vacuum block gets a lite or full vacuum
// once per interval (auto: full when the last full one is older than
// full_interval); every other policy gets the cheap Sweep of temp leftovers
// on every run. Commits use co.
func Factory(co commit.Options) tableop.Factory[policies.Policy, *delta.Table] {
	return tableop.Factory[policies.Policy, *delta.Table]{Name: Name, New: func(p policies.Policy, env tableop.Env) (tableop.Op[*delta.Table], bool, error) {
		op := &Op{Policy: p.Vacuum, Now: env.Now, Options: Options{EngineInfo: env.EngineInfo, Commit: co, Logger: env.LoggerOr().Named(Name), Progress: env.Progress}}
		if v := p.Vacuum; v != nil {
			op.Options.Retention, op.Options.ForceRetention, op.Options.Concurrency = v.Retention, v.ForceRetention, v.Concurrency
		}
		return op, true, nil
	}}
}

// Op is the daemon's vacuum of one table for one run.
type Op struct {
	// Policy is the table's vacuum block; nil: only Sweep.
	Policy *policies.Vacuum
	// Options template the vacuum (Mode and Now are set per run).
	Options Options
	// Now is the clock (default time.Now).
	Now func() time.Time
}

var _ tableop.Op[*delta.Table] = (*Op)(nil)

// Name implements tableop.Op.
func (*Op) Name() string { return Name }

// Run implements tableop.Op.
func (o *Op) Run(ctx context.Context, t *delta.Table) (tableop.Result, error) {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	if o.Policy == nil {
		res, err := Sweep(ctx, t, SweepOptions{Now: now, Logger: o.Options.Logger, Snapshots: o.Options.Snapshots})
		var out tableop.Result
		if res != nil && res.Deleted > 0 {
			out.Counts = map[string]int64{CountFilesDeleted: res.Deleted, CountBytesDeleted: res.Bytes, CountOrphans: res.Deleted, CountTempFiles: res.Deleted}
			out.Done = []string{fmt.Sprintf("%s of killed writes deleted (%s)", plural(res.Deleted, "temp leftover"), units.FormatBytes(res.Bytes))}
		}
		if res != nil && res.Refused > 0 {
			if out.Counts == nil {
				out.Counts = map[string]int64{}
			}
			out.Counts[CountRefused] = res.Refused
		}
		return out, err
	}
	st, err := readState(ctx, t)
	if err != nil {
		return tableop.Result{}, err
	}
	at := now()
	if at.Sub(time.UnixMilli(st.LastVacuum)) < o.Policy.Interval {
		return tableop.Result{}, nil
	}
	mode := Lite
	switch o.Policy.Mode {
	case policies.VacuumFull:
		mode = Full
	case policies.VacuumAuto, "":
		if at.Sub(time.UnixMilli(st.LastFull)) >= o.Policy.FullInterval {
			mode = Full
		}
	}
	opts := o.Options
	opts.Mode, opts.Now = mode, now
	res, err := Run(ctx, t, opts)
	if mode == Lite && errors.Is(err, ErrCannotVacuumLite) {
		// Log cleanup took commits lite needs: a full vacuum catches up.
		opts.Logger.Info("lite vacuum impossible, running a full one", "table", t.URL, "reason", err)
		opts.Mode = Full
		mode = Full
		res, err = Run(ctx, t, opts)
	}
	var out tableop.Result
	if res != nil {
		out.ReadVersion = res.ReadVersion
		if res.EndVersion >= 0 {
			out.Committed, out.Version = true, res.EndVersion
		}
		out.Counts = map[string]int64{
			CountFilesDeleted: res.FilesDeleted + res.DirsDeleted,
			CountBytesDeleted: res.BytesDeleted,
			CountOrphans:      min(res.Orphans, res.FilesDeleted),
			CountTempFiles:    min(res.TempFiles, res.FilesDeleted),
		}
		if res.DeletesRefused > 0 {
			out.Counts[CountRefused] = res.DeletesRefused
		}
		if n := res.FilesDeleted + res.DirsDeleted; n > 0 {
			out.Done = []string{fmt.Sprintf("%s vacuum deleted %s (%s)", mode, plural(int64(n), "file"), units.FormatBytes(res.BytesDeleted))}
		}
	}
	if err != nil {
		return out, err
	}
	st.LastVacuum = at.UnixMilli()
	if mode == Full {
		st.LastFull = st.LastVacuum
	}
	if err := writeState(ctx, t, st); err != nil {
		opts.Logger.Warn("could not record the vacuum time; the next run vacuums again", "table", t.URL, "error", err)
	}
	return out, nil
}

func readState(ctx context.Context, t *delta.Table) (state, error) {
	var st state
	data, err := objstore.ReadAllLimit(ctx, t.Bucket, stateKey, maxStateBytes)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return st, nil
		}
		return st, fmt.Errorf("vacuum %s: read %s: %w", t.URL, stateKey, err)
	}
	if json.Unmarshal(data, &st) != nil {
		return state{}, nil // unreadable: vacuum as if never
	}
	return st, nil
}

func writeState(ctx context.Context, t *delta.Table, st state) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return t.Bucket.WriteAll(ctx, stateKey, data, nil)
}

// plural says "1 thing" or "n things".
func plural(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
